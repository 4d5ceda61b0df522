"""Pins for hosttune/monitor/logread.py (issue 21, round 5): a log line of exactly MAX_LINE_BYTES (1 MiB, newline
included) is a sample, one byte more is skipped as unreadable, and the lines after it are read."""

import json
from pathlib import Path

from hosttune.monitor import logread


def padded(ts: float, size: int) -> bytes:
    head = json.dumps({"ts": ts, "host": {}})[:-1] + ', "pad": "'
    return (head + "x" * (size - len(head) - 3) + '"}\n').encode()


def test_a_line_of_exactly_one_mib_is_read_one_byte_more_is_not(tmp_path: Path) -> None:
    assert logread.MAX_LINE_BYTES == 1 << 20
    exact, over = padded(1.0, 1 << 20), padded(2.0, (1 << 20) + 1)
    assert len(exact) == 1 << 20 and len(over) == (1 << 20) + 1
    (tmp_path / "monitor.jsonl").write_bytes(exact + over + b'{"ts": 3}\n')
    samples, bad = logread.read_samples(str(tmp_path))
    assert [s["ts"] for s in samples] == [1.0, 3] and bad == 1


def test_an_infinite_reading_anywhere_makes_the_line_unreadable() -> None:
    assert logread.parse_line(b'{"ts": 1, "host": {"mem_used_pct": 1e400}}') is None
    assert logread.parse_line(b'{"ts": 1, "gpus": [{"index": 0, "power_w": -1e400}]}') is None
    assert logread.parse_line(b'{"ts": 1, "host": {"mem_used_pct": 1e300}}') is not None
