"""Where a --data path lives (issue 22, low): a device, a FIFO or a file on a kernel filesystem is not data on a disk.

`doctor --data /dev/zero` (or a FIFO, or /proc/kmsg) was reported as an hdd, "ext4 on /", by the longest mount
prefix, and failed the free-space check with statvfs numbers of devtmpfs or proc. `detect.storage.data_path_problem`
says what such a path is; doctor's storage checks name it and never classify it.
"""

import json
import os
import socket
from pathlib import Path

import pytest
from _synthhost import cpu_files
from conftest import build_tree as build
from conftest import run_cli

from hosttune.detect import collect
from hosttune.detect.hostio import HostIO
from hosttune.detect.storage import data_path_problem


def test_devices_fifos_and_sockets_are_not_data(tmp_path: Path) -> None:
    assert data_path_problem("/dev/zero") == "is a character device, not a file or directory of data"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert data_path_problem(str(fifo)) == "is a FIFO, not a file or directory of data"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock"))
        assert data_path_problem(str(tmp_path / "sock")) == "is a socket, not a file or directory of data"
    finally:
        sock.close()
    os.symlink("/dev/zero", tmp_path / "zero")  # what the path names, not the link
    assert data_path_problem(str(tmp_path / "zero")) == "is a character device, not a file or directory of data"


def test_files_on_kernel_filesystems_are_not_data() -> None:
    # /proc/self/status is a "regular file" to stat(2); its filesystem (from mountinfo by device number) says proc
    assert data_path_problem("/proc/self/status") == "is on proc (/proc), a kernel filesystem, not storage"
    if os.path.exists("/proc/kmsg"):
        assert data_path_problem("/proc/kmsg") == "is on proc (/proc), a kernel filesystem, not storage"
    assert (data_path_problem("/sys/kernel") or "").startswith("is on sysfs (")


def test_real_data_and_unknowns_are_not_judged(tmp_path: Path) -> None:
    (tmp_path / "shard-0.tar").write_bytes(b"x")
    assert data_path_problem(str(tmp_path)) is None
    assert data_path_problem(str(tmp_path / "shard-0.tar")) is None
    assert data_path_problem(str(tmp_path / "missing")) is None  # doctor refuses a missing path itself
    assert data_path_problem("/dev/shm") is None  # tmpfs is memory, and a real place for data: its own check


def test_the_filesystem_comes_from_mountinfo_by_device_number(tmp_path: Path) -> None:
    """A stand-in /proc/self/mountinfo that says this directory's device is a kernel filesystem (as an lxcfs
    /proc in a container is fuse.lxcfs); the same device as ext4 is not judged."""
    data = tmp_path / "data"
    data.mkdir()
    st = os.stat(data)
    devno = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    root = tmp_path / "root"
    (root / "proc/self").mkdir(parents=True)
    line = f"36 25 {devno} / {data} rw,relatime shared:1 - {{fs}} lxcfs rw\n"
    (root / "proc/self/mountinfo").write_text(line.format(fs="fuse.lxcfs"))
    assert data_path_problem(str(data), HostIO(root)) == f"is on fuse.lxcfs ({data}), a kernel filesystem, not storage"
    (root / "proc/self/mountinfo").write_text(line.format(fs="ext4"))
    assert data_path_problem(str(data), HostIO(root)) is None


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "/proc/kmsg"])
def test_doctor_never_calls_a_device_or_proc_file_a_disk(tmp_path: Path, kind: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = kind
    if kind == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    elif not os.path.exists(path):
        pytest.skip(f"no {path} here")
    monkeypatch.chdir(tmp_path)  # free_space also looks at the working directory: a real one
    res = run_cli(["doctor", "--json", "--only", "storage", "--data", path])
    assert res.returncode in (0, 1, 2), res.stderr
    if res.returncode == 2:  # refused as bad input: one line naming it
        assert res.stderr.count("\n") == 1 and path in res.stderr, res.stderr
        return
    by = {f["id"]: f for f in json.loads(res.stdout)["findings"]}
    data, free = by["storage.data"], by["storage.free_space"]
    assert data["status"] == "skip" and path in data["actual"], data
    for kind_name in ("hdd", "ssd", "nvme", "network", "unknown"):
        assert f"{path}: {kind_name}" not in data["actual"], data
    assert f"{path} is " in free["actual"] and "(not checked)" in free["actual"], free
    assert f"{path}: 0 GiB free" not in free["actual"], free


# ---- pinned before the issue-17 rebuild ------------------------------------------------------------------------------
def test_raid_of_hdd_and_ssd_is_reported_as_hdd(tmp_path: Path) -> None:
    """md0 = RAID1 of a spinning disk and an SSD: reads are as slow as the slowest member can make them."""
    pci = "/sys/devices/pci0000:00"
    files = cpu_files(2)
    files.update({
        "/proc/self/mountinfo": "21 1 259:1 / / rw - ext4 /dev/nvme0n1p1 rw\n"
                                "25 21 9:0 / /data rw,relatime - xfs /dev/md0 rw\n",
        f"{pci}/nvme/nvme0/nvme0n1/queue/rotational": "0\n",
        f"{pci}/nvme/nvme0/nvme0n1/nvme0n1p1/partition": "1\n",
        "/sys/devices/virtual/block/md0/queue/rotational": "0\n",  # md reports 0 whatever it is made of
        f"{pci}/ata1/sda/queue/rotational": "1\n",
        f"{pci}/ata2/sdb/queue/rotational": "0\n",
    })
    links = {
        "/sys/dev/block/259:1": "../../devices/pci0000:00/nvme/nvme0/nvme0n1/nvme0n1p1",
        "/sys/dev/block/9:0": "../../devices/virtual/block/md0",
        "/sys/devices/virtual/block/md0/slaves/sda": "../../../../pci0000:00/ata1/sda",
        "/sys/devices/virtual/block/md0/slaves/sdb": "../../../../pci0000:00/ata2/sdb",
        "/sys/class/block/nvme0n1": "../../devices/pci0000:00/nvme/nvme0/nvme0n1",
        "/sys/class/block/sda": "../../devices/pci0000:00/ata1/sda",
        "/sys/class/block/sdb": "../../devices/pci0000:00/ata2/sdb",
    }
    for order in ("sda,sdb", "sdb,sda"):  # member order must not matter
        root = build(tmp_path / order, files, links)
        got = {m.mount: m for m in collect(root, probe_torch=False, use_nvml=False).storage}
        assert got["/"].kind == "nvme"
        assert got["/data"].kind == "hdd", got["/data"]
        assert set((got["/data"].device or "").split(",")) == {"sda", "sdb"}
