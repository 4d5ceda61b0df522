"""Pins for hosttune/capture.py (issue 21, practice round HTOP): an archive DEST refused before anything is
captured, one line each."""

from pathlib import Path

import pytest

from hosttune.capture import capture
from hosttune.errors import UserError


@pytest.mark.parametrize("force", [False, True])
def test_archive_destinations_refused_before_capturing(tmp_path: Path, force: bool) -> None:
    tmp_path = tmp_path / "work"  # conftest's HOME and XDG dirs live beside it
    tmp_path.mkdir()
    a_dir = tmp_path / "old.tar.gz"
    a_dir.mkdir()
    cases = {str(a_dir): f"--capture {a_dir}: is a directory",
             str(tmp_path / "none" / "x.tgz"): f"--capture {tmp_path / 'none' / 'x.tgz'}: {tmp_path / 'none'} is not "
                                                f"a directory"}
    if not force:
        sent = tmp_path / "sent.tgz"
        sent.write_bytes(b"an earlier bundle")
        cases[str(sent)] = f"--capture {sent}: exists; name a new file, or add --force to replace it"
    for dest, error in cases.items():
        with pytest.raises(UserError) as info:
            capture(dest, force=force)
        assert str(info.value) == error
    assert sorted(p.name for p in tmp_path.iterdir()) == (["old.tar.gz"] if force else ["old.tar.gz", "sent.tgz"])
    if not force:
        assert (tmp_path / "sent.tgz").read_bytes() == b"an earlier bundle"


def test_a_directory_capture_that_fails_to_write_is_one_line_with_the_systems_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk part way through (ENOSPC from a write inside capture_tree, which cannot be made here for real)."""
    import errno
    import os

    import hosttune.capture as capture_module

    def full(dest: Path, python: object = None) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dest / "capture.json"))

    monkeypatch.setattr(capture_module, "capture_tree", full)
    dest = tmp_path / "cap"
    with pytest.raises(UserError) as info:
        capture(str(dest))
    assert str(info.value) == f"--capture {dest}: cannot write: No space left on device"
