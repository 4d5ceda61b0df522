"""Pins for hosttune.detect.storage (issue 21, practice round HDOC): which filesystems are memory (tmpfs kind), and
/dev/shm's size read live even when the other sizes are not."""

from pathlib import Path
from typing import Tuple

import pytest

from hosttune.detect import storage
from hosttune.detect.hostio import HostIO
from hosttune.detect.mounts import MountEntry
from hosttune.facts import Mount


@pytest.mark.parametrize("fstype", ["tmpfs", "ramfs"])
def test_memory_filesystems_are_tmpfs(tmp_path: Path, fstype: str) -> None:
    io = HostIO(tmp_path)
    got = storage.classify(io, MountEntry("/scratch", fstype, "none", devno="0:52", options="rw,size=1024k"))
    assert got == Mount(mount="/scratch", fstype=fstype, source="none", device=None, kind="tmpfs")


def test_captured_tree_memory_mounts_and_their_sizes(tmp_path: Path) -> None:
    info = ("30 1 0:30 / /dev/shm rw,nosuid,nodev shared:2 - tmpfs tmpfs rw,size=65536k\n"
            "31 1 0:31 / /mnt/ram rw - ramfs ramfs rw\n"
            "32 1 0:32 / /mnt/nfs rw - nfs4 srv:/x rw,vers=4.2\n")
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text(info)
    mounts, shm = storage.probe(HostIO(tmp_path))
    assert mounts == (
        Mount(mount="/dev/shm", fstype="tmpfs", source="tmpfs", device=None, kind="tmpfs", size_mb=64),
        Mount(mount="/mnt/ram", fstype="ramfs", source="ramfs", device=None, kind="tmpfs"),
        Mount(mount="/mnt/nfs", fstype="nfs4", source="srv:/x", device="srv:/x", kind="network"),
    )
    assert shm == 64


def test_live_dev_shm_is_sized_without_the_other_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    text = Path("/proc/self/mountinfo").read_text()
    if " /dev/shm " not in text:
        pytest.skip("no /dev/shm mount on this host")
    asked = []

    def statvfs(path: str) -> Tuple[int, int]:
        asked.append(path)
        return 777, 555

    monkeypatch.setattr(storage, "_statvfs", statvfs)
    mounts, shm = storage.probe(HostIO(Path("/")), sizes=False)
    assert shm == 777 and asked == ["/dev/shm"] * len(asked) and asked
    assert [(m.size_mb, m.free_mb) for m in mounts if m.mount == "/dev/shm"] == [(777, 555)]
    assert all(m.free_mb is None for m in mounts if m.mount != "/dev/shm")
