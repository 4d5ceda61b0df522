"""Pins (issue 21, round 8 practice) for hosttune/monitor/sinks.py render_textfile, whole text: an idle host (CPUs
0 % busy, no swap in use, loads 0) and an idle GPU (0 W, 0 % busy) are lines with the value 0 as read (0.0 stays a
float), never missing lines; a reading the sample does not carry is no line at all."""

import os
import stat
from pathlib import Path

from hosttune.monitor import sinks


def _head(samples: int) -> list:
    return ["# HELP hosttune_monitor_up 1 while the monitor runs; 0 in the file it leaves when it stops.",
            "# TYPE hosttune_monitor_up gauge",
            "hosttune_monitor_up 1",
            "# HELP hosttune_monitor_last_success_timestamp_seconds Unix time of the last sample the monitor "
            "completed.",
            "# TYPE hosttune_monitor_last_success_timestamp_seconds gauge",
            "hosttune_monitor_last_success_timestamp_seconds 5.0",
            "# HELP hosttune_monitor_samples_total Samples taken since the monitor started.",
            "# TYPE hosttune_monitor_samples_total counter",
            f"hosttune_monitor_samples_total {samples}",
            "# HELP hosttune_monitor_nvml_up 1 when NVML is initialised.",
            "# TYPE hosttune_monitor_nvml_up gauge",
            "hosttune_monitor_nvml_up 1"]


def test_an_idle_host_is_lines_of_zero() -> None:
    host = {"cpu_util_pct": 0.0, "load1": 0.0, "load5": 0.0, "load15": 0.0, "mem_total_bytes": 1024,
            "mem_available_bytes": 1024, "mem_used_bytes": 0, "swap_total_bytes": 0, "swap_used_bytes": 0}
    got = sinks.render_textfile({"ts": 5.0, "nvml": "ok", "host": host}, {"samples": 1})
    assert got == "\n".join(_head(1) + [
        "# HELP hosttune_cpu_utilization_ratio Busy fraction of all CPUs over the last interval.",
        "# TYPE hosttune_cpu_utilization_ratio gauge",
        "hosttune_cpu_utilization_ratio 0.0",
        "# HELP hosttune_load1 1-minute load average.",
        "# TYPE hosttune_load1 gauge",
        "hosttune_load1 0.0",
        "# HELP hosttune_load5 5-minute load average.",
        "# TYPE hosttune_load5 gauge",
        "hosttune_load5 0.0",
        "# HELP hosttune_load15 15-minute load average.",
        "# TYPE hosttune_load15 gauge",
        "hosttune_load15 0.0",
        "# HELP hosttune_memory_total_bytes Host memory size (MemTotal).",
        "# TYPE hosttune_memory_total_bytes gauge",
        "hosttune_memory_total_bytes 1024",
        "# HELP hosttune_memory_available_bytes Host memory available (MemAvailable).",
        "# TYPE hosttune_memory_available_bytes gauge",
        "hosttune_memory_available_bytes 1024",
        "# HELP hosttune_memory_used_bytes Host memory in use (MemTotal - MemAvailable).",
        "# TYPE hosttune_memory_used_bytes gauge",
        "hosttune_memory_used_bytes 0",
        "# HELP hosttune_swap_total_bytes Swap size.",
        "# TYPE hosttune_swap_total_bytes gauge",
        "hosttune_swap_total_bytes 0",
        "# HELP hosttune_swap_used_bytes Swap in use.",
        "# TYPE hosttune_swap_used_bytes gauge",
        "hosttune_swap_used_bytes 0",
    ]) + "\n"


def test_an_idle_gpu_is_lines_of_zero_and_a_missing_reading_no_line() -> None:
    gpu = {"index": 0, "uuid": "GPU-a", "power_w": 0.0, "utilization_gpu_pct": 0, "utilization_memory_pct": 0.0,
           "retired_pages_pending": False, "pcie_gen": 4, "xid_errors": 0, "temperature_c": None}
    got = sinks.render_textfile({"ts": 5.0, "nvml": "ok", "gpus": [gpu]}, {"samples": 2})
    labels = '{gpu="0",uuid="GPU-a"}'
    assert got == "\n".join(_head(2) + [
        "# HELP hosttune_gpu_up 1 while the GPU answers NVML, 0 once it is lost.",
        "# TYPE hosttune_gpu_up gauge",
        f"hosttune_gpu_up{labels} 1",
        "# HELP hosttune_gpu_utilization_ratio Fraction of the last sample period in which a kernel ran.",
        "# TYPE hosttune_gpu_utilization_ratio gauge",
        f"hosttune_gpu_utilization_ratio{labels} 0.0",
        "# HELP hosttune_gpu_memory_utilization_ratio Fraction of the last sample period in which device memory was "
        "read or written.",
        "# TYPE hosttune_gpu_memory_utilization_ratio gauge",
        f"hosttune_gpu_memory_utilization_ratio{labels} 0.0",
        "# HELP hosttune_gpu_power_watts GPU board power draw.",
        "# TYPE hosttune_gpu_power_watts gauge",
        f"hosttune_gpu_power_watts{labels} 0.0",
        "# HELP hosttune_gpu_retired_pages_pending 1 when retired pages wait for a GPU reset.",
        "# TYPE hosttune_gpu_retired_pages_pending gauge",
        f"hosttune_gpu_retired_pages_pending{labels} 0",
        "# HELP hosttune_gpu_pcie_link_generation Current PCIe link generation.",
        "# TYPE hosttune_gpu_pcie_link_generation gauge",
        f"hosttune_gpu_pcie_link_generation{labels} 4",
        "# HELP hosttune_gpu_xid_errors_total Critical XID errors seen since the monitor started (NVML XID events or "
        "the kernel log).",
        "# TYPE hosttune_gpu_xid_errors_total counter",
        f"hosttune_gpu_xid_errors_total{labels} 0",
    ]) + "\n"


def test_reopen_after_the_log_dir_was_moved_away_makes_it_again(tmp_path: Path) -> None:
    """SIGHUP's reopen (logrotate, or an admin who moved the whole directory): the next line goes to a new file at the
    same path, in the directory made again (mode DIR_MODE); what was written before stays in the moved file."""
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), 1 << 20, 2)
    try:
        sink.write({"ts": 1.0})
        os.rename(log, tmp_path / "old")
        sink.reopen()
        sink.write({"ts": 2.0})
    finally:
        sink.close()
    assert (tmp_path / "old" / "monitor.jsonl").read_text() == '{"ts":1.0}\n'
    assert (log / "monitor.jsonl").read_text() == '{"ts":2.0}\n'
    assert stat.S_IMODE(os.stat(log).st_mode) == sinks.DIR_MODE == 0o755
    assert sinks.jsonl_files(str(log)) == [str(log / "monitor.jsonl")]
