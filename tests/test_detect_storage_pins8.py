"""hosttune.detect.storage pins (issue 21, practice round HDET8): statvfs of a path that cannot be asked is
(None, None), never a size of 0."""

from pathlib import Path

from hosttune.detect import storage


def test_statvfs_of_a_missing_path_is_unknown_not_zero(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    assert storage._statvfs(gone) == (None, None)
    assert storage._statvfs_bounded(gone, 600.0) == (None, None)
    size, free = storage._statvfs(str(tmp_path))
    assert isinstance(size, int) and isinstance(free, int) and size > 0 and 0 <= free <= size
