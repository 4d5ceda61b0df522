"""Pins (issue 21, round 7 practice) for hosttune/monitor/daemon.py, in-process on the fake NVML: a GPU already lost
when the monitor starts is still an entry of every sample (index, no uuid, lost) with one gpu_lost event, not a
GPU that silently disappears from the record."""

import io
from pathlib import Path
from typing import Any

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
