"""Pins for hosttune/execcache/store.py (issue 21, round-8 practice, HLAU8): the prune beyond MAX_ENTRIES removes the
entries written longest ago (by their mtime), not the first by name: here names and ages run opposite ways."""

import marshal
import os
from pathlib import Path
from typing import Any, Tuple

import pytest

from hosttune import execcache
from hosttune.execcache import store

ENTRY: Tuple[Any, ...] = (execcache.VERSION, b"d" * 32, (("/etc/x", True, (1, 2)),), (), "/bin/true", ("true",),
                          (), (), None, None, "", False)


def test_prune_removes_the_oldest_by_mtime_whatever_their_names(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "c" / "hosttune"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(folder.parent, 0o700)
    monkeypatch.setattr(execcache, "MAX_ENTRIES", 3)
    for age, n in enumerate("dcb"):  # d written first (oldest), b last: the name order is the other way round
        p = folder / (n * 32)
        p.write_bytes(marshal.dumps(ENTRY))
        os.chmod(p, 0o600)
        os.utime(p, ns=(10 ** 9 * (age + 1), 10 ** 9 * (age + 1)))
    store._store(str(folder / ("e" * 32)), ENTRY)  # 4 > 3: d, the oldest, goes
    assert sorted(os.listdir(folder)) == ["b" * 32, "c" * 32, "e" * 32]
    monkeypatch.setattr(execcache, "MAX_ENTRIES", 2)
    store._store(str(folder / ("a" * 32)), ENTRY)  # 4 > 2: c then b (older than e and a, both written just now)
    assert sorted(os.listdir(folder)) == ["a" * 32, "e" * 32]
    assert store.load(str(folder / ("a" * 32))) == ENTRY
