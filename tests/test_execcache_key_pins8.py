"""Pins for hosttune/execcache/key.py (issue 21, round-8 practice, HLAU8): everything _host_state feeds the digest,
in order (each host file's bytes and its name, a missing file distinct from an empty one; the cpuset lines of
/proc/self/status; the affinity; the tree of each GPU/PCI folder), and _tree's whole answer (sorted, depth-bounded,
entry-bounded, links not followed, a missing folder marked)."""

import os
from pathlib import Path
from typing import List, Optional

import pytest

from hosttune import execcache
from hosttune.execcache import key


class _Recorder:
    def __init__(self) -> None:
        self.parts: List[bytes] = []

    def update(self, data: bytes) -> None:
        self.parts.append(bytes(data))


def test_host_state_feeds_every_part_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing, empty, full = tmp_path / "missing", tmp_path / "empty", tmp_path / "full"
    empty.write_bytes(b"")
    full.write_bytes(b"boot-1\n")
    monkeypatch.setattr(execcache, "_HOST_FILES", (str(missing), str(empty), str(full)))
    real_read = key._read
    status = b"Name:\tx\nCpus_allowed_list:\t0-3\nVmRSS:\t1 kB\nMems_allowed_list:\t0\nCpus_allowed:\tf\n"

    def fake_read(path: str, limit: int = 65536) -> Optional[bytes]:
        return status if path == "/proc/self/status" else real_read(path, limit)

    monkeypatch.setattr(key, "_read", fake_read)
    monkeypatch.setattr(key, "_tree", lambda folder: [folder, "x"])
    h = _Recorder()
    key._host_state(h)
    assert h.parts == [
        b"\0missing\0", b"\0" + str(missing).encode() + b"\0",
        b"", b"\0" + str(empty).encode() + b"\0",
        b"boot-1\n", b"\0" + str(full).encode() + b"\0",
        b"Cpus_allowed_list:\t0-3\nMems_allowed_list:\t0",
        repr(sorted(os.sched_getaffinity(0))).encode(),
        b"['/sys/bus/pci/devices', 'x']",
        b"['/proc/driver/nvidia/gpus', 'x']",
        b"['/proc/driver/nvidia/capabilities', 'x']",
    ]


def test_a_missing_host_file_and_an_empty_one_give_different_digests(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "f"
    monkeypatch.setattr(execcache, "_HOST_FILES", (str(f),))
    absent = key.digest(["true"], {})
    f.write_bytes(b"")
    assert key.digest(["true"], {}) != absent


def test_tree_whole_answer(tmp_path: Path) -> None:
    top = tmp_path / "top"
    (top / "b" / "c" / "d" / "e").mkdir(parents=True)
    (top / "b" / "c" / "d" / "e" / "deep").write_text("")
    (top / "a").write_text("")
    (top / "link").symlink_to(top / "b", target_is_directory=True)
    assert key._tree(str(top)) == ["a", "b", "b/c", "b/c/d", "b/c/d/e", "link"]
    assert key._tree(str(top), depth=2) == ["a", "b", "b/c", "link"]
    assert key._tree(str(top), budget=[3]) == ["a", "b", "b/c"]
    assert key._tree(str(tmp_path / "none")) == ["\0missing"]
