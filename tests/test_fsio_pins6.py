"""Pins (issue 21, round 6) for hosttune/fsio.py: a bounded read returns exactly the file's bytes (across the 1 MiB
read chunks, at and around its limit, empty), refuses a directory and names the file; an exclusive write creates the
file, never replaces one and leaves no temp file either way; a durable write syncs its directory after the rename;
read_user_text's three one-line errors; makedirs_private on what already exists."""

import errno
import os
from pathlib import Path
from typing import List

import pytest

from hosttune import fsio
from hosttune.errors import UserError


def test_a_bounded_read_returns_exactly_the_bytes_across_chunks(tmp_path: Path) -> None:
    p = tmp_path / "big"
    data = bytes(range(256)) * (5 * 4096 + 3)  # 5 MiB and some: several 1 MiB reads
    p.write_bytes(data)
    assert fsio.read_bounded(p, len(data)) == data
    assert fsio.read_bounded(str(p), len(data) + 10) == data
    with pytest.raises(fsio.TooLarge) as exc:
        fsio.read_bounded(p, len(data) - 1)
    assert exc.value.errno == errno.EFBIG and exc.value.filename == str(p)
    assert exc.value.strerror == f"larger than {len(data) - 1} bytes"


def test_small_and_empty_files_at_their_limit(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"")
    assert fsio.read_bounded(p, 0) == b""
    p.write_bytes(b"x")
    with pytest.raises(fsio.TooLarge):
        fsio.read_bounded(p, 0)
    p.write_bytes(b"hello\n")
    assert fsio.read_bounded(p, 6) == b"hello\n" and fsio.read_bounded(p, 1000) == b"hello\n"
    with pytest.raises(IsADirectoryError) as exc:
        fsio.read_bounded(tmp_path, 10)
    assert exc.value.filename == str(tmp_path)


def test_read_fd_bounded_reads_from_where_the_descriptor_is(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"0123456789")
    fd = os.open(p, os.O_RDONLY)
    try:
        os.lseek(fd, 4, os.SEEK_SET)
        assert fsio.read_fd_bounded(fd, 6, "f") == b"456789"
    finally:
        os.close(fd)


def _siblings(d: Path) -> List[str]:
    return sorted(os.listdir(d))


def test_an_exclusive_write_creates_and_never_replaces_leaving_no_temp(tmp_path: Path) -> None:
    tmp_path = tmp_path / "d"
    tmp_path.mkdir()
    p = tmp_path / "new"
    fsio.atomic_write(p, "first\n", 0o600, exclusive=True)
    assert p.read_text() == "first\n" and (p.stat().st_mode & 0o777) == 0o600
    assert p.stat().st_nlink == 1  # the temp file's link was removed
    assert _siblings(tmp_path) == ["new"]
    with pytest.raises(FileExistsError):
        fsio.atomic_write(p, "second\n", exclusive=True)
    assert p.read_text() == "first\n" and _siblings(tmp_path) == ["new"]
    fsio.atomic_write(p, b"third\n")
    assert p.read_bytes() == b"third\n" and _siblings(tmp_path) == ["new"]


def test_a_durable_write_syncs_its_directory_after_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: List[str] = []
    monkeypatch.setattr(fsio, "fsync_dir", lambda d: seen.append(os.fspath(d)))
    fsio.atomic_write(tmp_path / "a", "x")
    assert seen == [str(tmp_path)]
    fsio.atomic_write(tmp_path / "b", "x", durable=False)
    assert seen == [str(tmp_path)]
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        fsio.atomic_write("c", "x")
    finally:
        os.chdir(cwd)
    assert seen == [str(tmp_path), "."] and (tmp_path / "c").read_text() == "x"


def test_a_failure_inside_the_writer_leaves_the_target_and_no_temp(tmp_path: Path) -> None:
    tmp_path = tmp_path / "d"
    tmp_path.mkdir()
    p = tmp_path / "t"
    p.write_text("old")
    with pytest.raises(RuntimeError):
        with fsio.atomic_writer(p) as fh:
            fh.write(b"new")
            raise RuntimeError("boom")
    assert p.read_text() == "old" and _siblings(tmp_path) == ["t"]


def test_fsync_dir_of_a_missing_directory_is_quiet(tmp_path: Path) -> None:
    fsio.fsync_dir(tmp_path / "none")
    fsio.fsync_dir(tmp_path)


def test_read_user_text_errors_are_one_line(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_bytes(b"ok: 1\n")
    assert fsio.read_user_text(p, "config") == "ok: 1\n"
    with pytest.raises(UserError, match=rf"^{p}: config is larger than 3 bytes$"):
        fsio.read_user_text(p, "config", limit=3)
    with pytest.raises(UserError, match=rf"^{tmp_path}/none: cannot read config: No such file or directory$"):
        fsio.read_user_text(tmp_path / "none", "config")
    p.write_bytes(b"ab\xffc")
    with pytest.raises(UserError, match=rf"^{p}: config is not UTF-8 text \(bad byte at offset 2\)$"):
        fsio.read_user_text(p, "config")


def test_makedirs_private_on_an_existing_directory_changes_nothing(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    os.chmod(d, 0o700)
    fsio.makedirs_private(d, 0o755)
    assert (d.stat().st_mode & 0o777) == 0o700
    fsio.makedirs_private(str(d / "x" / "y") + "/", 0o750)
    assert (d / "x").stat().st_mode & 0o777 == 0o750 and (d / "x" / "y").is_dir()


def test_open_append_nofollow_appends_and_is_blocking(tmp_path: Path) -> None:
    p = tmp_path / "log"
    p.write_bytes(b"a\n")
    fd = fsio.open_append_nofollow(p)
    try:
        assert os.get_blocking(fd) is True
        os.write(fd, b"b\n")
    finally:
        os.close(fd)
    assert p.read_bytes() == b"a\nb\n"
    fd = fsio.open_append_nofollow(tmp_path / "new", 0o600)
    os.close(fd)
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o600 & ~_umask()


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old
