"""`hosttune monitor report`, reading apart from drawing: monitor/logread.py reads the log, monitor/summary.py adds it
up and monitor/draw.py draws it, the last two without touching a file; monitor/report.py is the command's API."""

import builtins
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, NoReturn

import pytest

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
