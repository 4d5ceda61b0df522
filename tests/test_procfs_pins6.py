"""Pins (issue 21, round 6) for hosttune/launch/procfs.py: a live process with an empty environment reads as {} (not
"gone", which is None), policy flags in numa_maps (`prefer=relative:1`, `interleave=static,relative:0-1`) keep the
policy's name, and this process's own memory policy read from /proc is numa_maps' first line parsed."""

import os
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from hosttune.launch import procfs


def _until(cond: Callable[[], bool]) -> None:
    end = time.monotonic() + 600  # a hang guard only
    while not cond():
        assert time.monotonic() < end
        time.sleep(0.005)


@pytest.fixture
def empty_env_child() -> Iterator[subprocess.Popen]:
    p = subprocess.Popen(["/bin/sleep", "600"], env={})
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def test_a_process_with_an_empty_environment_reads_empty_not_gone(empty_env_child: subprocess.Popen) -> None:
    pid = empty_env_child.pid
    _until(lambda: procfs.proc_status(pid).get("Name") == "sleep" and not procfs.in_execve(pid))
    assert procfs.proc_environ(pid) == {}
    empty_env_child.kill()
    empty_env_child.wait()
    assert procfs.proc_environ(pid) is None


def test_environ_entries_without_equals_are_skipped_and_values_keep_their_equals() -> None:
    p = subprocess.Popen(["/bin/sleep", "600"], env={"A": "x=y=z", "EMPTY": ""})
    try:
        _until(lambda: procfs.proc_status(p.pid).get("Name") == "sleep" and bool(procfs.proc_environ(p.pid)))
        assert procfs.proc_environ(p.pid) == {"A": "x=y=z", "EMPTY": ""}
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("line, expected", [
    ("7f00 prefer=relative:1 anon=3", ("preferred", (1,))),
    ("7f00 interleave=static,relative:0-1 anon=3", ("interleave", (0, 1))),
    ("7f00 bind=static:0,2-3 anon=3", ("bind", (0, 2, 3))),
    ("7f00 local anon=3", ("none", ())),
    ("7f00 default", ("none", ())),
    ("7f00 preferred-many:1", ("preferred-many", (1,))),
])
def test_policy_flags_keep_the_policy_name(line: str, expected: object) -> None:
    assert procfs.parse_numa_maps_policy(line + "\n") == expected


def test_this_processes_policy_is_its_numa_maps_first_line() -> None:
    path = Path(f"/proc/{os.getpid()}/numa_maps")
    if not path.exists():
        pytest.skip("no numa_maps (kernel without CONFIG_NUMA)")
    mine = procfs.proc_mempolicy(os.getpid())
    assert mine is not None and mine[0] in ("none", "bind", "preferred", "interleave", "weighted_interleave")
    assert procfs.proc_mempolicy(os.getpid()) == procfs.parse_numa_maps_policy(path.read_text())
