"""`hosttune monitor report`, reading apart from drawing: monitor/logread.py reads the log, monitor/summary.py adds it
up and monitor/draw.py draws it, the last two without touching a file; monitor/report.py is the command's API."""

import builtins
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, NoReturn

import pytest
from _monitorhelp import _good, _monitor, _one_error_line, _snapshot, _targets
from conftest import cli_runner

from hosttune.cli import cli
from hosttune.errors import UserError
from hosttune.monitor import draw, logread, report, summary
from hosttune.monitor.config import Thresholds
from hosttune.policy import gpu_health

T0 = 1700000000.0
NS = "{http://www.w3.org/2000/svg}"


def _samples() -> List[Dict[str, Any]]:
    """Every 10 s for 40 s, the monitor down for an hour, then 30 s more; the GPU hot and the host memory full
    throughout."""
    times = [T0 + 10 * i for i in range(5)] + [T0 + 40 + 3600 + 10 * i for i in range(4)]
    return [{"ts": ts, "host": {"mem_used_pct": 95.0},
             "gpus": [{"index": 0, "temperature_c": 90.0, "memory_used_pct": 10.0, "clock_event_reasons": 0}]}
            for ts in times]


def test_time_above_stops_at_a_gap_and_keeps_the_reports_order() -> None:
    s = summary.summarize(_samples(), Thresholds())
    # 9 samples: 8 gaps of 10 s except the hour, which counts as 3 typical intervals (30 s), plus the last sample's 10
    assert s["covered_seconds"] == 7 * 10 + 30 + 10
    above = [(a["condition"], a["seconds"]) for a in s["above"]]
    clock = [f"gpu0 {what} ({level})" for _kind, _mask, level, what in gpu_health.CLOCK_EVENT_GROUPS]
    assert [c for c, _ in above] == ["host memory >= 90 %", "gpu0 temperature >= 75 C (warning)",
                                     "gpu0 temperature >= 85 C (critical)", "gpu0 memory >= 90 %"] + clock
    assert dict(above)["host memory >= 90 %"] == 110.0 and dict(above)["gpu0 memory >= 90 %"] == 0.0
    assert all(a["fraction"] == round(a["seconds"] / 110.0, 4) for a in s["above"])


def test_the_picture_does_not_bridge_the_gap() -> None:
    root = ET.fromstring(draw.render_svg(_samples(), Thresholds(), "t"))
    gpu = [p for p in root.iter(f"{NS}polyline") if p.get("data-series") == "GPU 0"]
    assert len(gpu) == 2  # one line before the hour without samples, one after


def test_summary_and_drawing_touch_no_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Reading is logread's; adding up and drawing are pure: with every way to open a file taken away, they still
    give the report."""
    with open(tmp_path / "monitor.jsonl", "w") as f:
        f.write("".join(json.dumps(rec) + "\n" for rec in _samples()))
    samples, bad = logread.read_samples(str(tmp_path))

    def no_files(*_a: Any, **_k: Any) -> NoReturn:
        raise AssertionError("summary/draw opened a file")

    monkeypatch.setattr(builtins, "open", no_files)
    monkeypatch.setattr(os, "open", no_files)
    s = summary.summarize(samples, Thresholds())
    text = draw.render_text(s, str(tmp_path), bad)
    svg = draw.render_svg(samples, Thresholds(), "t")
    monkeypatch.undo()
    assert text.startswith(f"hosttune monitor report: {tmp_path}, 9 samples") and svg.startswith("<svg")


def test_report_is_the_commands_api_over_the_three() -> None:
    """What `hosttune monitor report` and the tests call is the same code as the modules that own it."""
    assert report.read_samples is logread.read_samples and report.parse_when is logread.parse_when
    assert report.summarize is summary.summarize and report.temperature_lines is summary.temperature_lines
    assert report.render_text is draw.render_text and report.render_svg is draw.render_svg
    assert set(report.__all__) <= set(dir(report))


def test_a_png_without_matplotlib_is_one_line_and_nothing_written(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    def missing() -> NoReturn:
        raise ImportError("No module named 'matplotlib'")

    monkeypatch.setattr(draw, "pyplot", missing)
    out = tmp_path / "plots"
    out.mkdir()
    with pytest.raises(UserError, match="PNG needs matplotlib"):
        report.write_plot(str(out / "p.png"), _samples(), Thresholds(), "t")
    assert list(out.iterdir()) == []


# ---- root safety (issue 11 item 9): malformed, deep and overlong lines, escapes, a FIFO, the plot's temp -------------
BAD_LINES = [
    "[" * 100_000 + "\n",                                   # json.loads: RecursionError
    '{"ts": 1700000001, "gpus": ' + "[" * 5000 + "\n",     # deep and malformed
    '{"ts": 1700000002, "host": [1, 2]}\n',                 # parses, wrong shape: host is not a mapping
    '{"ts": 1700000003, "gpus": [{"temperature_c": 50}]}\n',  # a GPU without an index
    '{"ts": 1700000004, "gpus": [{"index": 0, "temperature_c": NaN}]}\n',
    '{"ts": 1e400}\n',                                      # inf
    '{"ts": 9' + "9" * 5000 + "}\n",                        # a 5000-digit number
    '{"ts": "yesterday"}\n',
    '{"ts": 1700000005, "events": ["x"]}\n',
    '{"ts": 1700000006, "host": {"disks": {"/": [1]}}}\n',
    "x" * (4 << 20) + "\n",                                # longer than any sample: skipped unread
]


def test_report_counts_malformed_deep_and_overlong_lines(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    with open(log / "monitor.jsonl", "wb") as f:
        f.write(_good(1700000000).encode())
        for line in BAD_LINES:
            f.write(line.encode())
        f.write(b"\xff\xfe not utf-8\n")
        f.write(_good(1700000010, 70).encode())
    res = cli_runner().invoke(cli, ["monitor", "report", "--json", "--log-dir", str(log), "--config", os.devnull])
    assert res.exit_code == 0, (res.output, res.stderr, res.exception)
    out = json.loads(res.output)
    assert out["samples"] == 2 and out["unreadable_lines"] == len(BAD_LINES) + 1
    assert out["metrics"]["gpu0.temperature_c"]["max"] == 70.0
    text = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull])
    assert text.exit_code == 0 and f"{len(BAD_LINES) + 1} unreadable lines skipped" in text.output


def test_report_shows_control_characters_in_events_escaped(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    rec = json.loads(_good(1700000000))
    rec["events"] = [{"level": "warning", "state": "start", "message": "GPU 0 \x1b]2;pwned\x07 hot"}]
    (log / "monitor.jsonl").write_text(json.dumps(rec) + "\n")
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull])
    assert res.exit_code == 0 and "\x1b" not in res.output and "\\x1b]2;pwned" in res.output


@pytest.mark.parametrize("kind", ["fifo", "link-to-dev-zero"])
def test_report_refuses_a_fifo_or_link_at_a_log_name_in_one_line(tmp_path: Path, kind: str) -> None:
    log = tmp_path / "log"
    log.mkdir()
    (log / "monitor.jsonl").write_text(_good(1700000000))
    if kind == "fifo":
        os.mkfifo(log / "monitor.jsonl.1")  # the old reader blocked here forever
    else:
        os.symlink("/dev/zero", log / "monitor.jsonl.1")  # ... or read without end
    res = _monitor("report", "--log-dir", str(log), "--config", os.devnull, timeout=20)
    line = _one_error_line(res)
    assert "monitor.jsonl.1" in line, line


def test_plot_is_written_atomically_through_no_predictable_temp_name(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    (log / "monitor.jsonl").write_text(_good(1700000000) + _good(1700000010, 70))
    out = tmp_path / "plots"
    out.mkdir()
    targets = _targets(tmp_path, [f"p.svg.{os.getpid()}.tmp"])
    before = _snapshot(targets)
    os.symlink(targets[f"p.svg.{os.getpid()}.tmp"], out / f"p.svg.{os.getpid()}.tmp")  # the old temp name
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull,
                                    "--plot", str(out / "p.svg")])
    assert res.exit_code == 0, (res.output, res.stderr)
    assert (out / "p.svg").read_text().startswith("<svg") and _snapshot(targets) == before
