"""Pins (issue 21, round 7 practice) for hosttune/monitor/textfile.py, as root (as the unit runs it): publish()
keeps a root link at node_exporter's textfile name only when it points at this store's file; root's link left by an
earlier store (another state directory) is replaced by one to the new store, and the answer says so."""

import os
from pathlib import Path

import pytest

from hosttune.monitor import textfile
from hosttune.monitor.sinks import TEXTFILE_NAME

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="publishing is root's (the unit's ExecStartPre=+)")


def _store(tmp_path: Path, name: str) -> Path:
    state = tmp_path / name
    state.mkdir(mode=0o755)
    return state / "textfile"


def test_roots_link_to_an_old_store_is_replaced_by_one_to_this_store(tmp_path: Path) -> None:
    target = tmp_path / "node-exporter"
    target.mkdir(mode=0o755)
    old, new = _store(tmp_path, "old-state"), _store(tmp_path, "state")
    textfile.publish(str(target), 65534, 65534, store=str(old))
    assert os.readlink(target / TEXTFILE_NAME) == str(old / TEXTFILE_NAME)
    done, warnings = textfile.publish(str(target), 65534, 65534, store=str(new))
    assert os.readlink(target / TEXTFILE_NAME) == str(new / TEXTFILE_NAME)
    assert os.lstat(target / TEXTFILE_NAME).st_uid == 0
    assert (done, warnings) == (f"textfile {new / TEXTFILE_NAME}, linked from {target / TEXTFILE_NAME}", [])
    assert sorted(os.listdir(target)) == [TEXTFILE_NAME]  # no temporary link left beside it
    # published again to the same store: the link is kept as it is (same inode)
    ino = os.lstat(target / TEXTFILE_NAME).st_ino
    assert textfile.publish(str(target), 65534, 65534, store=str(new))[0] == done
    assert os.lstat(target / TEXTFILE_NAME).st_ino == ino
