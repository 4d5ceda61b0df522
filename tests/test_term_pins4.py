"""Pins of mutation round 4 (issue 21) on hosttune/term.py: which characters are escaped (every range boundary),
and the colour / redraw policy over NO_COLOR, TERM=dumb and the stream's isatty()."""

import io
from typing import Any

import pytest

from hosttune import term
from hosttune.term import colour, printable, redraw


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Broken:
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


@pytest.mark.parametrize("ch", ["\x00", "\x08", "\x0a", "\x0b", "\x1b", "\x1f", "\x7f", "\x80", "\x9f",
                                "\u202a", "\u202e", "\u2066", "\u2069"])
def test_every_control_range_boundary_is_escaped(ch: str) -> None:
    out = printable(f"a{ch}b")
    assert out == "a" + ch.encode("unicode_escape").decode("ascii") + "b"
    assert ch not in out and out.isprintable()


@pytest.mark.parametrize("ch", ["\t", " ", "~", "\xa0", "\xe9", "\u2029", "\u2065", "\u206a", "\u202f", "\u2029"])
def test_characters_just_outside_the_ranges_are_kept(ch: str) -> None:
    assert printable(f"a{ch}b") == f"a{ch}b"


def test_every_control_in_one_string_is_escaped_not_only_the_first() -> None:
    assert printable("\x1b[1m\n\x1b[0m") == "\\x1b[1m\\n\\x1b[0m"
    assert printable("") == ""


def test_colour_only_on_a_tty_without_no_colour_or_dumb() -> None:
    assert colour(Tty(), {}) is True
    assert colour(Tty(), {"TERM": "xterm-256color"}) is True
    assert colour(io.StringIO(), {}) is False
    assert colour(Tty(), {"NO_COLOR": "1"}) is False
    assert colour(Tty(), {"NO_COLOR": ""}) is True  # no-color.org: set AND non-empty
    assert colour(Tty(), {"TERM": "dumb"}) is False
    assert colour(Tty(), {"TERM": "dumber"}) is True
    assert colour(Broken(), {}) is False  # type: ignore[arg-type]
    assert colour(object(), {}) is False  # type: ignore[arg-type]


def test_redraw_ignores_no_colour_but_not_dumb_or_a_pipe() -> None:
    assert redraw(Tty(), {}) is True
    assert redraw(Tty(), {"NO_COLOR": "1"}) is True
    assert redraw(Tty(), {"TERM": "dumb"}) is False
    assert redraw(io.StringIO(), {}) is False
    assert redraw(Broken(), {}) is False  # type: ignore[arg-type]


def test_without_an_environ_argument_the_process_environment_decides(monkeypatch: Any) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert colour(Tty()) is True and redraw(Tty()) is True
    monkeypatch.setenv("NO_COLOR", "yes")
    assert colour(Tty()) is False and redraw(Tty()) is True
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert colour(Tty()) is False and redraw(Tty()) is False
    assert term._dumb({}) is False
