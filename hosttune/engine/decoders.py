"""Image decoders for the image-folder datasets (images.py): PIL, or libjpeg-turbo through PyTurboJPEG, each
decoding a JPEG at reduced size when the target is smaller (libjpeg's DCT scaling: PIL's `Image.draft`, TurboJPEG's
`scaling_factor`), so 1/2, 1/4 or 1/8 of the pixels are never produced. Both hand an HxWx3 uint8 array on; a
header announcing more than MAX_PIXELS is refused before anything is decoded. numpy only (no torch): the decode
bench (bench/bench_decode.py) and the tests use them directly.
"""

from __future__ import annotations

import io
import warnings
from typing import Any, Optional, Tuple

import numpy as np

from hosttune.term import printable

from .errors import EngineError

DECODERS = ("auto", "pil", "turbojpeg")
MAX_PIXELS = 64 << 20  # width x height a header may announce (8192 x 8192); PIL's own bomb limit is 89.5M
TURBO_FIX = "pip install 'PyTurboJPEG<2' and apt-get install libturbojpeg0 (Debian/Ubuntu) or dnf install turbojpeg " \
            "(Fedora/RHEL)"


class ImageDataError(EngineError):
    """A bad image file or folder: one line, exit 2.

    A loader worker's exception reaches the main process re-raised as `type(text of the worker's traceback)`: the
    constructor keeps only the original one-line message from that text. Control characters (a newline in a file
    name) are shown escaped, so the message stays one line."""

    def __init__(self, msg: str) -> None:
        marker = f"{type(self).__name__}: "
        if "Traceback (most recent call last)" in msg and marker in msg:
            msg = msg.rsplit(marker, 1)[1].strip().splitlines()[0]
        super().__init__(printable(msg))


# ---- decoders ----

class PilDecoder:
    name = "pil"

    def __init__(self) -> None:
        try:
            from PIL import Image
        except ImportError:
            raise ImageDataError("image_decoder=pil needs Pillow: pip install Pillow") from None
        self.Image = Image

    def open(self, data: bytes, where: str) -> Any:
        """The image with only its header read (PIL opens lazily)."""
        try:
            with warnings.catch_warnings():  # past PIL's own limit it warns; MAX_PIXELS (below it) decides here
                warnings.simplefilter("ignore", self.Image.DecompressionBombWarning)
                img = self.Image.open(io.BytesIO(data), formats=("JPEG", "PNG"))  # no other parser sees the bytes
        except self.Image.DecompressionBombError:
            raise ImageDataError(f"{where}: refused: its header announces more than {MAX_PIXELS} pixels") from None
        except self.Image.UnidentifiedImageError:
            raise ImageDataError(f"{where}: not a JPEG or PNG image") from None
        except (OSError, ValueError, SyntaxError) as exc:
            raise ImageDataError(f"{where}: not a readable JPEG or PNG image ({first_line(exc)})") from None
        if img.format not in ("JPEG", "PNG"):
            raise ImageDataError(f"{where}: a {img.format} image; image folders take JPEG or PNG files")
        return img

    def size(self, data: bytes, where: str) -> Tuple[int, int]:
        return tuple(self.open(data, where).size)  # type: ignore[return-value]

    def decode(self, data: bytes, where: str, target: int, reduce: bool = True) -> np.ndarray:
        img = self.open(data, where)
        check_pixels(img.size, where)
        try:
            if reduce and img.format == "JPEG":
                img.draft("RGB", (target, target))  # DCT scaling: the largest 1/1..1/8 that still covers target
            return np.asarray(img if img.mode == "RGB" else img.convert("RGB"))  # no copy when it is RGB already
        except (OSError, ValueError, SyntaxError) as exc:
            raise ImageDataError(f"{where}: a damaged image ({first_line(exc)})") from None


class TurboDecoder:
    """libjpeg-turbo through PyTurboJPEG for JPEG files; PNG files go to PIL."""

    name = "turbojpeg"

    def __init__(self) -> None:
        try:
            import turbojpeg
        except ImportError:
            raise ImageDataError(f"image_decoder=turbojpeg: the turbojpeg module (PyTurboJPEG) is not installed: "
                                 f"{TURBO_FIX}") from None
        try:
            self.tj = turbojpeg.TurboJPEG()
        except (OSError, RuntimeError) as exc:  # no libturbojpeg, or one PyTurboJPEG cannot use
            raise ImageDataError(f"image_decoder=turbojpeg: PyTurboJPEG cannot load libturbojpeg "
                                 f"({first_line(exc)}): {TURBO_FIX}") from None
        self.rgb = turbojpeg.TJPF_RGB
        self.factors = sorted((f for f in self.tj.scaling_factors if f[0] <= f[1]), key=lambda f: f[0] / f[1])
        self._pil: Optional[PilDecoder] = None

    def pil(self) -> PilDecoder:
        if self._pil is None:
            self._pil = PilDecoder()
        return self._pil

    def size(self, data: bytes, where: str) -> Tuple[int, int]:
        if not _is_jpeg(data):
            return self.pil().size(data, where)
        try:
            w, h = self.tj.decode_header(data)[:2]
        except OSError as exc:
            raise ImageDataError(f"{where}: not a readable JPEG image ({first_line(exc)})") from None
        return int(w), int(h)

    def scale(self, size: Tuple[int, int], target: int) -> Tuple[int, int]:
        """The smallest DCT scaling factor whose output still covers `target` on both sides."""
        for num, den in self.factors:  # ascending
            if min(-(-size[0] * num // den), -(-size[1] * num // den)) >= target:
                return num, den
        return 1, 1

    def decode(self, data: bytes, where: str, target: int, reduce: bool = True) -> np.ndarray:
        if not _is_jpeg(data):
            return self.pil().decode(data, where, target, reduce)
        size = self.size(data, where)
        check_pixels(size, where)
        factor = self.scale(size, target) if reduce else (1, 1)
        try:
            with warnings.catch_warnings():  # PyTurboJPEG warns and returns grey for a truncated file: refuse it
                warnings.simplefilter("error")
                return np.asarray(self.tj.decode(data, pixel_format=self.rgb, scaling_factor=factor))
        except (OSError, Warning):  # a JPEG libjpeg-turbo cannot turn into RGB (CMYK), or a damaged one: PIL decides
            return self.pil().decode(data, where, target, reduce)


Decoder = Any  # PilDecoder | TurboDecoder


def make_decoder(name: str) -> Decoder:
    """The decoder `image_decoder` names; auto: turbojpeg when it loads, else PIL. A missing one: ImageDataError."""
    if name not in DECODERS:
        raise ImageDataError(f"image_decoder must be one of {', '.join(DECODERS)}, got {name!r}")
    if name in ("auto", "turbojpeg"):
        try:
            return TurboDecoder()
        except ImageDataError:
            if name == "turbojpeg":
                raise
    try:
        return PilDecoder()
    except ImageDataError:
        if name == "auto":
            raise ImageDataError(f"image_decoder=auto found no decoder: pip install Pillow (or {TURBO_FIX})") from None
        raise


def check_pixels(size: Tuple[int, int], where: str) -> None:
    if size[0] < 1 or size[1] < 1:
        raise ImageDataError(f"{where}: an image of {size[0]}x{size[1]} pixels")
    if size[0] * size[1] > MAX_PIXELS:
        raise ImageDataError(f"{where}: refused: its header announces {size[0]}x{size[1]} pixels, more than "
                             f"{MAX_PIXELS} (a decompression bomb, or a photo to downscale first)")


def _is_jpeg(data: bytes) -> bool:
    return data[:3] == b"\xff\xd8\xff"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]
