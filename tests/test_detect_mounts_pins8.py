"""hosttune.detect.mounts pins (issue 21, practice round HDET8): every field of both mount tables unescaped where
the kernel escapes it (mount point, source, root), and what read_mounts falls back to."""

from pathlib import Path

from conftest import build_tree

from hosttune.detect import mounts
from hosttune.detect.hostio import HostIO
from hosttune.detect.mounts import MountEntry

PROC_MOUNTS = ("//srv/share\\040one /mnt/a\\011b cifs rw,vers=3.0 0 0\n"
               "/dev/disk/by-label/my\\134disk /data ext4 rw,noatime 0 0\n")
MOUNTINFO = "40 1 8:1 /sub\\040dir /srv/x rw shared:1 - xfs /dev/mapper/vg\\040one rw,attr2\n"


def test_proc_mounts_unescapes_source_and_mount_point() -> None:
    assert mounts.parse_mounts(PROC_MOUNTS) == [
        MountEntry(mount="/mnt/a\tb", fstype="cifs", source="//srv/share one", root="/", devno=None,
                   options="rw,vers=3.0"),
        MountEntry(mount="/data", fstype="ext4", source="/dev/disk/by-label/my\\disk", root="/", devno=None,
                   options="rw,noatime"),
    ]


def test_mountinfo_unescapes_source_root_and_mount_point() -> None:
    assert mounts.parse_mountinfo(MOUNTINFO) == [
        MountEntry(mount="/srv/x", fstype="xfs", source="/dev/mapper/vg one", root="/sub dir", devno="8:1",
                   options="rw,rw,attr2"),
    ]


def test_read_mounts_prefers_mountinfo_then_proc_mounts(tmp_path: Path) -> None:
    both = HostIO(build_tree(tmp_path / "a", {"/proc/self/mountinfo": MOUNTINFO, "/proc/mounts": PROC_MOUNTS}))
    assert mounts.read_mounts(both) == mounts.parse_mountinfo(MOUNTINFO) and both.missing == []
    old = HostIO(build_tree(tmp_path / "b", {"/proc/mounts": PROC_MOUNTS}))
    assert mounts.read_mounts(old) == mounts.parse_mounts(PROC_MOUNTS) and old.missing == []
    none = HostIO(build_tree(tmp_path / "c", {"/etc/hostname": "x\n"}))
    assert mounts.read_mounts(none) == []
    assert none.missing == ["mounts: no proc/self/mountinfo or proc/mounts"]
