"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/images.py's scan_folder: every line a bad
image folder gets, word for word (what is wrong, where, and what an image folder holds), and the whole listing of
a good one (classes by name, every VAL_EVERY-th file of a class is validation, a train/val layout's own split)."""

import os
from pathlib import Path

import pytest

pytest.importorskip("torch")

from hosttune.engine.images import ImageDataError, scan_folder  # noqa: E402

HOLDS = "a class directory holds only JPEG/PNG files"


def folder(root: Path, classes=("a", "b"), files=("0.png", "1.jpg")) -> Path:
    for c in classes:
        (root / c).mkdir(parents=True)
        for f in files:
            (root / c / f).write_bytes(b"")
    return root


def refused(root: Path, split: str = "train") -> str:
    with pytest.raises(ImageDataError) as e:
        scan_folder(root, split)
    return str(e.value)


def test_each_bad_folder_line_word_for_word(tmp_path: Path) -> None:
    assert refused(tmp_path / "none") == (
        f"{tmp_path / 'none'}: no such image folder (one sub-directory per class of JPEG/PNG files)")
    r = folder(tmp_path / "r1")
    (r / "loose.png").write_bytes(b"")
    assert refused(r) == f"{r / 'loose.png'}: not a directory; an image folder holds one real sub-directory per class"
    r = folder(tmp_path / "r2")
    os.symlink(r / "a", r / "c")
    assert refused(r) == f"{r / 'c'}: a symbolic link; an image folder holds one real sub-directory per class"
    r = folder(tmp_path / "r3")
    os.symlink(r / "a" / "0.png", r / "b" / "2.png")
    assert refused(r) == f"{r / 'b' / '2.png'}: a symbolic link; image folders are read without following links"
    r = folder(tmp_path / "r4")
    os.mkfifo(r / "a" / "p.png")
    assert refused(r) == f"{r / 'a' / 'p.png'}: not a regular file; {HOLDS}"
    r = folder(tmp_path / "r5")
    (r / "b" / "notes.txt").write_text("x")
    assert refused(r) == f"{r / 'b' / 'notes.txt'}: not a .jpg, .jpeg or .png file; {HOLDS}"
    r = folder(tmp_path / "r6")
    (r / "c").mkdir()
    assert refused(r) == f"{r / 'c'}: an empty class directory"


def test_a_good_folder_lists_every_class_and_splits_every_fifth(tmp_path: Path) -> None:
    names = [f"{k}.png" for k in range(7)] + ["x.JPEG"]
    r = folder(tmp_path / "imgs", classes=("dog", "cat", ".hidden"), files=names)
    (r / ".note").write_text("hidden entries are not read")
    train, val = scan_folder(r, "train"), scan_folder(r, "val")
    assert train.classes == val.classes == ["cat", "dog"]
    names.sort()  # by name: 0..6, x.JPEG
    assert val.samples == [(str(r / c / names[k]), label) for label, c in enumerate(["cat", "dog"]) for k in (4,)]
    assert train.samples == [(str(r / c / n), label) for label, c in enumerate(["cat", "dog"])
                             for k, n in enumerate(names) if k != 4]


def test_a_train_val_layout_reads_its_own_split(tmp_path: Path) -> None:
    r = tmp_path / "imgs"
    folder(r / "train", files=("0.png", "1.png"))
    folder(r / "val", files=("9.jpg",))
    got = scan_folder(r, "val")
    assert got.classes == ["a", "b"]
    assert got.samples == [(str(r / "val" / "a" / "9.jpg"), 0), (str(r / "val" / "b" / "9.jpg"), 1)]
    assert len(scan_folder(r, "train").samples) == 4
    (r / "val" / "b" / "9.jpg").unlink()
    assert refused(r, "val") == f"{r / 'val' / 'b'}: an empty class directory"
