"""Pins (issue 21, mutation round 7) for hosttune/doctor/deep/runner.py: doctor --deep's progress line is drawn on
stderr's terminal, never into stdout (where the report goes)."""

from typing import Any, List

import pytest

from hosttune.doctor.deep import runner


class Tty:
    """A terminal stream: what was written, in order."""

    def __init__(self) -> None:
        self.out: List[str] = []

    def write(self, text: str) -> None:
        self.out.append(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_the_progress_line_goes_to_stderr_and_stdout_keeps_only_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both stdout and stderr are terminals (an interactive `hosttune doctor --deep`): the status line and its
    erasure are on stderr; stdout gets nothing from it."""
    out, err = Tty(), Tty()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setenv("TERM", "xterm")
    p = runner.Progress()
    assert p.enabled
    p.show("doctor --deep: gpu: p2p (3 s)")
    p.clear()
    assert err.out == ["\r\033[Kdoctor --deep: gpu: p2p (3 s)", "\r\033[K"]
    assert out.out == []


def test_no_progress_line_when_only_stdout_is_a_terminal(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: Any) -> None:
    """stderr redirected to a file or pipe (`doctor --deep 2>log`), stdout a terminal: no status line anywhere
    (never redrawn into the log, never mixed into the report)."""
    out = Tty()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setenv("TERM", "xterm")
    p = runner.Progress()
    assert not p.enabled
    p.show("doctor --deep: gpu: p2p (3 s)")
    p.clear()
    assert out.out == []
    assert capsys.readouterr().err == ""
