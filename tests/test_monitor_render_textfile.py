"""hosttune/monitor/sinks.py's `render_textfile`, whole: one sample holding every field it draws (two GPUs, one
lost; driver; write errors; host memory, load, sensors, disks; tune drift) gives exactly the recorded textfile
(tests/recorded/textfile/full.prom), and an empty sample gives only the monitor's own metrics."""

from pathlib import Path
from typing import Any, Dict

from hosttune.monitor.sinks import render_textfile

RECORDED = Path(__file__).resolve().parent / "recorded" / "textfile"


def full_sample() -> Dict[str, Any]:
    gpu0: Dict[str, Any] = {
        "index": 0, "uuid": "GPU-a\"b", "temperature_c": 71, "memory_used_mb": 1024, "memory_total_mb": 81920,
        "utilization_gpu_pct": 55, "utilization_memory_pct": 12.5, "power_w": 301.25, "power_limit_w": 700,
        "ecc_uncorrected_volatile": 0, "retired_pages_pending": False, "remapped_rows_correctable": 2,
        "remapped_rows_uncorrectable": 0, "remapped_rows_pending": False, "remapped_rows_failure": False,
        "pcie_gen": 5, "pcie_width": 16, "memory_temperature_c": 80, "energy_j": 123456.5, "pcie_replay_errors": 3,
        "xid_errors": 1, "last_xid": 79, "sm_clock_mhz": 1980, "mem_clock_mhz": 2619,
        "clock_event_reasons": 0x20 | 0x4, "throttle_seconds": {"power": 1.5, "thermal\n": 0.0},
        "nvlink_up": [True, False], "nvlink_errors": {"replay": [0, 4], "crc_flit": [1, 0]},
    }
    return {
        "ts": 1700000000.25, "nvml": "ok",
        "driver": {"driver_version": "550.54.15", "cuda_driver_version": "12.4"},
        "gpus": [gpu0, {"index": 1, "lost": True, "temperature_c": 99}],
        "host": {
            "cpu_temps_c": {"k10temp-0": 55.5, "coretemp-1": 48}, "cpu_util_pct": 37.5,
            "load1": 1.5, "load5": 0.75, "load15": 0.25,
            "mem_total_bytes": 16 << 30, "mem_available_bytes": 8 << 30, "mem_used_bytes": 8 << 30,
            "swap_total_bytes": 0, "swap_used_bytes": 0, "shm_total_bytes": 8 << 30, "shm_used_bytes": 1 << 20,
            "disks": {"/data": {"total_bytes": 1 << 40, "used_bytes": 1 << 39}, "/": {"total_bytes": 100,
                                                                                     "used_bytes": 50}},
        },
    }


def test_a_full_sample_gives_the_recorded_textfile() -> None:
    stats = {"samples": 42, "write_errors": {"textfile": 1, "jsonl": 2}, "sample_seconds": 0.031}
    info = [{"index": 0, "uuid": "GPU-a\"b", "name": "H200", "pci_bus_id": "0000:3b:00.0", "temp_slowdown_c": 87},
            {"index": 1, "uuid": None, "name": None, "pci_bus_id": None}]
    got = render_textfile(full_sample(), stats, info, tune_drift={"thp": True, "swappiness": False})
    assert got == (RECORDED / "full.prom").read_text(encoding="utf-8")


def test_an_empty_sample_gives_only_the_monitors_own_metrics() -> None:
    assert render_textfile({"ts": 5}, {}) == "\n".join([
        "# HELP hosttune_monitor_up 1 while the monitor runs; 0 in the file it leaves when it stops.",
        "# TYPE hosttune_monitor_up gauge",
        "hosttune_monitor_up 1",
        "# HELP hosttune_monitor_last_success_timestamp_seconds Unix time of the last sample the monitor completed.",
        "# TYPE hosttune_monitor_last_success_timestamp_seconds gauge",
        "hosttune_monitor_last_success_timestamp_seconds 5",
        "# HELP hosttune_monitor_samples_total Samples taken since the monitor started.",
        "# TYPE hosttune_monitor_samples_total counter",
        "hosttune_monitor_samples_total 0",
        "# HELP hosttune_monitor_nvml_up 1 when NVML is initialised.",
        "# TYPE hosttune_monitor_nvml_up gauge",
        "hosttune_monitor_nvml_up 0",
    ]) + "\n"
