"""Pins of mutation round 3 (issue 21) on hosttune/engine/images.py (bench/mutants.py r3-images-*): what tells a
train/val layout from a class folder, and which square of a non-square image is kept."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed (the images extra)")

from hosttune.engine import images  # noqa: E402


def _class(d: Path, n: int, colour: tuple) -> None:
    d.mkdir(parents=True)
    for k in range(n):
        Image.fromarray(np.full((8, 8, 3), colour, np.uint8), "RGB").save(d / f"{k:03d}.jpg", quality=95)


def test_a_class_named_train_without_a_val_folder_is_a_class(tmp_path: Path) -> None:
    # only train/ AND val/ side by side are the split's own trees; a class that happens to be called "train" is not
    root = tmp_path / "imgs"
    _class(root / "train", 5, (200, 0, 0))
    _class(root / "test", 5, (0, 0, 200))
    for split, per_class in (("train", 4), ("val", 1)):
        listing = images.scan_folder(root, split)
        assert listing.classes == ["test", "train"]
        assert len(listing.samples) == 2 * per_class


def test_the_centred_square_of_a_wide_or_tall_image_is_kept() -> None:
    # three bands: red | green | blue; the centred square is the green band, whatever the orientation
    wide = np.zeros((8, 24, 3), np.uint8)
    wide[:, :8, 0], wide[:, 8:16, 1], wide[:, 16:, 2] = 255, 255, 255
    tall = np.ascontiguousarray(wide.transpose(1, 0, 2))
    for pixels in (wide, tall):
        x = images.to_tensor(pixels, 8)
        assert x.shape == (3, 8, 8)
        red, green, blue = (float(x[c].mean()) for c in range(3))
        assert green > 1.5 and red < -1.5 and blue < -1.5, (red, green, blue)  # 1.0 -> 2.0, 0.0 -> -2.0
