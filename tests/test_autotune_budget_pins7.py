"""Pins (issue 21, round 7 practice) for hosttune/autotune/budget.py: the trial arithmetic as whole tables (the
stages of a search, its trial count, the seconds it needs with the last two trials at the window, and how many
candidates fit a budget), numbers worked out by hand from the module's docstring."""

from hosttune.autotune import budget
from hosttune.autotune.budget import Stage


def test_the_schedule_and_the_trial_counts_for_0_to_5_candidates() -> None:
    assert [budget.schedule(k, 2) for k in range(6)] == [
        [],
        [Stage("confirm", 1, 2)],
        [Stage("confirm", 2, 2)],
        [Stage("rung 0", 3, 1), Stage("confirm", 2, 2)],
        [Stage("rung 0", 4, 1), Stage("confirm", 2, 2)],
        [Stage("rung 0", 5, 1), Stage("rung 1", 3, 2), Stage("confirm", 2, 2)],
    ]
    # each round is 2 trials a name; +1 for the very first default trial; +WARMUP (1) for the total
    assert [budget.planned_trials(k, 2) for k in range(6)] == [0, 5, 9, 15, 17, 31]
    assert [budget.total_trials(k, 2) for k in range(6)] == [1, 6, 10, 16, 18, 32]


def test_need_plans_the_last_two_trials_at_the_window() -> None:
    # (k, trial_s, confirm, bound_s, done) -> seconds
    table = {
        (1, 10.0, 2, 30.0, 0): 100.0,  # 6 trials: 4 x 10 + 2 x 30
        (1, 10.0, 2, None, 0): 60.0,  # no window: 6 x 10
        (3, 10.0, 2, 30.0, 0): 200.0,  # 16 trials: 14 x 10 + 2 x 30
        (3, 10.0, 2, 5.0, 0): 160.0,  # a window shorter than the trial: every trial at its own length
        (3, 10.0, 2, 30.0, 10): 100.0,  # 6 left: 4 x 10 + 2 x 30
        (3, 10.0, 2, 30.0, 14): 60.0,  # the last two, both at the window
        (3, 10.0, 2, 30.0, 15): 30.0,  # the last one
        (3, 10.0, 2, 30.0, 99): 0.0,  # all done
    }
    assert {args: budget.need(*args) for args in table} == table


def test_fit_is_the_most_candidates_whose_whole_search_fits() -> None:
    assert budget.fit(5, 200.0, 10.0, 2, 30.0) == 3  # k=3 needs 200, k=4 needs 16 x 10 + 2 x 30 = 220
    assert budget.fit(5, 219.0, 10.0, 2, 30.0) == 3
    assert budget.fit(5, 220.0, 10.0, 2, 30.0) == 4
    assert budget.fit(5, 99.0, 10.0, 2, 30.0) == 0  # not even one (6 trials: 100 s)
    assert budget.fit(5, 100.0, 10.0, 2, 30.0) == 1
    # 100 s left after 900 s and `done` trials: k=3 has 6 of 16 left after 10 (4 x 10 + 2 x 30 = 100), k=4 8 (120)
    assert budget.fit(5, 1000.0, 10.0, 2, 30.0, spent_s=900.0, done=10) == 3
    # after 6: k=2 has 4 of 10 left (2 x 10 + 2 x 30 = 80), k=3 10 of 16 (8 x 10 + 2 x 30 = 140)
    assert budget.fit(5, 1000.0, 10.0, 2, 30.0, spent_s=900.0, done=6) == 2
    assert budget.fit(5, 1000.0, 0.0, 2, 30.0) == 0  # no measured length: nothing fits
    assert budget.fit(5, 1000.0, float("inf"), 2, 30.0) == 0
