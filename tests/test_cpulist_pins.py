"""Pins for hosttune/cpulist.py from issue 21's mutation run: each parsing and formatting rule at its edge."""

import pytest

from hosttune.cpulist import MAX_CPUS, format_cpulist, parse_cpulist, parse_cpulist_checked, parse_cpumask

M = MAX_CPUS


@pytest.mark.parametrize("text, ids, dropped", [
    ("0-3", [0, 1, 2, 3], 0),
    ("7-3", [], 1),
    ("0-1,3-4", [0, 1, 3, 4], 0),
    ("0-1,2-3", [0, 1, 2, 3], 0),
    ("0-7:2", [0, 2, 4, 6], 0),
    ("1-7:3", [1, 4, 7], 0),
    (f"{M - 1}", [M - 1], 0),
    (f"{M}", [], 1),
    (f"{M - 2}-{M + 5}", [M - 2, M - 1], 1),
])
def test_cpulist_rules(text: str, ids: list, dropped: int) -> None:
    assert parse_cpulist_checked(text) == (ids, dropped)
    assert parse_cpulist(text) == ids


@pytest.mark.parametrize("text, ids", [
    ("1", [0]), ("2", [1]), ("8", [3]), ("00000000,00000005", [0, 2]), ("f0", [4, 5, 6, 7]), ("xyz", []),
    ("0g", []),
])
def test_cpumask_rules(text: str, ids: list) -> None:
    assert parse_cpumask(text) == ids


@pytest.mark.parametrize("cpus, text", [([0, 2], "0,2"), ([0, 1, 2, 5], "0-2,5"), ([3], "3"), ([], "")])
def test_format_cpulist(cpus: list, text: str) -> None:
    assert format_cpulist(cpus) == text
