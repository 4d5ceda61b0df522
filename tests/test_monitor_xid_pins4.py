"""Pins of mutation round 4 (issue 21) on hosttune/monitor/xid.py: how the kmsg reader opens its file (no blocking,
not inherited by children, at the end), what one poll reads (limit, lines split across reads, overwritten records),
and the exact boundaries of the record and message parsers."""

import errno
import fcntl
import os
from pathlib import Path
from typing import Any

import pytest

from hosttune.monitor import xid

LINE = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."


def test_the_reader_is_nonblocking_close_on_exec_and_starts_at_the_end(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.write_text(f"4,1,1,-;{LINE}\n")  # history: before the monitor started
    watch = xid.KmsgXids(str(kmsg))
    try:
        assert watch.fd is not None
        assert fcntl.fcntl(watch.fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
        flags = fcntl.fcntl(watch.fd, fcntl.F_GETFL)
        assert flags & os.O_NONBLOCK and flags & os.O_ACCMODE == os.O_RDONLY
        assert os.lseek(watch.fd, 0, os.SEEK_CUR) == kmsg.stat().st_size
        assert watch.poll() == []
    finally:
        watch.close()
    assert watch.fd is None and watch.poll() == []
    watch.close()  # twice is fine


def test_a_record_split_across_reads_is_joined(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("")
    watch = xid.KmsgXids(str(kmsg))
    try:
        with kmsg.open("a") as f:
            f.write("4,1,1,-;NVRM: Xid (PCI:0000:3b")
        assert watch.poll() == []
        with kmsg.open("a") as f:
            f.write(":00): 13, x\n4,2,2,-;NVRM: Xid (0000:5E:00.0): 48, DBE\n")
        assert watch.poll() == [("0000:3b:00", 13), ("0000:5e:00", 48)]
        assert watch.poll() == []
    finally:
        watch.close()


def test_one_poll_reads_at_most_limit_chunks(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("")
    watch = xid.KmsgXids(str(kmsg))
    try:
        record = f"4,1,1,-;{LINE}\n".encode()
        pad = b"6,1,1,-;" + b"x" * (xid.MAX_RECORD - len(record) - 9) + b"\n"
        with kmsg.open("ab") as f:
            f.write((pad + record) * 3)  # each MAX_RECORD chunk ends with one XID record
        assert watch.poll(limit=1) == [("0000:3b:00", 79)]
        assert watch.poll(limit=2) == [("0000:3b:00", 79)] * 2
        assert watch.poll() == []
    finally:
        watch.close()


def test_a_partial_line_is_bounded(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("")
    watch = xid.KmsgXids(str(kmsg))
    try:
        with kmsg.open("ab") as f:
            f.write(b"y" * (3 * xid.MAX_RECORD))
        assert watch.poll() == []
        assert len(watch._partial) == xid.MAX_RECORD
    finally:
        watch.close()


def test_epipe_reads_on_and_another_error_ends_the_poll(monkeypatch: Any, tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("")
    watch = xid.KmsgXids(str(kmsg))
    calls = []
    real_read = os.read

    def read(fd: int, n: int) -> bytes:
        calls.append(n)
        if len(calls) == 1:
            raise OSError(errno.EPIPE, "overwritten")
        if len(calls) == 2:
            return f"4,1,1,-;{LINE}\n".encode()
        if len(calls) == 3:
            raise OSError(errno.EIO, "gone")
        return real_read(fd, n)
    try:
        monkeypatch.setattr(xid.os, "read", read)
        assert watch.poll() == [("0000:3b:00", 79)]
        assert calls == [xid.MAX_RECORD] * 3
    finally:
        monkeypatch.undo()
        watch.close()


def test_a_file_that_cannot_seek_is_closed_and_raises(tmp_path: Path, monkeypatch: Any) -> None:
    closed = []
    real_close = os.close
    monkeypatch.setattr(xid.os, "lseek", lambda fd, pos, how: (_ for _ in ()).throw(OSError(errno.ESPIPE, "pipe")))
    monkeypatch.setattr(xid.os, "close", lambda fd: (closed.append(fd), real_close(fd)))
    (tmp_path / "k").write_text("")
    with pytest.raises(OSError):
        xid.KmsgXids(str(tmp_path / "k"))
    assert len(closed) == 1


@pytest.mark.parametrize("pri, expected", [(0, True), (7, True), (8, False), (15, False), (99999, False)])
def test_only_facility_zero_is_the_kernel(pri: int, expected: bool) -> None:
    assert (xid.parse_kmsg_record(f"{pri},1,1,-;{LINE}") is not None) is expected


def test_record_header_fields() -> None:
    assert xid.parse_kmsg_record(f"4,1,-5,-;{LINE}") == ("0000:3b:00", 79)  # a negative timestamp field
    assert xid.parse_kmsg_record(f"123456,1,1,-;{LINE}") is None  # PRI is at most 5 digits
    assert xid.parse_kmsg_record(f"4,1;{LINE}") is None
    assert xid.parse_kmsg_record("4,1,1,-;") is None


def test_message_bus_ids() -> None:
    assert xid.parse_xid_message("NVRM: Xid (PCI:0001:3B:00): 31, x") == ("0001:3b:00", 31)
    assert xid.parse_xid_message("NVRM: Xid (000000af:3b:1f.1): 119, x") == ("00af:3b:1f", 119)
    assert xid.parse_xid_message("NVRM: Xid (0000:3b:0): 79") is None
    assert xid.parse_xid_message("NVRM: Xid (000:3b:00): 79") is None
    assert xid.parse_xid_message("NVRM: Xid (PCI:0000:3b:00): x") is None


def test_describe_levels_of_the_codes_a_drain_depends_on() -> None:
    critical = {48, 62, 64, 74, 79, 95, 119, 120, 140}
    assert {c for c, (level, _m, _a) in xid.MEANINGS.items() if level == "critical"} == critical | {143}
    assert xid.describe(48) == ("critical", "Xid 48: double-bit ECC error (uncorrectable GPU memory error); action: "
                                "drain the node and reset the GPU; pages are retired or rows remapped on reset")
    assert xid.describe(13)[0] == "warning" and xid.describe(8)[0] == "error"


def test_every_codes_level_and_the_unknown_code() -> None:
    levels = {c: level for c, (level, _m, _a) in xid.MEANINGS.items()}
    assert levels == {8: "error", 13: "warning", 31: "warning", 32: "warning", 38: "error", 43: "notice",
                      45: "notice", 48: "critical", 56: "warning", 57: "error", 58: "error", 61: "error",
                      62: "critical", 63: "warning", 64: "critical", 68: "warning", 69: "warning", 74: "critical",
                      79: "critical", 92: "warning", 94: "error", 95: "critical", 109: "error", 119: "critical",
                      120: "critical", 121: "warning", 140: "critical", 143: "critical"}
    assert xid.describe(1) == ("warning", "Xid 1: GPU error (not in hosttune's XID table); action: see NVIDIA's XID "
                                          "catalogue")
    assert xid.describe(109) == ("error", "Xid 109: context switch timeout; action: debug the application; update "
                                          "the driver")
