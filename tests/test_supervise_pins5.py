"""Pins of hosttune/launch/supervise.py's own decisions, in-process where they are pure and with real child
processes where they are about processes (issue 21, mutation round 5): the grace period's accepted range, the
shell's exit-status mapping, the marker sweep (SIGTERM, then SIGKILL for what ignores it), the kill of an unfinished
job, the signal forwarder, and `_supervise` end to end in a child interpreter (it makes its process a subreaper,
which a pytest worker must not become). Every wait is for a line the child prints, never a sleep."""

import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Dict, List

import pytest

import hosttune
from hosttune.errors import UserError
from hosttune.launch import supervise
from hosttune.policy import names

REPO = str(Path(hosttune.__file__).resolve().parent.parent)


# --- _grace: HOSTTUNE_STOP_GRACE, seconds from 0 to a day --------------------------------------------------------

@pytest.mark.parametrize("raw,want", [(None, 40.0), ("", 40.0), ("0", 0.0), ("2.5", 2.5), ("86400", 86400.0)])
def test_grace_takes_the_default_or_any_number_of_seconds_from_0_to_a_day(
        monkeypatch: pytest.MonkeyPatch, raw: str, want: float) -> None:
    if raw is None:
        monkeypatch.delenv(names.STOP_GRACE, raising=False)
    else:
        monkeypatch.setenv(names.STOP_GRACE, raw)
    assert supervise._grace() == want
    assert supervise.DEFAULT_GRACE_S == 40.0 and supervise.MAX_GRACE_S == 86400.0


@pytest.mark.parametrize("raw", ["86400.5", "-0.001", "-1", "nan", "inf", "soon", "1e9"])
def test_grace_refuses_what_is_not_seconds_from_0_to_a_day_and_names_the_variable(
        monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(names.STOP_GRACE, raw)
    with pytest.raises(UserError) as err:
        supervise._grace()
    msg = str(err.value)
    assert msg.startswith(f"{names.STOP_GRACE}={raw} is not a number of seconds"), msg
    assert msg.endswith("from 0 to 86400"), msg


def test_grace_message_shows_at_most_40_characters_of_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.STOP_GRACE, "x" * 100)
    with pytest.raises(UserError) as err:
        supervise._grace()
    assert f"={'x' * 40} is not" in str(err.value)


# --- _status: the shell's way ------------------------------------------------------------------------------------

@pytest.mark.parametrize("rc,received,want", [
    (0, [], 0),
    (3, [], 3),
    (0, [signal.SIGTERM], 0),  # a clean exit after a forwarded signal stays 0
    (1, [signal.SIGTERM], 128 + signal.SIGTERM),
    (1, [signal.SIGHUP, signal.SIGINT], 128 + signal.SIGHUP),  # the first signal forwarded names the status
    (-signal.SIGKILL, [], 128 + signal.SIGKILL),
    (-signal.SIGINT, [signal.SIGTERM], 128 + signal.SIGINT),  # the signal it died of wins over the forwarded one
    (255, [], 255),
])
def test_status_is_128_plus_the_signal_it_died_of_or_was_sent_when_it_failed(
        rc: int, received: List[int], want: int) -> None:
    assert supervise._status(rc, received) == want


def test_forwarded_signals_are_sigint_sigterm_and_sighup() -> None:
    assert set(supervise.FORWARDED) == {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


# --- _which_or_fail ------------------------------------------------------------------------------------------------

def test_a_path_that_does_not_exist_is_refused_by_name(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope" / "train")
    with pytest.raises(UserError) as err:
        supervise._which_or_fail(missing, {"PATH": os.defpath})
    assert str(err.value) == f"exec: {missing}: no such file"


def test_a_bare_name_is_found_on_the_environments_path_not_this_processes(tmp_path: Path) -> None:
    prog = tmp_path / "mytool"
    prog.write_text("#!/bin/sh\nexit 0\n")
    prog.chmod(0o755)
    assert supervise._which_or_fail("mytool", {"PATH": str(tmp_path)}) == str(prog)
    assert supervise._which_or_fail(str(prog), {"PATH": "/nonexistent"}) == str(prog)


# --- real processes: the sweep, the kill of an unfinished job, the forwarder --------------------------------------

def _child(marker: str, *, ignore_term: bool = False, session: bool = False) -> "subprocess.Popen[str]":
    """A python child carrying `marker` as the launch id; returns once it said it is ready (handlers in place)."""
    code = ("import signal, sys, time\n"
            # the signals sent start at their default: an ignored one (nohup, or one left ignored here) crosses exec
            + "for s in (signal.SIGHUP, signal.SIGTERM): signal.signal(s, signal.SIG_DFL)\n"
            + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else "")
            + "print('ready', flush=True)\nwhile True: time.sleep(60)\n")
    env = dict(os.environ, **{names.LAUNCH_ID: marker})
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                         start_new_session=session)
    assert p.stdout is not None
    assert p.stdout.readline() == "ready\n"
    return p


def _cleanup(*procs: "subprocess.Popen[str]") -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
        if p.stdout is not None:
            p.stdout.close()


def test_sweep_sigterms_every_process_with_the_marker_and_leaves_others_alone() -> None:
    marker = uuid.uuid4().hex
    a, b = _child(marker), _child(marker)
    other = _child(marker + "x")  # a marker with ours as its prefix is another launch
    try:
        assert supervise._sweep(marker) == []
        assert a.wait(timeout=30) == -signal.SIGTERM
        assert b.wait(timeout=30) == -signal.SIGTERM
        assert other.poll() is None
    finally:
        _cleanup(a, b, other)


def test_sweep_sigkills_a_process_that_ignores_sigterm_after_the_wait() -> None:
    marker = uuid.uuid4().hex
    stubborn = _child(marker, ignore_term=True)
    try:
        assert supervise._sweep(marker, wait_s=0.2) == []
        assert stubborn.wait(timeout=30) == -signal.SIGKILL
    finally:
        _cleanup(stubborn)


def test_sweep_with_nothing_marked_returns_at_once_with_nothing() -> None:
    assert supervise._sweep(uuid.uuid4().hex, wait_s=600) == []


def test_kill_unfinished_kills_and_reaps_a_running_job_and_leaves_a_finished_one() -> None:
    running = _child(uuid.uuid4().hex, session=True)
    done = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
    done.wait()
    try:
        supervise._kill_unfinished(running)  # type: ignore[arg-type]
        assert running.returncode == -signal.SIGKILL  # reaped: returncode set without our own wait
        supervise._kill_unfinished(done)
        assert done.returncode == 7
        supervise._kill_unfinished(None)
    finally:
        _cleanup(running)


def test_kill_unfinished_kills_the_jobs_whole_process_group() -> None:
    """The job's top process leads its group; a rank it started in the same group dies with it."""
    code = textwrap.dedent("""
        import subprocess, sys, time
        c = subprocess.Popen([sys.executable, "-c", "import time\\nprint('r', flush=True)\\ntime.sleep(600)"],
                             stdout=subprocess.PIPE, text=True)
        c.stdout.readline()
        print(c.pid, flush=True)
        time.sleep(600)
    """)
    top = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert top.stdout is not None
    rank = int(top.stdout.readline())
    try:
        supervise._kill_unfinished(top)  # type: ignore[arg-type]
        assert top.returncode == -signal.SIGKILL
        # the rank is re-parented to init (or a subreaper) and reaped there: wait for it to be gone from our view
        _wait_gone(rank)
    finally:
        _cleanup(top)


def _wait_gone(pid: int) -> None:
    import time

    from hosttune.launch.procfs import alive

    end = time.monotonic() + 60
    while alive(pid):
        assert time.monotonic() < end, f"pid {pid} still alive"
        time.sleep(0.01)


def test_killpg_of_a_group_that_is_gone_is_quiet() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    p.wait()
    supervise._killpg(p.pid, signal.SIGTERM)  # no ProcessLookupError


def test_fd_hands_over_a_duplicate_of_the_stream_and_closes_the_stream() -> None:
    assert supervise._fd(None) is None
    r, w = os.pipe()
    stream = os.fdopen(r, "rb")
    fd = supervise._fd(stream)
    try:
        assert fd is not None and fd != r
        assert stream.closed
        os.write(w, b"hi")
        os.close(w)
        assert os.read(fd, 10) == b"hi"
    finally:
        if fd is not None:
            os.close(fd)


def test_forwarder_sends_each_signal_to_the_jobs_group_records_it_and_restores_the_handlers() -> None:
    before: Dict[int, object] = {s: signal.getsignal(s) for s in supervise.FORWARDED}
    marker = uuid.uuid4().hex
    job = _child(marker, session=True)
    fwd = supervise._Forwarder()
    try:
        for s in supervise.FORWARDED:
            assert signal.getsignal(s) == fwd._forward
        fwd.child = job  # type: ignore[assignment]
        fwd._forward(signal.SIGHUP, None)
        assert job.wait(timeout=30) == -signal.SIGHUP
        assert fwd.received == [signal.SIGHUP]
        fwd._forward(signal.SIGTERM, None)  # the job has ended: recorded, sent nowhere
        assert fwd.received == [signal.SIGHUP, signal.SIGTERM]
    finally:
        fwd.restore()
        _cleanup(job)
    assert {s: signal.getsignal(s) for s in supervise.FORWARDED} == before


def test_forwarder_without_a_child_only_records() -> None:
    fwd = supervise._Forwarder()
    try:
        fwd._forward(signal.SIGINT, None)
        assert fwd.received == [signal.SIGINT]
    finally:
        fwd.restore()


# --- _supervise end to end, in a child interpreter (it becomes a subreaper) -----------------------------------------

_DRIVER = textwrap.dedent("""
    import os, sys, types
    from hosttune.launch import supervise
    launch = types.SimpleNamespace(kind="plain", ranks=[])
    env = dict(os.environ, HOSTTUNE_LAUNCH_ID=sys.argv[1])  # the job carries the marker, the launcher does not
    rc = supervise._supervise(launch, sys.argv[2:], env, sys.argv[1], False)
    print("rc", rc, flush=True)
""")


def _drive(tmp_path: Path, marker: str, job: List[str], **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=REPO, **env)
    return subprocess.run([sys.executable, "-c", _DRIVER, marker, *job], env=full, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def test_supervise_returns_the_jobs_own_exit_status(tmp_path: Path) -> None:
    res = _drive(tmp_path, uuid.uuid4().hex, ["/bin/sh", "-c", "exit 3"])
    assert res.stdout.splitlines()[-1] == "rc 3", res.stderr


def test_supervise_maps_a_job_killed_by_a_signal_to_128_plus_it(tmp_path: Path) -> None:
    res = _drive(tmp_path, uuid.uuid4().hex, ["/bin/sh", "-c", "kill -TERM $$"])
    assert res.stdout.splitlines()[-1] == f"rc {128 + signal.SIGTERM}", res.stderr


def test_supervise_runs_the_job_in_its_own_process_group(tmp_path: Path) -> None:
    out = tmp_path / "ids"
    res = _drive(tmp_path, uuid.uuid4().hex, ["/bin/sh", "-c", f"ps -o pgid= -p $$ > {out}; echo $$ >> {out}"])
    assert res.stdout.splitlines()[-1] == "rc 0", res.stderr
    pgid, pid = out.read_text().split()
    assert pgid == pid  # the job's top process leads a group of its own (signals go to the whole job)


def test_supervise_sweeps_a_marked_background_process_the_job_left_behind(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    pidfile = tmp_path / "bg"
    job = ["/bin/sh", "-c", f"setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > {pidfile}; exit 0"]
    res = _drive(tmp_path, marker, job)
    assert res.stdout.splitlines()[-1] == "rc 0", res.stderr
    bg = int(pidfile.read_text())
    _wait_gone(bg)


def test_supervise_refuses_a_bad_grace_before_starting_anything(tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    res = _drive(tmp_path, uuid.uuid4().hex, ["/bin/sh", "-c", f"touch {flag}"], **{names.STOP_GRACE: "-5"})
    assert res.returncode != 0 and "is not a number of seconds" in res.stderr
    assert not flag.exists()


def test_supervise_names_a_job_that_cannot_be_started(tmp_path: Path) -> None:
    notexec = tmp_path / "prog"
    notexec.write_bytes(b"\x7fELF-not-really\x00\x01")  # executable, but no kernel format: ENOEXEC at exec
    notexec.chmod(0o755)
    res = _drive(tmp_path, uuid.uuid4().hex, [str(notexec)])
    assert res.returncode != 0
    assert f"UserError: exec: {notexec}: Exec format error" in res.stderr
