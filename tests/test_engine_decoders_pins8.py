"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/decoders.py: first_line (what an
exception's text becomes inside a one-line message: its first non-blank line, else the exception's type, at most
200 characters), the decoder names refused word for word, and the lines of a bad image file."""

import io

import pytest

pytest.importorskip("torch")
pytest.importorskip("PIL")

from hosttune.engine.decoders import ImageDataError, PilDecoder, first_line, make_decoder  # noqa: E402


@pytest.mark.parametrize("exc,line", [
    (OSError("image file is truncated"), "image file is truncated"),
    (OSError("\n  broken data stream\nat byte 12"), "broken data stream"),
    (ValueError("  padded  \n"), "padded"),
    (ValueError(""), "ValueError"),
    (SyntaxError("   \n\t"), "SyntaxError"),
    (OSError("x" * 250), "x" * 200),
])
def test_first_line(exc: BaseException, line: str) -> None:
    assert first_line(exc) == line


def test_an_unknown_decoder_is_refused_with_the_choices() -> None:
    with pytest.raises(ImageDataError) as e:
        make_decoder("libjpeg")
    assert str(e.value) == "image_decoder must be one of auto, pil, turbojpeg, got 'libjpeg'"
    assert make_decoder("pil").name == "pil"


def test_bad_image_files_are_one_line_each() -> None:
    from PIL import Image

    d = PilDecoder()
    with pytest.raises(ImageDataError) as e:
        d.size(b"GIF89a not an image", "x/a.png")
    assert str(e.value) == "x/a.png: not a JPEG or PNG image"
    buf = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buf, format="BMP")
    with pytest.raises(ImageDataError) as e:
        d.size(buf.getvalue(), "x/b.jpg")
    assert str(e.value) == "x/b.jpg: not a JPEG or PNG image"  # BMP's parser never sees the bytes
    buf = io.BytesIO()
    Image.new("RGB", (5, 3)).save(buf, format="PNG")
    assert d.size(buf.getvalue(), "x/c.png") == (5, 3)
