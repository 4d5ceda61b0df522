"""Pins (issue 21, round 6) for hosttune/monitor/sample.py's HostReader: every configured filesystem is read (not only
the first), each with df's figures, a missing one left out; /dev/shm's three fields; a missing /proc leaves only
what could be read."""

import os
from pathlib import Path

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
