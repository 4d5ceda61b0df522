"""hosttune/autotune/search.py with a scripted runner (issue 21): the trial sequence of a search (every candidate
trial between two default trials, a round's first default shared with the round before), the rungs and the
finalists, the confirmation rounds that alone decide, each ratio's value, a failed candidate out with its reason, a
first default that fails ending the search, the budget guards (`fits` at the mean trial length, `room` at the
window), and on a busy host the widening, the fragile finalist, the extra rounds and the one-line summary."""

from typing import Dict, List, Optional

import pytest

from hosttune.autotune import contention, search
from hosttune.autotune.candidates import DEFAULT
from hosttune.autotune.search import Result, Trial

D = DEFAULT


def rounded(d: Dict[str, List[float]]) -> Dict[str, List[float]]:
    return {k: [round(x, 9) for x in v] for k, v in d.items()}


class Scripted:
    """A runner: each name's score (None: it fails), each trial `seconds` long; the default can change per trial."""

    def __init__(self, scores: Dict[str, Optional[float]], seconds: float = 1.0,
                 defaults: Optional[List[Optional[float]]] = None, busy: Optional[float] = None,
                 busy_of: Optional[Dict[str, float]] = None) -> None:
        self.scores, self.seconds, self.defaults = scores, seconds, list(defaults or [])
        self.busy, self.busy_of = busy, busy_of or {}
        self.ran: List[str] = []

    def run(self, name: str) -> Trial:
        self.ran.append(name)
        if name == D and self.defaults:
            score = self.defaults.pop(0)
        else:
            score = self.scores.get(name, 100.0)
        return Trial(name, score, self.seconds, "" if score is not None else f"{name} crashed",
                     busy=self.busy_of.get(name, self.busy))


def test_two_candidates_go_straight_to_confirmation() -> None:
    r = Scripted({"a": 110.0, "b": 90.0})
    res = search.search(["a", "b"], r, budget_s=1e9, trial_s=1.0, confirm=3)
    assert len(r.ran) == 1 + 3 * 4 and r.ran[0::2] == [D] * 7  # D x D y D, the first D of a round shared
    assert sorted(r.ran[1::2]) == ["a"] * 3 + ["b"] * 3
    assert res.finalists == ["a", "b"] and rounded(res.confirm) == {"a": [1.1] * 3, "b": [0.9] * 3}
    assert rounded(res.ratios) == {"a": [1.1] * 3, "b": [0.9] * 3}  # the confirmation rounds count in the summaries too
    assert res.stopped == "" and res.spent == 13.0 and len(res.trials) == 13
    assert res.dropped == {} and res.extra_rounds == 0


def test_ratio_is_over_the_geometric_mean_of_both_neighbouring_defaults() -> None:
    r = Scripted({"a": 120.0, "b": 100.0}, defaults=[100.0, 144.0, 100.0, 144.0, 100.0])
    res = search.search(["a", "b"], r, budget_s=1e9, trial_s=1.0, confirm=1)
    assert [round(x, 9) for x in res.confirm["a"] + res.confirm["b"]] == [1.0, round(100 / 120, 9)]


def test_rungs_keep_the_better_half_then_two_finalists() -> None:
    scores = {"a": 100.0, "b": 130.0, "c": 80.0, "d": 120.0, "e": 110.0}
    r = Scripted(scores)
    res = search.search(list(scores), r, budget_s=1e9, trial_s=1.0, confirm=2)
    ran = [n for n in r.ran if n != D]
    # rung 0: one round of 5; rung 1: two rounds of the best 3 (ceil(5/2)); then 2 rounds of the 2 finalists
    assert sorted(ran[:5]) == sorted(scores)
    assert sorted(ran[5:11]) == ["b", "b", "d", "d", "e", "e"]
    assert sorted(ran[11:]) == ["b", "b", "d", "d"] and len(ran) == 15
    assert res.finalists == ["b", "d"] and rounded(res.confirm) == {"b": [1.3, 1.3], "d": [1.2, 1.2]}
    assert len(r.ran) == 1 + 2 * len(ran) and res.stopped == ""
    assert rounded(res.ratios)["c"] == [0.8] and rounded(res.ratios)["b"] == [1.3] * 5


def test_the_round_order_is_seeded() -> None:
    a, b = Scripted({}), Scripted({})
    search.search(list("abcdef"), a, budget_s=1e9, trial_s=1.0, confirm=1, seed=7)
    search.search(list("abcdef"), b, budget_s=1e9, trial_s=1.0, confirm=1, seed=7)
    c = Scripted({})
    search.search(list("abcdef"), c, budget_s=1e9, trial_s=1.0, confirm=1, seed=8)
    assert a.ran == b.ran and a.ran != c.ran


def test_a_failing_candidate_is_out_with_its_reason() -> None:
    r = Scripted({"a": 110.0, "b": None, "c": 105.0})
    res = search.search(["a", "b", "c"], r, budget_s=1e9, trial_s=1.0, confirm=1)
    assert res.dropped == {"b": "b crashed"} and r.ran.count("b") == 1
    assert res.finalists == ["a", "c"] and "b" not in res.confirm


def test_a_first_default_that_fails_ends_the_search() -> None:
    r = Scripted({}, defaults=[None])
    with pytest.raises(search.DefaultFailed, match="default crashed"):
        search.search(["a", "b"], r, budget_s=1e9, trial_s=1.0)


def test_a_later_failing_default_costs_one_side() -> None:
    r = Scripted({"a": 120.0, "b": 100.0}, defaults=[100.0, None, 100.0, 100.0, 100.0])
    res = search.search(["a", "b"], r, budget_s=1e9, trial_s=1.0, confirm=1)
    assert res.stopped == "" and sorted(res.confirm) == ["a", "b"]
    first = r.ran[1]
    assert res.confirm[first] == [pytest.approx(Scripted({"a": 120.0, "b": 100.0}).scores[first] / 100.0)]


# ---- the budget ----------------------------------------------------------------------------------------------------
def test_the_budget_stops_the_rungs_and_is_never_passed() -> None:
    r = Scripted({n: 100.0 + i for i, n in enumerate("abcdefgh")}, seconds=10.0)
    res = search.search(list("abcdefgh"), r, budget_s=200.0, trial_s=10.0, confirm=2)
    assert res.spent <= 200.0 and res.stopped.startswith("the budget ran out")


def test_room_counts_the_window_or_the_longest_trial() -> None:
    s = search._Search(["a"], Scripted({}), budget_s=100.0, trial_s=10.0, progress=None, seed=1)
    assert s.room(10) and not s.room(11)
    s.res.trials.append(Trial(D, 1.0, 20.0))
    s.res.spent = 20.0
    assert s.room(4) and not s.room(5)  # 20 + 4 x 20 = 100


def test_fits_at_the_mean_length_leaving_the_warmup_out() -> None:
    s = search._Search(["a"], Scripted({}), budget_s=100.0, trial_s=10.0, progress=None, seed=1)
    assert s.fits(1000)  # nothing measured: the first round runs
    s.res.trials = [Trial(D, 1.0, 50.0), Trial(D, 1.0, 5.0)]
    s.res.spent = 55.0
    s.warmup = 1
    assert s.fits(4) and not s.fits(5)  # 55 + (2*4 + 1) x 5 = 100; opened: no extra first default
    s.opened = True
    assert s.fits(4, reserve=1) and not s.fits(4, reserve=2)
    assert s.fits(2, rounds=2) and not s.fits(3, rounds=2)


def test_progress_sees_every_trial() -> None:
    seen: List[str] = []
    search.search(["a", "b"], Scripted({}), budget_s=1e9, trial_s=1.0, confirm=1,
                  progress=lambda t, res: seen.append(t.name))
    assert seen == [D, seen[1], D, seen[3], D] and sorted(seen[1::2]) == ["a", "b"]


# ---- replan --------------------------------------------------------------------------------------------------------
def test_replan_warms_up_then_keeps_what_the_budget_holds() -> None:
    r = Scripted({}, seconds=1.0)
    res = search.search(["a", "b", "c"], r, budget_s=1e9, trial_s=1.0, confirm=1, replan=True)
    assert r.ran[:2] == [D, D] and res.plan is not None and res.candidates == ["a", "b", "c"]
    tight = Scripted({}, seconds=1.0)
    res = search.search(["a", "b", "c"], tight, budget_s=3.0, trial_s=1.0, confirm=1, replan=True)
    assert res.candidates == [] and res.stopped and tight.ran == [D, D]


# ---- a busy host ---------------------------------------------------------------------------------------------------
def test_quiet_host_has_no_contention_line() -> None:
    res = search.search(["a", "b"], Scripted({}, busy=0.0), budget_s=1e9, trial_s=1.0, confirm=1)
    assert res.busy_share() == 0.0 and not res.busy() and res.widening() == 1.0 and res.contention_line() == ""
    assert res.contention_dict() == {"busy": False, "busy_share": 0.0, "widened_by": 1.0, "extra_rounds": 0,
                                     "fragile": {}}
    unmeasured = search.search(["a", "b"], Scripted({}), budget_s=1e9, trial_s=1.0, confirm=1)
    assert unmeasured.busy_share() is None and unmeasured.contention_dict()["busy_share"] is None


def test_busy_host_gets_extra_rounds_and_says_so() -> None:
    r = Scripted({"a": 110.0, "b": 90.0}, busy=contention.BUSY)
    res = search.search(["a", "b"], r, budget_s=1e9, trial_s=1.0, confirm=2, extra=3)
    assert res.busy() and res.extra_planned == 3 and res.extra_rounds == 3
    assert len(res.confirm["a"]) == 5 and len(r.ran) == 1 + 5 * 4
    line = res.contention_line()
    assert line.startswith(f"busy host: other work wanted the CPUs {contention.BUSY:.0%} of the default trials' time")
    assert "; 3 extra confirmation round(s) run before deciding (of 3)" in line
    assert rounded(res.busy_ratios) == {"a": [1.1] * 5, "b": [0.9] * 5}


def test_busy_host_extra_rounds_stop_at_the_budget() -> None:
    r = Scripted({"a": 110.0, "b": 90.0}, busy=1.0)
    # 1 + 2 planned rounds of 4 trials = 9 s, then room for one extra round of 4 (13 <= 14), not a second
    res = search.search(["a", "b"], r, budget_s=14.0, trial_s=1.0, confirm=2, extra=3)
    assert (res.extra_planned, res.extra_rounds, res.spent) == (3, 1, 13.0)
    assert "; 1 extra confirmation round(s) run before deciding (of 3; the budget held no more)" in \
        res.contention_line()


def test_just_below_busy_is_quiet() -> None:
    res = search.search(["a", "b"], Scripted({}, busy=contention.BUSY * 0.999), budget_s=1e9, trial_s=1.0,
                        confirm=1, extra=2)
    assert not res.busy() and res.extra_rounds == 0 and res.extra_planned == 0


def test_default_pairs_and_busy_only() -> None:
    res = Result(["a"], trials=[Trial(D, 100.0, 1, busy=0.0), Trial("a", 1.0, 1), Trial(D, 110.0, 1, busy=0.5),
                                Trial(D, None, 1), Trial(D, 121.0, 1, busy=0.0), Trial(D, 121.0, 1, busy=0.0)])
    assert res.default_pairs() == [pytest.approx(1.1), 1.0]
    assert res.default_pairs(busy_only=True) == [pytest.approx(1.1)]


def test_fragile_finalist_is_not_the_winner() -> None:
    res = Result(["a", "b"], finalists=["a"], busy_ratios={"a": [0.5, 1.2], "b": [0.1]},
                 trials=[Trial(D, 100.0, 1, busy=0.5), Trial(D, 99.0, 1, busy=0.5), Trial(D, 100.0, 1, busy=0.5)])
    assert res.fragile() == {"a": 0.5}  # b is not a finalist
    line = res.contention_line()
    assert "; a not kept: x0.50 in a contended round (the default's worst: x0.99)" in line
    res.confirm = {"a": [1.5] * 8}
    assert res.winner(0.02) is None


def test_summary_rows_best_first_with_the_drop_reason() -> None:
    res = Result(["a", "b", "c"], ratios={"a": [1.1, 1.1], "b": [1.3, 1.3], "c": []}, dropped={"c": "crashed"},
                 finalists=["b", "a"], confirm={"b": [1.3, 1.3]})
    rows = search.summary_rows(res)
    assert [(s.name, c.name if c else None, why) for s, c, why in rows] == [
        ("b", "b", ""), ("a", "a", ""), ("c", None, "crashed")]


def test_replan_leaves_the_cold_start_out_of_the_mean_trial_length() -> None:
    class Cold(Scripted):
        def run(self, name: str) -> Trial:
            t = super().run(name)
            return Trial(t.name, t.score, 50.0 if len(self.ran) == 1 else 2.0, t.why, t.busy)

    r = Cold({})
    s = search._Search(["a", "b"], r, budget_s=1000.0, trial_s=2.0, progress=None, seed=1)
    assert search._replan(s, ["a", "b"], 1) == ["a", "b"]
    assert r.ran == [D, D] and s.warmup == 1 and s.opened and s.last == 100.0 and s.res.spent == 52.0
    # the mean is the second trial's 2 s, not (50 + 2) / 2: 52 + 2 x 2 x 237 = 1000 fits, 238 does not
    assert s.fits(237) and not s.fits(238)
