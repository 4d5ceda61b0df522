"""The monitor's pure parts and in-process pieces: parsers, sensor discovery, events, config, sinks, report."""

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import REPO, cli_runner
from prometheus_client.parser import text_string_to_metric_families

from hosttune.cli import cli
from hosttune.errors import UserError
from hosttune.monitor import config as mconfig
from hosttune.monitor import report, sample, sinks
from hosttune.monitor.config import MonitorConfig, Thresholds
from hosttune.monitor.events import Alerts
from hosttune.policy import gpu_health

MEMINFO = """MemTotal:       16384000 kB
MemFree:         1000000 kB
MemAvailable:    4096000 kB
Buffers:          100000 kB
Cached:          2000000 kB
SwapTotal:       2048000 kB
SwapFree:        1024000 kB
HugePages_Total:       0
"""


# ---- parsers ---------------------------------------------------------------------------------------------------
def test_proc_stat_cpu_and_utilisation() -> None:
    a = sample.parse_proc_stat_cpu("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\nintr 1 2\n")
    b = sample.parse_proc_stat_cpu("cpu  200 0 100 900 100 0 0 0 0 0\n")
    assert a == (150, 1000) and b == (300, 1300)
    assert sample.cpu_util_pct(a, b) == 50.0  # 150 busy jiffies of 300
    assert sample.cpu_util_pct(b, b) is None
    with pytest.raises(ValueError):
        sample.parse_proc_stat_cpu("intr 1 2\n")


def test_meminfo_loadavg_millicelsius() -> None:
    mem = sample.parse_meminfo(MEMINFO)
    assert mem["mem_total_bytes"] == 16384000 * 1024 and mem["mem_available_bytes"] == 4096000 * 1024
    assert mem["mem_used_bytes"] == (16384000 - 4096000) * 1024
    assert mem["swap_used_bytes"] == 1024000 * 1024
    assert sample.mem_used_pct(mem) == 75.0
    old_kernel = sample.parse_meminfo(MEMINFO.replace("MemAvailable:    4096000 kB\n", ""))
    assert old_kernel["mem_available_bytes"] == (1000000 + 100000 + 2000000) * 1024  # what `free` falls back to
    assert sample.parse_loadavg("0.52 0.58 0.59 1/467 12345\n") == (0.52, 0.58, 0.59)
    assert sample.parse_millicelsius("45500\n\0") == 45.5


def _hwmon(root: Path, n: int, chip: str, temps: Dict[str, int], old_layout: bool = False) -> None:
    d = root / "sys/class/hwmon" / f"hwmon{n}"
    chip_dir = d / "device" if old_layout else d
    chip_dir.mkdir(parents=True)
    (chip_dir / "name").write_text(chip + "\n")
    for i, (label, milli) in enumerate(temps.items(), start=1):
        (chip_dir / f"temp{i}_input").write_text(f"{milli}\n")
        if label:
            (chip_dir / f"temp{i}_label").write_text(label + "\n")


def test_cpu_sensors_from_hwmon_coretemp_k10temp_and_thermal_zone_fallback(tmp_path: Path) -> None:
    _hwmon(tmp_path, 0, "nvme", {"Composite": 40000})
    _hwmon(tmp_path, 1, "coretemp", {"Package id 0": 51000, "Core 0": 49000, "Core 1": 50000})
    _hwmon(tmp_path, 2, "coretemp", {"Package id 1": 53000, "Core 0": 52000}, old_layout=True)
    _hwmon(tmp_path, 10, "k10temp", {"Tctl": 70000, "Tdie": 43000, "Tccd1": 41000})
    sensors = sample.find_cpu_sensors(tmp_path)
    names = [s.name for s in sensors]
    assert names == ["coretemp/Package id 0", "coretemp.1/Package id 1", "k10temp/Tdie"]
    # thermal-zone fallback when no hwmon CPU chip exists
    other = tmp_path / "other"
    _hwmon(other, 0, "acpitz", {"": 30000})
    for i, kind in enumerate(["acpitz", "x86_pkg_temp"]):
        z = other / "sys/class/thermal" / f"thermal_zone{i}"
        z.mkdir(parents=True)
        (z / "type").write_text(kind + "\n")
        (z / "temp").write_text("61000\n")
    assert [s.name for s in sample.find_cpu_sensors(other)] == ["x86_pkg_temp/thermal_zone1"]


def test_host_reader_on_a_tree_reads_every_field(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/stat").write_text("cpu  100 0 50 800 50 0 0 0 0 0\n")
    (tmp_path / "proc/loadavg").write_text("1.00 2.00 3.00 1/1 1\n")
    (tmp_path / "proc/meminfo").write_text(MEMINFO)
    _hwmon(tmp_path, 0, "coretemp", {"Package id 0": 67000})
    (tmp_path / "dev/shm").mkdir(parents=True)
    reader = sample.HostReader(tmp_path, disks=["/", "/nonexistent"])
    (tmp_path / "proc/stat").write_text("cpu  200 0 100 900 100 0 0 0 0 0\n")
    host = reader.read()
    assert host["cpu_util_pct"] == 50.0 and host["load15"] == 3.0 and host["mem_used_pct"] == 75.0
    assert host["cpu_temps_c"] == {"coretemp/Package id 0": 67.0}
    assert set(host["disks"]) == {"/"} and host["disks"]["/"]["total_bytes"] > 0
    assert "shm_total_bytes" in host


def test_host_reader_on_this_machine_agrees_with_free() -> None:
    free = shutil.which("free")
    if not free:
        pytest.skip("procps `free` not installed")
    out = subprocess.run([free, "-b"], capture_output=True, text=True, check=True).stdout.splitlines()
    total = int(next(line for line in out if line.startswith("Mem:")).split()[1])
    host = sample.HostReader().read()
    assert host["mem_total_bytes"] == total
    st = os.statvfs("/")
    assert host["disks"]["/"]["total_bytes"] == st.f_blocks * st.f_frsize


# ---- events ----------------------------------------------------------------------------------------------------
def _gpu_rec(temp: float = 40, mem_pct: float = 10.0, reasons: int = 1, ecc: int = 0, lost: bool = False,
             host_mem: float = 20.0) -> Dict[str, Any]:
    g: Dict[str, Any] = {"index": 0, "uuid": "GPU-x", "lost": True} if lost else {
        "index": 0, "uuid": "GPU-x", "temperature_c": temp, "memory_used_pct": mem_pct,
        "clock_event_reasons": reasons, "ecc_uncorrected_volatile": ecc}
    return {"ts": 0, "host": {"mem_used_pct": host_mem}, "gpus": [g]}


def _kinds(events: List[Any]) -> List[tuple]:
    return [(e.kind, e.level, e.state) for e in events]


def test_temperature_band_logs_each_crossing_once_with_hysteresis() -> None:
    alerts = Alerts(Thresholds())
    seq = [70, 75, 76, 74, 71, 86, 88, 84, 81, 80, 76, 72, 70, 69, 76]
    got = []
    for t in seq:
        got.append([(e.level, e.state) for e in alerts.update(_gpu_rec(temp=t)) if e.kind == "gpu_temperature"])
    assert got == [
        [], [("warning", "start")], [], [], [],  # 74 and 71 stay within the 5 C hysteresis: no clear
        [("critical", "start")], [], [],  # 84 is still above 85 - 5
        [], [("info", "clear")],  # at 80 = 85 - 5 critical clears, warning stays in force
        [], [],
        [("info", "clear")],  # 70 = 75 - 5 clears
        [],
        [("warning", "start")],
    ]


def test_memory_throttle_ecc_and_lost_events() -> None:
    alerts = Alerts(Thresholds())
    assert alerts.update(_gpu_rec()) == []
    ev = alerts.update(_gpu_rec(mem_pct=95.0, host_mem=91.0, reasons=0x20 | 0x4, ecc=2))
    assert sorted(_kinds(ev)) == sorted([
        ("host_memory", "warning", "start"), ("gpu_memory", "warning", "start"),
        ("gpu_throttle_thermal", "warning", "start"), ("gpu_throttle_power", "notice", "start"),
        ("gpu_ecc", "critical", "once")])
    assert "2 new uncorrected ECC" in next(e.message for e in ev if e.kind == "gpu_ecc")
    # the same state again: nothing new
    assert alerts.update(_gpu_rec(mem_pct=95.0, host_mem=91.0, reasons=0x20 | 0x4, ecc=2)) == []
    ev = alerts.update(_gpu_rec(mem_pct=50.0, host_mem=50.0, reasons=0, ecc=2))
    assert sorted(_kinds(ev)) == sorted([
        ("host_memory", "info", "clear"), ("gpu_memory", "info", "clear"),
        ("gpu_throttle_thermal", "info", "clear"), ("gpu_throttle_power", "info", "clear")])
    ev = alerts.update(_gpu_rec(lost=True))
    assert _kinds(ev) == [("gpu_lost", "critical", "once")]
    assert alerts.update(_gpu_rec(lost=True)) == []


def test_ecc_errors_present_at_start_are_reported_once_as_a_warning() -> None:
    alerts = Alerts(Thresholds())
    assert _kinds(alerts.update(_gpu_rec(ecc=3))) == [("gpu_ecc", "warning", "once")]
    assert alerts.update(_gpu_rec(ecc=3)) == []


def _temp_events(alerts: Alerts, temp: float, slowdown: Any = None, index: int = 0) -> List[tuple]:
    g: Dict[str, Any] = {"index": index, "temperature_c": temp}
    if slowdown is not None:
        g["temp_slowdown_c"] = slowdown
    return [(e.level, e.state) for e in alerts.update({"gpus": [g]}) if e.kind == "gpu_temperature"]


def test_gpu_temperature_lines_follow_the_gpus_own_slowdown_threshold() -> None:
    """Slowdown 90 C: warning from 80, critical from 90 (at the line); hysteresis as before, 5 C below each line."""
    alerts = Alerts(Thresholds())
    got = [_temp_events(alerts, t, slowdown=90) for t in (79, 80, 85, 89.9, 90, 86, 85, 76, 75)]
    assert got == [[], [("warning", "start")], [], [], [("critical", "start")],
                   [],  # 86 > 90 - 5: critical holds
                   [("info", "clear")],  # 85 = 90 - 5: critical clears, warning remains
                   [],  # 76 > 80 - 5
                   [("info", "clear")]]
    ev = Alerts(Thresholds()).update({"gpus": [{"index": 0, "temperature_c": 90, "temp_slowdown_c": 90}]})
    assert ev[0].message == "GPU 0 temperature 90 C (critical threshold: >= 90 C, the GPU's slowdown threshold)"
    ev = Alerts(Thresholds()).update({"gpus": [{"index": 0, "temperature_c": 85}]})
    assert ev[0].message == "GPU 0 temperature 85 C (critical threshold: >= 85 C, default)"


def test_gpu_without_a_slowdown_threshold_uses_the_table() -> None:
    for slowdown in (None, 0):  # not reported, or a meaningless 0 from a broken board
        alerts = Alerts(Thresholds())
        got = [_temp_events(alerts, t, slowdown) for t in (74.9, 75, 84.9, 85)]
        assert got == [[], [("warning", "start")], [], [("critical", "start")]], slowdown


def test_configured_temperature_lines_override_every_gpu() -> None:
    crit_only = Thresholds(gpu_temp_crit_c=80)
    assert [_temp_events(Alerts(crit_only), t, slowdown=90) for t in (69.9, 70, 80)] == [
        [], [("warning", "start")], [("critical", "start")]]
    warn_only = Thresholds(gpu_temp_warn_c=70)  # each GPU keeps its own critical line
    assert [_temp_events(Alerts(warn_only), t, slowdown=90) for t in (70, 89, 90)] == [
        [("warning", "start")], [("warning", "start")], [("critical", "start")]]
    ev = Alerts(crit_only).update({"gpus": [{"index": 0, "temperature_c": 80, "temp_slowdown_c": 90}]})
    assert ev[0].message.endswith("(critical threshold: >= 80 C, configured)")


# every temperature from 60 to 100 C in half degrees, with and without a threshold of the GPU's own
_TEMPS = [60 + i / 2 for i in range(81)]
_SLOWDOWNS = [None, 83, 87, 90, 95]


@pytest.mark.parametrize("slowdown", _SLOWDOWNS)
def test_monitor_and_doctor_agree_on_every_gpu_temperature(slowdown: Any) -> None:
    """The monitor's level for a reading (from a fresh start, so no hysteresis) is the policy's, which doctor uses."""
    for temp in _TEMPS:
        starts = [lvl for lvl, state in _temp_events(Alerts(Thresholds()), temp, slowdown) if state == "start"]
        assert starts == ([gpu_health.temperature(temp, slowdown)] if gpu_health.temperature(temp, slowdown) else []), (
            temp, slowdown)


def test_monitor_and_doctor_agree_on_every_clock_event_mask() -> None:
    """All 512 combinations of the nine nvml.h clock-event bits: the monitor starts exactly the policy's groups at the
    policy's levels (HW slowdown, HW thermal and power brake critical; SW thermal warning; SW power cap notice)."""
    for mask in range(0x200):
        ev = Alerts(Thresholds()).update({"gpus": [{"index": 0, "clock_event_reasons": mask}]})
        got = sorted((e.kind, e.level) for e in ev if e.state == "start")
        assert got == sorted((kind, level) for kind, level, _bits, _what in gpu_health.clock_events(mask)), hex(mask)
    for bit in (0x8, 0x40, 0x80):
        ev = Alerts(Thresholds()).update({"gpus": [{"index": 0, "clock_event_reasons": bit}]})
        assert _kinds(ev) == [("gpu_throttle_hw", "critical", "start")]
        assert gpu_health.doctor_status(ev[0].level) == "fail"  # what doctor shows for the same bits


def test_hw_power_brake_is_critical_and_clears_once() -> None:
    alerts = Alerts(Thresholds())
    ev = alerts.update({"gpus": [{"index": 0, "uuid": "GPU-x", "clock_event_reasons": 0x80 | 0x4}]})
    assert sorted(_kinds(ev)) == [("gpu_throttle_hw", "critical", "start"), ("gpu_throttle_power", "notice", "start")]
    hw = next(e for e in ev if e.kind == "gpu_throttle_hw")
    assert "hw_power_brake_slowdown" in hw.message and "sw_power_cap" not in hw.message
    assert alerts.update({"gpus": [{"index": 0, "uuid": "GPU-x", "clock_event_reasons": 0x80 | 0x40 | 0x4}]}) == []
    ev = alerts.update({"gpus": [{"index": 0, "uuid": "GPU-x", "clock_event_reasons": 0x1}]})
    assert sorted(_kinds(ev)) == [("gpu_throttle_hw", "info", "clear"), ("gpu_throttle_power", "info", "clear")]


def test_monitor_learns_each_gpus_threshold_from_nvml_once(fake_nvml: Any, tmp_path: Path) -> None:
    """Through the daemon's readers on fake NVML: slowdown 90 -> warning at 80, critical at 90; a GPU whose
    threshold is NOT_SUPPORTED -> the table (warning at 75, critical at 85)."""
    import io

    import pynvml
    from conftest import a100

    from hosttune.monitor import daemon

    hot = {"slowdown": 90, "shutdown": 95}
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [
        a100(0, "1B", temperature_c=79, temperature_thresholds=hot),
        a100(1, "2B", temperature_c=80, temperature_thresholds=hot),
        a100(2, "3B", temperature_c=89, temperature_thresholds=hot),
        a100(3, "4B", temperature_c=90, temperature_thresholds=hot),
        a100(4, "5B", temperature_c=80),  # no thresholds: NOT_SUPPORTED
        a100(5, "6B", temperature_c=85),
    ]})
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err)
    mon.open_sources()
    try:
        rec = mon.take()
        levels = {e["subject"]: e["level"] for e in rec["events"] if e["kind"] == "gpu_temperature"}
        assert levels == {"gpu1": "warning", "gpu2": "warning", "gpu3": "critical", "gpu4": "warning",
                          "gpu5": "critical"}
        assert [g.get("temp_slowdown_c") for g in rec["gpus"]] == [90, 90, 90, 90, None, None]
        mon.take()
        assert pynvml.fake_calls()["nvmlDeviceGetTemperatureThreshold"] == 6  # once per GPU, at start
        text = sinks.render_textfile(rec, mon.stats, mon.gpus)
    finally:
        mon.close()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    slow = {s.labels["gpu"]: s.value for s in fams["hosttune_gpu_slowdown_temperature_celsius"].samples}
    assert slow == {"0": 90, "1": 90, "2": 90, "3": 90}  # absent where the GPU does not report one
    assert "GPU 3 (GPU-00000003-1111-2222-3333-444444444444) temperature 90 C (critical threshold: >= 90 C, the " \
           "GPU's slowdown threshold)" in out.getvalue()


# ---- config ----------------------------------------------------------------------------------------------------
def test_shipped_config_loads_and_matches_the_builtin_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOSTTUNE_LOG_DIR", raising=False)  # the packaged defaults, not the test's directories
    assert mconfig.load(str(REPO / "conf/monitor.yaml")) == MonitorConfig()


@pytest.mark.parametrize("text,needle", [
    ("intervall: 5\n", "unknown key 'intervall'"),
    ("thresholds:\n  gpu_temp_warn: 70\n", "unknown key thresholds.gpu_temp_warn"),
    ("interval: fast\n", "interval: expected a number"),
    ("interval: 0\n", "interval must be between"),
    ("max_bytes: 12 parsecs\n", "not a size"),
    ("thresholds:\n  gpu_temp_warn_c: 90\n  gpu_temp_crit_c: 85\n", "gpu_temp_warn_c must be below gpu_temp_crit_c"),
    ("thresholds:\n  gpu_temp_crit_c: hot\n", "thresholds.gpu_temp_crit_c: expected a number"),
    ("thresholds:\n  memory_pct: null\n", "thresholds.memory_pct: expected a number"),
    ("interval: [1\n", "line 2"),
    ("- 1\n", "must be a YAML mapping"),
])
def test_bad_config_is_one_line_naming_file_and_key(tmp_path: Path, text: str, needle: str) -> None:
    f = tmp_path / "monitor.yaml"
    f.write_text(text)
    with pytest.raises(UserError) as exc:
        mconfig.load(str(f))
    assert str(exc.value).startswith(str(f)) and needle in str(exc.value) and "\n" not in str(exc.value)


def test_temperature_overrides_are_optional_in_yaml(tmp_path: Path) -> None:
    assert (Thresholds().gpu_temp_warn_c, Thresholds().gpu_temp_crit_c) == (None, None)  # per GPU / table
    f = tmp_path / "m.yaml"
    f.write_text("thresholds:\n  gpu_temp_warn_c: null\n  gpu_temp_crit_c: ~\n  gpu_temp_hysteresis_c: 3\n")
    t = mconfig.load(str(f)).thresholds
    assert (t.gpu_temp_warn_c, t.gpu_temp_crit_c, t.gpu_temp_hysteresis_c) == (None, None, 3.0)
    assert t.gpu_temp_limits(90) == gpu_health.TempLimits(80.0, 90.0, "nvml")
    assert t.gpu_temp_limits(None) == gpu_health.TempLimits(75.0, 85.0, "table")
    f.write_text("thresholds:\n  gpu_temp_warn_c: 70\n  gpu_temp_crit_c: 80\n")
    t = mconfig.load(str(f)).thresholds
    assert t.gpu_temp_limits(90) == t.gpu_temp_limits(None) == gpu_health.TempLimits(70.0, 80.0, "config")


def test_config_overrides_and_sizes(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_text("interval: 2\nmax_bytes: 1M\nbackups: 3\ntextfile_dir:\n")
    cfg = mconfig.load(str(f), {"interval": 0.5, "log_dir": "/x", "textfile_dir": None})
    assert (cfg.interval, cfg.max_bytes, cfg.backups, cfg.log_dir, cfg.textfile_dir) == (0.5, 1 << 20, 3, "/x", "")
    with pytest.raises(UserError, match="^command line: interval"):
        mconfig.load(str(f), {"interval": -1.0})
    with pytest.raises(UserError, match="cannot read monitor config"):
        mconfig.load(str(tmp_path / "missing.yaml"))


# ---- sinks -----------------------------------------------------------------------------------------------------
def test_jsonl_rotates_at_the_size_limit_keeping_n_backups(tmp_path: Path) -> None:
    tmp_path = tmp_path / "log"
    sink = sinks.JsonlSink(str(tmp_path), max_bytes=4096, backups=2)
    for seq in range(200):
        sink.write({"ts": float(seq), "seq": seq, "pad": "x" * 100})
    sink.close()
    names = sorted(os.listdir(tmp_path))
    assert names == ["monitor.jsonl", "monitor.jsonl.1", "monitor.jsonl.2"]
    seqs = []
    for path in sinks.jsonl_files(str(tmp_path)):
        assert os.path.getsize(path) <= 4096
        data = Path(path).read_text()
        assert data.endswith("\n")
        seqs += [json.loads(line)["seq"] for line in data.splitlines()]
    assert seqs == list(range(seqs[0], 200))  # oldest first, contiguous, ends with the newest
    sink0 = sinks.JsonlSink(str(tmp_path / "b0"), max_bytes=4096, backups=0)
    for seq in range(100):
        sink0.write({"seq": seq, "pad": "y" * 100})
    sink0.close()
    assert os.listdir(tmp_path / "b0") == ["monitor.jsonl"]


def test_jsonl_survives_copytruncate_and_deletion(tmp_path: Path) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), max_bytes=1 << 20, backups=1)
    sink.write({"seq": 1})
    os.truncate(log / "monitor.jsonl", 0)  # logrotate copytruncate
    sink.write({"seq": 2})
    assert (log / "monitor.jsonl").read_text() == '{"seq":2}\n'
    (log / "monitor.jsonl").unlink()  # an admin deletes the log: the next sample starts a new one
    sink.write({"seq": 3})
    sink.close()
    assert (log / "monitor.jsonl").read_text() == '{"seq":3}\n'


def _gpu_sample() -> Dict[str, Any]:
    return {
        "ts": 1700000000.5, "nvml": "ok",
        "host": {"cpu_util_pct": 25.0, "load1": 1.5, "load5": 1.0, "load15": 0.5, "mem_total_bytes": 1000,
                 "mem_available_bytes": 400, "mem_used_bytes": 600, "swap_total_bytes": 0, "swap_used_bytes": 0,
                 "shm_total_bytes": 64, "shm_used_bytes": 1, "cpu_temps_c": {"coretemp/Package id 0": 55.0},
                 "disks": {"/data \"x\"": {"total_bytes": 10, "used_bytes": 5, "used_pct": 50.0}}},
        "gpus": [
            sample.gpu_fields({"index": 0, "uuid": "GPU-a"}, {
                "temperature_c": 81, "memory_used_mb": 1024, "memory_total_mb": 4096, "utilization_gpu_pct": 97,
                "utilization_memory_pct": 40, "power_w": 250.5, "power_limit_w": 300.0, "sm_clock_mhz": 1410,
                "mem_clock_mhz": 1593, "clock_event_reasons": 0x40 | 0x4, "ecc_uncorrected_volatile": 3,
                "retired_pages_pending": False, "pcie_gen": 4, "pcie_width": 16}),
            {"index": 1, "uuid": "GPU-b", "lost": True},
        ],
    }


def test_textfile_parses_with_prometheus_client_and_uses_base_units() -> None:
    text = sinks.render_textfile(_gpu_sample(), {"samples": 7, "write_errors": {"jsonl": 2}},
                                 [{"index": 0, "uuid": "GPU-a", "name": "A100", "pci_bus_id": "0000:3b:00.0"}])
    fams = {f.name: f for f in text_string_to_metric_families(text)}

    def value(family: str, **labels: str) -> float:
        for s in fams[family].samples:
            if all(s.labels.get(k) == v for k, v in labels.items()):
                assert s.timestamp is None
                return float(s.value)
        raise AssertionError(f"{family} {labels} missing")

    assert value("hosttune_gpu_temperature_celsius", gpu="0", uuid="GPU-a") == 81
    assert value("hosttune_gpu_memory_used_bytes", gpu="0") == 1024 * 1024 * 1024
    assert value("hosttune_gpu_power_watts", gpu="0") == 250.5
    assert value("hosttune_gpu_utilization_ratio", gpu="0") == pytest.approx(0.97)
    assert value("hosttune_gpu_clock_hertz", gpu="0", clock="sm") == 1.41e9
    assert value("hosttune_gpu_clock_event_reason", gpu="0", reason="hw_thermal_slowdown") == 1
    assert value("hosttune_gpu_clock_event_reason", gpu="0", reason="gpu_idle") == 0
    assert fams["hosttune_gpu_ecc_uncorrected_errors"].type == "counter"
    assert value("hosttune_gpu_ecc_uncorrected_errors", gpu="0") == 3
    assert value("hosttune_gpu_up", gpu="0") == 1 and value("hosttune_gpu_up", gpu="1") == 0
    assert not [s for s in fams["hosttune_gpu_temperature_celsius"].samples if s.labels["gpu"] == "1"]
    assert value("hosttune_monitor_last_success_timestamp_seconds") == 1700000000.5
    assert value("hosttune_monitor_samples") == 7 and value("hosttune_monitor_write_errors", sink="jsonl") == 2
    assert value("hosttune_cpu_utilization_ratio") == 0.25
    assert value("hosttune_filesystem_used_bytes", path='/data "x"') == 5  # label escaping round-trips
    assert value("hosttune_gpu_info", name="A100", pci_bus_id="0000:3b:00.0") == 1
    for line in text.splitlines():
        if line.startswith("# HELP "):
            assert fams  # every family has HELP and TYPE
    assert text.count("# TYPE ") == text.count("# HELP ") == len(fams)


def test_textfile_sink_replaces_atomically_and_is_world_readable(tmp_path: Path) -> None:
    sink = sinks.TextfileSink(str(tmp_path / "tf"))
    sink.write("a 1\n")
    sink.write("a 2\n")
    assert os.listdir(tmp_path / "tf") == ["hosttune.prom"]
    assert (tmp_path / "tf/hosttune.prom").read_text() == "a 2\n"
    assert (tmp_path / "tf/hosttune.prom").stat().st_mode & 0o777 == 0o644


# ---- report ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,seconds", [("90", 90), ("90s", 90), ("15m", 900), ("2h30m", 9000), ("1d", 86400)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert report.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "5x", "1h junk", "m5"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(UserError, match="--since"):
        report.parse_duration(text)


def _synthetic_log(log_dir: Path, temps: List[float], step: float = 10.0, t0: float = 1700000000.0) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    alerts = Alerts(Thresholds())
    with open(log_dir / "monitor.jsonl", "w") as f:
        for i, t in enumerate(temps):
            rec: Dict[str, Any] = {"ts": t0 + i * step, "host": {"mem_used_pct": 50.0 + i, "cpu_temps_c": {"p0": 40}},
                                   "gpus": [{"index": 0, "uuid": "GPU-a", "temperature_c": t,
                                             "memory_used_pct": 20.0, "clock_event_reasons": 0x20 if t > 85 else 0}]}
            ev = alerts.update(rec)
            if ev:
                rec["events"] = [e.to_dict() for e in ev]
            f.write(json.dumps(rec) + "\n")
        f.write('{"ts": 17000')  # a torn line from some other writer: skipped and counted, not fatal


def test_summary_min_mean_max_and_time_above_thresholds(tmp_path: Path) -> None:
    _synthetic_log(tmp_path, [70, 76, 80, 88, 90, 72, 60, 60])
    samples, bad = report.read_samples(str(tmp_path))
    assert bad == 1 and len(samples) == 8
    s = report.summarize(samples, Thresholds())
    # percentiles interpolate between ranks as numpy.percentile does: p50 of ... 72, 76 ... is 74
    assert s["metrics"]["gpu0.temperature_c"] == {"min": 60.0, "mean": 74.5, "p50": 74.0, "p95": 89.3, "p99": 89.86,
                                                  "max": 90.0, "samples": 8}
    above = {a["condition"]: a["seconds"] for a in s["above"]}
    assert above["gpu0 temperature >= 75 C (warning)"] == 40.0  # 76, 80, 88, 90: 4 samples x 10 s
    assert above["gpu0 temperature >= 85 C (critical)"] == 20.0
    assert above["gpu0 software thermal slowdown (warning)"] == 20.0
    assert above["gpu0 hardware slowdown (cooling or power-supply fault) (critical)"] == 0.0
    assert above["host memory >= 90 %"] == 0.0
    assert [(e["kind"], e["state"]) for e in s["events"] if e["kind"] == "gpu_temperature"] == [
        ("gpu_temperature", "start"), ("gpu_temperature", "start"), ("gpu_temperature", "clear"),
        ("gpu_temperature", "clear")]
    # --since keeps only the tail
    tail, _ = report.read_samples(str(tmp_path), since_s=25, now=1700000000.0 + 70)
    assert [r["gpus"][0]["temperature_c"] for r in tail] == [72, 60, 60]


def test_summary_and_plot_use_each_gpus_own_lines(tmp_path: Path) -> None:
    """A log from a GPU with slowdown 90 C: time above 80 C (warning) and 90 C (critical), lines drawn there; the
    threshold is not summarised as a metric."""
    t0 = 1700000000.0
    with open(tmp_path / "monitor.jsonl", "w") as f:
        for i, temp in enumerate([70, 80, 85, 90, 91, 70]):
            f.write(json.dumps({"ts": t0 + 10 * i, "gpus": [
                {"index": 0, "temp_slowdown_c": 90, "temperature_c": temp},
                {"index": 1, "temperature_c": 60}]}) + "\n")
    samples, bad = report.read_samples(str(tmp_path))
    assert bad == 0
    s = report.summarize(samples, Thresholds())
    above = {a["condition"]: a["seconds"] for a in s["above"]}
    assert above["gpu0 temperature >= 80 C (warning)"] == 40.0  # 80, 85, 90, 91
    assert above["gpu0 temperature >= 90 C (critical)"] == 20.0  # 90 (at the line) and 91
    assert above["gpu1 temperature >= 85 C (critical)"] == 0.0  # GPU 1 reports no threshold: the table
    assert "gpu0.temp_slowdown_c" not in s["metrics"]
    assert report.temperature_lines(samples, Thresholds()) == [
        (75.0, "warning"), (80.0, "warning"), (85.0, "critical"), (90.0, "critical")]
    root = ET.fromstring(report.render_svg(samples, Thresholds(), "t"))
    labels = {e.text for e in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"warning 80 \u00b0C", "critical 90 \u00b0C", "warning 75 \u00b0C", "critical 85 \u00b0C"} <= labels
    bad_line = {"ts": t0 + 100, "gpus": [{"index": 0, "temp_slowdown_c": "hot", "temperature_c": 50}]}
    with open(tmp_path / "monitor.jsonl", "a") as f:
        f.write(json.dumps(bad_line) + "\n")
    assert report.read_samples(str(tmp_path))[1] == 1  # a malformed threshold is an unreadable line, not a crash


def test_svg_plot_draws_both_panels_and_the_thresholds(tmp_path: Path) -> None:
    _synthetic_log(tmp_path, [70, 76, 80, 88, 90, 72, 60, 60])
    samples, _ = report.read_samples(str(tmp_path))
    root = ET.fromstring(report.render_svg(samples, Thresholds(), "t"))
    ns = "{http://www.w3.org/2000/svg}"
    panels = root.findall(f"{ns}g")
    assert [p.get("id") for p in panels] == ["temperature", "memory-used"]
    series = {pl.get("data-series") for pl in root.iter(f"{ns}polyline")}
    assert series == {"GPU 0", "CPU p0", "GPU 0 memory", "host memory"}
    gpu_line = next(pl for pl in root.iter(f"{ns}polyline") if pl.get("data-series") == "GPU 0")
    assert len(gpu_line.get("points", "").split()) == 8
    assert len([e for e in root.iter(f"{ns}line") if e.get("class") == "threshold"]) == 3


def test_report_command_text_json_plot_and_errors(tmp_path: Path) -> None:
    log = tmp_path / "log"
    _synthetic_log(log, [70, 86, 70, 60])
    runner = cli_runner()
    res = runner.invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull,
                              "--plot", str(tmp_path / "p.svg")])
    assert res.exit_code == 0, res.output
    assert "gpu0.temperature_c" in res.output and "time above thresholds" in res.output
    assert "critical" in res.output and "1 unreadable lines skipped" in res.output
    ET.parse(tmp_path / "p.svg")
    res = runner.invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull, "--json"])
    data = json.loads(res.output)
    assert data["samples"] == 4 and data["unreadable_lines"] == 1 and data["metrics"]["gpu0.temperature_c"]["max"] == 86
    res = runner.invoke(cli, ["monitor", "report", "--log-dir", str(tmp_path / "none"), "--config", os.devnull])
    assert res.exit_code == 2 and "no monitor log in" in res.stderr
    res = runner.invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull, "--plot", "x.gif"])
    assert res.exit_code == 2 and ".svg" in res.stderr
    try:
        import matplotlib  # noqa: F401

        has_mpl = True
    except ImportError:
        has_mpl = False
    res = runner.invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull,
                              "--plot", str(tmp_path / "p.png")])
    if has_mpl:
        assert res.exit_code == 0 and (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    else:
        assert res.exit_code == 2 and "matplotlib" in res.stderr and not (tmp_path / "p.png").exists()


def test_nvml_is_initialised_once_and_unsupported_fields_asked_once(fake_nvml: Any, tmp_path: Path) -> None:
    import io

    import pynvml
    from conftest import a100

    from hosttune.monitor import daemon

    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "3B", errors={"nvmlDeviceGetPowerUsage": "NOT_SUPPORTED"})]})
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), out, err)
    mon.open_sources()
    for _ in range(5):
        rec = mon.take()
        assert "power_w" not in rec["gpus"][0] and rec["gpus"][0]["temperature_c"] == 38
    mon.close()
    calls = pynvml.fake_calls()
    assert calls["nvmlInit"] == 1 and calls["nvmlShutdown"] == 1
    assert calls["nvmlDeviceGetName"] == 1  # identity read once, at start
    assert calls["nvmlDeviceGetPowerUsage"] == 1 and calls["nvmlDeviceGetTemperature"] == 5
    assert out.getvalue() == "" and err.getvalue() == ""


# ---- pinned before the issue-17 rebuild ------------------------------------------------------------------------------
def test_monitor_critical_gpu_temperature_starts_at_the_threshold_as_doctor() -> None:
    """One rule for doctor and the monitor (policy.gpu_health): a reading AT a line is at that level. Without the
    GPU's own slowdown threshold the lines are 75 C (warning) and 85 C (critical), so 85 C exactly is critical, as
    doctor fails it; with slowdown 90 C they are 80 and 90."""
    from hosttune.monitor.config import Thresholds
    from hosttune.monitor.events import Alerts
    from hosttune.policy import gpu_health

    def levels(temps: List[float], slowdown: Optional[int] = None) -> List[List[str]]:
        alerts = Alerts(Thresholds())
        out = []
        for temp in temps:
            gpu: Dict[str, Any] = {"index": 0, "temperature_c": temp}
            if slowdown is not None:
                gpu["temp_slowdown_c"] = slowdown
            evs = alerts.update({"gpus": [gpu]})
            out.append([f"{e.level}:{e.state}" for e in evs if e.kind == "gpu_temperature"])
        return out

    assert Thresholds().gpu_temp_crit_c is None and Thresholds().gpu_temp_warn_c is None  # per GPU, else the table
    assert levels([85.0]) == [["critical:start"]]
    assert levels([84.9]) == [["warning:start"]]
    assert levels([75.0]) == [["warning:start"]]
    assert levels([74.9]) == [[]]
    assert levels([84.0, 85.0])[1] == ["critical:start"]
    assert levels([90.0], slowdown=90) == [["critical:start"]]
    assert levels([89.9], slowdown=90) == [["warning:start"]]
    assert levels([80.0], slowdown=90) == [["warning:start"]]
    assert levels([79.9], slowdown=90) == [[]]
    # doctor shows the same level for the same reading as fail / warn / pass
    assert [gpu_health.doctor_status(gpu_health.temperature(t)) for t in (74.9, 75.0, 85.0)] == ["pass", "warn", "fail"]
