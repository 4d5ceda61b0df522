"""Pins (issue 21, round 6) for hosttune/monitor/sample.py's HostReader: every configured filesystem is read (not only
the first), each with df's figures, a missing one left out; /dev/shm's three fields; a missing /proc leaves only
what could be read."""

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from hosttune.monitor import sample


def test_every_configured_filesystem_is_read_and_a_missing_one_left_out(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    (root / "shm").mkdir()
    r = sample.HostReader(root, disks=("/missing", "/", "/data"), shm="/shm", clock=lambda: 1.0)
    got = r.read()
    assert list(got["disks"]) == ["/", "/data"]
    want = sample.fs_usage(os.statvfs(root))
    for path in ("/", "/data"):
        assert got["disks"][path]["total_bytes"] == want["total_bytes"]
        assert set(got["disks"][path]) == {"total_bytes", "used_bytes", "used_pct"}
        assert 0.0 <= got["disks"][path]["used_pct"] <= 100.0
    assert got["shm_total_bytes"] == want["total_bytes"] and "shm_used_bytes" in got and "shm_used_pct" in got
    assert not any(k in got for k in ("cpu_util_pct", "load1", "mem_total_bytes", "cpu_temps_c"))
    assert sample.HostReader(root, disks=(), shm="/none", clock=lambda: 1.0).read() == {}


def test_memory_percent_of_nothing_is_unknown_not_zero() -> None:
    assert sample.mem_used_pct({"mem_used_bytes": 5}) is None
    assert sample.mem_used_pct({"mem_total_bytes": 200, "mem_used_bytes": 50, "mem_available_bytes": 150}) == 25.0


def test_each_filesystems_figures_are_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    fake = {str(root / "a"): SimpleNamespace(f_blocks=100, f_bfree=30, f_bavail=10, f_frsize=4096),
            str(root / "b"): SimpleNamespace(f_blocks=10, f_bfree=10, f_bavail=10, f_frsize=512)}
    real = os.statvfs
    monkeypatch.setattr(os, "statvfs", lambda p: fake[str(p)] if str(p) in fake else real(p))
    got = sample.HostReader(root, disks=("/a", "/b"), shm="/none", clock=lambda: 1.0).read()
    assert got["disks"] == {"/a": {"total_bytes": 409600, "used_bytes": 286720, "used_pct": 87.5},
                            "/b": {"total_bytes": 5120, "used_bytes": 0, "used_pct": 0.0}}


def test_hwmon_sensors_win_over_the_thermal_zones(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chip = root / "sys/class/hwmon/hwmon0"
    chip.mkdir(parents=True)
    (chip / "name").write_text("coretemp\n")
    (chip / "temp1_input").write_text("45000\n")
    (chip / "temp1_label").write_text("Package id 0\n")
    zone = root / "sys/class/thermal/thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "type").write_text("x86_pkg_temp\n")
    (zone / "temp").write_text("50000\n")
    assert [s.name for s in sample.find_cpu_sensors(root)] == ["coretemp/Package id 0"]
    (chip / "name").write_text("nvme\n")
    assert [s.name for s in sample.find_cpu_sensors(root)] == ["x86_pkg_temp/thermal_zone0"]
