"""Pins for hosttune.launch.verify.check_rank (issue 21, session 9 practice rounds), in-process on this test's own
process (a live rank whose CPUs and environment are known): the whole list of mismatches, each said once, and a rank
whose environment cannot be read (another user's process, a setuid one: /proc/PID/environ refuses) counted as
lacking every planned variable instead of crashing the --verify pass."""

import os

import pytest

from hosttune.launch import verify
from hosttune.launch.verify import RankCheck, check_rank


def _rank(env: dict) -> RankCheck:
    return RankCheck(pid=os.getpid(), local_rank=0, local_world_size=1,
                     expected_cpus=tuple(sorted(os.sched_getaffinity(0))), expected_policy="none", expected_mems=(),
                     expected_env=env)


def test_a_live_rank_gets_its_env_mismatches_once_each() -> None:
    # /proc/PID/environ is the environment the process started with (a variable set later is not in it)
    start = verify.proc_environ(os.getpid()) or {}
    assert start and "PIN_ABSENT" not in start and "ZZ_PIN_WANTED" not in start
    have = sorted(start.items())[0]
    rc = _rank({have[0]: have[1], "PIN_ABSENT": "x", "ZZ_PIN_WANTED": "y"})
    assert check_rank(rc) == ["env PIN_ABSENT=None, plan 'x'", "env ZZ_PIN_WANTED=None, plan 'y'"]
    assert rc.mismatches == ["env PIN_ABSENT=None, plan 'x'", "env ZZ_PIN_WANTED=None, plan 'y'"]
    assert rc.checks == 1 and rc.last > 0
    assert check_rank(rc) == []  # said once
    assert rc.checks == 2 and len(rc.mismatches) == 2


def test_a_rank_whose_environment_cannot_be_read_lacks_every_planned_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "proc_environ", lambda pid: None)  # the read refused; the process is alive
    rc = _rank({"OMP_NUM_THREADS": "4", "HOSTTUNE_LOCAL_RANK": "0"})
    assert check_rank(rc) == ["env HOSTTUNE_LOCAL_RANK=None, plan '0'", "env OMP_NUM_THREADS=None, plan '4'"]


def test_a_gone_rank_is_not_checked() -> None:
    rc = RankCheck(pid=2 ** 22 + 7, local_rank=0, local_world_size=1, expected_cpus=(0,), expected_policy="bind",
                   expected_mems=(0,), expected_env={"A": "1"})
    assert check_rank(rc) == [] and rc.checks == 0 and rc.mismatches == []
