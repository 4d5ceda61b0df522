"""The job's guardian: a forked child of `hosttune exec` that stops the job when the launcher dies by any means.

A supervised job (torchrun, `--verify`) runs in its own process group, out of reach of the terminal's Ctrl-C, so a
launcher killed with SIGKILL (or OOM-killed) would leave torchrun and every rank running. Before the job starts the
launcher forks this guardian and keeps the only write end of a pipe (close-on-exec: the job never holds it). The
kernel closes that end whatever way the launcher ends; the guardian reads EOF, SIGTERMs every process of the job,
waits the grace period, then SIGKILLs what is left.

The job is tracked by something it cannot drop: the launcher is a child subreaper (PR_SET_CHILD_SUBREAPER), so a
process of the job that double-forks or calls setsid is re-parented to the launcher, not to init, and stays in the
launcher's process tree; the guardian records every descendant of the launcher it sees (pid with its start time, so
a reused pid is never hit) while the job runs. The launch marker in the environment catches the rest. On a normal
end the launcher says "done" and waits: the guardian then stops only stragglers (a rank's child that outlived it).

Protocol on the pipe, one line each: `job PID` (the job's top process), `done`.
"""

import os
import select
import signal
import sys
import time
from typing import Callable, Dict, Iterable, List, Optional, Set

from hosttune.launch.procfs import children, descendants, marked_processes, start_time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.25
DEEP_POLL_S = 2.0
STRAGGLER_GRACE_S = 2.0


def _prctl(option: int, arg: int) -> bool:
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, arg, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Orphans of this process's descendants are re-parented here (Linux 3.4+) instead of to init."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def pdeathsig_preexec(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A preexec_fn for the job's top process: its own process group, and `sig` when the launcher dies."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        prctl = None
    parent = os.getpid()

    def pre() -> None:
        os.setpgrp()
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
            if os.getppid() != parent:  # the launcher died before the prctl: nobody will tell us
                os.kill(os.getpid(), int(sig))

    return pre


def _alive(pid: int, start: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
        fields = raw[raw.rindex(b")") + 2 :].split()
    except (OSError, ValueError):
        return False
    return fields[0] not in (b"Z", b"X") and int(fields[19]) == start


class Guardian:
    """The launcher's handle on its guardian."""

    def __init__(self, pid: int, wfd: int) -> None:
        self.pid = pid
        self._w: Optional[int] = wfd

    @classmethod
    def start(cls, marker: str, grace: float, cleanup: Iterable[str] = ()) -> "Guardian":
        """Fork the guardian. `cleanup`: files it removes (with their private directory) if the launcher dies."""
        from hosttune.launch import handoff

        paths = list(cleanup)
        sys.stdout.flush()
        sys.stderr.flush()
        r, w = os.pipe()  # both close-on-exec (PEP 446): the job never inherits them
        launcher = os.getpid()
        pid = os.fork()
        if pid == 0:  # the guardian
            code = 0
            try:
                os.close(w)
                if not _guard(r, launcher, marker, grace):
                    for path in paths:
                        handoff.remove(path)
            except BaseException:  # noqa: BLE001 - a forked child must never return into the launcher's stack
                code = 1
            finally:
                os._exit(code)
        os.close(r)
        return cls(pid, w)

    def _send(self, line: str) -> None:
        if self._w is None:
            return
        try:
            os.write(self._w, line.encode() + b"\n")
        except OSError:
            pass  # the guardian is gone: the launcher's own sweep still runs

    def watch(self, job_pid: int) -> None:
        self._send(f"job {job_pid}")

    def finish(self) -> None:
        """Normal end: the guardian stops stragglers of the job, then exits; reap it and any re-parented orphans."""
        self._send("done")
        if self._w is not None:
            os.close(self._w)
            self._w = None
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        reap_orphans()


def reap_orphans() -> None:
    """Collect the exit status of processes re-parented to this subreaper (never blocks)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def reap_orphans_except(*keep: int) -> None:
    """While the job runs: collect re-parented orphans that died, leaving the job's top and the guardian alone
    (their status belongs to subprocess and `finish`)."""
    for pid in children(os.getpid()):
        if pid not in keep:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _say(msg: str) -> None:
    try:
        os.write(2, f"hosttune: {msg}\n".encode())
    except OSError:
        pass


def _record(seen: Dict[int, int], roots: Iterable[int], skip: int, deep: bool = True) -> None:
    for root in roots:
        for pid in descendants(root) if deep else children(root):
            if pid != skip and pid not in seen:
                st = start_time(pid)
                if st is not None:
                    seen[pid] = st


def _living(seen: Dict[int, int], marker: str, skip: int) -> List[int]:
    alive = [p for p, st in seen.items() if _alive(p, st)]
    _record(seen, alive, skip)  # children born since the last look
    alive = [p for p, st in seen.items() if _alive(p, st)]
    for pid in marked_processes(marker):
        if pid != skip and pid not in seen:
            st = start_time(pid)
            if st is not None:
                seen[pid] = st
                alive.append(pid)
    return alive


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _wait_gone(seen: Dict[int, int], marker: str, skip: int, seconds: float) -> List[int]:
    end = time.monotonic() + seconds
    while True:
        alive = _living(seen, marker, skip)
        if not alive or time.monotonic() >= end:
            return alive
        time.sleep(0.05)


def stop(seen: Dict[int, int], marker: str, grace: float, skip: int) -> None:
    """SIGTERM every living process of the job, SIGKILL what is left after `grace` s, until none is left."""
    alive = _living(seen, marker, skip)
    if not alive:
        return
    _signal(alive, signal.SIGTERM)
    alive = _wait_gone(seen, marker, skip, grace)
    for _ in range(20):  # a process may fork between the look and the kill: look again
        if not alive:
            return
        _signal(alive, signal.SIGKILL)
        alive = _wait_gone(seen, marker, skip, 1.0)


def _guard(r: int, launcher: int, marker: str, grace: float) -> bool:
    """The guardian's loop. True when the launcher said `done`, False when it died."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP):
        signal.signal(sig, signal.SIG_IGN)  # the terminal's keys reach the launcher, which forwards them
    try:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)  # keep stderr: the one line about a dead launcher goes there
        os.close(null)
    except OSError:
        pass
    me = os.getpid()
    seen: Dict[int, int] = {}
    jobs: Set[int] = set()
    buf = b""
    done = False
    next_deep = 0.0
    while not done:
        ready, _, _ = select.select([r], [], [], POLL_S)
        if ready:
            chunk = os.read(r, 4096)
            if not chunk:
                break  # EOF: the launcher is gone
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                word, _, arg = line.decode("ascii", "replace").partition(" ")
                if word == "done":
                    done = True
                elif word == "job" and arg.isdigit():
                    jobs.add(int(arg))
                    st = start_time(int(arg))
                    if st is not None:
                        seen[int(arg)] = st
        if not done:
            # Every tick the launcher's own children (a re-parented orphan lands there); the whole tree only every
            # DEEP_POLL_S, since ranks may have hundreds of threads whose children files must all be read. The deep
            # look matters when the launcher dies: torchrun (SIGTERM from PDEATHSIG) may be stopping its ranks
            # already, and a rank's setsid'd child then goes to init before the guardian could look for it.
            deep = time.monotonic() >= next_deep
            if deep:
                next_deep = time.monotonic() + DEEP_POLL_S
            _record(seen, [launcher], me, deep=deep)
    if done:
        _record(seen, [launcher], me)  # the launcher is waiting for us: its tree is complete
        stop(seen, marker, STRAGGLER_GRACE_S, me)
        return True
    if seen or jobs:
        _say(f"the launcher (pid {launcher}) ended without stopping its job; stopping it (SIGTERM, then SIGKILL "
             f"after {grace:g} s)")
    stop(seen, marker, grace, me)
    return False
