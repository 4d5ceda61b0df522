"""Pins (issue 21, round 6) for hosttune/monitor/logread.py: a long log is read to its end (every line, across the
rotated files, oldest first), the count of unreadable lines is returned, an infinite reading is refused wherever
it is, and a sample's host part is checked even when other parts are absent."""

import json
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune.monitor import logread as L


def _line(rec: Dict[str, Any]) -> bytes:
    return (json.dumps(rec) + "\n").encode()


def test_every_line_of_a_long_log_and_its_backups_is_read(tmp_path: Path) -> None:
    (tmp_path / "monitor.jsonl.2").write_bytes(b"".join(_line({"ts": t}) for t in range(0, 1500)))
    (tmp_path / "monitor.jsonl.1").write_bytes(b"".join(_line({"ts": t}) for t in range(1500, 3000)) + b"bad\n")
    (tmp_path / "monitor.jsonl").write_bytes(b"".join(_line({"ts": t}) for t in range(3000, 4200)) + b"{}\n\n")
    samples, bad = L.read_samples(str(tmp_path))
    assert [s["ts"] for s in samples] == list(range(4200)) and bad == 2
    assert len(list(L._lines(str(tmp_path / "monitor.jsonl")))) == 1202


def test_the_bad_count_and_the_period_together(tmp_path: Path) -> None:
    (tmp_path / "monitor.jsonl").write_bytes(_line({"ts": 10}) + b"x\n" + _line({"ts": 20}) + b"[1]\n" +
                                             _line({"ts": 5}))
    assert L.read_samples(str(tmp_path), since_s=8, now=20) == ([{"ts": 20}], 2)
    assert L.read_samples(str(tmp_path)) == ([{"ts": 5}, {"ts": 10}, {"ts": 20}], 2)


@pytest.mark.parametrize("raw", [b'{"ts": 1e999}', b'{"ts": 1, "host": {"load1": -1e999}}',
                                 b'{"ts": 1, "gpus": [{"index": 0, "power_w": 1e400}]}'])
def test_an_infinite_number_anywhere_is_unreadable(raw: bytes) -> None:
    assert L.parse_line(raw) is None


def test_finite_floats_and_the_host_checks() -> None:
    assert L._finite_float("1.5") == 1.5 and L._finite_float("-0.0") == 0.0
    with pytest.raises(ValueError, match="not a finite number: 1e999"):
        L._finite_float("1e999")
    assert L.parse_line(b'{"ts": 1, "host": {"mem_used_pct": 5.5}}') == {"ts": 1, "host": {"mem_used_pct": 5.5}}
    assert L.parse_line(b'{"ts": 1, "host": {"mem_used_pct": "5"}}') is None
    assert L.parse_line(b'{"ts": 1, "host": {}, "gpus": []}') == {"ts": 1, "host": {}, "gpus": []}
    assert L.parse_line(b'{"ts": 1, "gpus": [{"index": 0, "jobs": [{"job": "1", "kind": 5}]}]}') is None
    assert L.parse_line(b'{"ts": 1, "gpus": [{"index": 0, "jobs": [{"job": "1", "kind": "slurm"}]}]}') is not None
    assert L.parse_line(b'{"ts": 1, "gpus": [{"index": 0, "throttle_seconds": {"power": true}}]}') is None
    assert L.parse_line(b'{"ts": 1, "gpus": [{"index": 0, "processes": [{"used_memory_mb": null}]}]}') is not None
    assert L.parse_line(b'{"ts": 1, "gpus": [{"index": 0, "processes": [{"used_memory_mb": "1"}]}]}') is None
    assert L.parse_line(b'{"ts": 1, "gpus": [{"index": 0, "processes": [null]}]}') is None
