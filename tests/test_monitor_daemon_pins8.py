"""Pins (issue 21, round 8 practice) for hosttune/monitor/daemon.py, in-process on the fake NVML: three whole samples
of a host with a GPU lost at start, NVLinks and XIDs arriving between samples (every field but the host's and the
time, the events and the lines on stdout/stderr), and where the monitor's runtime directory is (hosttune.monitor.sinks
RUNTIME_DIR) against the systemd units that watch it."""

import io
import os
import re
import signal
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from conftest import a100

from hosttune.errors import UserError
from hosttune.monitor import daemon, sinks
from hosttune.monitor.config import MonitorConfig
from hosttune.monitor.podresources import PodResources

REPO = Path(__file__).resolve().parent.parent

UUID0 = "GPU-00000000-1111-2222-3333-444444444444"
UUID2 = "GPU-00000002-1111-2222-3333-444444444444"


def _gpu(index: int, uuid: str, **over: Any) -> Dict[str, Any]:
    """One A100 entry of a sample as conftest's a100() reads through gpu_fields (before XIDs and NVLinks)."""
    entry = {"index": index, "uuid": uuid, "temperature_c": 38, "memory_used_mb": 512, "memory_total_mb": 81920,
             "memory_used_pct": 0.62, "utilization_gpu_pct": 0, "utilization_memory_pct": 0, "power_w": 65.0,
             "power_limit_w": 400.0, "sm_clock_mhz": 1410, "mem_clock_mhz": 1593, "clock_event_reasons": 1,
             "clock_event_reason_names": ["gpu_idle"], "ecc_uncorrected_volatile": 0, "retired_pages_pending": False,
             "remapped_rows_correctable": 0, "remapped_rows_uncorrectable": 0, "remapped_rows_pending": False,
             "remapped_rows_failure": False, "pcie_gen": 4, "pcie_width": 16, "processes": [], "jobs": [],
             "xid_source": "nvml", "xid_errors": 0}
    entry.update(over)
    return entry


def test_three_whole_samples_lost_gpu_nvlinks_and_xids(fake_nvml: Any, tmp_path: Path) -> None:
    """GPU 0 with two NVLinks (one down; the second reports no error counters), GPU 1 lost before the start, GPU 2
    hot and nearly full. Sample 1: the lost GPU's entry and event, GPU 2's temperature and memory events; XIDs 13 and
    48 on GPU 0 and 79 on GPU 2 arrive before sample 2, which counts them and shows the last code in the same
    sample's entries (one gpu_xid event each, NVIDIA's meaning and action); sample 3 repeats the counts without
    events and repeats the NVLink reading taken at sample 1 (read every NVLINK_PERIOD_S). Every GPU is covered by
    NVML's events, so the kernel log is never opened (a missing one is not even mentioned)."""
    import pynvml

    links = [{"active": 1, "errors": {"replay": 2, "recovery": 0, "crc_flit": 1, "crc_data": 0}}, {"active": 0}]
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [
        a100(0, "1B", nvlinks=links), a100(1, "2B", lost=True), a100(2, "3B", temperature_c=85, memory_used_mb=80000)]})
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err,
                         environ=dict(os.environ), kmsg=str(tmp_path / "no-kmsg"))
    mon.pods = PodResources(str(tmp_path / "no-kubelet.sock"))
    mon.open_sources()
    try:
        assert (mon.xid_source, mon.xid_kmsg, mon.lost) == ({0: "nvml", 2: "nvml"}, None, {1})
        assert mon.nvlinks == {0: 2, 2: 0}
        recs = [mon.take()]
        pynvml._state["scenario"]["devices"][0]["xids"] = [13, 48]
        pynvml._state["scenario"]["devices"][2]["xids"] = [79]
        recs += [mon.take(), mon.take()]
    finally:
        mon.close()
    for rec in recs:
        assert set(rec) >= {"ts", "time", "host"}
        for key in ("ts", "time", "host"):
            del rec[key]
    nvlink = {"nvlink_up": [1, 0],
              "nvlink_errors": {"replay": [2, None], "recovery": [0, None], "crc_flit": [1, None],
                                "crc_data": [0, None]}}
    lost = {"index": 1, "uuid": None, "lost": True}
    driver = {"driver_version": "550.54.15", "cuda_driver_version": "12.4"}
    before = [_gpu(0, UUID0, **nvlink), lost,
              _gpu(2, UUID2, temperature_c=85, memory_used_mb=80000, memory_used_pct=97.66)]
    after = [_gpu(0, UUID0, **nvlink, xid_errors=2, last_xid=48), lost,
             _gpu(2, UUID2, temperature_c=85, memory_used_mb=80000, memory_used_pct=97.66, xid_errors=1, last_xid=79)]
    lost_text = "GPU 1 is lost (NVML: GPU is lost); no longer sampled: check dmesg for Xid 79"
    hot = f"GPU 2 ({UUID2}) temperature 85 C (critical threshold: >= 85 C, default)"
    full = f"GPU 2 ({UUID2}) memory 97.7 % used (threshold 90 %)"
    x13 = (f"GPU 0 ({UUID0}): Xid 13: graphics engine exception (usually the application: illegal instruction or "
           "address); action: debug the application (compute-sanitizer); replace the GPU only if it recurs across "
           "applications")
    x48 = (f"GPU 0 ({UUID0}): Xid 48: double-bit ECC error (uncorrectable GPU memory error); action: drain the node "
           "and reset the GPU; pages are retired or rows remapped on reset")
    x79 = (f"GPU 2 ({UUID2}): Xid 79: GPU has fallen off the bus; action: drain the node; check power, cooling and "
           "PCIe seating; reboot the host")

    def ev(kind: str, subject: str, level: str, state: str, message: str, value: Any) -> Dict[str, Any]:
        return {"kind": kind, "subject": subject, "level": level, "state": state, "message": message, "value": value}

    assert recs[0] == {"nvml": "ok", "driver": driver, "gpus": before, "events": [
        ev("gpu_lost", "gpu1", "critical", "once", lost_text, None),
        ev("gpu_temperature", "gpu2", "critical", "start", hot, 85),
        ev("gpu_memory", "gpu2", "warning", "start", full, 97.66)]}
    assert recs[1] == {"nvml": "ok", "driver": driver, "gpus": after, "events": [
        ev("gpu_xid", "gpu0", "warning", "once", x13, 13.0),
        ev("gpu_xid", "gpu0", "critical", "once", x48, 48.0),
        ev("gpu_xid", "gpu2", "critical", "once", x79, 79.0)]}
    assert recs[2] == {"nvml": "ok", "driver": driver, "gpus": after}
    lines: List[Tuple[str, str]] = [("critical", lost_text), ("critical", hot), ("warning", full), ("warning", x13),
                        ("critical", x48), ("critical", x79)]
    assert out.getvalue() == "".join(f"hosttune monitor: {level}: {text}\n" for level, text in lines)
    assert err.getvalue() == ""


def test_the_runtime_dir_is_the_one_the_units_make_and_watch() -> None:
    """RUNTIME_DIR (the monitor's own, never root's /run/hosttune) is the unit's RuntimeDirectory= under /run, and the
    re-apply request lands where hosttune-tune-reapply.path watches; own_dirs() names it after the log and state
    directories."""
    assert sinks.RUNTIME_DIR == daemon.RUNTIME_DIR == "/run/hosttune-monitor"
    assert daemon.runtime_dir({}) == "/run/hosttune-monitor"
    assert daemon.runtime_dir({"RUNTIME_DIRECTORY": "relative:/run/y"}) == "/run/hosttune-monitor"
    assert daemon.runtime_dir({"RUNTIME_DIRECTORY": "/run/y:/run/z"}) == "/run/y"
    unit = (REPO / "systemd/hosttune-monitor.service").read_text()
    assert re.findall(r"(?m)^RuntimeDirectory=(.*)$", unit) == [os.path.basename(sinks.RUNTIME_DIR)]
    watch = (REPO / "systemd/hosttune-tune-reapply.path").read_text()
    assert re.findall(r"(?m)^PathChanged=(.*)$", watch) == [os.path.join(sinks.RUNTIME_DIR, daemon.REAPPLY_NAME)]
    mon = daemon.Monitor(MonitorConfig(log_dir="/nonexistent/log", textfile_dir=""), io.StringIO(), io.StringIO(),
                         environ={})
    assert mon.reapply_path == "/run/hosttune-monitor/tune-reapply"
    assert sinks.own_dirs()[2] == "/run/hosttune-monitor" and len(sinks.own_dirs()) == 3



def test_a_gpu_lost_with_its_xid_in_the_same_sample_stays_a_bare_lost_entry(fake_nvml: Any, tmp_path: Path) -> None:
    """Without NVML XID events (event_types 0) the GPUs are watched in the kernel log. GPU 1 falls off the bus
    between two samples: NVML says it is lost and the kernel logs its Xid 79 in the same sample. The sample's entry
    for it is the bare lost entry (no XID count on a GPU no longer sampled); GPU 0 still counts none; the XID and
    the loss are both events, said on stdout."""
    import pynvml

    kmsg = tmp_path / "kmsg"
    kmsg.write_text("6,1,100,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n")
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "1B", event_types=0), a100(1, "2B", event_types=0)]})
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err,
                         environ=dict(os.environ), kmsg=str(kmsg))
    mon.pods = PodResources(str(tmp_path / "no-kubelet.sock"))
    mon.open_sources()
    try:
        assert mon.xid_source == {0: "kmsg", 1: "kmsg"}
        first = mon.take()
        pynvml._state["scenario"]["devices"][1]["lost"] = True
        with open(kmsg, "a") as f:
            f.write("3,2,200,-;NVRM: Xid (PCI:0000:2b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n")
        second = mon.take()
    finally:
        mon.close()
    assert [g.get("xid_errors") for g in first["gpus"]] == [0, 0] and "events" not in first
    assert second["gpus"][0] == _gpu(0, UUID0, xid_source="kmsg")
    assert second["gpus"][1] == {"index": 1, "uuid": "GPU-00000001-1111-2222-3333-444444444444", "lost": True}
    assert mon.xid_counts == {1: 1} and mon.last_xid == {1: 79}
    assert [(e["kind"], e["subject"], e["level"], e["state"]) for e in second["events"]] == [
        ("gpu_xid", "gpu1", "critical", "once"), ("gpu_lost", "gpu1", "critical", "once")]
    assert out.getvalue().splitlines() == [f"hosttune monitor: critical: {e['message']}" for e in second["events"]]
    assert err.getvalue() == ""


def test_a_link_at_the_logs_name_or_a_log_dir_under_a_file_refuses_the_start(tmp_path: Path) -> None:
    """open_sinks(): one line (UserError) naming what is wrong, before anything is written."""
    os.symlink(tmp_path / "elsewhere", tmp_path / "monitor.jsonl")
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path), textfile_dir=""), io.StringIO(), io.StringIO(),
                         environ={})
    with pytest.raises(UserError) as refused:
        mon.open_sinks()
    assert str(refused.value) == (f"refusing {tmp_path}/monitor.jsonl: a link or a non-regular file is at the log's "
                                  "name; the monitor never writes through one: remove it")
    assert not (tmp_path / "elsewhere").exists()
    (tmp_path / "file").write_text("")
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "file" / "log"), textfile_dir=""), io.StringIO(),
                         io.StringIO(), environ={})
    with pytest.raises(UserError) as refused:
        mon.open_sinks()
    assert str(refused.value) == f"log dir {tmp_path}/file/log is not writable: Not a directory"


def _two_samples(tmp_path: Path) -> Tuple[daemon.Monitor, List[Dict[str, Any]], io.StringIO, io.StringIO]:
    """A Monitor with no kernel log and no kubelet opens its sources and takes two samples."""
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err,
                         environ=dict(os.environ), kmsg=str(tmp_path / "no-kmsg"))
    mon.pods = PodResources(str(tmp_path / "no-kubelet.sock"))
    mon.open_sources()
    try:
        recs = [mon.take(), mon.take()]
    finally:
        mon.close()
    return mon, recs, out, err


def test_without_nvml_the_host_is_sampled_and_that_is_said_once(fake_nvml: Any, tmp_path: Path) -> None:
    fake_nvml({"init_error": "DRIVER_NOT_LOADED"})
    mon, recs, out, err = _two_samples(tmp_path)
    for rec in recs:
        assert {k: v for k, v in rec.items() if k not in ("ts", "time", "host")} == {"nvml": "driver_not_loaded",
                                                                                     "gpus": []}
    assert (mon.nvml_status, mon.nv, mon.gpus, mon.driver, mon.xid_source) == ("driver_not_loaded", None, [], {}, {})
    assert err.getvalue() == ("hosttune monitor: notice: NVML unavailable (driver_not_loaded: nvmlInit: Driver Not "
                              "Loaded); sampling host metrics only\n")
    assert out.getvalue() == ""


def test_the_sinks_get_each_sample_and_the_stopped_textfile_says_down(tmp_path: Path) -> None:
    """emit(): the JSONL line is the record as compact JSON, the textfile is the record rendered with the daemon's own
    counters (samples taken, write errors, how long the sample took); stopped() leaves the file that says the
    monitor is down, with the last sample's time and the count."""
    out, err = io.StringIO(), io.StringIO()
    cfg = MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=str(tmp_path / "textfile"))
    mon = daemon.Monitor(cfg, out, err, environ=dict(os.environ))
    mon.open_sinks()
    try:
        assert mon.jsonl is not None and mon.textfile is not None
        mon.stats["sample_seconds"] = 0.25
        mon.emit({"ts": 5.0, "nvml": "ok", "host": {"load1": 0.5}, "gpus": []})
        mon.emit({"ts": 7.5, "nvml": "ok", "host": {"load1": 1.5}, "gpus": []})
        running = Path(mon.textfile.path).read_text()
        mon.stopped()
        stopped = Path(mon.textfile.path).read_text()
    finally:
        mon.close()
    assert (tmp_path / "log" / "monitor.jsonl").read_text() == (
        '{"ts":5.0,"nvml":"ok","host":{"load1":0.5},"gpus":[]}\n{"ts":7.5,"nvml":"ok","host":{"load1":1.5},"gpus":[]}\n')
    assert running == "\n".join([
        "# HELP hosttune_monitor_up 1 while the monitor runs; 0 in the file it leaves when it stops.",
        "# TYPE hosttune_monitor_up gauge",
        "hosttune_monitor_up 1",
        "# HELP hosttune_monitor_last_success_timestamp_seconds Unix time of the last sample the monitor completed.",
        "# TYPE hosttune_monitor_last_success_timestamp_seconds gauge",
        "hosttune_monitor_last_success_timestamp_seconds 7.5",
        "# HELP hosttune_monitor_samples_total Samples taken since the monitor started.",
        "# TYPE hosttune_monitor_samples_total counter",
        "hosttune_monitor_samples_total 2",
        "# HELP hosttune_monitor_write_errors_total Samples a sink could not write (e.g. disk full).",
        "# TYPE hosttune_monitor_write_errors_total counter",
        'hosttune_monitor_write_errors_total{sink="jsonl"} 0',
        'hosttune_monitor_write_errors_total{sink="textfile"} 0',
        "# HELP hosttune_monitor_sample_duration_seconds Time the last sample took to read.",
        "# TYPE hosttune_monitor_sample_duration_seconds gauge",
        "hosttune_monitor_sample_duration_seconds 0.25",
        "# HELP hosttune_monitor_nvml_up 1 when NVML is initialised.",
        "# TYPE hosttune_monitor_nvml_up gauge",
        "hosttune_monitor_nvml_up 1",
        "# HELP hosttune_load1 1-minute load average.",
        "# TYPE hosttune_load1 gauge",
        "hosttune_load1 1.5",
    ]) + "\n"
    assert stopped == "\n".join([
        "# HELP hosttune_monitor_up 1 while the monitor runs; 0 in the file it leaves when it stops.",
        "# TYPE hosttune_monitor_up gauge",
        "hosttune_monitor_up 0",
        "# HELP hosttune_monitor_last_success_timestamp_seconds Unix time of the last sample the monitor completed.",
        "# TYPE hosttune_monitor_last_success_timestamp_seconds gauge",
        "hosttune_monitor_last_success_timestamp_seconds 7.5",
        "# HELP hosttune_monitor_samples_total Samples taken since the monitor started.",
        "# TYPE hosttune_monitor_samples_total counter",
        "hosttune_monitor_samples_total 2",
    ]) + "\n"
    assert (mon.stats["samples"], mon.last_ts) == (2, 7.5)
    assert (out.getvalue(), err.getvalue()) == ("", "")


def test_nvml_without_a_gpu_samples_the_host_and_says_so_once(fake_nvml: Any, tmp_path: Path) -> None:
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": []})
    mon, recs, out, err = _two_samples(tmp_path)
    driver = {"driver_version": "550.54.15", "cuda_driver_version": "12.4"}
    for rec in recs:
        assert {k: v for k, v in rec.items() if k not in ("ts", "time", "host")} == {"nvml": "ok", "driver": driver,
                                                                                     "gpus": []}
    assert (mon.gpus, mon.xid_nvml, mon.xid_kmsg, mon.xid_source) == ([], None, None, {})
    assert err.getvalue() == "hosttune monitor: notice: NVML found no GPU; sampling host metrics only\n"
    assert out.getvalue() == ""


def test_a_link_at_the_tune_state_is_not_no_state_but_a_check_that_cannot_run(tmp_path: Path) -> None:
    """No tune state is quiet (nothing was applied); a link at the state file's name (dangling, so "exists" says no)
    is something there: the check runs, refuses the link, and says once that the tunables were not checked."""
    root = tmp_path / "root"
    state = root / "var/lib/hosttune/tune-state.json"
    state.parent.mkdir(parents=True)
    os.chmod(root, 0o755)
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err, environ={},
                         root=root)
    record: Dict[str, Any] = {}
    mon.check_tune(record)
    assert (err.getvalue(), out.getvalue(), record, mon.tune_drift) == ("", "", {}, {})
    os.symlink("tune-state.json.gone", state)
    mon.check_tune(record)
    mon.check_tune(record)
    assert err.getvalue() == (f"hosttune monitor: notice: tunables not checked: {state}: cannot read: Too many levels "
                              "of symbolic links\n")
    assert (out.getvalue(), record, mon.tune_drift) == ("", {}, {})


def _run_with_sighup(monkeypatch: pytest.MonkeyPatch, cfg: MonitorConfig, on_ready: Callable[[], None],
                     done: Callable[[io.StringIO], bool]) -> Tuple[int, List[str], str, str]:
    """daemon.run(cfg) in this process under a fake systemd (test_monitor_daemon_pins7.run_under_systemd): at its
    first message (READY=1) on_ready() runs and SIGHUP is sent, then it waits until done(stderr) holds (a hang guard
    of 600 s, no timing) before the SIGTERM. Returns the exit status, the messages, stdout and stderr."""
    from test_monitor_daemon_pins7 import run_under_systemd

    out, err = io.StringIO(), io.StringIO()

    def after_ready(got: List[str]) -> bool:
        on_ready()
        os.kill(os.getpid(), signal.SIGHUP)
        guard = time.monotonic() + 600.0
        while not done(err) and time.monotonic() < guard:
            time.sleep(0.01)
        return True

    rc, got = run_under_systemd(monkeypatch, cfg, after_ready, out=out, err=err)
    return rc, got, out.getvalue(), err.getvalue()


def test_sighup_reopens_the_log_and_a_failed_reopen_is_one_error_not_the_end(
        fake_nvml: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run() in this process, one sample an hour: after the first sample the log directory is moved away and a file
    put at its name, then SIGHUP (logrotate's postrotate): the reopen fails, which is one error line naming the log; the
    monitor keeps running until SIGTERM (STOPPING=1, exit 0). The moved log holds the one sample."""
    fake_nvml({"init_error": "DRIVER_NOT_LOADED"})
    log = tmp_path / "log"
    cfg = MonitorConfig(interval=3600.0, tune_check_interval=0, log_dir=str(log), textfile_dir="")

    def block() -> None:
        guard = time.monotonic() + 600.0  # READY=1 comes before the first sample: wait for its line
        while not (log / "monitor.jsonl").read_text().endswith("\n") and time.monotonic() < guard:
            time.sleep(0.01)
        os.rename(log, tmp_path / "moved")
        log.write_text("")

    rc, got, out, err = _run_with_sighup(monkeypatch, cfg, block, lambda e: "cannot reopen" in e.getvalue())
    assert rc == 0
    assert got == ["READY=1\nSTATUS=sampling 0 GPU(s) and the host every 3600 s", "STOPPING=1"]
    assert err == ("hosttune monitor: notice: NVML unavailable (driver_not_loaded: nvmlInit: Driver Not Loaded); "
                   f"sampling host metrics only\nhosttune monitor: error: cannot reopen {log}/monitor.jsonl: Not a "
                   "directory\n")
    assert out == ""
    assert len((tmp_path / "moved" / "monitor.jsonl").read_text().splitlines()) == 1


def test_a_failed_nvlink_read_is_no_reading_not_the_previous_one(
        fake_nvml: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NVLinks read at every sample (NVLINK_PERIOD_S 0): a read whose link queries fail (NVML_ERROR_UNKNOWN) leaves
    the NVLink fields out of that sample instead of repeating the last reading; the next good read shows the links
    as they are then (the second one back up)."""
    import pynvml

    links = [{"active": 1, "errors": {"replay": 2, "recovery": 0, "crc_flit": 1, "crc_data": 0}}, {"active": 0}]
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "1B", nvlinks=links)]})
    monkeypatch.setattr(daemon, "NVLINK_PERIOD_S", 0.0)
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), io.StringIO(), io.StringIO(),
                         environ=dict(os.environ), kmsg=str(tmp_path / "no-kmsg"))
    mon.pods = PodResources(str(tmp_path / "no-kubelet.sock"))
    mon.open_sources()
    dev = pynvml._state["scenario"]["devices"][0]
    try:
        recs = [mon.take()]
        dev["errors"] = {"nvmlDeviceGetNvLinkState": "UNKNOWN", "nvmlDeviceGetNvLinkErrorCounter": "UNKNOWN"}
        recs.append(mon.take())
        dev["errors"] = {}
        dev["nvlinks"][1]["active"] = 1
        recs.append(mon.take())
    finally:
        mon.close()
    errors = {"replay": [2, None], "recovery": [0, None], "crc_flit": [1, None], "crc_data": [0, None]}
    assert [{k: v for k, v in r["gpus"][0].items() if k.startswith("nvlink")} for r in recs] == [
        {"nvlink_up": [1, 0], "nvlink_errors": errors}, {}, {"nvlink_up": [1, 1], "nvlink_errors": errors}]


def test_reapply_is_requested_for_the_tunables_that_started_drifting_only(tmp_path: Path) -> None:
    """reapply: true. Check 1: swappiness 20 (expected 10) and nofile (no limits file) drift: one request naming
    both. Check 2: swappiness is back (a clear) while THP starts drifting: the request names THP alone, never a
    tunable that has just come back."""
    root = tmp_path / "root"
    state = root / "var/lib/hosttune/tune-state.json"
    state.parent.mkdir(parents=True)
    os.chmod(root, 0o755)
    state.write_text('{"schema": "hosttune.tune-state/1", "before": {}, "applied": {}, "made_dirs": [], "tuned": null}')
    swappiness = root / "proc/sys/vm/swappiness"
    swappiness.parent.mkdir(parents=True)
    swappiness.write_text("20\n")
    run = tmp_path / "run"
    run.mkdir()
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="", reapply=True), out, err,
                         environ={"RUNTIME_DIRECTORY": str(run)}, root=root)
    first: Dict[str, Any] = {}
    mon.check_tune(first)
    request = run / "tune-reapply"
    assert request.read_text() == "drifted: swappiness nofile\n"
    assert [(e["subject"], e["state"]) for e in first["events"]] == [("swappiness", "start"), ("nofile", "start")]
    swappiness.write_text("10\n")
    thp = root / "sys/kernel/mm/transparent_hugepage/enabled"
    thp.parent.mkdir(parents=True)
    thp.write_text("[always] madvise never\n")
    second: Dict[str, Any] = {}
    mon.check_tune(second)
    assert [(e["subject"], e["state"]) for e in second["events"]] == [("thp", "start"), ("swappiness", "clear")]
    assert request.read_text() == "drifted: thp\n"
    assert err.getvalue() == "".join(
        f"hosttune monitor: notice: re-apply of {ids} requested from hosttune-tune.service (through {request})\n"
        for ids in ("swappiness, nofile", "thp"))


def test_a_tune_check_that_fails_after_a_drift_forgets_the_drift(tmp_path: Path) -> None:
    """The textfile's tune metrics come from the last check: a check that finds nofile drifting, then one that
    cannot run (the state file broken): no drift is claimed any more (tune_drift empty), and that is one notice."""
    root = tmp_path / "root"
    state = root / "var/lib/hosttune/tune-state.json"
    state.parent.mkdir(parents=True)
    os.chmod(root, 0o755)
    state.write_text('{"schema": "hosttune.tune-state/1", "before": {}, "applied": {}, "made_dirs": [], "tuned": null}')
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err, environ={},
                         root=root)
    mon.check_tune({})
    assert mon.tune_drift == {"nofile": True}
    state.write_text("{bad")
    mon.check_tune({})
    assert mon.tune_drift == {}
    assert err.getvalue() == (f"hosttune monitor: notice: tunables not checked: {state}: not hosttune's tune state "
                              "(bad JSON)\n")


def test_the_journal_is_the_stream_with_both_device_and_inode_of_journal_stream(tmp_path: Path) -> None:
    """$JOURNAL_STREAM is "DEV:INODE": a stream is the journal only when both match its fstat (an inode number is
    unique on one device only); then its lines carry "<N>", else the plain prefix."""
    with open(tmp_path / "out", "w") as stream:
        st = os.fstat(stream.fileno())
        assert daemon.connected_to_journal(stream, f"{st.st_dev}:{st.st_ino}")
        assert not daemon.connected_to_journal(stream, f"{st.st_dev + 1}:{st.st_ino}")
        assert not daemon.connected_to_journal(stream, f"{st.st_dev}:{st.st_ino + 1}")
        assert not daemon.connected_to_journal(stream, f"{st.st_dev}")
        other = daemon.Say(stream, stream, f"{st.st_dev + 1}:{st.st_ino}")
        other.problem("warning", "plain")
        journal = daemon.Say(stream, stream, f"{st.st_dev}:{st.st_ino}")
        journal.problem("warning", "prefixed")
    assert (tmp_path / "out").read_text() == "hosttune monitor: warning: plain\n<4>prefixed\n"


def test_a_reapply_request_that_keeps_failing_is_one_error_a_period(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime dir is gone: each drift's request fails; the error is said once, the next within ERROR_PERIOD_S
    held back, and the one after the period says how many were."""
    run = tmp_path / "gone"
    err = io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="", reapply=True), io.StringIO(),
                         err, environ={"RUNTIME_DIRECTORY": str(run)})
    mon.request_reapply(["thp"])
    mon.request_reapply(["nofile"])
    monkeypatch.setattr(daemon, "ERROR_PERIOD_S", 0.0)
    mon.request_reapply(["swappiness"])
    line = f"hosttune monitor: error: cannot request a re-apply through {run}/tune-reapply: No such file or directory"
    assert err.getvalue() == f"{line}\n{line} (1 more since the last report)\n"
