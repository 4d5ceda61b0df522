"""Pins of hosttune/launch/guardian.py (issue 21, mutation round 5): how a process is named for good (pid and start
time), which processes the guardian records and stops, SIGTERM then SIGKILL after the grace, and the guardian itself
driven by a real launcher (a child interpreter, so no pytest worker forks or becomes a subreaper): the `job PID` and
`done` lines, what it does when the launcher dies (stops the job, removes the cleanup files, says so on stderr) and
when it says done (stops only stragglers, keeps the files), the signals it ignores and the descriptors it keeps.
Every wait is for a line, a file or a /proc state, never a sleep for a phase."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Dict, List

import hosttune
from hosttune.launch import guardian
from hosttune.launch.procfs import alive, start_time
from hosttune.policy import names

REPO = str(Path(hosttune.__file__).resolve().parent.parent)


def _sleeper(*, marker: str = "", ignore_term: bool = False, grandchild: bool = False) -> "subprocess.Popen[str]":
    """A python child that says `ready` (with its grandchild's pid when asked) once its handlers are in place."""
    code = "import signal, subprocess, sys, time\n"
    # the signals sent start at their default: an ignored one (nohup, or one left ignored here) crosses exec
    code += "for s in (signal.SIGHUP, signal.SIGTERM): signal.signal(s, signal.SIG_DFL)\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    if grandchild:
        code += ("g = subprocess.Popen([sys.executable, '-c', 'import time; print(1, flush=True); time.sleep(600)'],"
                 " stdout=subprocess.PIPE)\ng.stdout.readline()\nprint('ready', g.pid, flush=True)\n")
    else:
        code += "print('ready', flush=True)\n"
    code += "while True: time.sleep(60)\n"
    env = dict(os.environ)
    if marker:
        env[names.LAUNCH_ID] = marker
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    assert p.stdout.readline().startswith("ready")
    return p


def _grandchild_of(p: "subprocess.Popen[str]") -> int:
    # the ready line was consumed by _sleeper; the grandchild's pid is in the child's children file
    for _ in range(3000):
        kids = guardian.children(p.pid)
        if kids:
            return kids[0]
        time.sleep(0.01)
    raise AssertionError("no grandchild")


def _end(*procs: "subprocess.Popen[str]") -> None:
    for p in procs:
        for kid in guardian.descendants(p.pid):
            try:
                os.kill(kid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if p.poll() is None:
            p.kill()
        p.wait()
        if p.stdout is not None:
            p.stdout.close()


def _wait_gone(pid: int, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < end, f"pid {pid} is still alive"
        time.sleep(0.01)


# --- _alive: a pid with its start time names one process for good -----------------------------------------------

def test_alive_needs_the_same_start_time_and_a_living_process() -> None:
    me = os.getpid()
    st = start_time(me)
    assert st is not None
    assert guardian._alive(me, st) is True
    assert guardian._alive(me, st + 1) is False  # a reused pid is another process
    assert guardian._alive(me, st - 1) is False


def test_alive_is_false_for_a_zombie_and_for_a_pid_that_is_gone() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    st = start_time(p.pid)
    assert st is not None
    end = time.monotonic() + 60
    while guardian._alive(p.pid, st):  # it exits; unreaped, it is a zombie
        assert time.monotonic() < end
        time.sleep(0.01)
    assert Path(f"/proc/{p.pid}/stat").exists()  # still there, as a zombie
    p.wait()
    assert guardian._alive(p.pid, st) is False
    assert guardian._alive(2 ** 22 + 7, 1) is False  # above pid_max's ceiling: no such process


# --- _record and _living ---------------------------------------------------------------------------------------------

def test_record_deep_takes_the_whole_tree_with_start_times_and_shallow_only_children() -> None:
    p = _sleeper(grandchild=True)
    try:
        g = _grandchild_of(p)
        shallow: Dict[int, int] = {}
        guardian._record(shallow, [p.pid], skip=-1, deep=False)
        assert shallow == {g: start_time(g)}
        deep: Dict[int, int] = {}
        guardian._record(deep, [os.getpid()], skip=-1)
        assert deep[p.pid] == start_time(p.pid) and deep[g] == start_time(g)
        skipped: Dict[int, int] = {}
        guardian._record(skipped, [os.getpid()], skip=p.pid)  # the guardian skips itself, not what is below it
        assert p.pid not in skipped and g in skipped
        kept = {g: 12345}
        guardian._record(kept, [p.pid], skip=-1)
        assert kept == {g: 12345}  # the first start time seen stays: a pid reused later is not the job's
    finally:
        _end(p)


def test_living_drops_the_dead_adds_new_children_and_the_marked_and_never_the_skipped() -> None:
    marker = uuid.uuid4().hex
    parent = _sleeper(grandchild=True)
    marked = _sleeper(marker=marker)
    skipped = _sleeper(marker=marker)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_st = start_time(dead.pid) or 1
    dead.wait()
    try:
        g = _grandchild_of(parent)
        seen = {parent.pid: start_time(parent.pid) or 0, dead.pid: dead_st}
        got = guardian._living(seen, marker, skip=skipped.pid)
        assert sorted(got) == sorted([parent.pid, g, marked.pid])
        assert seen[g] == start_time(g) and seen[marked.pid] == start_time(marked.pid)
        assert skipped.pid not in seen
    finally:
        _end(parent, marked, skipped)


# --- _signal and stop -------------------------------------------------------------------------------------------------

def test_signal_reaches_the_living_and_skips_the_gone_quietly() -> None:
    p = _sleeper()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        guardian._signal([gone.pid, p.pid], signal.SIGHUP)
        assert p.wait(timeout=60) == -signal.SIGHUP
    finally:
        _end(p)


def test_stop_sigterms_and_sigkills_what_ignores_it_then_returns_with_nothing_left() -> None:
    soft = _sleeper()
    hard = _sleeper(ignore_term=True)
    seen = {p.pid: start_time(p.pid) or 0 for p in (soft, hard)}
    try:
        guardian.stop(seen, uuid.uuid4().hex, 0.1, skip=-1)
        # both are our children, so they stay zombies (not alive) until reaped: stop returned with none living
        assert not guardian._alive(soft.pid, seen[soft.pid]) and not guardian._alive(hard.pid, seen[hard.pid])
        assert soft.wait(timeout=60) == -signal.SIGTERM
        assert hard.wait(timeout=60) == -signal.SIGKILL
    finally:
        _end(soft, hard)


def test_stop_waits_the_grace_for_a_process_that_ends_on_sigterm_slowly() -> None:
    """A process that cleans up for a while after SIGTERM is given the grace, not killed at once."""
    code = ("import signal, sys, time\n"
            "def h(*a):\n    print('term', flush=True)\n    time.sleep(0.3)\n    sys.exit(5)\n"
            "signal.signal(signal.SIGTERM, h)\nprint('ready', flush=True)\nwhile True: time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    assert p.stdout.readline() == "ready\n"
    try:
        guardian.stop({p.pid: start_time(p.pid) or 0}, uuid.uuid4().hex, 120.0, skip=-1)
        assert p.wait(timeout=60) == 5
    finally:
        _end(p)


def test_stop_with_nothing_living_sends_nothing() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    st = start_time(dead.pid) or 1
    dead.wait()
    t0 = time.monotonic()
    guardian.stop({dead.pid: st}, uuid.uuid4().hex, 600.0, skip=-1)  # would wait 600 s if it waited at all
    assert time.monotonic() - t0 < 300


def test_wait_gone_returns_what_still_lives_when_the_time_is_up() -> None:
    p = _sleeper(ignore_term=True)
    try:
        seen = {p.pid: start_time(p.pid) or 0}
        assert guardian._wait_gone(seen, uuid.uuid4().hex, -1, 0.0) == [p.pid]
    finally:
        _end(p)


# --- the guardian, driven by a real launcher -------------------------------------------------------------------------

_LAUNCHER = textwrap.dedent("""
    import os, signal, subprocess, sys
    from hosttune.launch import guardian
    mode, marker, grace, cleanup = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    guardian.become_subreaper()
    g = guardian.Guardian.start(marker, grace, [cleanup])
    job_code = "import os, signal, subprocess, sys, time\\n"
    if mode == "die-hard":
        job_code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
    job_code += "s = subprocess.Popen(['setsid', 'sleep', '600'], env={})\\nprint('job', s.pid, flush=True)\\n"
    if mode != "done":
        job_code += "time.sleep(600)\\n"
    job = subprocess.Popen([sys.executable, "-c", job_code], stdout=subprocess.PIPE, text=True,
                           preexec_fn=guardian.pdeathsig_preexec())
    g.watch(job.pid)
    straggler = int(job.stdout.readline().split()[1])
    print("pids", g.pid, job.pid, straggler, os.getpgid(job.pid), flush=True)
    if mode != "done":
        sys.stdin.readline()  # the test has looked at the guardian
        os.kill(os.getpid(), signal.SIGKILL)
    job.wait()
    sys.stdin.readline()
    g.finish()
    print("finished", flush=True)
""")


def _launch(tmp_path: Path, mode: str, grace: float = 0.2) -> "tuple[subprocess.Popen[str], List[int], Path]":
    cleanup = tmp_path / "handoff.json"
    cleanup.write_text("{}")
    env = dict(os.environ, PYTHONPATH=REPO)
    p = subprocess.Popen([sys.executable, "-c", _LAUNCHER, mode, uuid.uuid4().hex, str(grace), str(cleanup)],
                         env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line.startswith("pids"), (line, p.stderr.read() if p.stderr else "")
    return p, [int(x) for x in line.split()[1:]], cleanup


def _wait_guardian_ready(gpid: int) -> None:
    """The guardian has set its signals and descriptors once its stdin is /dev/null (the last of them)."""
    end = time.monotonic() + 60
    while True:
        try:
            if os.readlink(f"/proc/{gpid}/fd/0") == os.devnull:
                return
        except OSError:
            pass
        assert time.monotonic() < end, "the guardian never set up"
        time.sleep(0.01)


def _sigign(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError("no SigIgn")


def test_when_the_launcher_dies_the_guardian_stops_the_job_and_its_setsid_child_and_removes_the_cleanup(
        tmp_path: Path) -> None:
    p, (gpid, job, straggler, pgid), cleanup = _launch(tmp_path, "die-hard", grace=0.2)
    try:
        _wait_guardian_ready(gpid)
        ign = _sigign(gpid)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP):
            assert ign & (1 << (sig - 1)), f"the guardian does not ignore {sig!r}"
        assert os.readlink(f"/proc/{gpid}/fd/1") == os.devnull
        assert os.readlink(f"/proc/{gpid}/fd/2") != os.devnull  # its one line about a dead launcher goes there
        assert pgid == job  # the job leads its own process group (out of reach of the terminal's Ctrl-C)
        os.kill(gpid, signal.SIGTERM)  # ignored: the terminal's keys are for the launcher
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
        _, err = p.communicate(timeout=120)  # the guardian holds stderr until it is done
        assert p.returncode == -signal.SIGKILL
        for pid in (job, straggler):  # the job ignores SIGTERM: SIGKILLed after the grace
            _wait_gone(pid)
        assert not cleanup.exists()
        launcher = p.pid
        assert (f"hosttune: the launcher (pid {launcher}) ended without stopping its job; stopping it (SIGTERM, "
                f"then SIGKILL after 0.2 s)") in err
    finally:
        _kill_all(p, job, straggler, gpid)


def test_on_done_the_guardian_stops_only_stragglers_and_keeps_the_cleanup_files(tmp_path: Path) -> None:
    p, (gpid, job, straggler, _), cleanup = _launch(tmp_path, "done")
    try:
        assert alive(straggler)
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
        out, err = p.communicate(timeout=120)
        assert out.splitlines()[-1] == "finished" and p.returncode == 0, err
        _wait_gone(straggler)  # a setsid'd child without the marker, re-parented to the launcher (its subreaper)
        assert cleanup.exists()  # a normal end: the launcher removes its own files
        assert "ended without stopping its job" not in err
        assert not alive(gpid)  # finish reaped the guardian
    finally:
        _kill_all(p, job, straggler, gpid)


def _kill_all(p: "subprocess.Popen[str]", *pids: int) -> None:
    for pid in pids:
        try:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if p.poll() is None:
        p.kill()
    p.communicate()


# --- the handle's own contract ----------------------------------------------------------------------------------------

def test_a_handle_whose_guardian_is_gone_neither_raises_nor_blocks() -> None:
    r, w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    os.close(r)  # the guardian's end is closed: writes fail with EPIPE (SIGPIPE is ignored by Python)
    g = guardian.Guardian(child.pid, w)
    g.watch(123)
    g.finish()  # waitpid of a reaped child: ChildProcessError, swallowed
    assert g._w is None
    g.watch(1)  # after finish: nothing to write to
    g.finish()
    try:
        os.fstat(w)
        raise AssertionError("finish left the write end open")
    except OSError:
        pass


def test_constants_the_protocol_depends_on() -> None:
    assert guardian.PR_SET_PDEATHSIG == 1 and guardian.PR_SET_CHILD_SUBREAPER == 36  # include/uapi/linux/prctl.h
    assert guardian.STRAGGLER_GRACE_S == 2.0
    assert guardian.POLL_S < guardian.DEEP_POLL_S
