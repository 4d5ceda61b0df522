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
