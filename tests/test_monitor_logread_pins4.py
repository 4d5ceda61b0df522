"""Pins of mutation round 4 (issue 21) on hosttune/monitor/logread.py: the period options' grammar, which lines are
samples (every shape rule, both ways), the bounded no-follow reader, and the period filter's edges."""

import json
import os
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune.errors import UserError
from hosttune.monitor import logread as L


def test_parse_duration() -> None:
    assert [L.parse_duration(s) for s in ("90", "1.5", "90s", "15m", "2h", "1d", "1w", "1h30m", " 2H 5M ", "0.5h",
                                          "1m30s")] == [90.0, 1.5, 90.0, 900.0, 7200.0, 86400.0, 604800.0, 5400.0,
                                                        7500.0, 1800.0, 90.0]
    for bad in ("", "h", "0m", "0", "2x", "1h junk", "junk 1h", "-1h", "1h-"):
        if bad == "0":
            assert L.parse_duration(bad) == 0.0  # a bare number is seconds, as given
            continue
        with pytest.raises(UserError, match=r"^--since: cannot read duration .* \(use e\.g\. 30m, 2h, 1d, 1h30m\)$"):
            L.parse_duration(bad)


def test_parse_when() -> None:
    t = 1764583200.0  # 2025-12-01 10:00:00 UTC
    for s in ("2025-12-01T10:00:00Z", "2025-12-01T10:00:00", "2025-12-01 10:00:00", "2025-12-01T10:00",
              "2025-12-01 10:00", " 2025-12-01 10:00 "):
        assert L.parse_when(s) == t, s
    assert L.parse_when("2025-12-01") == t - 36000
    assert L.parse_when("30m", now=10000.0) == 8200.0
    assert L.parse_when("90", now=100.0) == 10.0
    with pytest.raises(UserError, match=r"^--until: cannot read 'soon' \(use a duration ago"):
        L.parse_when("soon", now=0.0)
    with pytest.raises(UserError, match=r"^--from: cannot read"):
        L.parse_when("2025-13-01", now=0.0, option="--from")


def _line(rec: Any) -> bytes:
    return json.dumps(rec).encode() + b"\n"


GOOD: Dict[str, Any] = {
    "ts": 1.0, "host": {"mem_used_pct": 1, "swap_total_bytes": 2, "swap_used_bytes": 3, "cpu_temps_c": {"a": 1},
                        "disks": {"/": {"used_pct": 2}, "/x": {}}},
    "gpus": [{"index": 0, "temperature_c": 1.5, "memory_used_pct": 2, "temp_slowdown_c": 90, "clock_event_reasons": 4,
              "jobs": [{"job": "7", "kind": "slurm", "user": "a"}], "utilization_gpu_pct": 1, "memory_used_mb": 2,
              "power_w": 3, "energy_j": 4, "xid_errors": 0, "throttle_seconds": {"thermal": 1.0},
              "processes": [{"used_memory_mb": 1}, {"used_memory_mb": None}, {}]}],
    "events": [{"kind": "x"}]}


def test_a_full_sample_and_minimal_ones_parse() -> None:
    assert L.parse_line(_line(GOOD)) == GOOD
    assert L.parse_line(b'{"ts": 0}') == {"ts": 0}
    assert L.parse_line(b'{"ts": 99999999999.5, "host": null, "gpus": null, "events": null}') is not None
    assert L.parse_line(b'{"ts": 1, "gpus": [{"index": 0, "jobs": null, "throttle_seconds": null, '
                        b'"processes": null, "temperature_c": null}]}') is not None


def _with(path: str, value: Any) -> Dict[str, Any]:
    rec = json.loads(json.dumps(GOOD))
    *parents, last = path.split(".")
    node = rec
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return rec


@pytest.mark.parametrize("path, value", [
    ("ts", "1"), ("ts", True), ("ts", -1), ("ts", 1e11), ("host", []), ("host.mem_used_pct", "1"),
    ("host.swap_total_bytes", True), ("host.swap_used_bytes", "x"), ("host.cpu_temps_c", []),
    ("host.cpu_temps_c", {"a": "hot"}), ("host.disks", []), ("host.disks", {"/": 5}),
    ("host.disks", {"/": {"used_pct": "9"}}), ("gpus", {}), ("gpus.0", 5), ("gpus.0.index", "0"),
    ("gpus.0.index", True), ("gpus.0.temperature_c", "1"), ("gpus.0.memory_used_pct", False),
    ("gpus.0.temp_slowdown_c", "90"), ("gpus.0.clock_event_reasons", 1.5), ("gpus.0.clock_event_reasons", True),
    ("gpus.0.jobs", {}), ("gpus.0.jobs", [5]), ("gpus.0.jobs", [{"job": 7, "kind": "slurm"}]),
    ("gpus.0.jobs", [{"job": "7"}]), ("gpus.0.utilization_gpu_pct", "1"), ("gpus.0.memory_used_mb", "2"),
    ("gpus.0.power_w", "3"), ("gpus.0.energy_j", True), ("gpus.0.xid_errors", "0"),
    ("gpus.0.throttle_seconds", []), ("gpus.0.throttle_seconds", {"thermal": "1"}), ("gpus.0.processes", {}),
    ("gpus.0.processes", [5]), ("gpus.0.processes", [{"used_memory_mb": "1"}]), ("events", {}), ("events", [1]),
])
def test_each_shape_rule_makes_a_line_unreadable(path: str, value: Any) -> None:
    assert L.parse_line(_line(_with(path, value))) is None


@pytest.mark.parametrize("raw", [b"\xff{}", b"{", b"[]", b'{"ts": NaN}', b'{"ts": Infinity}', b'{"ts": 1e400}',
                                 b'{"ts": 1, "x": ' + b"1" * 21 + b"}", b"[" * 100000 + b"]" * 100000])
def test_bad_json_is_unreadable_not_a_traceback(raw: bytes) -> None:
    assert L.parse_line(raw) is None


def test_integer_length_bound() -> None:
    assert L.parse_line(b'{"ts": 1, "x": ' + b"9" * 20 + b"}") is not None
    assert L.parse_line(b'{"ts": 1, "x": -' + b"9" * 20 + b"}") is not None
    assert L.parse_line(b'{"ts": 1, "x": ' + b"9" * 21 + b"}") is None


def test_lines_are_bounded_and_the_overlong_one_skipped(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(L, "MAX_LINE_BYTES", 16)
    p = tmp_path / "monitor.jsonl"
    p.write_bytes(b"a" * 15 + b"\n" + b"b" * 16 + b"\n" + b"c" * 40 + b"\n" + b"tail")
    # 16 bytes with the newline is the longest line read; 17 is skipped, and so is a much longer one
    assert list(L._lines(str(p))) == [b"a" * 15 + b"\n", None, None, b"tail"]


def test_a_link_or_fifo_at_a_log_name_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text("{}\n")
    link = tmp_path / "monitor.jsonl"
    link.symlink_to(real)
    with pytest.raises(UserError, match=f"^{link}: cannot read: is a symbolic link, not a log the monitor wrote$"):
        list(L._lines(str(link)))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match=f"^{fifo}: cannot read: not a regular file$"):
        list(L._lines(str(fifo)))
    with pytest.raises(UserError, match=f"^{tmp_path}/none: cannot read: No such file or directory$"):
        list(L._lines(str(tmp_path / "none")))


def test_read_samples_period_edges_and_counts(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"^no monitor log in .* \(expected monitor\.jsonl; is `hosttune monitor` "
                                        r"running\?\)$"):
        L.read_samples(str(tmp_path))
    log = tmp_path / "monitor.jsonl"
    log.write_bytes(b"".join(_line({"ts": t}) for t in (300, 100, 200)) + b"\n  \nnot json\n" + b'{"ts": "x"}\n')
    samples, bad = L.read_samples(str(tmp_path))
    assert [s["ts"] for s in samples] == [100, 200, 300] and bad == 2  # sorted; a blank line is not counted
    assert [s["ts"] for s in L.read_samples(str(tmp_path), since_s=100, now=300)[0]] == [200, 300]  # at the cutoff
    assert [s["ts"] for s in L.read_samples(str(tmp_path), until=200)[0]] == [100, 200]  # at the end: kept
    assert [s["ts"] for s in L.read_samples(str(tmp_path), since_s=150, now=300, until=250)[0]] == [200]
