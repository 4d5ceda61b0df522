"""Pins for mutation round 4 (issue 21) in hosttune/monitor: a GPU with no clock event reasons still has its
(empty) reason names, the JSONL log's mode, and the runtime dir as one of the monitor's own directories."""

import os
from pathlib import Path

import pytest

from hosttune.errors import UserError
from hosttune.monitor import sinks
from hosttune.monitor.sample import gpu_fields


def test_a_gpu_with_no_clock_event_reasons_has_an_empty_reason_names_list() -> None:
    out = gpu_fields({"index": 0, "uuid": "GPU-0"}, {"clock_event_reasons": 0})
    assert out["clock_event_reason_names"] == []  # present: "none", not "not read"
    assert "clock_event_reason_names" not in gpu_fields({"index": 0, "uuid": "GPU-0"}, {})


def test_the_jsonl_log_is_created_0640_not_world_readable(tmp_path: Path) -> None:
    log = tmp_path / "log"
    old = os.umask(0o022)  # the usual umask, which would let 0644 through
    try:
        sink = sinks.JsonlSink(str(log), 1 << 20, 2)
        sink.write({"ts": 1700000000})
        sink.close()
    finally:
        os.umask(old)
    assert (log / "monitor.jsonl").stat().st_mode & 0o777 == 0o640


def test_an_untrusted_runtime_dir_gets_a_chmod_fix_as_one_of_the_monitors_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "hosttune-monitor"  # stands in for /run/hosttune-monitor (the unit's RuntimeDirectory=)
    d.mkdir()
    os.chmod(d, 0o777)
    monkeypatch.setattr(sinks, "RUNTIME_DIR", str(d))
    assert str(d) in sinks.own_dirs()
    with pytest.raises(UserError, match="writable by") as err:
        sinks.trusted_dir(str(d), "runtime dir (reapply: true)", "the unit's RuntimeDirectory=")
    assert f"fix: chmod go-w {d}" in str(err.value), str(err.value)
