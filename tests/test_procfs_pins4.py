"""Pins for hosttune/launch/procfs.py on real child processes and literal numa_maps lines: environment, status,
parent, children and descendants, the launch marker, zombies, start time and CPU time (issue 21)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple

import pytest
from conftest import checkout_env

from hosttune import jobrecord
from hosttune.launch import procfs

MARK = "HOSTTUNE_LAUNCH_ID"


def _until(cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not cond():
        assert time.monotonic() < deadline, "the child never reached the state"
        time.sleep(0.01)


@pytest.fixture
def procs() -> Iterator[List[subprocess.Popen]]:
    started: List[subprocess.Popen] = []
    try:
        yield started
    finally:
        for p in started:
            if p.poll() is None:
                p.kill()
            p.wait()


@pytest.mark.parametrize("line, expected", [
    ("7f0000400000 default file=/usr/bin/x mapped=1", ("none", ())),
    ("7f00 bind:0-1 anon=3", ("bind", (0, 1))),
    ("7f00 bind=static:2 anon=3", ("bind", (2,))),
    ("7f00 prefer:1 anon=3", ("preferred", (1,))),
    ("7f00 prefer (many):0,2 anon=3", ("preferred", (0, 2))),
    ("7f00 prefer (many) anon=3", ("preferred", ())),
    ("7f00 interleave:0-3", ("interleave", (0, 1, 2, 3))),
    ("7f00 local", ("none", ())),
    ("7f00 weighted_interleave:1", ("weighted_interleave", (1,))),
    ("7f00", None), ("7f00 ", None), ("", None),
])
def test_parse_numa_maps_policy(line: str, expected: object) -> None:
    assert procfs.parse_numa_maps_policy(line + "\n7f01 bind:5 anon=1\n") == expected


def test_environ_status_and_parent_of_a_real_child(procs: List[subprocess.Popen], tmp_path: Path) -> None:
    odd = tmp_path / "a) b (c"  # the stat line's command name holds spaces and parentheses
    os.symlink("/bin/sleep", odd)
    p = subprocess.Popen([str(odd), "30"], env={"A": "1", "B": "x=y", "PATH": "/usr/bin:/bin"})
    procs.append(p)
    # the new comm shows before execve has copied the environment (it reads empty for a moment): wait for both
    _until(lambda: procfs.proc_status(p.pid).get("Name", "").startswith("a) b") and bool(procfs.proc_environ(p.pid)))
    assert procfs.proc_environ(p.pid) == {"A": "1", "B": "x=y", "PATH": "/usr/bin:/bin"}
    st = procfs.proc_status(p.pid)
    assert st["Pid"] == str(p.pid) and st["PPid"] == str(os.getpid())  # values stripped of the tab
    assert procfs.proc_status(p.pid, p.pid)["Pid"] == str(p.pid)  # the thread's own status
    assert procfs.proc_ppid(p.pid) == os.getpid() and procfs.proc_ppid(os.getpid()) == os.getppid()
    assert procfs.alive(p.pid)
    assert procfs.start_time(p.pid) == jobrecord.start_time_of(Path(f"/proc/{p.pid}/stat").read_bytes())
    assert procfs.start_time(p.pid) > procfs.start_time(os.getpid())  # type: ignore[operator]
    cpu = procfs.cpu_seconds(p.pid)
    assert cpu is not None and 0 <= cpu < 5
    assert p.pid in procfs.children(os.getpid())
    p.kill()
    _until(lambda: procfs.proc_status(p.pid).get("State", "").startswith("Z"))
    assert not procfs.alive(p.pid) and procfs.proc_status(p.pid) != {}  # a zombie is not alive
    p.wait()
    assert procfs.proc_environ(p.pid) is None and procfs.proc_status(p.pid) == {} and not procfs.alive(p.pid)
    assert procfs.proc_ppid(p.pid) is None and procfs.start_time(p.pid) is None and procfs.cpu_seconds(p.pid) is None
    assert procfs.proc_mempolicy(p.pid) is None and procfs.children(p.pid) == []


def test_cpu_seconds_counts_user_and_system_time() -> None:
    t = os.times()
    mine = procfs.cpu_seconds(os.getpid())
    assert mine is not None and abs(mine - (t.user + t.system)) < 0.5


def test_descendants_and_the_marker_find_a_grandchild(procs: List[subprocess.Popen]) -> None:
    marker = f"pins4-{os.getpid()}-{time.monotonic_ns()}"
    env = dict(os.environ, **{MARK: marker})
    p = subprocess.Popen(["/bin/sh", "-c", "sleep 30 & echo $!; wait"], env=env, stdout=subprocess.PIPE, text=True)
    procs.append(p)
    grandchild = int(p.stdout.readline())  # type: ignore[union-attr]
    try:
        _until(lambda: grandchild in procfs.children(p.pid))
        assert p.pid in procfs.descendants(os.getpid()) and grandchild in procfs.descendants(os.getpid())
        assert procfs.descendants(p.pid) == [grandchild]
        # comm first, then the environment: both read after the grandchild's execve of sleep has finished (a fork
        # of sh before it carries the marker too, and inside execve the environment reads empty for a moment)
        _until(lambda: procfs.proc_status(grandchild).get("Name") == "sleep"
               and (procfs.proc_environ(grandchild) or {}).get(MARK) == marker)
        assert not procfs.in_execve(grandchild) and not procfs.in_execve(p.pid)
        assert sorted(procfs.marked_processes(marker)) == sorted([p.pid, grandchild])
        assert procfs.marked_processes(marker + "x") == []
    finally:
        os.kill(grandchild, signal.SIGKILL)


def _fake_proc(monkeypatch: pytest.MonkeyPatch, pid: int, reads: List[Tuple[bytes, bytes]]) -> List[str]:
    """/proc/PID as the kernel shows it across an execve: each (environ, stat) pair answers one look at the pid;
    the last pair stays. Every other path is read for real."""
    real = procfs._read
    looks: List[str] = []

    def now() -> Tuple[bytes, bytes]:
        return reads[min(max(len(looks) - 1, 0), len(reads) - 1)]

    def read(path: str) -> Optional[bytes]:
        if path == f"/proc/{pid}/environ":
            looks.append("environ")
            return now()[0]
        return now()[1] if path == f"/proc/{pid}/stat" else real(path)
    monkeypatch.setattr(procfs, "_read", read)
    monkeypatch.setattr(procfs.os, "listdir", lambda d: [str(pid)] if d == "/proc" else os.listdir(d))
    return looks


def _stat(state: str = "R", flags: int = 0x400000, env_end: int = 0) -> bytes:
    # fields 3..52 of proc(5): state, ..., flags (9), ..., env_start (50), env_end (51), exit_code (52)
    fields = [state] + ["0"] * 5 + [str(flags)] + ["0"] * 41 + [str(env_end), "0"]
    return b"4242 (python3) " + " ".join(fields).encode()


def test_a_process_inside_execve_is_looked_at_again_until_its_environment_shows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    env = b"A=1\0HOSTTUNE_LAUNCH_ID=m1\0"
    looks = _fake_proc(monkeypatch, 4242, [(b"", _stat()), (b"", _stat()), (env, _stat(env_end=140000))])
    assert procfs.in_execve(4242)
    looks.clear()
    assert procfs.marked_processes("m1") == [4242] and looks == ["environ"] * 3
    looks.clear()
    assert procfs.marked_processes("m2") == [] and looks == ["environ"] * 3  # shown, and carries another marker


@pytest.mark.parametrize("why, stat", [
    ("an empty environment by choice (env_start == env_end, set)", _stat(env_end=140000)),
    ("a kernel thread", _stat(flags=0x208040)),
    ("a zombie", _stat(state="Z")),
    ("a dead task", _stat(state="X")),
    ("a stat line with no env_end (before Linux 3.5)", b"4242 (x) R 1 2 3"),
    ("an unreadable stat", b""),
])
def test_an_empty_environment_outside_execve_is_read_once(monkeypatch: pytest.MonkeyPatch, why: str,
                                                          stat: bytes) -> None:
    looks = _fake_proc(monkeypatch, 4242, [(b"", stat)])
    assert not procfs.in_execve(4242), why
    looks.clear()
    assert procfs.marked_processes("m1") == [] and looks == ["environ"], why


def test_a_process_stuck_inside_execve_is_given_up_after_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    looks = _fake_proc(monkeypatch, 4242, [(b"", _stat())])
    clock = iter(range(0, 10 ** 6))  # each look at the clock is one second later
    monkeypatch.setattr(procfs.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(procfs.time, "sleep", lambda s: None)
    monkeypatch.setattr(procfs, "EXECVE_WAIT_S", 3.0)
    assert procfs.marked_processes("m1") == [] and looks == ["environ"] * 4


def test_in_execve_on_real_processes(procs: List[subprocess.Popen]) -> None:
    assert not procfs.in_execve(os.getpid()) and not procfs.in_execve(2 ** 22 + 1)  # no such pid
    # an empty environment: env_end is set all the same. The child says it runs (its own code, so execve is over:
    # sleep's new comm would show before execve sets env_end, and in_execve is rightly true in that moment)
    p = subprocess.Popen([sys.executable, "-I", "-S", "-c", "print('up', flush=True); import sys; sys.stdin.read()"],
                         env={}, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    procs.append(p)
    assert p.stdout.readline() == b"up\n"  # type: ignore[union-attr]
    assert procfs.proc_environ(p.pid) == {} and not procfs.in_execve(p.pid)
    p.kill()
    _until(lambda: procfs.proc_status(p.pid).get("State", "").startswith("Z"))
    assert not procfs.in_execve(p.pid)


def test_marked_processes_never_names_the_caller() -> None:
    marker = f"self-{os.getpid()}-{time.monotonic_ns()}"
    code = ("import os; from hosttune.launch import procfs; "
            f"print(os.getpid(), procfs.marked_processes({marker!r}))")
    out = subprocess.run([sys.executable, "-c", code], env=checkout_env(**{MARK: marker}), capture_output=True,
                         text=True, timeout=60).stdout.split(None, 1)
    assert out[1].strip() == "[]", out  # the caller carries the marker itself and is never in its own sweep


def test_self_mems_allowed_is_the_status_list() -> None:
    line = [x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("Mems_allowed_list:")]
    expected = procfs.parse_cpulist(line[0].split(":", 1)[1].strip()) if line else ()
    assert procfs.self_mems_allowed() == expected and (not line or 0 < len(expected))
    assert procfs.parse_cpulist("0-2,5") == (0, 1, 2, 5)


def test_names_that_are_not_utf8_never_break_status_or_numa_maps(procs: List[subprocess.Popen],
                                                                 tmp_path: Path) -> None:
    odd = os.path.join(os.fsencode(tmp_path), b"\xff\xfe")
    os.symlink(b"/bin/sleep", odd)
    data = os.path.join(os.fsencode(tmp_path), b"m\xff.bin")
    with open(data, "wb") as fh:
        fh.write(b"\0" * 4096)
    p = subprocess.Popen([odd, "30"])
    procs.append(p)
    _until(lambda: procfs.proc_status(p.pid).get("Name", "").startswith("\ufffd"))
    assert procfs.proc_status(p.pid)["Pid"] == str(p.pid)  # the non-UTF-8 Name is replaced, not an error
    code = ("import mmap, os, sys; f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 4096, "
            "access=mmap.ACCESS_READ); print('ready', flush=True); sys.stdin.read()")
    q = subprocess.Popen([sys.executable, "-c", code, data], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    procs.append(q)
    assert q.stdout.readline() == b"ready\n"  # type: ignore[union-attr]
    assert b"m\xff.bin" in Path(f"/proc/{q.pid}/numa_maps").read_bytes() or not Path("/proc/self/numa_maps").exists()
    assert procfs.proc_mempolicy(q.pid) is not None
