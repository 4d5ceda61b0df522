"""Pins for hosttune.execcache.recorder.Recorder._entry (issue 21, session 9 practice rounds), in-process (the
recorder's hooks are not installed: _entry only reads what was seen): the entry an exec writes is fresh the moment it
is made (store._stale finds nothing changed), and each path is keyed the way _stale will look at it again: a
directory whose entries were listed by everything its lstat says, one that was only passed through (an ancestor) by
its identity, type, owner and mode only (its times change with every entry added anywhere in it)."""

import os
from pathlib import Path

import pytest

from hosttune import execcache
from hosttune.execcache.key import _stat_key
from hosttune.execcache.recorder import Recorder
from hosttune.execcache.replay import get_mempolicy
from hosttune.execcache.store import _stale, _valid


@pytest.mark.skipif(get_mempolicy() is None, reason="the memory policy cannot be read back here")
def test_a_fresh_entry_is_not_stale_and_keys_each_path_as_it_was_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execcache, "RACY_NS", 0)  # the files just written here may be recorded at once
    # PATH's directories are keyed as listed (a program installed): the system's own only, which nothing else on the
    # machine changes meanwhile (a pyenv shims directory is rehashed by any pip install)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    listed = tmp_path / "listed"
    listed.mkdir()
    (listed / "a").write_text("a")
    passed = tmp_path / "passed"
    passed.mkdir()
    read = passed / "config.yaml"
    read.write_text("x: 1\n")
    rec = Recorder(["--", "true"], str(tmp_path / "cache" / ("0" * 32)), b"\0" * 32)
    rec.saw(str(read))
    rec.saw(str(listed), listed=True)
    rec.err.append("said before the exec\n")
    entry = rec._entry("/bin/true", ["true", "x"], dict(os.environ))
    assert entry is not None and _valid(entry)
    assert _stale(entry) is None
    stats = {p: (f, k) for p, f, k in entry[2]}
    assert all(k == _stat_key(p, f) for p, (f, k) in stats.items())
    assert stats[str(read)] == (False, _stat_key(str(read)))
    assert stats[str(listed)] == (True, _stat_key(str(listed), True))
    assert stats[str(passed)] == (False, _stat_key(str(passed), False))
    assert len(stats[str(passed)][1]) < len(_stat_key(str(passed), True))  # no times for a directory passed through
    assert stats["/"][0] is False
    (passed / "another").write_text("")  # a new entry in a directory only passed through: still fresh
    assert _stale(entry) is None
    (listed / "b").write_text("")  # a new entry in a listed directory: stale
    assert _stale(entry) == str(listed)
    assert entry[4:6] == ("/bin/true", ("true", "x")) and entry[10] == "said before the exec\n"
