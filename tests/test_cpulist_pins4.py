"""More hosttune/cpulist.py edges (issue 21): strides, blanks and NULs, leading zeros, non-ASCII digits, span
merging, and the hex mask's over-limit flag at its exact width."""

import pytest

from hosttune.cpulist import MAX_CPUS, format_cpulist, parse_cpulist_checked, parse_cpumask_checked

M = MAX_CPUS


@pytest.mark.parametrize("text, ids, dropped", [
    ("0-7:2/4", [0, 2, 4, 6], 0),  # the kernel's group form: the stride is what counts
    ("0-3:0", [0, 1, 2, 3], 0),  # stride 0 reads as 1
    ("0-3:x", [], 1),
    ("0-3:x,5", [5], 1),
    (" 0-1 ,\n4\0\n", [0, 1, 4], 0),
    ("0,,1", [0, 1], 0),
    ("2\n3", [2, 3], 0),
    ("00005", [5], 0),
    (f"00{M - 1}", [M - 1], 0),
    (f"0{M}", [], 1),
    ("\u0663", [], 1),  # an Arabic-Indic 3 is a digit to str.isdigit(), not a CPU id
    ("+3", [], 1),
    ("-3", [], 1),
    ("3-", [], 1),
    ("a-3,1", [1], 1),
    ("0-2,4-6", [0, 1, 2, 4, 5, 6], 0),  # a gap of one stays a gap
    ("0-2,3-6", [0, 1, 2, 3, 4, 5, 6], 0),
    ("4-6,0-5", [0, 1, 2, 3, 4, 5, 6], 0),  # overlapping, out of order
    ("0-9,2-3", list(range(10)), 0),  # a span inside another keeps the outer end
    ("0-4:2,1-5:2,8", [0, 1, 2, 3, 4, 5, 8], 0),
    ("1-9:4,3-9:4", [1, 3, 5, 7, 9], 0),
    (f"{M - 3}-{M + 100}:2", [M - 3, M - 1], 1),
    ("", [], 0),
    ("\n\0", [], 0),
])
def test_cpulist_edges(text: str, ids: list, dropped: int) -> None:
    assert parse_cpulist_checked(text) == (ids, dropped)


def test_none_is_empty() -> None:
    assert parse_cpulist_checked(None) == ([], 0)
    assert parse_cpumask_checked(None) == ([], False)


@pytest.mark.parametrize("text, ids, over", [
    ("3\n\0", [0, 1], False),
    ("ff,00000001", [0, 32, 33, 34, 35, 36, 37, 38, 39], False),
    ("A", [1, 3], False),
    ("", [], False),
    (",", [], False),
    ("1" + "0" * (M // 4), [], True),  # the one set bit is CPU MAX_CPUS: dropped and said
    ("0" + "8" + "0" * (M // 4 - 1), [M - 1], False),  # exactly the width: the top CPU kept
    ("00" + "f" * (M // 4 - 1), list(range(M - 4)), False),
])
def test_cpumask_edges(text: str, ids: list, over: bool) -> None:
    assert parse_cpumask_checked(text) == (ids, over)


@pytest.mark.parametrize("cpus, text", [([5, 1, 2, 2, 3], "1-3,5"), ([0, 1], "0-1"), ([9, 7], "7,9"),
                                        ([0, 1, 2, 4, 5, 7], "0-2,4-5,7")])
def test_format_sorts_dedups_and_joins_runs(cpus: list, text: str) -> None:
    assert format_cpulist(cpus) == text
    assert parse_cpulist_checked(text) == (sorted(set(cpus)), 0)
