"""Pins for mutation round 4's last execcache survivor (issue 21) and its neighbours in key.py: a directory recorded
for its identity only (the ones above a profile or the program, whose entries nobody listed) is still stale after a
chmod or chown, since mode and owner decide whether the trust rule accepts what is under it; a new entry in it is not
(its times are not in the key); a new entry in a directory whose entries were listed (a PATH directory) is."""
import os
from pathlib import Path

import pytest

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


@pytest.mark.skipif(os.geteuid() != 0, reason="handing a directory to another user needs root")
def test_a_chown_of_a_directory_above_an_input_makes_the_entry_stale(tmp_path: Path) -> None:
    folder = tmp_path / "profiles"
    folder.mkdir()
    entry = _entry_of(folder)
    os.chown(folder, 0, 65534)  # another group: trust now depends on its mode bits against that group
    assert execcache._stale(entry) == str(folder)
    entry = _entry_of(folder)
    os.chown(folder, 65534, 65534)  # another owner: the trust rule refuses what lies under it
    assert execcache._stale(entry) == str(folder)


def test_a_program_installed_in_a_listed_directory_makes_the_entry_stale(tmp_path: Path) -> None:
    folder = tmp_path / "bin"  # a PATH directory: its entries decide which program a bare name runs
    folder.mkdir()
    os.utime(folder, (1_000_000_000, 1_000_000_000))
    entry = (execcache.VERSION, b"d", ((str(folder), True, execcache._stat_key(str(folder), True)),), ())
    assert execcache._stale(entry) is None
    (folder / "numactl").write_text("#!/bin/sh\n")
    assert execcache._stale(entry) == str(folder)
