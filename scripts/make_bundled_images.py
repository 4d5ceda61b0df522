"""Generate the bundled image folder hosttune/engine/data/images/ (4 classes x 12 JPEGs, 128x128, ~200 KB).

Licence-free: every pixel is drawn here from a fixed seed (numpy's RandomState(2025)), so the set is the same on
every run of this script with the same Pillow/libjpeg; the committed files are what the engine and the decode bench
read. Each class is a smooth pattern of its own (stripes at an angle, rings, a checkerboard, blobs) in its own
colours, with a random phase, scale, tint and noise per image: a small CNN separates them at 16x16.

    python3 scripts/make_bundled_images.py [OUT_DIR]
"""

import sys
from pathlib import Path

import numpy as np
from PIL import Image

SEED = 2025
SIZE = 128
PER_CLASS = 12
QUALITY = 85
CLASSES = ("stripes", "rings", "checks", "blobs")
OUT = Path(__file__).resolve().parents[1] / "hosttune" / "engine" / "data" / "images"


def pattern(kind: str, rng: np.random.RandomState) -> np.ndarray:
    """One grey-level pattern in [0, 1], SIZE x SIZE."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64) / SIZE
    phase = rng.uniform(0, 2 * np.pi)
    freq = rng.uniform(3, 6)
    if kind == "stripes":
        angle = rng.uniform(0.2, 0.6)
        v = np.sin(2 * np.pi * freq * (xx * np.cos(angle) + yy * np.sin(angle)) + phase)
    elif kind == "rings":
        cy, cx = rng.uniform(0.3, 0.7, size=2)
        v = np.sin(2 * np.pi * freq * np.hypot(xx - cx, yy - cy) + phase)
    elif kind == "checks":
        v = np.sin(2 * np.pi * freq * xx + phase) * np.sin(2 * np.pi * freq * yy + phase)
    else:
        v = np.zeros_like(xx)
        for _ in range(4):
            cy, cx = rng.uniform(0.1, 0.9, size=2)
            v += np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * rng.uniform(0.05, 0.12) ** 2))
        v = 2 * v / max(v.max(), 1e-6) - 1
    return (v + 1) / 2


def image(label: int, rng: np.random.RandomState) -> Image.Image:
    base = np.array([[0.9, 0.3, 0.2], [0.2, 0.7, 0.3], [0.2, 0.3, 0.9], [0.8, 0.7, 0.2]])[label]
    tint = np.clip(base + rng.uniform(-0.15, 0.15, size=3), 0, 1)
    v = pattern(CLASSES[label], rng)[..., None]
    rgb = v * tint + (1 - v) * (1 - tint) * 0.4
    rgb += rng.normal(0, 0.04, size=rgb.shape)
    return Image.fromarray((np.clip(rgb, 0, 1) * 255).astype(np.uint8), "RGB")


def main(out: Path = OUT) -> int:
    rng = np.random.RandomState(SEED)
    total = 0
    for label, name in enumerate(CLASSES):
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        for k in range(PER_CLASS):
            path = d / f"{name}-{k:02d}.jpg"
            image(label, rng).save(path, "JPEG", quality=QUALITY)
            total += path.stat().st_size
    print(f"{len(CLASSES) * PER_CLASS} images, {total // 1024} KiB in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
