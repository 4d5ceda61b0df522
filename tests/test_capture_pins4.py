"""Pins for hosttune/capture.py's Capture (the tree a support bundle holds): byte and file limits, the written
file's mode and no-follow, links recreated as links, the repeated-access memo, and _new_dir's one-line errors
(issue 21). In-process, on real host paths every Linux has (/proc/self) and on tmp_path."""

import os
import stat
from pathlib import Path
from typing import Iterator

import pytest

from hosttune import capture
from hosttune.capture import Capture
from hosttune.errors import UserError


@pytest.fixture
def umask022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _cap(tmp_path: Path) -> Capture:
    dest = tmp_path / "cap"
    dest.mkdir()
    return Capture(dest)


def test_bytes_and_files_are_counted(tmp_path: Path, umask022: None) -> None:
    cap = _cap(tmp_path)
    cap._file("/etc/a", b"12345")
    cap._file("/etc/b", b"123")
    cap._file("/etc/a", b"zzzzzzzzz")  # filled once: the first bytes stay, nothing counted twice
    assert cap.bytes == 8 and cap.filled == {"/etc/a", "/etc/b"} and cap.placeholders == 0
    assert (Path(cap.dest) / "etc/a").read_bytes() == b"12345"
    st = os.lstat(Path(cap.dest) / "etc/a")
    assert stat.S_IMODE(st.st_mode) == 0o644 and stat.S_ISREG(st.st_mode)
    assert stat.S_IMODE(os.lstat(Path(cap.dest) / "etc").st_mode) == 0o755


def test_a_placeholder_is_empty_counted_once_and_never_replaces_a_file(tmp_path: Path) -> None:
    cap = _cap(tmp_path)
    cap._file("/etc/a", b"data")
    cap._file("/etc/a", None)
    cap._file("/etc/p", None)
    cap._file("/etc/p", None)
    assert (Path(cap.dest) / "etc/a").read_bytes() == b"data"
    assert (Path(cap.dest) / "etc/p").read_bytes() == b"" and cap.placeholders == 1 and cap.bytes == 4


def test_the_byte_limit_is_inclusive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture, "MAX_BYTES", 10)
    cap = _cap(tmp_path)
    cap._file("/etc/a", b"12345")
    cap._file("/etc/b", b"12345")  # exactly MAX_BYTES: still fits
    assert not cap.full and cap.bytes == 10
    cap._file("/etc/c", b"1")
    assert cap.full and cap.filled == {"/etc/a", "/etc/b"} and not (Path(cap.dest) / "etc/c").exists()


def test_the_file_limit_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture, "MAX_FILES", 2)
    cap = _cap(tmp_path)
    cap._file("/etc/a", b"a")
    cap._file("/etc/b", b"b")
    assert not cap.full
    cap._file("/etc/c", b"c")
    assert cap.full and len(cap.filled) == 2 and not (Path(cap.dest) / "etc/c").exists()


def test_a_link_planted_in_the_capture_is_never_written_through(tmp_path: Path) -> None:
    cap = _cap(tmp_path)
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep")
    (Path(cap.dest) / "etc").mkdir()
    os.symlink(outside, Path(cap.dest) / "etc/a")
    with pytest.raises(OSError):
        cap._file("/etc/a", b"evil")
    assert outside.read_bytes() == b"keep"


def test_a_file_that_could_not_be_written_is_not_counted_and_is_tried_again(tmp_path: Path) -> None:
    """Was: counted as filled (and its bytes) before the write, so a failed write left the manifest counting a file
    the capture does not hold, and the next read of that path never wrote it."""
    cap = _cap(tmp_path)
    (Path(cap.dest) / "etc").mkdir()
    os.symlink(tmp_path / "outside", Path(cap.dest) / "etc/a")  # the write fails (no-follow)
    with pytest.raises(OSError):
        cap._file("/etc/a", b"12345")
    assert cap.filled == set() and cap.bytes == 0
    os.unlink(Path(cap.dest) / "etc/a")
    cap._file("/etc/a", b"12345")
    assert cap.filled == {"/etc/a"} and cap.bytes == 5 and (Path(cap.dest) / "etc/a").read_bytes() == b"12345"


def test_a_file_where_a_directory_belongs_is_refused(tmp_path: Path) -> None:
    cap = _cap(tmp_path)
    (Path(cap.dest) / "etc").write_bytes(b"")
    with pytest.raises(OSError, match="not a directory in the capture"):
        cap._dir("/etc/x")


def test_proc_self_is_recreated_as_the_same_link_then_its_target(tmp_path: Path) -> None:
    cap = _cap(tmp_path)
    cap.add("read", "/proc/self/status")
    link = Path(cap.dest) / "proc/self"
    assert link.is_symlink() and os.readlink(link) == os.readlink("/proc/self")
    real = Path(cap.dest) / "proc" / os.readlink("/proc/self") / "status"
    assert real.is_file() and not real.is_symlink() and b"Cpus_allowed_list" in real.read_bytes()
    assert cap.filled == {f"/proc/{os.readlink('/proc/self')}/status"} and cap.bytes == real.stat().st_size
    assert cap.failed == {} and cap.refused == {}


def test_stat_and_elf_make_a_placeholder_and_the_magic(tmp_path: Path) -> None:
    cap = _cap(tmp_path)
    cap.add("stat", "/proc/self/status")
    cap.add("elf", "/proc/self/stat")
    me = Path(cap.dest) / "proc" / os.readlink("/proc/self")
    assert (me / "status").read_bytes() == b"" and cap.placeholders == 1
    assert (me / "stat").read_bytes() == b"\x7fELF" and cap.bytes == 4


def test_a_refused_path_is_recorded_not_copied(tmp_path: Path) -> None:
    cap = _cap(tmp_path)
    cap.add("read", "/proc/self/environ")
    pid = os.readlink("/proc/self")
    assert cap.refused == {f"/proc/{pid}/environ": "per-process file the detector does not parse"}
    assert not (Path(cap.dest) / "proc" / pid / "environ").exists()


def test_a_repeated_stat_is_not_redone_but_a_failed_read_is_retried(tmp_path: Path) -> None:
    cap = _cap(tmp_path)
    cap.add("stat", "/proc/self/status")
    me = Path(cap.dest) / "proc" / os.readlink("/proc/self")
    (me / "status").unlink()
    cap.add("stat", "/proc/self/status")
    assert not (me / "status").exists() and cap.placeholders == 1  # memoised: asked once, made once
    (Path(cap.dest) / "sys").write_bytes(b"")  # something in the way: the read fails and is recorded
    cap.add("read", "/sys/devices/system/cpu/online", b"0-3\n")
    assert list(cap.failed) == ["/sys/devices/system/cpu/online"] and cap.filled == set()
    (Path(cap.dest) / "sys").unlink()
    cap.add("read", "/sys/devices/system/cpu/online", b"0-3\n")  # a read is never memoised away
    assert (Path(cap.dest) / "sys/devices/system/cpu/online").read_bytes() == b"0-3\n"


def test_dot_dot_climbs_one_component(tmp_path: Path) -> None:
    cap = _cap(tmp_path)
    cap.add("stat", "/proc/self/../self/status")
    assert (Path(cap.dest) / "proc" / os.readlink("/proc/self") / "status").exists()


def test_new_dir_cannot_create_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"cannot create: No such file or directory"):
        capture._new_dir(tmp_path / "missing" / "dest")


def test_new_dir_takes_an_empty_directory_of_ours_and_makes_it_private(tmp_path: Path) -> None:
    dest = tmp_path / "d"
    dest.mkdir(mode=0o755)
    os.chmod(dest, 0o755)
    capture._new_dir(dest)
    assert stat.S_IMODE(os.lstat(dest).st_mode) == 0o700
    new = tmp_path / "n"
    capture._new_dir(new)
    assert stat.S_IMODE(os.lstat(new).st_mode) == 0o700


@pytest.mark.parametrize("make", ["file", "nonempty"])
def test_new_dir_refuses_what_is_not_an_empty_directory(tmp_path: Path, make: str) -> None:
    dest = tmp_path / "d"
    if make == "file":
        dest.write_bytes(b"")
    else:
        dest.mkdir()
        (dest / "x").write_bytes(b"")
    with pytest.raises(UserError, match="exists and is not an empty directory"):
        capture._new_dir(dest)


@pytest.mark.parametrize("dest, expected", [("a.tar.gz", True), ("a.tgz", True), ("a.tar", False), ("a", False)])
def test_is_archive(dest: str, expected: bool) -> None:
    assert capture.is_archive(dest) is expected
