"""Pins for hosttune/fsio.py from issue 21's mutation run: a bounded read at exactly its limit and one byte over, a
FIFO refused at once, an atomic write's mode whatever the umask, exclusive never replacing, an append log never
opened through a link, and a config that is not UTF-8 refused in one line."""

import os
import stat
from pathlib import Path

import pytest

from hosttune import fsio
from hosttune.errors import UserError


def test_a_bounded_read_at_its_limit_passes_and_one_byte_over_fails(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"x" * 10)
    assert fsio.read_bounded(p, 10) == b"x" * 10
    with pytest.raises(fsio.TooLarge):
        fsio.read_bounded(p, 9)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        fsio.read_bounded(tmp_path / "fifo", 10)


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o640])
def test_an_atomic_write_gets_exactly_its_mode_whatever_the_umask(tmp_path: Path, mode: int) -> None:
    old = os.umask(0o077)
    try:
        fsio.atomic_write(tmp_path / "f", "x", mode)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == mode


def test_an_exclusive_write_never_replaces(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    p = d / "f"
    p.write_text("old")
    with pytest.raises(FileExistsError):
        fsio.atomic_write(p, "new", exclusive=True)
    assert p.read_text() == "old" and os.listdir(d) == ["f"]


def test_an_append_log_is_never_opened_through_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (tmp_path / "log").symlink_to(victim)
    with pytest.raises(OSError):
        fsio.open_append_nofollow(tmp_path / "log")
    assert victim.read_text() == "keep\n"


def test_a_config_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(UserError, match="not UTF-8 text"):
        fsio.read_user_text(p, "profile")
