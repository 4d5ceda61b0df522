"""Pins for hosttune/monitor/sample.py (issue 21, round 5): the /proc parsers' exact arithmetic, df's Use%, one GPU's
entry (derived fields, jobs through the finder), CPU sensor discovery on a sysfs tree (chip order, Package/Tdie/
first-input rules, the old device/ layout, the x86_pkg_temp fallback) and what HostReader.read() gives from a fake
root."""

import os
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

import pytest

from hosttune.monitor import sample


def stat_line(*f: int) -> str:
    return "cpu  " + " ".join(map(str, f)) + "\ncpu0 1 1 1 1\n"


def test_proc_stat_times() -> None:
    # user nice system idle iowait irq softirq steal guest guest_nice
    assert sample.parse_proc_stat_times(stat_line(10, 1, 5, 100, 7, 2, 3, 4, 50, 50)) == (25, 132, 7)
    assert sample.parse_proc_stat_cpu(stat_line(10, 1, 5, 100, 7, 2, 3, 4)) == (25, 132)
    assert sample.parse_proc_stat_times(stat_line(1, 2, 3, 4)) == (6, 10, 0)  # old kernels: fewer fields
    assert sample.parse_proc_stat_times("intr 5\ncpu  1 0 0 1 0 0 0 0\n") == (1, 2, 0)
    with pytest.raises(ValueError):
        sample.parse_proc_stat_times("cpu0 1 2 3 4\n")


def test_cpu_util_pct() -> None:
    assert sample.cpu_util_pct((10, 100), (40, 200)) == 30.0
    assert sample.cpu_util_pct((10, 100), (11, 103)) == 33.33
    assert sample.cpu_util_pct((10, 100), (10, 100)) is None
    assert sample.cpu_util_pct((10, 100), (10, 99)) is None
    assert sample.cpu_util_pct((10, 100), (5, 101)) == 0.0  # a counter going back is no negative load
    assert sample.cpu_util_pct((0, 0), (1, 1)) == 100.0


def test_loadavg() -> None:
    assert sample.parse_loadavg("0.50 1.25 2.00 3/400 12345\n") == (0.5, 1.25, 2.0)


def test_meminfo() -> None:
    text = ("MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 600 kB\nBuffers: 10 kB\nCached: 20 kB\n"
            "SwapTotal: 50 kB\nSwapFree: 20 kB\nHugePages_Total: 4\nBad line\n")
    assert sample.parse_meminfo(text) == {"mem_total_bytes": 1024000, "mem_available_bytes": 614400,
                                          "mem_used_bytes": 409600, "swap_total_bytes": 51200,
                                          "swap_used_bytes": 30720}
    old = "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 10 kB\nCached: 20 kB\n"
    got = sample.parse_meminfo(old)
    assert got["mem_available_bytes"] == 130 * 1024 and got["swap_total_bytes"] == 0 and got["swap_used_bytes"] == 0
    assert sample.parse_meminfo("MemTotal: 10 kB\nMemAvailable: 20 kB\n")["mem_used_bytes"] == 0
    assert sample.parse_meminfo("MemTotal: 10\nSwapTotal: 8 kB\n")["mem_total_bytes"] == 10  # no unit: bytes
    assert sample.parse_meminfo("MemTotal: 10 kB\nSwapTotal: 8 kB\n")["swap_used_bytes"] == 0  # no SwapFree
    with pytest.raises(ValueError):
        sample.parse_meminfo("MemFree: 1 kB\n")


def test_mem_used_pct_and_millicelsius() -> None:
    assert sample.mem_used_pct({"mem_total_bytes": 3, "mem_used_bytes": 1}) == 33.33
    assert sample.mem_used_pct({"mem_total_bytes": 0, "mem_used_bytes": 0}) is None
    assert sample.parse_millicelsius("45500\n\0") == 45.5
    assert sample.parse_millicelsius("-1000") == -1.0


def test_fs_usage_is_dfs_use_percent() -> None:
    st = SimpleNamespace(f_blocks=100, f_bfree=30, f_bavail=10, f_frsize=4096)
    assert sample.fs_usage(st) == {"total_bytes": 409600, "used_bytes": 286720, "used_pct": 87.5}
    assert sample.fs_usage(SimpleNamespace(f_blocks=0, f_bfree=0, f_bavail=0, f_frsize=4096))["used_pct"] == 0.0


class Finder:
    def __init__(self) -> None:
        self.calls: List[Any] = []

    def attribute(self, procs: Any) -> List[Dict[str, Any]]:
        self.calls.append(procs)
        return [dict(p, job="7", kind="slurm", user="u") for p in procs]


def test_gpu_fields() -> None:
    f = Finder()
    got = sample.gpu_fields({"index": 1, "uuid": "GPU-x", "temp_slowdown_c": 90, "name": "n"},
                            {"memory_used_mb": 1, "memory_total_mb": 3, "clock_event_reasons": 0x4,
                             "processes": [{"pid": 5}, {"pid": 6}]}, f)
    assert got["index"] == 1 and got["uuid"] == "GPU-x" and got["temp_slowdown_c"] == 90 and "name" not in got
    assert got["memory_used_pct"] == 33.33 and got["clock_event_reason_names"] == ["sw_power_cap"]
    assert got["processes"] == [{"pid": 5, "job": "7", "kind": "slurm", "user": "u"},
                                {"pid": 6, "job": "7", "kind": "slurm", "user": "u"}]
    assert got["jobs"] == [{"job": "7", "kind": "slurm", "user": "u"}] and len(f.calls) == 1
    bare = sample.gpu_fields({"index": 0}, {"memory_used_mb": 0, "memory_total_mb": 0}, f)
    assert bare == {"index": 0, "uuid": None, "memory_used_mb": 0, "memory_total_mb": 0} and len(f.calls) == 1
    assert sample.gpu_fields({"index": 0}, {"memory_used_mb": 0, "memory_total_mb": 8}, f)["memory_used_pct"] == 0.0


def chip(root: Path, n: str, name: str, temps: Dict[int, str], old: bool = False) -> Path:
    d = root / "sys/class/hwmon" / n
    if old:
        d = d / "device"
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    for i, label in temps.items():
        (d / f"temp{i}_input").write_text("50000\n")
        if label:
            (d / f"temp{i}_label").write_text(label + "\n")
    return d


def names(root: Path) -> List[str]:
    return [s.name for s in sample.find_cpu_sensors(root)]


def test_cpu_sensors_by_chip(tmp_path: Path) -> None:
    chip(tmp_path, "hwmon10", "coretemp", {1: "Package id 1", 2: "Core 0"})
    d = chip(tmp_path, "hwmon2", "coretemp", {1: "Package id 0", 2: "Core 0"})
    chip(tmp_path, "hwmon1", "nvme", {1: "Composite"})
    chip(tmp_path, "hwmon3", "k10temp", {1: "Tctl", 3: "Tdie"})
    chip(tmp_path, "hwmon4", "zenpower", {1: "Tctl"})
    chip(tmp_path, "hwmon5", "cpu_thermal", {2: "", 1: ""})
    assert names(tmp_path) == ["coretemp/Package id 0", "k10temp/Tdie", "zenpower/Tctl", "cpu_thermal/temp1",
                               "coretemp.1/Package id 1"]
    assert sample.find_cpu_sensors(tmp_path)[0].path == str(d / "temp1_input")


def test_old_layout_and_thermal_zone_fallback(tmp_path: Path) -> None:
    chip(tmp_path, "hwmon0", "coretemp", {1: "Package id 0"}, old=True)
    assert names(tmp_path) == ["coretemp/Package id 0"]
    other = tmp_path / "other"
    chip(other, "hwmon0", "k10temp", {1: "Tccd1"})  # a CPU chip with no usable input: the zones next
    for n, kind in (("thermal_zone10", "x86_pkg_temp"), ("thermal_zone2", "x86_pkg_temp"), ("thermal_zone1", "acpitz")):
        z = other / "sys/class/thermal" / n
        z.mkdir(parents=True)
        (z / "type").write_text(kind + "\n")
    got = sample.find_cpu_sensors(other)
    assert [s.name for s in got] == ["x86_pkg_temp/thermal_zone2", "x86_pkg_temp/thermal_zone10"]
    assert got[0].path == str(other / "sys/class/thermal/thermal_zone2/temp")
    assert sample.find_cpu_sensors(tmp_path / "empty") == []


def test_natural_order() -> None:
    assert sorted(["hwmon10", "hwmon2", "hwmon1"], key=sample._natural) == ["hwmon1", "hwmon2", "hwmon10"]


def test_read_is_bounded_and_never_raises(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_text("abcd")
    assert sample._read(p) == "abcd" and sample._read(p, 3) is None and sample._read(p, 4) == "abcd"
    assert sample._read(tmp_path / "missing") is None
    p.write_bytes(b"\xff")
    assert sample._read(p) is None


def fake_root(tmp_path: Path) -> Path:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/stat").write_text(stat_line(10, 0, 0, 90, 0, 0, 0, 0))
    (tmp_path / "proc/loadavg").write_text("1.00 2.00 3.00 1/2 3\n")
    (tmp_path / "proc/meminfo").write_text("MemTotal: 100 kB\nMemAvailable: 25 kB\n")
    (tmp_path / "shm").mkdir()
    chip(tmp_path, "hwmon0", "coretemp", {1: "Package id 0"})
    return tmp_path


def test_host_reader_reads_the_root_it_is_given(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    r = sample.HostReader(root, disks=("/", "/missing"), shm="/shm", clock=lambda: 1.0)
    assert [s.name for s in r.sensors] == ["coretemp/Package id 0"]
    (root / "proc/stat").write_text(stat_line(40, 0, 0, 150, 10, 0, 0, 0))
    got = r.read()
    assert got["cpu_util_pct"] == 30.0 and got["iowait_pct"] == 10.0
    assert (got["load1"], got["load5"], got["load15"]) == (1.0, 2.0, 3.0)
    assert got["mem_total_bytes"] == 102400 and got["mem_used_bytes"] == 76800 and got["mem_used_pct"] == 75.0
    assert got["cpu_temps_c"] == {"coretemp/Package id 0": 50.0}
    st = os.statvfs(root)
    assert got["shm_total_bytes"] == st.f_blocks * st.f_frsize and "shm_used_pct" in got
    assert list(got["disks"]) == ["/"] and got["disks"]["/"]["total_bytes"] == st.f_blocks * st.f_frsize
    # a second read compares with the first, not the construction
    (root / "proc/stat").write_text(stat_line(40, 0, 0, 250, 10, 0, 0, 0))
    assert r.read()["cpu_util_pct"] == 0.0


def test_host_reader_skips_what_it_cannot_read(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    r = sample.HostReader(root, disks=("/missing",), shm="/noshm", clock=lambda: 1.0)
    (root / "proc/stat").write_text("garbage\n")
    (root / "proc/loadavg").write_text("1.0\n")
    (root / "proc/meminfo").write_text("MemFree: 1 kB\n")
    (root / "sys/class/hwmon/hwmon0/temp1_input").write_text("hot\n")
    got = r.read()
    for key in ("cpu_util_pct", "iowait_pct", "load1", "mem_total_bytes", "mem_used_pct", "cpu_temps_c",
                "shm_total_bytes", "disks"):
        assert key not in got, key
    (root / "proc/stat").write_text(stat_line(40, 0, 0, 150, 10, 0, 0, 0))
    assert "cpu_util_pct" not in r.read()  # no previous reading to compare with
    (root / "proc/stat").write_text(stat_line(50, 0, 0, 250, 10, 0, 0, 0))
    assert r.read()["cpu_util_pct"] == 9.09


DISK = "   8       0 sda {r} 0 {sr} 0 {w} 0 {sw} 0 0 {io} 0\n   8       1 sda1 1 0 1 0 1 0 1 0 0 1 0\n"


def test_host_reader_gives_disk_rates_from_the_second_reading_on(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    (root / "sys/block/sda").mkdir(parents=True)
    (root / "proc/diskstats").write_text(DISK.format(r=0, sr=0, w=0, sw=0, io=0))
    now = [100.0]
    r = sample.HostReader(root, disks=(), shm="/noshm", clock=lambda: now[0])
    now[0] = 102.0
    (root / "proc/diskstats").write_text(DISK.format(r=10, sr=4096, w=10, sw=2048, io=1000))
    got = r.read()
    assert list(got["disk_io"]) == ["sda"] and got["disk_io"]["sda"]["util_pct"] == 50.0
    assert "disk_io" not in sample.HostReader(root, disks=(), shm="/noshm", clock=lambda: 0.0).read()


def test_diskstats_is_read_under_its_own_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = fake_root(tmp_path)
    (root / "sys/block/sda").mkdir(parents=True)
    (root / "proc/diskstats").write_text(DISK.format(r=0, sr=0, w=0, sw=0, io=0))
    monkeypatch.setattr(sample.diskio, "DISKSTATS_LIMIT", 16)  # smaller than the file: not read at all
    now = [100.0]
    r = sample.HostReader(root, disks=(), shm="/noshm", clock=lambda: now[0])
    now[0] = 102.0
    (root / "proc/diskstats").write_text(DISK.format(r=10, sr=4096, w=10, sw=2048, io=1000))
    assert "disk_io" not in r.read()


def test_now_fields() -> None:
    before = time.time()
    got = sample.now_fields()
    assert before - 1 <= got["ts"] <= time.time() + 1 and round(got["ts"], 3) == got["ts"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", got["time"])
