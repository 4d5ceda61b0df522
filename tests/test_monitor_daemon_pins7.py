"""Pins (issue 21, round 7 practice) for hosttune/monitor/daemon.py, in-process on the fake NVML: a GPU already lost
when the monitor starts is still an entry of every sample (index, no uuid, lost) with one gpu_lost event, not a
GPU that silently disappears from the record."""

import io
import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

import pytest
from conftest import a100

from hosttune.monitor import daemon
from hosttune.monitor.config import MonitorConfig


def test_a_gpu_lost_at_start_stays_in_the_sample_as_lost(fake_nvml: Any, tmp_path: Path) -> None:
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "1B"), a100(1, "2B", lost=True)]})
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err)
    mon.open_sources()
    try:
        assert mon.lost == {1}
        assert mon.gpus[1] == {"index": 1, "uuid": None}
        rec = mon.take()
    finally:
        mon.close()
    assert [g["index"] for g in rec["gpus"]] == [0, 1]
    assert rec["gpus"][1] == {"index": 1, "uuid": None, "lost": True}
    assert rec["events"] == [{"kind": "gpu_lost", "subject": "gpu1", "level": "critical", "state": "once",
                              "message": "GPU 1 is lost (NVML: GPU is lost); no longer sampled: check dmesg for "
                                         "Xid 79", "value": None}]
    assert out.getvalue() == ("hosttune monitor: critical: GPU 1 is lost (NVML: GPU is lost); no longer sampled: "
                              "check dmesg for Xid 79\n")
    assert err.getvalue() == ""


def test_a_new_monitor_reads_the_kernel_log_at_dev_kmsg_and_requests_reapply_in_its_runtime_dir(
        tmp_path: Path) -> None:
    cfg = MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="")
    mon = daemon.Monitor(cfg, io.StringIO(), io.StringIO(), environ={})
    assert (mon.kmsg_path, mon.root, mon.reapply_path) == ("/dev/kmsg", Path("/"),
                                                           "/run/hosttune-monitor/tune-reapply")
    assert (mon.nvml_status, mon.gpus, mon.lost, mon.nv, mon.xid_nvml, mon.xid_kmsg, mon.xid_source, mon.driver) == (
        "ok", [], set(), None, None, None, {}, {})
    mon = daemon.Monitor(cfg, io.StringIO(), io.StringIO(), environ={"RUNTIME_DIRECTORY": "/run/x"})
    assert mon.reapply_path == "/run/x/tune-reapply"


def test_once_says_its_events_on_stderr_and_leaves_stdout_to_the_json(fake_nvml: Any, tmp_path: Path) -> None:
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "1B", lost=True)]})
    out, err = io.StringIO(), io.StringIO()
    rec = daemon.once(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err)
    assert out.getvalue() == ""
    assert err.getvalue() == ("hosttune monitor: critical: GPU 0 is lost (NVML: GPU is lost); no longer sampled: "
                              "check dmesg for Xid 79\n")
    assert rec["gpus"] == [{"index": 0, "uuid": None, "lost": True}]
    assert [e["kind"] for e in rec["events"]] == ["gpu_lost"]


def run_under_systemd(monkeypatch: pytest.MonkeyPatch, cfg: MonitorConfig, term_after: Callable[[List[str]], bool],
                      watchdog_usec: Optional[str] = None, out: Optional[io.StringIO] = None,
                      err: Optional[io.StringIO] = None) -> Tuple[int, List[str]]:
    """daemon.run(cfg, out, err) in this process under a fake systemd ($NOTIFY_SOCKET, a datagram socket read by a
    thread): SIGTERM once term_after(the messages so far) holds, then read up to STOPPING. Returns run()'s exit
    status and every message. The signal handlers and wakeup fd run() set are put back."""
    name = f"@hosttune-pins7-{os.getpid()}-{os.urandom(4).hex()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name[1:])
    sock.settimeout(600.0)  # a hang guard only
    monkeypatch.setenv("NOTIFY_SOCKET", name)
    if watchdog_usec is None:
        monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    else:
        monkeypatch.setenv("WATCHDOG_USEC", watchdog_usec)
        monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    got: List[str] = []

    def listen() -> None:
        try:
            while not got or not term_after(got):
                got.append(sock.recv(4096).decode())
        except OSError as exc:
            got.append(f"error: {exc}")
        os.kill(os.getpid(), signal.SIGTERM)
        try:
            while not got[-1].startswith("STOPPING"):
                got.append(sock.recv(4096).decode())
        except OSError as exc:
            got.append(f"error: {exc}")

    old_fd = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(old_fd)
    old_handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXFSZ)}
    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    try:
        rc = daemon.run(cfg, out or io.StringIO(), err or io.StringIO())
    finally:
        wfd = signal.set_wakeup_fd(old_fd)
        if wfd not in (-1, old_fd):
            os.close(wfd)
        for s, h in old_handlers.items():
            signal.signal(s, h)
    thread.join(600.0)
    sock.close()
    return rc, got


def test_run_pings_the_watchdog_between_samples_when_its_period_is_the_shorter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run() in this process: samples every hour, the watchdog every 0.05 s (WATCHDOG_USEC=100000, halved): it wakes
    for each ping rather than sleeping to the next sample. Three pings, then SIGTERM: STOPPING=1 and exit 0."""
    cfg = MonitorConfig(interval=3600.0, tune_check_interval=0, log_dir=str(tmp_path / "log"), textfile_dir="")
    rc, got = run_under_systemd(monkeypatch, cfg, lambda got: got.count("WATCHDOG=1") >= 3, watchdog_usec="100000")
    assert rc == 0
    assert got[0].startswith("READY=1\nSTATUS=sampling ")
    assert got[1:] == ["WATCHDOG=1"] * 3 + ["STOPPING=1"]
    lines = (tmp_path / "log" / "monitor.jsonl").read_text().splitlines()
    assert len(lines) == 1  # one sample: the next is an hour away


def test_a_tune_check_that_cannot_run_is_one_notice_until_it_runs_again(tmp_path: Path) -> None:
    """The tree's state file is not JSON: `tunables not checked` once (not every check), no drift; a good state file
    later: `tunables checked again`, then the drift of that tree (no limits file: nofile not set)."""
    root = tmp_path / "root"
    state = root / "var/lib/hosttune/tune-state.json"
    state.parent.mkdir(parents=True)
    os.chmod(root, 0o755)
    state.write_text("{bad")
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err, environ={},
                         root=root)
    first: dict = {}
    mon.check_tune(first)
    mon.check_tune(first)
    notice = f"hosttune monitor: notice: tunables not checked: {state}: not hosttune's tune state (bad JSON)\n"
    assert (err.getvalue(), out.getvalue(), first, mon.tune_drift) == (notice, "", {}, {})
    state.write_text('{"schema": "hosttune.tune-state/1", "before": {}, "applied": {}, "made_dirs": [], "tuned": null}')
    record: dict = {}
    mon.check_tune(record)
    assert err.getvalue() == notice + "hosttune monitor: notice: tunables checked again\n"
    assert mon.tune_drift == {"nofile": True}
    assert [(e["kind"], e["subject"], e["state"]) for e in record["events"]] == [("tune_drift", "nofile", "start")]
