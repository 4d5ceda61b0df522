"""Pins for hosttune.launch.procfs.parse_numa_maps_policy (issue 21, session 9 practice rounds): the task's memory
policy from the first line of /proc/PID/numa_maps, in every form mpol_to_str prints (mm/mempolicy.c): plain, with
mode flags ("=static", "=relative", "=balancing"), the many-nodes preferred policy (its name holds a space), and a
line with no policy."""

from typing import Dict, Optional, Tuple

import pytest

from hosttune.launch.procfs import parse_numa_maps_policy

CASES: Dict[str, Optional[Tuple[str, Tuple[int, ...]]]] = {
    "7f0000000000 default anon=1 dirty=1 N0=1 kernelpagesize_kB=4": ("none", ()),
    "7f0000000000 local anon=1": ("none", ()),
    "7f0000000000 bind:0-1 anon=1 N0=1": ("bind", (0, 1)),
    "7f0000000000 bind=static:2,4 file=/lib/x.so": ("bind", (2, 4)),
    "7f0000000000 prefer:1 anon=1": ("preferred", (1,)),
    "7f0000000000 prefer=relative:0 anon=1": ("preferred", (0,)),
    "7f0000000000 prefer (many):0-1 anon=1": ("preferred", (0, 1)),
    "7f0000000000 prefer (many)=static:0,3 anon=1": ("preferred", (0, 3)),
    "7f0000000000 interleave:0-3 anon=1\n7f0000001000 bind:1 anon=1": ("interleave", (0, 1, 2, 3)),
    "7f0000000000 bind=balancing:1 heap": ("bind", (1,)),
    "7f0000000000": None,
    "7f0000000000 ": None,
    "": None,
}


@pytest.mark.parametrize("line", sorted(CASES))
def test_parse_numa_maps_policy(line: str) -> None:
    assert parse_numa_maps_policy(line) == CASES[line]
