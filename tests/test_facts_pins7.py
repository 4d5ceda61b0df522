"""Pins for hosttune/cpulist.py, the kernel CPU-list parser every facts field of CPUs goes through (issue 21,
practice round HTOP): (ids, dropped entries) of whole inputs."""

from typing import List, Tuple

import pytest

from hosttune.cpulist import parse_cpulist, parse_cpulist_checked


@pytest.mark.parametrize("text,want", [
    ("0-1, ,3", ([0, 1, 3], 0)),  # a blank entry is no entry, not a malformed one
    (" 0-3 ", ([0, 1, 2, 3], 0)),
    ("0-1,\n,3", ([0, 1, 3], 0)),
    ("0-1,\0,3", ([0, 1, 3], 0)),
    (" \0 ", ([], 0)),
    ("\t5\t,, 6", ([5, 6], 0)),
    (" 2 , \0 4\0 ,", ([2, 4], 0)),
    ("0-7:2, 1", ([0, 1, 2, 4, 6], 0)),
    ("0-3,a,4", ([0, 1, 2, 3, 4], 1)),
    ("8-4", ([], 1)),
    ("16383,16384", ([16383], 1)),
    ("", ([], 0)),
])
def test_parse_cpulist_checked(text: str, want: Tuple[List[int], int]) -> None:
    assert parse_cpulist_checked(text) == want
    assert parse_cpulist(text) == want[0]
