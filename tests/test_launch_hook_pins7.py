"""Pins for hosttune.launch.hook.spawn_share (issue 21, session 9 practice rounds): a multiprocessing child's share of
the job's threads, as (threads, children counted, the job's threads). The job's threads are the top process's
OMP_NUM_THREADS, else this process's own, else the CPUs this process may run on (its affinity, which a bound job
narrows: not the machine's CPU count); the children are the launcher's hint or the siblings seen, whichever is more.
Then _TopWatch.audit (a top process that becomes rank 0) and arm_stacks (the hang watch's stacks file: only in the
job's own private directory, never through a link)."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

import hosttune
from hosttune.launch.hook import HANG_DIR, STACKS_PREFIX, spawn_share
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
    # set by the watch: removed again after the test (a delenv of an unset name alone records nothing to undo)
    monkeypatch.setenv(names.JOB_CPUS, "")
    monkeypatch.delenv(names.JOB_CPUS)


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


# ---- arm_stacks: in a child interpreter (it registers a faulthandler on the stacks signal) ---------------------------

ARM = """\
import json, os, sys
from hosttune.launch.hook import arm_stacks
print(json.dumps({"path": arm_stacks(dict(os.environ), ["train.py"]), "pid": os.getpid()}))
"""


def _arm(hang_dir: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(Path(hosttune.__file__).resolve().parent.parent), RANK="3")
    env[HANG_DIR] = hang_dir
    done = subprocess.run([sys.executable, "-c", ARM], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_arm_stacks_writes_only_into_the_jobs_own_private_directory(tmp_path: Path) -> None:
    d = tmp_path / "hang"
    d.mkdir(mode=0o700)
    got = _arm(str(d))
    name = f"{STACKS_PREFIX}rank3-pid{got['pid']}.txt"
    assert got["path"] == str(d / name)
    assert (d / name).read_text().startswith(f"# rank3 pid {got['pid']}: Python stacks, every thread, on signal ")
    link = tmp_path / "link"
    link.symlink_to(d, target_is_directory=True)
    got = _arm(str(link))  # a variable that names a link arms nothing, even to the right directory
    assert got["path"] is None
    assert sorted(p.name for p in d.iterdir()) == [name]
    os.chmod(d, 0o755)  # a directory others may read: no stacks written there
    assert _arm(str(d))["path"] is None
