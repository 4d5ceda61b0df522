"""Pins of hosttune/launch/hang.py's watch mechanics (issue 21, mutation round 5), in-process with real pipes, FIFOs
and files under tmp_path: the progress clock (starts at the first move, idle since the last), `stalled` at exactly
the timeout and a newly armed process as progress, the output copy (every byte reaches our side and moves the
marker), the job's hang directory and its variables, the flight recorder pipes poked only with a reader, and what
`finish` removes or keeps."""

import os
import stat
from pathlib import Path
from typing import List

import pytest

from hosttune.errors import UserError
from hosttune.launch import hang, hook


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_starts_at_the_first_move_and_counts_since_the_last() -> None:
    c = Clock()
    p = hang.Progress(c)
    c.now = 500.0
    assert p.idle_s() == 0.0  # still starting: not idle
    p.moved()
    c.now = 507.5
    assert p.idle_s() == 7.5
    p.moved()
    assert p.idle_s() == 0.0


def _watch(tmp_path: Path, timeout: float = 10.0) -> "hang.Watch":
    d = tmp_path / "w"
    d.mkdir(mode=0o700)
    return hang.Watch(timeout, str(d))


def test_stalled_at_exactly_the_timeout_and_never_again_once_collected(tmp_path: Path) -> None:
    w = _watch(tmp_path, 10.0)
    c = Clock()
    w.progress = hang.Progress(c)
    try:
        assert w.stalled() is False  # no output yet: the clock has not started
        w.progress.moved()
        c.now += 9.99
        assert w.stalled() is False
        c.now += 0.01
        assert w.stalled() is True
        (Path(w.dir) / f"{hook.STACKS_PREFIX}rank0-pid1.txt").write_text("")  # a process armed: progress
        assert w.stalled() is False and w.progress.last == c.now
        assert w.stalled() is False  # the same count again is no news
        c.now += 10.0
        assert w.stalled() is True
        w.hung = True
        assert w.stalled() is False
    finally:
        os.close(w._fd)


def test_the_output_copy_passes_every_byte_and_moves_the_marker(tmp_path: Path) -> None:
    w = _watch(tmp_path)
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    try:
        payload = b"x" * 200000 + b"end\n"  # more than one read and more than a pipe holds: the copy loops
        import threading

        t = threading.Thread(target=w._copy, args=(src_r, dst_w))
        t.start()
        got: List[bytes] = []
        reader = threading.Thread(target=lambda: got.append(_read_all(dst_r)))
        reader.start()
        view = memoryview(payload)
        while view:
            view = view[os.write(src_w, view):]
        os.close(src_w)
        t.join(120)
        os.close(dst_w)
        reader.join(120)
        assert got == [payload]
        assert w.progress.last is not None
        with pytest.raises(OSError):
            os.fstat(src_r)  # the copy closed the job's end when it was done
    finally:
        os.close(dst_r)
        os.close(w._fd)


def _read_all(fd: int) -> bytes:
    out = b""
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return out
        out += chunk


def test_start_makes_a_private_directory_here_and_sets_the_jobs_variables(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": "/mine"}
    w = hang.Watch.start(30.0, "123-ab/../c", env)
    try:
        d = str(tmp_path / "hosttune-hang-123-abc")
        assert w.dir == d and w.timeout_s == 30.0
        assert stat.S_IMODE(os.lstat(d).st_mode) == 0o700
        assert env == {hook.HANG_DIR: d, "PYTHONUNBUFFERED": "1",
                       "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": os.path.join(d, "nccl-trace-rank-"),
                       "TORCH_FR_DUMP_TEMP_FILE": os.path.join(d, "nccl-trace-rank-"),
                       "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": "/mine"}  # the caller's own value stays
        assert w.at("x") == f"/proc/self/fd/{w._fd}/x"
        with pytest.raises(UserError, match=r"^exec: --hang-timeout: cannot make .*hosttune-hang-123-abc: File exists"):
            hang.Watch.start(30.0, "123-abc", {})
    finally:
        w.finish()
    assert not os.path.exists(d)  # no hang: nothing left


def test_finish_without_a_hang_removes_stacks_and_pipes_and_keeps_what_nccl_wrote(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    w = _watch(tmp_path)
    d = Path(w.dir)
    (d / f"{hook.STACKS_PREFIX}rank0-pid5.txt").write_text("s")
    os.mkfifo(d / f"{hang.NCCL_PIPE}0")
    (d / f"{hang.NCCL_PIPE}1").write_text("a file, not a pipe")
    (d / f"{hang.NCCL_TRACE}0").write_text("dump")
    w.finish()
    assert sorted(os.listdir(d)) == [f"{hang.NCCL_PIPE}1", f"{hang.NCCL_TRACE}0"]
    assert capsys.readouterr().err == f"hosttune: the job left files in {d} (NCCL flight recorder dumps?)\n"


def test_finish_after_a_hang_keeps_everything(tmp_path: Path) -> None:
    w = _watch(tmp_path)
    d = Path(w.dir)
    (d / f"{hook.STACKS_PREFIX}rank0-pid5.txt").write_text("s")
    w.hung = True
    w.finish()
    assert os.listdir(d) == [f"{hook.STACKS_PREFIX}rank0-pid5.txt"]


def test_poke_nccl_writes_to_pipes_with_a_reader_only(tmp_path: Path) -> None:
    w = _watch(tmp_path)
    d = Path(w.dir)
    os.mkfifo(d / f"{hang.NCCL_PIPE}0")
    os.mkfifo(d / f"{hang.NCCL_PIPE}1")  # nobody reads it: its process group is gone
    (d / f"{hang.NCCL_PIPE}2").write_text("")  # not a FIFO
    r = os.open(d / f"{hang.NCCL_PIPE}0", os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert w._poke_nccl() == 1
        assert os.read(r, 10) == b"1\n"
        assert (d / f"{hang.NCCL_PIPE}2").read_text() == ""
    finally:
        os.close(r)
        os.close(w._fd)


def test_size_read_and_wait_for(tmp_path: Path) -> None:
    f = tmp_path / "f"
    assert hang._size(str(f)) == -1
    f.write_text("abc")
    assert hang._size(str(f)) == 3
    assert hang._read(str(f)) == "abc"
    assert hang._read(str(tmp_path / "none")) == ""
    link = tmp_path / "l"
    link.symlink_to(f)
    assert hang._read(str(link)) == ""  # never through a link
    calls = []
    assert hang._wait_for(lambda: calls.append(1) or len(calls) >= 3, float("inf")) is True and len(calls) == 3
    assert hang._wait_for(lambda: False, 0.0) is False


def test_settle_waits_for_each_file_to_grow_and_hold_its_size(tmp_path: Path) -> None:
    f = tmp_path / "stacks"
    f.write_text("old")
    seen: List[int] = []
    orig = hang._size

    def size(p: str) -> int:  # the file grows on the second look, then holds
        if len(seen) == 1:
            f.write_text("old + new stacks")
        seen.append(orig(p))
        return seen[-1]

    hang._size, saved = size, hang._size
    try:
        hang._settle([str(f)], {str(f): 3}, deadline=float("inf"))
    finally:
        hang._size = saved
    assert seen[0] == 3 and seen[1:] == [16] * (len(seen) - 1) and len(seen) == 5  # grown, then 3 more equal looks
