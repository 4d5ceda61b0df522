"""Pins (issue 21, round 7 practice) for hosttune/autotune/search.py: two candidates, three confirmation rounds,
1 s trials and a 3 s window, under budgets from 8 to 18 s: where the search stops and what it says. A round the
window guard (`room`) cut short ends the confirmation loop at once ("during the confirmation rounds"); only a cut in
the last round is "during the last confirmation round"."""

from typing import List

import pytest

from hosttune.autotune import search
from hosttune.autotune.search import Trial

MID = "the budget ran out during the confirmation rounds"
LAST = "the budget ran out during the last confirmation round"


class Fixed:
    """Every trial 1 s: a scores 110, b 105, the default 100."""

    def __init__(self) -> None:
        self.ran: List[str] = []

    def run(self, name: str) -> Trial:
        self.ran.append(name)
        return Trial(name, {"a": 110.0, "b": 105.0}.get(name, 100.0), 1.0, "")


@pytest.mark.parametrize("budget_s,stopped,trials,confirm_rounds", [
    (8, MID, 3, {"a": 1}),
    (9, MID, 5, {"a": 1, "b": 1}),
    (10, MID, 5, {"a": 1, "b": 1}),
    (11, MID, 7, {"a": 1, "b": 2}),
    (12, MID, 7, {"a": 1, "b": 2}),
    (13, LAST, 9, {"a": 2, "b": 2}),
    (16, LAST, 11, {"a": 2, "b": 3}),
    (17, "", 13, {"a": 3, "b": 3}),
    (18, "", 13, {"a": 3, "b": 3}),
])
def test_where_a_short_budget_stops_the_confirmation_rounds(budget_s: float, stopped: str, trials: int,
                                                           confirm_rounds: dict) -> None:
    runner = Fixed()
    res = search.search(["a", "b"], runner, float(budget_s), 3.0, confirm=3)
    assert res.stopped == stopped
    assert (len(res.trials), len(runner.ran), res.spent) == (trials, trials, float(trials))
    assert res.finalists == ["a", "b"]
    assert {k: len(v) for k, v in res.confirm.items()} == confirm_rounds
