"""storage.shm on a captured host (issue 21): the /dev/shm size `hosttune tune verify --root` reads from the tree's
mount table, below the 256 MiB floor a failure in MiB, under the profile's size a warning, at it a pass, unreadable
a skip (hosttune.doctor.checks.tunables)."""

from pathlib import Path

import pytest
from _doctorhelp import R, cpu_host, run_one

from hosttune.doctor.checks import tunables
from hosttune.facts import Limits, Memory

FIX_START = "hosttune tune apply --only shm   # applies it and keeps it; by hand:\ndocker run --shm-size=16g"


@pytest.mark.parametrize("options,status,actual,expected", [
    ("rw,size=65536k", "fail", "64 MiB", ">= 50% (32000 MiB)"),
    ("rw,size=200m", "fail", "200 MiB", ">= 50% (32000 MiB)"),
    ("rw,size=16g", "warn", "size=16g", "size=50%"),
    ("rw,size=40g", "pass", "size=50% (mounted with size=40g)", "size=50%"),
    ("rw", "skip", "not readable", "size=50%"),
])
def test_shm_of_a_captured_host(tmp_path: Path, options: str, status: str, actual: str, expected: str) -> None:
    files = {"proc/self/mountinfo": f"1 0 0:5 / /dev/shm rw - tmpfs tmpfs {options}\n",
             "proc/mounts": f"tmpfs /dev/shm tmpfs {options} 0 0\n", "proc/meminfo": "MemTotal: 65536000 kB\n",
             "etc/fstab": ""}
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    facts = R(cpu_host(root=str(tmp_path)), memory=Memory(total_mb=64000, shm_mb=None))
    got = run_one("storage.shm", facts, live=False)
    assert (got.status, got.actual, got.expected) == (status, actual, expected)
    assert got.fix.startswith(FIX_START) is (status in ("warn", "fail"))
    assert tunables.SHM_FLOOR_MB == 256


@pytest.mark.parametrize("limits,status,actual", [
    ("* soft nofile 1024\n* hard nofile 4096\n", "warn", "1024 (limits files)"),
    ("* soft nofile 1048576\n* hard nofile 1048576\n", "pass", "1048576 (limits files)"),
    ("", "warn", "not set (limits files)"),
    ("@x soft nofile 10\n", "warn", "not set (limits files)"),
])
def test_nofile_of_a_captured_host_from_its_limits_files(tmp_path: Path, limits: str, status: str,
                                                         actual: str) -> None:
    for rel, text in {"etc/security/limits.conf": limits, "etc/os-release": "ID=debian\n"}.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    got = run_one("cpu.nofile", cpu_host(root=str(tmp_path), limits=Limits()), live=False)
    assert (got.status, got.actual, got.expected) == (status, actual, "65536")
    assert got.fix.startswith("hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n") is (
        status == "warn")
