"""The engine's image decoders (hosttune/engine/decoders.py): which one `image_decoder` gets, reduced-size decoding
(libjpeg's DCT scaling through PIL's draft and TurboJPEG's scaling_factor) giving the smallest image that still
covers the target, and bad input (not an image, damaged, a decompression bomb) refused with one line before
anything big is decoded. numpy and Pillow, no torch; the turbojpeg rows skip (with the reason) where PyTurboJPEG or
its library is missing."""

import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("PIL", reason="Pillow is not installed (the images extra)")

from hosttune.engine import decoders  # noqa: E402
from hosttune.engine.decoders import MAX_PIXELS, ImageDataError, PilDecoder, make_decoder  # noqa: E402

BUNDLED = Path(__file__).resolve().parents[1] / "hosttune" / "engine" / "data" / "images"
JPEG = (BUNDLED / "rings" / "rings-00.jpg").read_bytes()  # 128 x 128, baseline


def turbo_or_skip() -> Any:
    try:
        return decoders.TurboDecoder()
    except ImageDataError as exc:
        pytest.skip(f"PyTurboJPEG unusable here: {exc}")


def with_size(jpeg: bytes, width: int, height: int) -> bytes:
    """The JPEG with its SOF0 header claiming width x height (the scan data stays the 128x128 one)."""
    at = jpeg.index(b"\xff\xc0")
    return jpeg[: at + 5] + struct.pack(">HH", height, width) + jpeg[at + 9:]


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height (RGB), with an empty image stream."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b""))


# ---- which decoder ----

def test_auto_takes_turbojpeg_when_it_loads_else_pil(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        decoders.TurboDecoder()
        turbo = True
    except ImageDataError:
        turbo = False
    assert make_decoder("auto").name == ("turbojpeg" if turbo else "pil")
    monkeypatch.setitem(sys.modules, "turbojpeg", None)  # `import turbojpeg` raises ImportError
    assert make_decoder("auto").name == "pil"
    assert make_decoder("pil").name == "pil"


def test_turbojpeg_missing_is_one_line_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "turbojpeg", None)
    with pytest.raises(ImageDataError) as exc:
        make_decoder("turbojpeg")
    msg = str(exc.value)
    assert "\n" not in msg and "PyTurboJPEG" in msg and "libturbojpeg0" in msg and "dnf install turbojpeg" in msg


def test_turbojpeg_whose_library_will_not_load_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        TJPF_RGB = 0

        class TurboJPEG:
            def __init__(self) -> None:
                raise RuntimeError("PyTurboJPEG 2.0 requires libjpeg-turbo 3.0 or later.\n\nPlease upgrade.")

    monkeypatch.setitem(sys.modules, "turbojpeg", Broken)
    with pytest.raises(ImageDataError) as exc:
        make_decoder("turbojpeg")
    msg = str(exc.value)
    assert "\n" not in msg and "requires libjpeg-turbo 3.0" in msg and "PyTurboJPEG<2" in msg
    assert make_decoder("auto").name == "pil"  # auto falls back


def test_pil_missing_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "turbojpeg", None)
    for name, needle in (("pil", "needs Pillow"), ("auto", "found no decoder")):
        with pytest.raises(ImageDataError) as exc:
            make_decoder(name)
        assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_an_unknown_decoder_is_refused() -> None:
    with pytest.raises(ImageDataError, match="image_decoder must be one of auto, pil, turbojpeg"):
        make_decoder("libpng")


# ---- reduced-size decoding ----

@pytest.mark.parametrize("target,side", [(16, 16), (17, 32), (32, 32), (33, 64), (64, 64), (65, 128), (200, 128)])
def test_pil_draft_decodes_the_smallest_power_of_two_scale_covering_the_target(target: int, side: int) -> None:
    out = PilDecoder().decode(JPEG, "rings-00.jpg", target)
    assert out.shape == (side, side, 3) and out.dtype == np.uint8
    assert PilDecoder().decode(JPEG, "rings-00.jpg", target, reduce=False).shape == (128, 128, 3)


@pytest.mark.parametrize("target,side", [(16, 16), (17, 32), (40, 48), (48, 48), (49, 64), (100, 112), (200, 128)])
def test_turbojpeg_scaling_decodes_the_smallest_eighth_covering_the_target(target: int, side: int) -> None:
    turbo = turbo_or_skip()
    out = turbo.decode(JPEG, "rings-00.jpg", target)
    assert out.shape == (side, side, 3) and out.dtype == np.uint8
    assert turbo.decode(JPEG, "rings-00.jpg", target, reduce=False).shape == (128, 128, 3)


def test_reduced_decodes_agree_with_the_full_decode_shrunk() -> None:
    """DCT scaling is a real reduction of the same picture: the 16x16 decode matches the 128x128 one averaged over
    8x8 blocks (up to JPEG rounding), for both decoders."""
    full = PilDecoder().decode(JPEG, "x", 128, reduce=False).astype(np.float64)
    pooled = full.reshape(16, 8, 16, 8, 3).mean(axis=(1, 3))
    small = PilDecoder().decode(JPEG, "x", 16).astype(np.float64)
    assert np.abs(small - pooled).mean() < 8
    try:
        turbo = decoders.TurboDecoder()
    except ImageDataError:
        return
    assert np.abs(turbo.decode(JPEG, "x", 16).astype(np.float64) - pooled).mean() < 8


# ---- bad input: one line, nothing big decoded ----

def decoders_here() -> Any:
    out = [PilDecoder()]
    try:
        out.append(decoders.TurboDecoder())
    except ImageDataError:
        pass
    return out


@pytest.mark.parametrize("data,needle", [
    (b"hello, not an image", "not a JPEG or PNG image"),
    (b"GIF89a" + bytes(40), "not a JPEG or PNG image"),  # a format the folder does not take: no GIF parser runs
    (JPEG[: len(JPEG) // 2], "damaged"),
    (with_size(JPEG, 9000, 9000), "9000x9000 pixels, more than"),  # over MAX_PIXELS, under PIL's own limit
    (with_size(JPEG, 60000, 60000), "refused"),  # past PIL's own bomb limit too
    (png_claiming(9000, 9000), "9000x9000 pixels, more than"),
    (png_claiming(20000, 20000), "refused"),
], ids=["text", "gif", "truncated", "jpeg-81M-px", "jpeg-3.6G-px", "png-81M-px", "png-400M-px"])
def test_bad_input_is_one_line_naming_the_file(data: bytes, needle: str) -> None:
    for dec in decoders_here():
        with pytest.raises(ImageDataError) as exc:
            dec.decode(data, "/data/cats/x.jpg", 16)
        msg = str(exc.value)
        assert msg.startswith("/data/cats/x.jpg: ") and needle in msg and "\n" not in msg, (dec.name, msg)
        assert "BytesIO" not in msg


def test_the_pixel_limit_is_checked_from_the_header_before_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 128x128 file is refused when the limit is below its size: the check reads the header, so a bomb never
    reaches the decoder's allocation."""
    monkeypatch.setattr(decoders, "MAX_PIXELS", 128 * 128 - 1)
    for dec in decoders_here():
        with pytest.raises(ImageDataError, match="128x128 pixels, more than 16383"):
            dec.decode(JPEG, "x.jpg", 16)
    assert MAX_PIXELS >= 8192 * 8192


def test_a_worker_exception_re_raised_by_the_dataloader_keeps_one_line() -> None:
    """DataLoader re-raises a worker's exception as type(text of the worker's traceback)."""
    text = ("Caught ImageDataError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
            '  File "x.py", line 1, in f\n    raise ImageDataError(msg)\n'
            "hosttune.engine.decoders.ImageDataError: /data/cats/x.jpg: not a JPEG or PNG image\n")
    assert str(ImageDataError(text)) == "/data/cats/x.jpg: not a JPEG or PNG image"
    assert str(ImageDataError("plain: message")) == "plain: message"
    assert str(ImageDataError("/data/a\nb.jpg: not a JPEG or PNG image")) == "/data/a\\nb.jpg: not a JPEG or PNG image"
