"""hosttune/launch/supervise.py's supervision loop (`_supervise`, reached by `exec --verify`) as a user sees it: the
exit status after a forwarded signal, and the kill when the job outlives $HOSTTUNE_STOP_GRACE after it."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Tuple

import pytest

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
