"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/images.py: the one line a folder with too few
class directories gets (singular and plural), for a plain folder and for a train/val layout."""

from pathlib import Path

import pytest

pytest.importorskip("torch")

from hosttune.engine import images  # noqa: E402


@pytest.mark.parametrize("classes,words", [(0, "0 class directories"), (1, "1 class directory")])
def test_fewer_than_two_classes_is_one_line(tmp_path: Path, classes: int, words: str) -> None:
    root = tmp_path / "imgs"
    root.mkdir()
    for k in range(classes):
        (root / f"c{k}").mkdir()
        (root / f"c{k}" / "0.png").write_bytes(b"")
    with pytest.raises(images.ImageDataError) as got:
        images.scan_folder(root, "train")
    assert str(got.value) == f"{root}: {words}; classification needs at least 2"
    (root / "train").mkdir()
    (root / "val").mkdir()
    for k in range(classes):
        (root / "val" / f"c{k}").mkdir()
        (root / "val" / f"c{k}" / "0.png").write_bytes(b"")
    with pytest.raises(images.ImageDataError) as got:
        images.scan_folder(root, "val")
    assert str(got.value) == f"{root / 'val'}: {words}; classification needs at least 2"
