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


def test_facts_text_aligns_on_the_keys_as_shown_with_a_mount_path_escaped() -> None:
    """`hosttune facts` text: a key from the host (a mount point holding ESC) is shown escaped, and the column is as
    wide as the longest key as shown."""
    from hosttune.commands.facts import render
    from hosttune.facts import Facts, Mount

    f = Facts(storage=(Mount(mount="/mnt/data\x1b[31m-long-name", fstype="ext4", kind="ssd", device="/dev/sda1",
                             size_mb=100),))
    lines = render(f).splitlines()
    key = "storage /mnt/data\\x1b[31m-long-name"
    assert lines[-1] == f"{key}  ssd (ext4, /dev/sda1)  100 MiB"
    assert lines[0] == "host".ljust(len(key)) + "  ?"
    assert all(line[len(key):len(key) + 2] == "  " and line[len(key) + 2] != " " for line in lines)
    assert "\x1b" not in "".join(lines)
