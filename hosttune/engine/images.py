"""Image-folder datasets (one sub-directory per class of JPEG/PNG files), decoded in the DataLoader workers.

Decoders (decoders.py): PIL, or libjpeg-turbo through PyTurboJPEG (`image_decoder: auto|pil|turbojpeg`; auto takes
turbojpeg when the module imports and finds its library, else PIL), a JPEG decoded at reduced size when the target
is smaller. Both hand an HxWx3 uint8 array to the same crop-and-resize (torch), so only the decoding differs.

The files are the user's: each is read through `fsio.read_bounded` (regular files only, no FIFO hang, bounded,
not through a link), the scan refuses links and anything but class directories of .jpg/.jpeg/.png files, and a
header announcing more than MAX_PIXELS is refused before anything is decoded. Every problem is one line
(ImageDataError, an EngineError: exit 2), also when it happens in a loader worker.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
from torch.utils.data import Dataset

from hosttune import fsio

from .decoders import Decoder, ImageDataError, first_line, make_decoder

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
FILE_LIMIT = 64 << 20  # bytes read per image file
VAL_EVERY = 5  # without train/ and val/ sub-folders, every 5th file of a class (sorted by name) is validation
BUNDLED = Path(__file__).resolve().parent / "data" / "images"
MEAN, STD = 0.5, 0.25  # a fixed normalisation: (x / 255 - 0.5) / 0.25


def to_tensor(pixels: np.ndarray, target: int) -> torch.Tensor:
    """HxWx3 uint8 -> 3 x target x target float: the centred square, resized (bilinear, antialiased), normalised."""
    h, w = pixels.shape[:2]
    side = min(h, w)
    top, left = (h - side) // 2, (w - side) // 2
    x = torch.from_numpy(np.array(pixels[top : top + side, left : left + side]))  # a writable copy (PIL's is not)
    x = x.permute(2, 0, 1).unsqueeze(0).float()
    if side != target:
        x = torch.nn.functional.interpolate(x, size=(target, target), mode="bilinear", align_corners=False,
                                            antialias=side > target)
    return ((x[0] / 255.0 - MEAN) / STD).contiguous()


# ---- the folder ----

@dataclass(frozen=True)
class Listing:
    classes: List[str]
    samples: List[Tuple[str, int]]  # (path, class index)


def _entries(path: Path) -> "List[os.DirEntry[str]]":
    try:
        with os.scandir(path) as it:
            return sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError as exc:
        raise ImageDataError(f"{path}: not a readable directory ({exc.strerror or exc})") from None


def _class_files(d: Path) -> List[str]:
    files = []
    for e in _entries(d):
        if e.is_symlink():
            raise ImageDataError(f"{e.path}: a symbolic link; image folders are read without following links")
        if not e.is_file(follow_symlinks=False):
            raise ImageDataError(f"{e.path}: not a regular file; a class directory holds only JPEG/PNG files")
        if not e.name.lower().endswith(IMAGE_SUFFIXES):
            raise ImageDataError(f"{e.path}: not a .jpg, .jpeg or .png file; a class directory holds only "
                                 f"JPEG/PNG files")
        files.append(e.path)
    if not files:
        raise ImageDataError(f"{d}: an empty class directory")
    return files


def scan_folder(root: Path, split: str) -> Listing:
    """ImageFolder layout: root/<class>/<file>. With root/train/ and root/val/ the split's own tree; else every
    VAL_EVERY-th file of each class (by name) is validation and the others training."""
    root = Path(root)
    if not root.is_dir():
        raise ImageDataError(f"{root}: no such image folder (one sub-directory per class of JPEG/PNG files)")
    tops = {e.name for e in _entries(root)}
    own_split = {"train", "val"} <= tops
    base = root / split if own_split else root
    classes: List[str] = []
    per_class: List[List[str]] = []
    for e in _entries(base):
        if e.is_symlink() or not e.is_dir(follow_symlinks=False):
            kind = "a symbolic link" if e.is_symlink() else "not a directory"
            raise ImageDataError(f"{e.path}: {kind}; an image folder holds one real sub-directory per class")
        classes.append(e.name)
        per_class.append(_class_files(Path(e.path)))
    if len(classes) < 2:
        raise ImageDataError(f"{base}: {len(classes)} class director{'y' if len(classes) == 1 else 'ies'}; "
                             f"classification needs at least 2")
    samples = []
    for label, files in enumerate(per_class):
        for k, f in enumerate(files):
            if own_split or (k % VAL_EVERY == VAL_EVERY - 1) == (split == "val"):
                samples.append((f, label))
    return Listing(classes, samples)


class ImageFolder(Dataset):
    """(3 x image_size x image_size float image, class index) from an image folder; the train split flips images
    horizontally at random (drawn from torch's RNG, which the engine seeds per batch: resume stays exact).

    The decoder is made in each process on first use (a loader worker makes its own), after being tried once
    here, so a missing decoder is one line before training starts."""

    def __init__(self, root: Path, image_size: int, decoder: str = "auto", split: str = "train",
                 reduce: bool = True, augment: Optional[bool] = None):
        self.root, self.image_size, self.split, self.reduce = Path(root), image_size, split, reduce
        listing = scan_folder(self.root, split)
        self.classes, self.samples = listing.classes, listing.samples
        if not self.samples:
            raise ImageDataError(f"{self.root}: no {split} images (without train/ and val/ sub-folders every "
                                 f"{VAL_EVERY}th file of a class is validation: give a class {VAL_EVERY} or more)")
        self.decoder_name = make_decoder(decoder).name
        self.augment = split == "train" if augment is None else augment
        self._decoder: Optional[Decoder] = None

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def __getstate__(self) -> Dict[str, Any]:  # spawned workers: the decoder (ctypes handles) is made again there
        return {**self.__dict__, "_decoder": None}

    def decoder(self) -> Decoder:
        if self._decoder is None:
            self._decoder = make_decoder(self.decoder_name)
        return self._decoder

    def __len__(self) -> int:
        return len(self.samples)

    def read(self, path: str) -> bytes:
        try:
            return fsio.read_bounded(path, FILE_LIMIT, nofollow=True)
        except fsio.TooLarge:
            raise ImageDataError(f"{path}: larger than {FILE_LIMIT >> 20} MiB; refused") from None
        except OSError as exc:
            raise ImageDataError(f"{path}: unreadable ({exc.strerror or first_line(exc)})") from None

    def __getitem__(self, i: int) -> Tuple[torch.Tensor, int]:
        path, label = self.samples[i]
        pixels = self.decoder().decode(self.read(path), path, self.image_size, self.reduce)
        x = to_tensor(pixels, self.image_size)
        if self.augment and bool(torch.rand(()) < 0.5):
            x = x.flip(-1)
        return x, label
