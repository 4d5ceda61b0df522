"""The job dies with its launcher (hosttune/launch/guardian.py): SIGKILL of `hosttune exec` stops the supervised
job, and a rank's child that left the session and dropped every variable is still found and stopped. Issue 11, item
13. Processes are found in /proc by an environment tag or an exact command line, and waited for, never slept for."""

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Dict, List

import _exechelp
from _exechelp import PY, _torchrun_job, _wait_for, hosttune

from hosttune.launch import procfs

fake_torchrun = _exechelp.fake_torchrun  # the fixture, used here by its name


def _tagged(tag: str) -> List[int]:
    """Living processes whose environment carries TEST_TAG=tag (one inside execve is waited for)."""
    return [pid for pid in procfs.environ_holders(f"TEST_TAG={tag}") if procfs.alive(pid)]


def _by_cmdline(argv: List[str]) -> List[int]:
    want = "\0".join(argv).encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if Path(f"/proc/{name}/cmdline").read_bytes() == want:
                    state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
                    if state not in (b"Z", b"X"):
                        found.append(int(name))
            except OSError:
                continue
    return found


def _guardian_of(launcher: int) -> int:
    """The launcher's guardian: its child forked without an exec (the same command line)."""
    cmdline = Path(f"/proc/{launcher}/cmdline").read_bytes()
    for child in Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split():
        try:
            if Path(f"/proc/{child}/cmdline").read_bytes() == cmdline:
                return int(child)
        except OSError:
            continue
    raise AssertionError(f"no guardian among the children of {launcher}")


def _sleeps(pid: int) -> int:
    """How many times `pid` has gone to sleep (each tick of the guardian's select loop is one)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/status has no voluntary_ctxt_switches")


def _wait_for_a_deep_look(guardian_pid: int) -> None:
    """Wait until the guardian has run a look at the launcher's whole tree that began after now: it starts one on
    the first tick at least DEEP_POLL_S after the last, so once DEEP_POLL_S has passed, a whole tick that starts
    after that (seen as two more sleeps of the guardian's own, one more allowed for a sleep inside a look) is such a
    look or comes after one. The guardian's own progress is waited for, however slow the machine."""
    from hosttune.launch import guardian

    since = time.monotonic()
    while time.monotonic() - since < guardian.DEEP_POLL_S:
        time.sleep(0.1)
    base = _sleeps(guardian_pid)
    assert _wait_for(lambda: _sleeps(guardian_pid) >= base + 3, 120), "the guardian stopped ticking"


def _kill_all(pids: List[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_sigkill_of_the_launcher_stops_a_supervised_job(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    n = str(3000 + int(uuid.uuid4().int % 1000)) + ".75"  # a child that leaves the session and drops every variable
    env = dict(os.environ, TEST_TAG=tag, HOSTTUNE_STOP_GRACE="3")
    proc = subprocess.Popen([PY, "-m", "hosttune", "exec", "--verify", "--", "sh", "-c",
                             f"setsid env -i sleep {n} & sleep 300 & sleep 301"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert _wait_for(lambda: len(_tagged(tag)) >= 4 and _by_cmdline(["sleep", n]), 60)  # hosttune, guardian, sh..
        _wait_for_a_deep_look(_guardian_of(proc.pid))  # the guardian has looked at the whole tree since `sleep n` ran
        proc.kill()
        proc.wait()
        assert _wait_for(lambda: not _tagged(tag) and not _by_cmdline(["sleep", n]), 60), \
            [Path(f"/proc/{p}/cmdline").read_bytes() for p in _tagged(tag)]
        err = proc.stderr.read().decode() if proc.stderr else ""
        assert "ended without stopping its job" in err
    finally:
        _kill_all(_tagged(tag) + _by_cmdline(["sleep", n]))
        if proc.stderr:
            proc.stderr.close()


def test_a_ranks_setsid_child_without_the_marker_is_stopped(fake_torchrun: Dict[str, str]) -> None:
    n = str(3000 + int(uuid.uuid4().int % 1000)) + ".25"
    r = hosttune(*_torchrun_job("sh", "-c", f"setsid env -i sleep {n} & exit 0"), env=fake_torchrun)
    try:
        assert r.returncode == 0, r.stderr
        assert _wait_for(lambda: not _by_cmdline(["sleep", n]), 60)
    finally:
        _kill_all(_by_cmdline(["sleep", n]))
