"""Pins for hosttune/jobrecord.py (issue 21, practice round HTOP): what the record watcher keeps open."""

import ast
import os
from pathlib import Path

from hosttune import jobrecord


def _detached_fds(tmp_path: Path, high: int) -> "tuple[list, dict]":
    """Fork a child holding a pipe's write end at descriptor `high` (the highest it has), run _detach() there and
    return (its open descriptors after, the targets of 0/1/2) as the child wrote them to a file by path."""
    out = tmp_path / "fds"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.dup2(w, high)
            os.close(w)
            os.close(r)
            jobrecord._detach()
            names = sorted(int(n) for n in os.listdir("/proc/self/fd"))
            links = {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in (0, 1, 2)}
            fd = os.open(str(out), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, repr((names, links)).encode())
            os.close(fd)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    try:
        got = os.read(r, 1)  # every write end is gone: the child closed it (EOF, not a hang)
    finally:
        os.close(r)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert got == b""
    names, links = ast.literal_eval(out.read_text())
    return names, links


def test_detach_leaves_only_dev_null_on_0_1_2_and_closes_the_highest_inherited_descriptor(tmp_path: Path) -> None:
    names, links = _detached_fds(tmp_path, 200)
    # after _detach only 0, 1, 2 are open; the listing made after it opens one more (the lowest free number: 3)
    assert names == [0, 1, 2, 3]
    assert links == {0: os.devnull, 1: os.devnull, 2: os.devnull}
