"""Pins for mutation round 4's last execcache survivor (issue 21): a directory recorded for its identity only (the
ones above a profile or the program, whose entries nobody listed) is still stale after a chmod, since a mode decides
whether the trust rule accepts what is under it; a new entry in it is not (its times are not in the key)."""
import os
from pathlib import Path

from hosttune import execcache


def _entry_of(folder: Path) -> tuple:
    return (execcache.VERSION, b"d", ((str(folder), False, execcache._stat_key(str(folder), False)),), ())


def test_a_chmod_of_a_directory_above_an_input_makes_the_entry_stale(tmp_path: Path) -> None:
    folder = tmp_path / "profiles"
    folder.mkdir()
    os.chmod(folder, 0o755)
    entry = _entry_of(folder)
    assert execcache._stale(entry) is None
    os.chmod(folder, 0o775)  # group-writable: the full path's trust rule would now refuse what lies under it
    assert execcache._stale(entry) == str(folder)


def test_a_new_entry_in_an_unlisted_directory_keeps_the_entry_fresh(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    os.utime(folder, (1_000_000_000, 1_000_000_000))
    entry = _entry_of(folder)
    (folder / "other-job").write_text("x")  # another job's handoff: the directory's times change, nothing we read
    assert execcache._stale(entry) is None
