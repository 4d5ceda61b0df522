"""Pins (issue 21, round 8 practice) for hosttune/monitor/sample.py HostReader.read, whole output, on a tree: two
coretemp chips and a k10temp (the second chip of a name is "coretemp.1"), /proc/stat with steal time, load, memory
and swap, /proc/diskstats with /sys/block; no disk or /dev/shm asked (their sizes are the machine's)."""

import json
from pathlib import Path
from typing import Dict, List

from hosttune.monitor import sample


def _chip(root: Path, n: str, name: str, temps: Dict[int, str], millis: int) -> None:
    d = root / "sys/class/hwmon" / n
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    for i, label in temps.items():
        (d / f"temp{i}_input").write_text(f"{millis + i * 1000}\n")
        if label:
            (d / f"temp{i}_label").write_text(label + "\n")


def _diskstats(rows: List[tuple]) -> str:
    """name, sectors read, sectors written, ms doing I/O (fields 3, 7 and 10 after the name; iostats.rst)."""
    out = []
    for major, minor, name, rd, wr, io_ms in rows:
        fields = [11, 12, rd, 14, 15, 16, wr, 18, 19, io_ms, 21, 22, 23, 24, 25, 26, 27]
        out.append(f"{major:4d} {minor:7d} {name} " + " ".join(map(str, fields)) + "\n")
    return "".join(out)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_host_reader_whole_reading_of_a_tree(tmp_path: Path) -> None:
    root = tmp_path
    (root / "proc").mkdir()
    # user nice system idle iowait irq softirq steal
    (root / "proc/stat").write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 1 1 1\n")
    (root / "proc/loadavg").write_text("0.50 1.25 2.00 3/400 5000\n")
    (root / "proc/meminfo").write_text("MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 250 kB\n"
                                       "SwapTotal: 400 kB\nSwapFree: 300 kB\n")
    (root / "proc/diskstats").write_text(_diskstats([(8, 0, "sda", 0, 0, 0), (8, 1, "sda1", 0, 0, 0)]))
    (root / "sys/block/sda").mkdir(parents=True)
    _chip(root, "hwmon0", "coretemp", {1: "Package id 0", 2: "Core 0"}, 40000)
    _chip(root, "hwmon1", "acpitz", {1: ""}, 30000)
    _chip(root, "hwmon2", "coretemp", {1: "Package id 1"}, 60000)
    _chip(root, "hwmon3", "k10temp", {1: "Tctl"}, 70000)
    clock = Clock()
    reader = sample.HostReader(root, disks=(), shm="/noshm", clock=clock)
    clock.now += 2.0
    # of 250 jiffies: user, system and steal busy 140 (56 %), iowait 60 (24 %)
    (root / "proc/stat").write_text("cpu  200 0 80 850 110 0 0 10 0 0\ncpu0 1 1 1 1\n")
    (root / "proc/diskstats").write_text(_diskstats([(8, 0, "sda", 39_062, 7_812, 1000),
                                                     (8, 1, "sda1", 39_062, 7_812, 1000)]))
    got = reader.read()
    assert got == {
        "cpu_util_pct": 56.0, "iowait_pct": 24.0,
        "cpu_temps_c": {"coretemp/Package id 0": 41.0, "coretemp.1/Package id 1": 61.0, "k10temp/Tctl": 71.0},
        "disk_io": {"sda": {"read_mb_s": 10.0, "write_mb_s": 2.0, "util_pct": 50.0}},
        "load1": 0.5, "load5": 1.25, "load15": 2.0,
        "mem_total_bytes": 1024000, "mem_available_bytes": 256000, "mem_used_bytes": 768000, "mem_used_pct": 75.0,
        "swap_total_bytes": 409600, "swap_used_bytes": 102400,
    }
    json.dumps(got)
