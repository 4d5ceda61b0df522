"""Supervision by `hosttune exec` (hosttune/launch/supervise.py) in real processes, pinned before the issue-17
rebuild: a signal to hosttune reaches every process of the job (torchrun's ranks, a wrapper script's child) and
the job leaves nothing behind."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import TORCHRUN, job_processes
from conftest import torchrun_env as env

from hosttune.launch import procfs

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.integration


PY = sys.executable


# ---- signals reach every process of the job --------------------------------------------------------------------------
RANK_SCRIPT = r'''
import os, signal, sys, time
out = os.environ["PIN_OUT"]

def on(sig, frame):
    with open(os.path.join(out, f"signal-{os.getpid()}"), "w") as fh:
        fh.write(str(sig))
    os._exit(128 + sig)

for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
    signal.signal(s, on)
open(os.path.join(out, f"ready-{os.getpid()}"), "w").close()
time.sleep(120)
'''


WRAPPER = '''#!/bin/sh
"$PIN_PYTHON" "$(dirname "$0")/rank.py"
echo "$?" > "$PIN_OUT/wrapper-went-on"
'''


def signal_job(tmp: Path, command: List[str], ranks: int, sig: int, extra: List[str] = ()) -> Dict[int, int]:
    """Start `hosttune exec [extra] -- command`, wait for `ranks` ready ranks, send `sig` to hosttune only; return
    {rank pid: the signal it received}. Asserts the exit status and that nothing of the job is left."""
    out = tmp / "out"
    out.mkdir()
    e = env(PIN_OUT=str(out), PIN_PYTHON=PY)
    proc = subprocess.Popen([PY, "-m", "hosttune", "exec", *extra, "--", *command], env=e, cwd=tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(list(out.glob("ready-*"))) < ranks and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    pids = [int(p.name.split("-")[1]) for p in out.glob("ready-*")]
    assert len(pids) == ranks, proc.communicate(timeout=10)
    marker = f"PIN_OUT={out}"
    assert set(pids) <= set(job_processes(marker))
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    # A rank killed with the job may stay a zombie for a moment (its wrapper shell, its parent, died with it and
    # init has not reaped it yet): dead all the same. /proc/PID existing is not "left running" (CI, 2026-12-03).
    left = [p for p in job_processes(marker) if procfs.alive(p)]
    assert not left, f"left behind: {left}"
    assert not any(procfs.alive(p) for p in pids)
    got = {}
    for pid in pids:
        f = out / f"signal-{pid}"
        got[pid] = int(f.read_text()) if f.exists() else 0
    return got


def test_sighup_reaches_every_torchrun_rank_and_the_job_leaves_nothing_behind(tmp_path: Path) -> None:
    (tmp_path / "rank.py").write_text(RANK_SCRIPT)
    got = signal_job(tmp_path, [*TORCHRUN, "--nproc_per_node=2", str(tmp_path / "rank.py")], 2, signal.SIGHUP)
    assert sorted(got.values()) == [signal.SIGHUP, signal.SIGHUP], got


def test_under_the_hang_watch_a_signal_still_reaches_every_rank_and_the_status_is_128_plus_it(tmp_path: Path) -> None:
    """--hang-timeout pipes the job's output through hosttune and supervises plain jobs too; a signal is still the
    job's (128+N, not the hang status) and the job's hang directory is gone with it."""
    (tmp_path / "rank.py").write_text(RANK_SCRIPT)
    got = signal_job(tmp_path, [*TORCHRUN, "--nproc_per_node=2", str(tmp_path / "rank.py")], 2, signal.SIGTERM,
                     extra=["--hang-timeout", "1h"])
    assert sorted(got.values()) == [signal.SIGTERM, signal.SIGTERM], got
    assert not list(tmp_path.glob("hosttune-hang-*"))
    (tmp_path / "plain").mkdir()
    got = signal_job(tmp_path / "plain", [PY, str(tmp_path / "rank.py")], 1, signal.SIGINT,
                     extra=["--hang-timeout", "1h"])
    assert list(got.values()) == [signal.SIGINT], got
    assert not list((tmp_path / "plain").glob("hosttune-hang-*"))


def test_a_signal_reaches_the_whole_job_when_verify_runs_a_wrapper_script(tmp_path: Path) -> None:
    """The rank is the wrapper's child: only a signal to the job's process group reaches it as SIGHUP (the final
    sweep would reach it too, but with SIGTERM, after the wrapper has gone)."""
    (tmp_path / "rank.py").write_text(RANK_SCRIPT)
    wrapper = tmp_path / "train.sh"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    got = signal_job(tmp_path, [str(wrapper)], 1, signal.SIGHUP, extra=["--verify"])
    assert list(got.values()) == [signal.SIGHUP], got


JOB = """
import os, signal, sys, time
how = sys.argv[2]
if how == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(int(how)))
open(sys.argv[1], "w").close()
while True:
    time.sleep(1)
"""


def _signalled_job(tmp_path: Path, how: str, grace: str = "40") -> Tuple[int, str]:
    ready = tmp_path / "ready"
    env = dict(os.environ, HOSTTUNE_STOP_GRACE=grace)
    proc = subprocess.Popen([sys.executable, "-m", "hosttune", "exec", "--verify", "--", sys.executable, "-c", JOB,
                             str(ready), how], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), proc.communicate(timeout=30)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize("job_exit, status", [("3", 128 + signal.SIGTERM), ("0", 0)])
def test_after_a_forwarded_signal_a_failing_job_exits_128_plus_it_and_a_clean_exit_stays_0(
        tmp_path: Path, job_exit: str, status: int) -> None:
    rc, err = _signalled_job(tmp_path, job_exit)
    assert rc == status, err
    assert "killing it" not in err


def test_a_job_that_outlives_the_grace_after_a_signal_is_killed_and_says_so(tmp_path: Path) -> None:
    rc, err = _signalled_job(tmp_path, "ignore", grace="0")
    assert rc == 128 + signal.SIGKILL, err
    assert f"hosttune: job still running 0 s after signal {int(signal.SIGTERM)}; killing it" in err
