"""exec --verify reads a hooked Python rank only after its hook has run (issue 21: under load a rank older than the
grace may still be waiting for a CPU before its interpreter reaches the hook; reading it then reported a MISMATCH
for a rank that was about to bind itself). Real processes, their state and CPU time read back from /proc."""

import signal
import subprocess
import sys
import time

from hosttune.launch import verify
from hosttune.launch.procfs import cpu_seconds


def _older_than_grace(pid: int) -> None:
    deadline = time.monotonic() + 60
    while verify._age(pid) < verify.HOOK_GRACE_S:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _start(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_a_rank_that_has_not_run_since_it_started_is_not_read_however_old() -> None:
    # SIGSTOPped before it is scheduled much: like a runnable rank waiting for a CPU, it neither blocked by itself
    # nor spent CPU; wall time passes all the same.
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        p.send_signal(signal.SIGSTOP)
        _older_than_grace(p.pid)
        assert (cpu_seconds(p.pid) or 0.0) < verify.HOOK_CPU_S
        assert not verify._past_hook(p.pid)
    finally:
        p.kill()
        p.wait()


def test_a_rank_waiting_by_itself_after_start_up_is_read() -> None:
    p = _start("import sys, time\nprint('up', flush=True)\ntime.sleep(120)")
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "up"
        _older_than_grace(p.pid)
        deadline = time.monotonic() + 60
        while not verify._past_hook(p.pid):  # state S once it is in its own sleep
            assert time.monotonic() < deadline, "a sleeping rank past start-up was never read"
            time.sleep(0.05)
    finally:
        p.kill()
        p.wait()


def test_a_rank_computing_past_start_up_is_read() -> None:
    p = _start("print('up', flush=True)\n"
               "while True:\n    pass")
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "up"
        deadline = time.monotonic() + 120
        while (cpu_seconds(p.pid) or 0.0) < verify.HOOK_CPU_S or verify._age(p.pid) < verify.HOOK_GRACE_S:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert verify._past_hook(p.pid)
    finally:
        p.kill()
        p.wait()
