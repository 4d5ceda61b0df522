"""Pins (issue 21, second mutation round) for hosttune/launch/hang.py: the signalled thread's stack first, torch's own
frames (site-packages) kept as the place, a hang collected once, the caller's own PYTHONUNBUFFERED and flight
recorder paths kept, and a hung job's exit status 124 (timeout(1)'s, what the README and `exec --help` promise)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import job_processes, torchrun_env

from hosttune.launch import hang
from hosttune.launch.hang import Frame, Progress, parse_stacks, where

SITE = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"


def test_the_current_thread_comes_first_wherever_the_dump_lists_it() -> None:
    dump = ('Thread 0x00007f0000000001 (most recent call first):\n'
            '  File "/home/u/job.py", line 7 in helper\n'
            'Current thread 0x00007f0000000002 (most recent call first):\n'
            '  File "/home/u/job.py", line 20 in train_step\n'
            '  File "/home/u/job.py", line 30 in <module>\n')
    stacks = parse_stacks(dump)
    assert [s[0].func for s in stacks] == ["train_step", "helper"]
    assert where(stacks) == Frame("/home/u/job.py", 20, "train_step")


def test_a_frame_in_site_packages_is_a_place_not_the_standard_library() -> None:
    stacks = [[Frame("/usr/lib/python3.11/threading.py", 320, "wait"), Frame(SITE, 2950, "all_reduce"),
               Frame("/home/u/job.py", 12, "step")]]
    assert where(stacks) == Frame(SITE, 2950, "all_reduce")


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_collected_hang_is_not_stalled_again(tmp_path: Path) -> None:
    clock = _Clock()
    w = hang.Watch(5.0, str(tmp_path))
    w.progress = Progress(clock)
    w.progress.moved()
    clock.now += 6
    assert w.stalled()
    lines = w.collect(f"no-such-launch-{os.getpid()}")  # nothing armed: nothing signalled, nothing to wait for
    assert lines[0].startswith("no output from the job for 5 s")
    clock.now += 60
    assert not w.stalled()  # once stopped and said, never collected twice


def test_the_callers_own_unbuffered_and_flight_recorder_paths_stay(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    mine = {"PYTHONUNBUFFERED": "0", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/scratch/fr-",
            "TORCH_FR_DUMP_TEMP_FILE": "/scratch/fr2-", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": "/scratch/pipe-"}
    env = dict(mine)
    w = hang.Watch.start(5.0, "55-userwins", env)
    try:
        assert {k: env[k] for k in mine} == mine and env["HOSTTUNE_HANG_DIR"] == w.dir
    finally:
        w.finish()


@pytest.mark.integration
def test_a_hung_plain_job_exits_124(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text("import threading\nprint('started', flush=True)\nthreading.Event().wait()\n")
    res = subprocess.run([sys.executable, "-m", "hosttune", "exec", "--hang-timeout", "2", "--", sys.executable,
                          str(job)], env=torchrun_env(HANG_PIN=str(tmp_path)), cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 124, res.stderr[-3000:]
    assert "started" in res.stdout and "hosttune: hang: " in res.stderr
    assert not job_processes(f"HANG_PIN={tmp_path}")


def test_of_two_dumps_only_the_last_counts_a_thread_gone_since_included() -> None:
    """A stacks file written twice (the signal sent again): a thread of the first dump that ended before the second
    is not in the answer."""
    first = ('Thread 0x00000000000000aa (most recent call first):\n'
             '  File "/home/u/job.py", line 5 in loader_worker\n'
             'Current thread 0x00000000000000bb (most recent call first):\n'
             '  File "/home/u/job.py", line 9 in step\n')
    second = ('Current thread 0x00000000000000bb (most recent call first):\n'
              '  File "/home/u/job.py", line 11 in all_reduce_wait\n')
    stacks = parse_stacks(first + second)
    assert [[f.func for f in s] for s in stacks] == [["all_reduce_wait"]]
