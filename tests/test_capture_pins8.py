"""hosttune.capture pins (issue 21, practice round HDET8): a directory a probe only looks at is recreated as an
empty directory, and what could not be copied is recorded with the system's reason. In-process, on host paths every
Linux has (/proc/sys/vm, /proc/self) and on tmp_path."""

import os
from pathlib import Path

from hosttune.capture import Capture


def _tree(root: Path) -> dict:
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = Path(d) / n
            out[str(p.relative_to(root))] = "link" if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return out


def test_a_directory_only_looked_at_is_an_empty_directory(tmp_path: Path) -> None:
    dest = tmp_path / "cap"
    dest.mkdir()
    cap = Capture(dest)
    cap.add("stat", "/proc/sys/vm")
    assert _tree(dest) == {"proc": "dir", "proc/sys": "dir", "proc/sys/vm": "dir"}
    assert (cap.placeholders, cap.bytes, cap.filled, cap.failed, cap.refused, cap.full) == (0, 0, set(), {}, {},
                                                                                            False)


def test_a_path_that_cannot_be_made_is_failed_with_the_systems_reason(tmp_path: Path) -> None:
    cap = Capture(tmp_path / "gone")  # the destination vanished: every mkdir fails with ENOENT
    cap.add("read", "/proc/self/status", b"Name:\tx\n")
    cap.add("stat", "/proc/sys/vm")
    assert cap.failed == {"/proc/self/status": "No such file or directory", "/proc/sys/vm": "No such file or directory"}
    assert (cap.placeholders, cap.bytes, cap.filled) == (0, 0, set())
