"""Pins (issue 21, round 8 practice) for hosttune/autotune/report.py (and the Result of search.py it reads): the
table and the JSON of one hand-built search result, whole and exact (text to the last character), on a busy host:
a winner, a candidate dropped without rounds, a fragile finalist judged against the default's worst *busy* pair
(not a quiet one with a larger swing), extra rounds cut by the budget, a plan made again at the measured length that
keeps more than the window's, and the note of a search the budget stopped."""

import json
from pathlib import Path

from hosttune.autotune import budget, report
from hosttune.autotune.search import Result, Trial

D = "default"


def _result() -> Result:
    trials = [Trial(D, 100.0, 30.0, busy=0.5), Trial("a", 120.0, 20.0, busy=0.5), Trial(D, 95.0, 20.0, busy=0.5),
              Trial("b", 70.0, 20.0, busy=0.4), Trial(D, 95.0, 20.0, busy=0.0),
              Trial("c", None, 3.0, "exit status 1; last line: boom"),
              Trial(D, 60.0, 20.0, busy=0.0)]  # a quiet pair: 95 -> 60, a larger swing than any busy pair
    names = ["a", "b", "c", "d", "e"]
    return Result(["a", "b", "c"],
                  ratios={"a": [1.2, 1.25, 1.22, 1.3, 1.21, 1.24, 1.26], "b": [0.7, 1.0, 1.02, 0.99, 1.01], "c": []},
                  confirm={"a": [1.2, 1.25, 1.22, 1.3, 1.21, 1.19, 1.24, 1.23], "b": [0.7, 1.0, 1.02]},
                  dropped={"c": "exit status 1; last line: boom"}, trials=trials, spent=812.345,
                  stopped="the budget ran out during the last confirmation round", finalists=["a", "b"],
                  busy_ratios={"b": [0.98, 0.7]}, extra_rounds=1, extra_planned=3,
                  plan=budget.make(names, 800.0, 22.0, 5, "measured", measured_s=20.0, bound_s=30.0, spent_s=30.0,
                                   done=2),
                  window_plan=budget.make(names, 800.0, 30.0, 5, "window"))


PLAN = "budget 800s fits 4 of 5 candidates at 22 s a trial, the default's second trial's 20 s +10%, the last two up " \
       "to the 30 s window"
TABLE = "\n".join([
    "candidate  median ratio  95% CI          rounds  confirmation (decides)",
    "a          1.240         [1.149, 1.326]  7       1.225 [1.140, 1.316] n=8",
    "b          1.000         [0.665, 1.074]  5       1.000 [0.665, 1.074] n=3",
    "c          -             -               0       dropped: exit status 1; last line: boom",
    "winner: a, x1.225 the default (95% CI 1.140-1.316, 8 confirmation rounds)",
    f"plan: {PLAN}: 30 trials (at the window's 30 s: 2)",
    f"left out: e ({PLAN})",
    "busy host: other work wanted the CPUs 25% of the default trials' time; every interval widened by x1.053 (the "
    "default's own swing between adjacent trials); 1 extra confirmation round(s) run before deciding (of 3; the "
    "budget held no more); b not kept: x0.70 in a contended round (the default's worst: x0.95)",
    "note: the budget ran out during the last confirmation round (812 s spent)",
])


def test_the_table_whole() -> None:
    assert report.table(_result(), 0.05) == TABLE


def test_the_json_whole() -> None:
    a8 = {"candidate": "a", "rounds": 8, "median_ratio": 1.225, "ci_low": 1.14, "ci_high": 1.3158}
    b3 = {"candidate": "b", "rounds": 3, "median_ratio": 1.0, "ci_low": 0.665, "ci_high": 1.0737}
    assert json.loads(report.to_json(_result(), 0.05, Path("/x/y.yaml"))) == {
        "candidates": [
            {"candidate": "a", "rounds": 7, "median_ratio": 1.24, "ci_low": 1.1495, "ci_high": 1.3263,
             "confirmation": a8, "dropped": None},
            {"candidate": "b", "rounds": 5, "median_ratio": 1.0, "ci_low": 0.665, "ci_high": 1.0737,
             "confirmation": b3, "dropped": None},
            {"candidate": "c", "rounds": 0, "median_ratio": None, "ci_low": None, "ci_high": None,
             "confirmation": None, "dropped": "exit status 1; last line: boom"}],
        "winner": "a", "winner_confirmation": a8, "spent_s": 812.3, "trials": 7,
        "stopped": "the budget ran out during the last confirmation round",
        "contention": {"busy": True, "busy_share": 0.25, "widened_by": 1.0526, "extra_rounds": 1,
                       "fragile": {"b": 0.7}},
        "budget": {
            "window": {"basis": "window", "budget_s": 800.0, "trial_s": 30.0, "measured_s": None, "bound_s": None,
                       "fits": 2, "of": 5, "planned_trials": 22, "kept": ["a", "b"], "left_out": ["c", "d", "e"]},
            "measured": {"basis": "measured", "budget_s": 800.0, "trial_s": 22.0, "measured_s": 20.0,
                         "bound_s": 30.0, "fits": 4, "of": 5, "planned_trials": 30, "kept": ["a", "b", "c", "d"],
                         "left_out": ["e"]},
            "left_out": ["e"]},
        "saved": "/x/y.yaml"}


def test_the_json_of_nothing_saved_is_null() -> None:
    got = json.loads(report.to_json(_result(), 0.5, None))
    assert (got["saved"], got["winner"], got["winner_confirmation"]) == (None, None, None)  # none clears 1.5
