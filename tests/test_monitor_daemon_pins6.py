"""Pins (issue 21, round 6) for hosttune/monitor/daemon.py, in-process: the signal self-pipe (both ends non-blocking,
the wakeup fd set, SIGHUP/SIGTERM as flags, a wait that drains the pipe and otherwise sleeps its time), the journal's
lines (prefix or syslog priority, a repeated problem once a minute with the count of the ones held back, the
recovery line), the re-apply request (the file and the notice), sd_notify's settings, the runtime directory, and the
driver entry of a sample (only when NVML gave one)."""

import io
import os
import select
import signal
import time
import types
from pathlib import Path
from typing import Any, Iterator

import pytest

from hosttune.monitor import daemon
from hosttune.monitor.config import MonitorConfig
from hosttune.monitor.events import Event


@pytest.fixture
def signals() -> Iterator[daemon._Signals]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXFSZ)}
    old_fd = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(old_fd)
    sig = daemon._Signals()
    try:
        yield sig
    finally:
        signal.set_wakeup_fd(old_fd)
        for s, h in saved.items():
            signal.signal(s, h)
        os.close(sig.rfd)
        os.close(sig.wfd)


def _readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


def test_the_self_pipe_is_non_blocking_and_is_the_wakeup_fd(signals: daemon._Signals) -> None:
    assert os.get_blocking(signals.rfd) is False and os.get_blocking(signals.wfd) is False
    assert signal.set_wakeup_fd(signals.wfd) == signals.wfd  # the one set by _Signals (set again: unchanged)
    assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN
    assert (signals.stop, signals.reopen) == (False, False)


def test_sighup_sets_reopen_wakes_the_wait_and_the_wait_drains_the_pipe(signals: daemon._Signals) -> None:
    os.kill(os.getpid(), signal.SIGHUP)
    for _ in range(1000):  # the handler runs at the next bytecode boundary
        if signals.reopen:
            break
    assert signals.reopen is True and signals.stop is False
    assert _readable(signals.rfd)  # the C-level handler wrote the signal number to the pipe
    signals.wait(600.0)  # returns at once: the pipe is readable (600 s is only a hang guard)
    assert not _readable(signals.rfd)  # drained, so the next wait sleeps again


def test_sigterm_and_sigint_set_stop_and_a_stopped_wait_returns_at_once(signals: daemon._Signals) -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(1000):
        if signals.stop:
            break
    assert signals.stop is True
    signals.wait(600.0)
    assert _readable(signals.rfd)  # a stopped loop does not even read the pipe
    signals.stop = False
    signals.wait(600.0)
    assert not _readable(signals.rfd)
    signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
    assert signals.stop is True


def test_a_wait_without_a_signal_sleeps_at_least_its_time(signals: daemon._Signals) -> None:
    start = time.monotonic()
    signals.wait(0.05)
    assert time.monotonic() - start >= 0.045
    start = time.monotonic()
    signals.wait(0.0)
    signals.wait(-5.0)
    os.write(signals.wfd, b"\x01" * 700)  # more than one read's worth: every byte is drained
    signals.wait(600.0)
    assert not _readable(signals.rfd)


# ---- the journal's lines -------------------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_a_repeated_problem_is_said_once_a_minute_with_the_count_held_back(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(daemon, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    out, err = io.StringIO(), io.StringIO()
    say = daemon.Say(out, err)
    say.problem("error", "disk full", key="jsonl")
    clock.now += 30.0
    say.problem("error", "disk full", key="jsonl")
    say.problem("error", "disk full", key="jsonl")
    say.problem("warning", "other", key="textfile")
    clock.now += 29.999
    say.problem("error", "disk full", key="jsonl")
    clock.now += 0.001  # 60 s after the first report
    say.problem("error", "disk full again", key="jsonl")
    clock.now += 60.0
    say.problem("error", "disk full", key="jsonl")
    say.problem("notice", "unkeyed")
    say.problem("notice", "unkeyed")
    assert err.getvalue().splitlines() == [
        "hosttune monitor: error: disk full",
        "hosttune monitor: warning: other",
        "hosttune monitor: error: disk full again (3 more since the last report)",
        "hosttune monitor: error: disk full",
        "hosttune monitor: notice: unkeyed",
        "hosttune monitor: notice: unkeyed",
    ]
    assert out.getvalue() == ""


def test_recovered_is_said_once_after_a_problem_with_the_failures_held_back(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(daemon, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    err = io.StringIO()
    say = daemon.Say(io.StringIO(), err)
    say.recovered("jsonl", "writing again")  # nothing went wrong: nothing to say
    say.problem("error", "cannot write", key="jsonl")
    say.problem("error", "cannot write", key="jsonl")
    say.problem("error", "cannot write", key="jsonl")
    say.recovered("jsonl", "writing again")
    say.recovered("jsonl", "writing again")
    say.problem("error", "cannot write", key="jsonl")  # a new failure after the recovery is said at once
    say.recovered("jsonl", "back")
    assert err.getvalue().splitlines() == [
        "hosttune monitor: error: cannot write",
        "hosttune monitor: notice: writing again (2 more failures were not printed)",
        "hosttune monitor: error: cannot write",
        "hosttune monitor: notice: back",
    ]


def test_events_go_to_stdout_tagged_by_state() -> None:
    out, err = io.StringIO(), io.StringIO()
    say = daemon.Say(out, err)
    say.event(Event("gpu_temperature", "gpu0", "warning", "start", "GPU 0 hot"))
    say.event(Event("gpu_temperature", "gpu0", "info", "clear", "GPU 0 cool"))
    say.event(Event("gpu_xid", "gpu0", "critical", "once", "GPU 0: XID 79"))
    assert out.getvalue().splitlines() == ["hosttune monitor: warning: GPU 0 hot",
                                           "hosttune monitor: info: cleared: GPU 0 cool",
                                           "hosttune monitor: critical: GPU 0: XID 79"]
    assert err.getvalue() == ""


def test_lines_to_the_journal_carry_the_syslog_priority(tmp_path: Path) -> None:
    with open(tmp_path / "journal", "w+") as journal, open(tmp_path / "file", "w+") as other:
        st = os.fstat(journal.fileno())
        stream = f"{st.st_dev}:{st.st_ino}"
        assert daemon.connected_to_journal(journal, stream) and not daemon.connected_to_journal(other, stream)
        assert not daemon.connected_to_journal(journal, "x:y")
        assert not daemon.connected_to_journal(io.StringIO(), stream)
        say = daemon.Say(journal, other, stream)
        say.event(Event("k", "s", "critical", "start", "c"))
        say.event(Event("k", "s", "notice", "once", "n"))
        say.event(Event("k", "s", "odd", "once", "o"))
        say.problem("error", "e")
        journal.seek(0)
        other.seek(0)
        assert journal.read().splitlines() == ["<2>c", "<5>n", "<6>o"]
        assert other.read().splitlines() == ["hosttune monitor: error: e"]


def test_a_closed_stream_is_no_traceback() -> None:
    out = io.StringIO()
    out.close()
    daemon.Say(out, out).problem("error", "x")


# ---- re-apply, sd_notify, runtime dir ------------------------------------------------------------------------------
def test_request_reapply_rewrites_the_watched_file_and_says_so(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    err = io.StringIO()
    cfg = MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="", reapply=True)
    mon = daemon.Monitor(cfg, io.StringIO(), err, environ={"RUNTIME_DIRECTORY": str(run)})
    assert mon.reapply_path == str(run / "tune-reapply")
    mon.request_reapply(["swappiness", "thp"])
    assert (run / "tune-reapply").read_text() == "drifted: swappiness thp\n"
    assert (run / "tune-reapply").stat().st_mode & 0o777 == 0o644
    assert err.getvalue().splitlines() == [
        f"hosttune monitor: notice: re-apply of swappiness, thp requested from hosttune-tune.service (through "
        f"{run / 'tune-reapply'})"]
    mon.request_reapply(["governor"])
    assert (run / "tune-reapply").read_text() == "drifted: governor\n"
    gone = daemon.Monitor(cfg, io.StringIO(), err, environ={"RUNTIME_DIRECTORY": str(tmp_path / "none")})
    gone.request_reapply(["thp"])
    assert err.getvalue().splitlines()[-1].startswith(
        f"hosttune monitor: error: cannot request a re-apply through {tmp_path / 'none' / 'tune-reapply'}: ")


def test_runtime_dir_is_systemds_first_absolute_entry_never_roots(monkeypatch: pytest.MonkeyPatch) -> None:
    assert daemon.runtime_dir({"RUNTIME_DIRECTORY": "/run/a:/run/b"}) == "/run/a"
    assert daemon.runtime_dir({"RUNTIME_DIRECTORY": "rel/a"}) == daemon.RUNTIME_DIR
    assert daemon.runtime_dir({}) == daemon.RUNTIME_DIR
    assert daemon.runtime_dir({"RUNTIME_DIRECTORY": "/x/y", "HOSTTUNE_RUNTIME_DIR": "/x/y/"}) == daemon.RUNTIME_DIR


def test_notifier_settings_from_the_environment() -> None:
    n = daemon.Notifier({"NOTIFY_SOCKET": "@sock", "WATCHDOG_USEC": "2000000"})
    try:
        assert n.addr == "\0sock" and n.sock is not None and n.watchdog_s == 2.0
    finally:
        n.close()
    assert n.sock is None
    n = daemon.Notifier({"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "500", "WATCHDOG_PID": str(os.getpid())})
    assert n.addr == "/run/x" and n.watchdog_s == 0.0005
    n.send("READY=1")  # nobody listens: no error
    n.close()
    for env in ({"WATCHDOG_USEC": "0"}, {"WATCHDOG_USEC": "x"}, {"WATCHDOG_USEC": "5", "WATCHDOG_PID": "1"}, {}):
        n = daemon.Notifier(env)
        assert n.watchdog_s is None and n.sock is None and n.addr == ""
        n.send("READY=1")


def test_notifier_sends_each_message_as_one_datagram(tmp_path: Path) -> None:
    import socket

    path = str(tmp_path / "notify")
    rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    rx.bind(path)
    try:
        n = daemon.Notifier({"NOTIFY_SOCKET": path})
        n.send("READY=1\nSTATUS=x")
        n.send("WATCHDOG=1")
        n.close()
        rx.settimeout(600)
        assert [rx.recv(4096), rx.recv(4096)] == [b"READY=1\nSTATUS=x", b"WATCHDOG=1"]
    finally:
        rx.close()


# ---- a sample's driver entry ---------------------------------------------------------------------------------------
def _take(tmp_path: Path) -> Any:
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="", disks=[str(tmp_path)]),
                         io.StringIO(), io.StringIO())
    mon.open_sources()
    try:
        return mon, mon.take()
    finally:
        mon.close()


def test_the_driver_rides_in_a_sample_only_when_nvml_reports_it(fake_nvml: Any, tmp_path: Path) -> None:
    from conftest import a100

    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "1B")]})
    mon, rec = _take(tmp_path)
    assert rec["driver"] == {"driver_version": "550.54.15", "cuda_driver_version": "12.4"}
    assert rec["nvml"] == "ok" and [g["index"] for g in rec["gpus"]] == [0]
    assert mon.stats["sample_seconds"] >= 0


def test_no_nvml_no_driver_entry(fake_nvml: Any, tmp_path: Path) -> None:
    fake_nvml({"init_error": "DRIVER_NOT_LOADED"})
    mon, rec = _take(tmp_path)
    assert "driver" not in rec and mon.driver == {} and rec["gpus"] == [] and rec["nvml"] != "ok"
    assert str(tmp_path) in rec["host"]["disks"]


def test_emit_counts_samples_and_write_errors(tmp_path: Path) -> None:
    err = io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), io.StringIO(), err)
    mon.open_sinks()
    try:
        mon.emit({"ts": 5.0, "host": {}, "gpus": []})
        assert mon.stats["samples"] == 1 and mon.last_ts == 5.0
        assert mon.stats["write_errors"] == {"jsonl": 0, "textfile": 0}

        class Broken:
            path = "/x/monitor.jsonl"

            def write(self, rec: Any) -> None:
                raise OSError(28, "No space left on device")

            def close(self) -> None:
                pass

        mon.jsonl = Broken()  # type: ignore[assignment]
        mon.emit({"ts": 6.0})
        assert mon.stats["samples"] == 2 and mon.stats["write_errors"]["jsonl"] == 1 and mon.last_ts == 6.0
        assert err.getvalue().splitlines() == [
            "hosttune monitor: error: sample dropped: cannot write /x/monitor.jsonl: No space left on device"]
    finally:
        mon.close()

