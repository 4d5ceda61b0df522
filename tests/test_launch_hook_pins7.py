"""Pins for hosttune.launch.hook.spawn_share (issue 21, session 9 practice rounds): a multiprocessing child's share of
the job's threads, as (threads, children counted, the job's threads). The job's threads are the top process's
OMP_NUM_THREADS, else this process's own, else the CPUs this process may run on (its affinity, which a bound job
narrows: not the machine's CPU count); the children are the launcher's hint or the siblings seen, whichever is more."""

import os
from typing import Iterator

import pytest

from hosttune.launch.hook import spawn_share
from hosttune.policy import names


@pytest.fixture
def one_cpu() -> Iterator[int]:
    """This thread bound to one of its CPUs for the test (a bound rank), then given its CPUs back."""
    before = os.sched_getaffinity(0)
    if (os.cpu_count() or 1) < 2:  # bound to one of one, the count and the affinity agree
        pytest.skip("needs a machine with two CPUs")
    cpu = min(before)
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        os.sched_setaffinity(0, before)


def test_without_a_thread_count_the_job_has_the_cpus_it_is_bound_to(one_cpu: int) -> None:
    assert spawn_share({}, {names.SPAWN_PROCS: "1"}) == (1, 1, 1)
    assert spawn_share({"top_env": {}}, {names.SPAWN_PROCS: "1", "OMP_NUM_THREADS": "0"}) == (1, 1, 1)


def test_the_top_processs_thread_count_wins_and_is_shared_among_the_children_hinted() -> None:
    data = {"top_env": {"OMP_NUM_THREADS": "8"}}
    assert spawn_share(data, {names.SPAWN_PROCS: "4:pool", "OMP_NUM_THREADS": "2"}) == (2, 4, 8)
    assert spawn_share(data, {names.SPAWN_PROCS: "3"}) == (2, 3, 8)
    assert spawn_share({}, {names.SPAWN_PROCS: "16", "OMP_NUM_THREADS": "6"}) == (1, 16, 6)  # never below one


def test_a_thread_count_of_seven_digits_is_no_count() -> None:
    mine = len(os.sched_getaffinity(0))
    assert spawn_share({"top_env": {"OMP_NUM_THREADS": "1" * 7}}, {names.SPAWN_PROCS: "1"}) == (mine, 1, mine)
    assert spawn_share({}, {names.SPAWN_PROCS: "9" * 7}) == (mine, 1, mine)  # nor is a hint of seven digits


# ---- _TopWatch.audit: the top process that makes itself local rank 0 and starts its other ranks ----------------------
# apply_rank (which binds this process) is the watch's own attribute: replaced here by one that records the call and
# answers (or fails) as the real one would, so the pytest process is never bound.


@pytest.fixture
def rank0_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.delenv(names.JOB_CPUS, raising=False)  # set by the watch: removed again after the test


def _job_cpus() -> str:
    from hosttune.cpulist import format_cpulist

    return format_cpulist(sorted(os.sched_getaffinity(0)))


def test_a_rank_started_by_rank_0_rebinds_it_and_tells_the_child_the_jobs_cpus(
        rank0_of_two: None, capsys: pytest.CaptureFixture) -> None:
    from hosttune.launch.hook import _TopWatch

    calls = []
    watch = _TopWatch({"plans": {}})
    watch.apply_rank = lambda data, local, world, environ: calls.append((data, local, world)) or (None, ["a note"])
    child_env = {"LOCAL_RANK": "1", "PATH": "/usr/bin"}
    watch.audit("subprocess.Popen", ("python3", ["python3", "train.py"], None, child_env))
    assert calls == [({"plans": {}}, 0, 2)]
    assert child_env == {"LOCAL_RANK": "1", "PATH": "/usr/bin", names.JOB_CPUS: _job_cpus()}
    assert os.environ[names.JOB_CPUS] == _job_cpus()
    assert capsys.readouterr().err == "hosttune: rank 0/2 (rebound when it started its ranks): a note\n"
    assert watch.done and not watch.busy
    watch.audit("subprocess.Popen", ("python3", ["python3", "train.py"], None, dict(child_env)))
    assert len(calls) == 1  # once per process


def test_a_rank_0_that_cannot_be_rebound_says_why_and_keeps_going(
        rank0_of_two: None, capsys: pytest.CaptureFixture) -> None:
    from hosttune.launch.hook import _TopWatch

    def fails(data: object, local: int, world: int, environ: object) -> None:
        raise RuntimeError("no such CPU")

    watch = _TopWatch({})
    watch.apply_rank = fails
    watch.audit("subprocess.Popen", ("python3", ["python3"], None, {"LOCAL_RANK": "1"}))
    assert capsys.readouterr().err == (
        "hosttune: this process became local rank 0 of its own ranks but was not rebound (no such CPU); it keeps the "
        "whole job's CPUs\n")
    assert watch.done and not watch.busy


def test_other_starts_are_not_a_rank_0(rank0_of_two: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from hosttune.launch.hook import _TopWatch

    calls = []
    watch = _TopWatch({})
    watch.apply_rank = lambda *a: calls.append(a) or (None, [])
    watch.audit("os.system", ("ls",))
    watch.audit("subprocess.Popen", ("ls", ["ls"], None, {"PATH": "/usr/bin"}))  # the child has no LOCAL_RANK
    watch.audit("subprocess.Popen", ("ls", ["ls"], None, None))  # the child inherits: no new rank
    assert calls == [] and not watch.done
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    watch.audit("subprocess.Popen", ("python3", ["python3"], None, {"LOCAL_RANK": "0"}))
    assert calls == [] and watch.done  # a world of one: nothing to rebind
