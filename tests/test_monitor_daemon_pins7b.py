"""Pins (issue 21, mutation round 7) for hosttune/monitor/daemon.py, in-process on the fake NVML: systemd's status
line counts only the GPUs it samples, a broken XID event set is one error a period (with a count of those not
printed), and what publishing the textfile as root set aside is said."""

import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import a100
from test_monitor_daemon_pins7 import run_under_systemd

from hosttune.monitor import daemon
from hosttune.monitor.config import MonitorConfig

SCENARIO = {"driver": "550.54.15", "cuda_driver": 12040,
            "devices": [a100(0, "1B"), a100(1, "2B", lost=True), a100(2, "3B")]}


def test_ready_status_counts_the_gpus_sampled_not_those_lost_at_start(
        fake_nvml: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run() in this process under a fake systemd ($NOTIFY_SOCKET): 3 GPUs, one lost before the start: READY=1 says
    `sampling 2 GPU(s)`; SIGTERM after it: STOPPING=1 and exit 0."""
    fake_nvml(SCENARIO)
    cfg = MonitorConfig(interval=3600.0, tune_check_interval=0, log_dir=str(tmp_path / "log"), textfile_dir="")
    rc, got = run_under_systemd(monkeypatch, cfg, lambda got: True)  # SIGTERM after the first message
    assert rc == 0
    assert got == ["READY=1\nSTATUS=sampling 2 GPU(s) and the host every 3600 s", "STOPPING=1"]


def test_a_broken_xid_event_set_is_one_error_a_period_then_one_with_the_count(
        fake_nvml: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The event set stops working (freed under the monitor: every wait is NVML_ERROR_INVALID_ARGUMENT): three
    samples print `XID events: ...` once; once ERROR_PERIOD_S has passed the next says how many were not printed.
    The GPUs are sampled all along."""
    fake_nvml(SCENARIO)
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err, environ={})
    mon.open_sources()
    try:
        assert mon.xid_source == {0: "nvml", 2: "nvml"}
        assert mon.xid_nvml is not None
        sys.modules["pynvml"].nvmlEventSetFree(mon.xid_nvml.set)
        recs = [mon.take() for _ in range(3)]
        first = err.getvalue()
        monkeypatch.setattr(daemon, "ERROR_PERIOD_S", 0.0)  # the period is over
        mon.take()
    finally:
        mon.close()
    line = "hosttune monitor: error: XID events: Invalid Argument"
    assert first == line + "\n"
    assert err.getvalue() == line + "\n" + line + " (2 more since the last report)\n"
    for rec in recs:
        assert [(g["index"], g.get("lost", False), g.get("xid_errors")) for g in rec["gpus"]] == [
            (0, False, 0), (1, True, None), (2, False, 0)]


@pytest.mark.skipif(os.geteuid() != 0, reason="the root route (publish) chowns to root")
def test_as_root_a_directory_at_the_textfile_name_is_set_aside_and_said(fake_nvml: Any, tmp_path: Path) -> None:
    """As root the textfile is published (a store in the state dir, a link in node_exporter's directory). A
    directory someone made at hosttune.prom in node_exporter's directory is renamed aside, and the monitor says
    so, once, on stderr; the link then takes its place."""
    ne = tmp_path / "node-exporter"
    (ne / "hosttune.prom").mkdir(parents=True)
    (ne / "hosttune.prom" / "keep").write_text("k")
    os.chmod(ne, 0o755)
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=str(ne)), out, err, environ={})
    try:
        mon.open_sinks()
    finally:
        mon.close()
    aside = [n for n in os.listdir(ne) if n.startswith("hosttune.prom.aside-")]
    assert len(aside) == 1 and (ne / aside[0] / "keep").read_text() == "k"
    assert (ne / "hosttune.prom").is_symlink()
    assert err.getvalue() == (f"hosttune monitor: warning: a directory was at {ne / 'hosttune.prom'}, where the "
                              f"textfile goes; renamed it to {aside[0]} (look inside, then remove it)\n")
    assert out.getvalue() == ""
