"""hosttune/execcache/key.py's bounded read of a keyed file that the kernel hands over in several pieces (issue 21,
mutation round 6): every piece is kept, in order, so the bytes a cache key holds are the whole file. A multi-record
procfs file (seq_file: /proc/PID/maps, a cgroup's cgroup.procs) is a regular file whose reads return at most a page
of records each; so does a file on FUSE, or one that grows under the read."""

import mmap
import os
from pathlib import Path
from typing import List

from hosttune.execcache import key as K

MAPS = "/proc/self/maps"


def _pieces(path: str) -> List[int]:
    """The length of each read(2) of `path` until its end, each asking for far more than the file holds."""
    fd = os.open(path, os.O_RDONLY)
    try:
        sizes = []
        while True:
            got = os.read(fd, 1 << 22)
            if not got:
                return sizes
            sizes.append(len(got))
    finally:
        os.close(fd)


def test_read_keeps_every_piece_of_a_file_the_kernel_returns_in_pieces(tmp_path: Path) -> None:
    # 64 mapped files: 64 more lines in this process's maps, one mapping each, spread over several pages.
    files, maps = [], []
    try:
        for i in range(64):
            f = tmp_path / f"mapped-{i:02d}"
            f.write_bytes(b"x" * mmap.PAGESIZE)
            with open(f, "rb") as fh:
                maps.append(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
            files.append(str(f))
        assert len(_pieces(MAPS)) >= 2  # the kernel's own answer: no one read returns it whole
        data = K._read(MAPS, 1 << 22)
        with open(MAPS, "rb") as fh:
            lines = fh.read().split(b"\n")
    finally:
        for m in maps:
            m.close()
    assert data is not None and data.endswith(b"\n")
    got = data.split(b"\n")
    # the first mapping (the interpreter's lowest address) and the last ([vsyscall]/[stack]) hold still
    assert got[0] == lines[0] and got[-2] == lines[-2], (got[0], lines[0])
    assert [p for p in files if p.encode() not in data] == []  # every mapping in between, whichever piece it came in
    assert len(got) == len(set(got))  # and none twice
