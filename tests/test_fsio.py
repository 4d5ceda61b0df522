"""fsio's safety nets, each pinned by a test that fails when the net is taken away.

- read_bounded(nofollow=True) refuses a link at the name (the re-open that protects root after a trust check), and
  follows it without the flag;
- atomic_write fsyncs the new file before the rename and its directory after it (a crash then leaves the old file or
  the whole new one); durable=False does neither;
- makedirs_private gives every new directory exactly `mode` under any umask, a narrowing one included.
"""

import errno
import os
import stat
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from hosttune import fsio

# ---- read_bounded(nofollow=True) ------------------------------------------------------------------------------

def test_nofollow_refuses_a_link_to_a_small_readable_file(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"secret\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(OSError) as info:
        fsio.read_bounded(link, 100, nofollow=True)
    assert info.value.errno == errno.ELOOP
    assert fsio.read_bounded(link, 100) == b"secret\n"  # without the flag the link is followed
    assert fsio.read_bounded(target, 100, nofollow=True) == b"secret\n"  # the file itself is read


def test_nofollow_refuses_a_relative_and_a_dangling_link(tmp_path: Path) -> None:
    (tmp_path / "t").write_bytes(b"x")
    (tmp_path / "rel").symlink_to("t")
    (tmp_path / "dangling").symlink_to(tmp_path / "absent")
    for name in ("rel", "dangling"):
        with pytest.raises(OSError) as info:
            fsio.read_bounded(tmp_path / name, 100, nofollow=True)
        assert info.value.errno == errno.ELOOP, name


# ---- atomic_write's two fsyncs --------------------------------------------------------------------------------

def test_atomic_write_syncs_the_file_before_the_rename_and_the_directory_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[Tuple[str, int, bool]] = []
    real = os.fsync
    target = tmp_path / "profile.yaml"
    target.write_bytes(b"old\n")
    new = b"new contents\n"

    def spy(fd: Any) -> None:
        st = os.fstat(fd)
        calls.append(("dir" if stat.S_ISDIR(st.st_mode) else "file", st.st_ino, target.read_bytes() == new))
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    fsio.atomic_write(target, new)
    assert target.read_bytes() == new
    files = [c for c in calls if c[0] == "file"]
    dirs = [c for c in calls if c[0] == "dir"]
    # the new file's data: synced while the target still held the old contents (before the rename)
    assert files == [("file", target.stat().st_ino, False)], calls
    # the directory holding the rename: synced after it
    assert dirs == [("dir", tmp_path.stat().st_ino, True)], calls
    assert calls.index(files[0]) < calls.index(dirs[0])


def test_atomic_writer_streaming_and_exclusive_sync_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kinds: List[Tuple[str, int]] = []
    real = os.fsync

    def spy(fd: Any) -> None:
        st = os.fstat(fd)
        kinds.append(("dir" if stat.S_ISDIR(st.st_mode) else "file", st.st_ino))
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    target = tmp_path / "ckpt.bin"
    with fsio.atomic_writer(target, exclusive=True) as fh:
        fh.write(b"x" * 100)
    assert sorted(kinds) == [("dir", tmp_path.stat().st_ino), ("file", target.stat().st_ino)]


def test_durable_false_skips_both_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[int] = []
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd))
    fsio.atomic_write(tmp_path / "state.json", "{}", durable=False)
    assert (tmp_path / "state.json").read_text() == "{}" and calls == []


# ---- makedirs_private under a narrowing umask -----------------------------------------------------------------

@pytest.mark.parametrize("umask", [0o777, 0o077, 0o022, 0o000])
@pytest.mark.parametrize("mode", [0o700, 0o750, 0o755])
def test_makedirs_private_gives_exactly_the_mode_under_any_umask(tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        fsio.makedirs_private(tmp_path / "a" / "b" / "c", mode)
    finally:
        os.umask(old)
    for d in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(d.stat().st_mode) == mode, (oct(umask), d)
