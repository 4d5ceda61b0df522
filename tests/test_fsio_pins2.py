"""Pins (issue 21, second mutation round) for hosttune/fsio.py: a failed atomic write leaves no temp file beside its
target (an interrupted writer, and an exclusive write that finds the name taken), and a log path that is a FIFO
(with a reader) is refused for appending."""

import os
from pathlib import Path

import pytest

from hosttune import fsio


def test_a_failed_atomic_write_leaves_nothing_beside_the_target(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    target = d / "state.json"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with fsio.atomic_writer(target) as fh:
            fh.write(b"half of the new")
            raise RuntimeError("the writer died")
    assert sorted(os.listdir(d)) == ["state.json"] and target.read_text() == "old\n"
    with pytest.raises(FileExistsError):
        fsio.atomic_write(target, "new\n", exclusive=True)
    assert sorted(os.listdir(d)) == ["state.json"] and target.read_text() == "old\n"


def test_a_fifo_at_a_log_path_is_refused_even_with_a_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "hosttune.log"
    os.mkfifo(fifo, 0o600)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(OSError):
            os.close(fsio.open_append_nofollow(fifo))
    finally:
        os.close(reader)
    log = tmp_path / "real.log"
    os.close(fsio.open_append_nofollow(log))
    assert log.is_file()
