"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/shard.py's _open_nofollow (how a sharded
checkpoint's data files are opened): a regular file opens for reading; a FIFO (refused without blocking), a
directory or a link planted at the name is an OSError, and no descriptor is left open either way."""

import errno
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")

from hosttune.engine.shard import _open_nofollow  # noqa: E402


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_regular_file_opens_and_nothing_else_does(tmp_path: Path) -> None:
    data = tmp_path / "__0_0.distcp"
    data.write_bytes(b"weights")
    before = _fds()
    with _open_nofollow(data) as f:
        assert f.read() == b"weights" and f.mode == "rb"
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    for name in ("fifo", "dir"):
        with pytest.raises(OSError) as e:
            _open_nofollow(tmp_path / name)
        assert (e.value.errno, e.value.strerror, e.value.filename) == (errno.EINVAL, "not a regular file",
                                                                       str(tmp_path / name))
    os.symlink(data, tmp_path / "link")
    with pytest.raises(OSError) as e:
        _open_nofollow(tmp_path / "link")
    assert e.value.errno == errno.ELOOP
    assert _fds() == before
