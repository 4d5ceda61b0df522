"""doctor's storage checks (hosttune/doctor/checks/storage.py, storage.shm in checks/tunables.py): /dev/shm, the
dataset's storage and free space for checkpoints (measured on real disks)."""

import os
from pathlib import Path

import pytest
from _doctorhelp import R, cpu_host, run_one, same, table_test

from hosttune import doctor

# (check id, host builder, change, context kwargs, expected status, text that must be in actual or fix)
CASES = [
    ("storage.shm", cpu_host, same, {}, "pass", "32000"),
    ("storage.shm", cpu_host, lambda f: R(f, memory=R(f.memory, shm_mb=64)), {}, "fail", "--shm-size"),
    ("storage.shm", cpu_host, lambda f: R(f, memory=R(f.memory, shm_mb=512)), {}, "warn", "--shm-size"),
    ("storage.data", cpu_host, same, {}, "skip", "no --data"),
    ("storage.data", cpu_host, same, {"data": ["/"]}, "pass", "nvme"),
    ("storage.data", cpu_host, same, {"data": ["/mnt/nfs/imagenet"]}, "warn", "network"),
    ("storage.data", cpu_host, same, {"data": ["/mnt/hdd"]}, "warn", "hdd"),
]


test_check = table_test(CASES)  # one case per row: status, and the text in actual/fix/expected


@pytest.mark.parametrize("total,free,status", [(1000 * 1024, 600 * 1024, "pass"), (1000 * 1024, 60 * 1024, "warn"),
                                               (100 * 1024, 40 * 1024, "warn"), (100 * 1024, 4 * 1024, "fail")])
def test_space_thresholds(total: int, free: int, status: str) -> None:
    assert doctor.space_status(total, free) == status


def test_free_space_measures_cwd_and_data(tmp_path: Path) -> None:
    st = os.statvfs(tmp_path)
    total, free = st.f_blocks * st.f_frsize >> 20, st.f_bavail * st.f_frsize >> 20
    f = run_one("storage.free_space", cpu_host(), cwd=str(tmp_path), data=[str(tmp_path), "/"])
    assert f.status in ("pass", "warn", "fail")
    assert f"{tmp_path}: " in f.actual and "/: " in f.actual
    assert doctor.space_status(total, free) in (f.status, "pass")
    assert run_one("storage.free_space", cpu_host(), live=False).status == "skip"
