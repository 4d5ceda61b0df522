"""Pins for the monitor's sinks (hosttune/monitor/sinks.py) from issue 21's mutation run: the JSONL log rotates before
a record would pass max_bytes, shifts its backups oldest first, never keeps a partial line, follows a deleted file to
a new one; the exposition escapes label values and writes booleans as 0/1; the textfile is readable by
node_exporter's user."""

import json
import os
import stat
from pathlib import Path
from typing import List

import pytest

from hosttune.monitor import sinks


def lines(path: Path) -> List[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_the_log_rotates_before_a_record_would_pass_max_bytes(tmp_path: Path) -> None:
    log = tmp_path / "log"
    rec = {"v": "x" * 40, "i": 0}
    size = len(json.dumps(rec, separators=(",", ":"))) + 1
    sink = sinks.JsonlSink(str(log), max_bytes=2 * size, backups=2)
    for i in range(3):
        sink.write(dict(rec, i=i))
    sink.close()
    assert os.path.getsize(log / sinks.JSONL_NAME) <= 2 * size
    assert [r["i"] for r in lines(log / sinks.JSONL_NAME)] == [2]
    assert [r["i"] for r in lines(log / f"{sinks.JSONL_NAME}.1")] == [0, 1]


def test_backups_shift_oldest_first(tmp_path: Path) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), max_bytes=1, backups=3)
    for i in range(4):
        sink.write({"i": i})  # every record after the first rotates
    sink.close()
    got = {n: [r["i"] for r in lines(log / n)] for n in sorted(os.listdir(log))}
    assert got == {sinks.JSONL_NAME: [3], f"{sinks.JSONL_NAME}.1": [2], f"{sinks.JSONL_NAME}.2": [1],
                   f"{sinks.JSONL_NAME}.3": [0]}


def test_a_short_write_leaves_no_partial_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sink = sinks.JsonlSink(str(tmp_path), max_bytes=1 << 20, backups=1)
    sink.write({"i": 0})
    real = os.write
    monkeypatch.setattr(sinks.os, "write", lambda fd, data: real(fd, data[:3]))
    with pytest.raises(OSError):
        sink.write({"i": 1})
    monkeypatch.undo()
    sink.write({"i": 2})
    sink.close()
    assert [r["i"] for r in lines(tmp_path / sinks.JSONL_NAME)] == [0, 2]


def test_a_deleted_log_is_followed_by_a_new_one(tmp_path: Path) -> None:
    sink = sinks.JsonlSink(str(tmp_path), max_bytes=1 << 20, backups=1)
    sink.write({"i": 0})
    os.unlink(tmp_path / sinks.JSONL_NAME)
    sink.write({"i": 1})
    sink.close()
    assert [r["i"] for r in lines(tmp_path / sinks.JSONL_NAME)] == [1]


def test_label_values_are_escaped_and_booleans_are_numbers() -> None:
    assert sinks._escape('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert (sinks._num(True), sinks._num(False), sinks._num(3), sinks._num(float("nan"))) == ("1", "0", "3", "NaN")


def test_the_textfile_is_readable_by_node_exporters_user(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        sink = sinks.TextfileSink(str(tmp_path / "textfile"))
        sink.write("monitor_up 1\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "textfile" / sinks.TEXTFILE_NAME).st_mode) == 0o644
