"""hosttune.detect.storage pins (issue 21, practice round HDET8): statvfs of a path that cannot be asked is
(None, None), never a size of 0; a mount source that is a link is followed to its block device."""

from pathlib import Path

from conftest import build_tree

from hosttune.detect import storage
from hosttune.detect.hostio import HostIO


def test_statvfs_of_a_missing_path_is_unknown_not_zero(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    assert storage._statvfs(gone) == (None, None)
    assert storage._statvfs_bounded(gone, 600.0) == (None, None)
    size, free = storage._statvfs(str(tmp_path))
    assert isinstance(size, int) and isinstance(free, int) and size > 0 and 0 <= free <= size


def test_a_source_link_is_followed_to_its_block_device(tmp_path: Path) -> None:
    """/proc/mounts names /dev/mapper/vg-lv (no device number to go by): the link leads to dm-0, whose sysfs folder
    says what it is."""
    root = build_tree(tmp_path, {"/dev/dm-0": "", "/sys/class/block/dm-0/queue/rotational": "0\n",
                                 "/sys/class/block/sdb/queue/rotational": "1\n", "/dev/sdb": ""},
                      links={"/dev/mapper/vg-lv": "../dm-0", "/dev/disk/by-label/old": "../../sdb"})
    io = HostIO(root)
    assert storage.classify_block(io, None, "/dev/mapper/vg-lv") == ("dm-0", "ssd")
    assert storage.classify_block(io, None, "/dev/disk/by-label/old") == ("sdb", "hdd")
    assert storage.classify_block(io, None, "/dev/mapper/gone") == ("gone", "unknown")
    assert storage.classify_block(io, None, "server:/export") == (None, "unknown")
