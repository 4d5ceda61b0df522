"""Pins (issue 21, round 8 practice) for hosttune/autotune/budget.py: the --budget text a duration is shown as
(whole hours, whole minutes from two minutes on, else seconds; rounded up) and the smallest budget offered."""

import pytest

from hosttune.autotune import budget


@pytest.mark.parametrize("seconds,text", [
    (7200, "2h"), (3600, "1h"), (36000, "10h"), (5400, "90m"), (3660, "61m"), (3599.5, "1h"), (600, "10m"),
    (120, "2m"), (119.5, "2m"), (119, "119s"), (90, "90s"), (150, "150s"), (1, "1s"), (0.2, "1s"), (7201, "7201s"),
])
def test_duration_in_the_budget_grammar(seconds: float, text: str) -> None:
    assert budget.duration(seconds) == text


@pytest.mark.parametrize("seconds,text", [
    (10, "10s"), (100.2, "101s"), (120, "2m"), (121, "3m"), (3541, "1h"), (3601, "61m"), (7000, "117m"),
])
def test_smallest_budget_rounds_up_to_whole_minutes_past_two(seconds: float, text: str) -> None:
    assert budget.smallest_budget(seconds) == text


@pytest.mark.parametrize("budget_s,window_s,text", [
    (50.0, None, "--budget 50s holds no candidate with its 8 confirmation rounds: one candidate is 18 trials of at "
                 "least 3 s (+10% to start and stop each): give --budget 60s or more"),
    (50.0, 5.0, "--budget 50s holds no candidate with its 8 confirmation rounds: one candidate is 18 trials of up to "
                "5 s (--trial): give --budget 90s or more, or a shorter --trial"),
    (7000.0, 400.0, "--budget 7000s holds no candidate with its 8 confirmation rounds: one candidate is 18 trials of "
                    "up to 400 s (--trial): give --budget 2h or more, or a shorter --trial"),
    (1000.0, 2.5, "--trial 2.5: a trial needs at least 3 s (a shorter one measures start-up)"),
    (1000.0, float("inf"), "--trial inf: a trial needs at least 3 s (a shorter one measures start-up)"),
    (60.0, None, None), (90.0, 5.0, None),  # enough (18 x 3.3 s = 59.4 s; 18 x 5 s = 90 s)
])
def test_too_small_whole_line(budget_s: float, window_s: object, text: object) -> None:
    assert budget.too_small(budget_s, window_s, 8) == text  # type: ignore[arg-type]


def test_a_measured_plan_whole() -> None:
    p = budget.make(list("abcdef"), 900.0, 22.4 * 1.1, 8, "measured", measured_s=22.4, bound_s=30.0, spent_s=22.4,
                    done=2)
    at = "24.6 s a trial, the default's second trial's 22.4 s +10%, the last two up to the 30 s window"
    assert p.at() == at
    assert p.why() == f"budget 15m fits 2 of 6 candidates at {at}"
    assert p.lines() == [f"left out: {n} (budget 15m fits 2 of 6 candidates at {at})" for n in "cdef"]
    # the least: 22.4 s spent + 14 trials at 24.64 s + the last two at the 30 s window = 427.4 s -> 8 minutes
    assert p.too_small_line() == (f"the budget holds no candidate with its 8 confirmation rounds at {at}: give "
                                  "--budget 8m or more")
    assert p.to_dict() == {"basis": "measured", "budget_s": 900.0, "trial_s": 24.64, "measured_s": 22.4,
                           "bound_s": 30.0, "fits": 2, "of": 6, "planned_trials": 34, "kept": ["a", "b"],
                           "left_out": ["c", "d", "e", "f"]}


def test_a_plan_that_keeps_none_counts_the_trials_run() -> None:
    q = budget.make(["a", "b"], 90.0, 10.0, 8, "measured", measured_s=10.0, bound_s=10.0, spent_s=20.0, done=2)
    assert (q.kept, q.left_out, q.bound_s, q.trials()) == ((), ("a", "b"), None, 2)
    assert q.at() == "10 s a trial, as long as the default's second"
    assert q.too_small_line() == ("the budget holds no candidate with its 8 confirmation rounds at 10 s a trial, as "
                                  "long as the default's second: give --budget 3m or more")
    w = budget.make(list("abc"), 600.0, 12.0, 2, "window")
    assert (w.at(), w.why(), w.trials()) == ("12 s a trial, the window",
                                             "budget 10m fits 3 of 3 candidates at 12 s a trial, the window", 16)
