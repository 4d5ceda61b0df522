"""Pins (issue 21, round 8 practice) for hosttune/monitor/draw.py render_text, the whole report text: the header
(samples, UTC span, covered time, unreadable lines), the metrics table (plain numbers trimmed, bytes and MiB in
binary units, values of a million and more in 4 significant digits), the time above thresholds, the events (a
clear tagged, control characters shown escaped)."""

import datetime as dt
import sys
import types
from typing import Any, List, Tuple

import pytest

from hosttune.monitor import draw
from hosttune.monitor.config import Thresholds


def _row(lo: float, mean: float, p50: float, p95: float, p99: float, hi: float) -> dict:
    return {"min": lo, "mean": mean, "p50": p50, "p95": p95, "p99": p99, "max": hi}


def test_the_whole_report_text() -> None:
    summary = {
        "samples": 3, "first": 1796300000.0, "last": 1796304000.0, "covered_seconds": 3725,
        "metrics": {"gpu0.power_w": _row(60.0, 250.5, 240.25, 390.0, 399.0, 400.0),
                    "host.mem_used_bytes": _row(1024.0, 3 * 1024 ** 3, 3 * 1024 ** 3, 2e10, 2.4e10, 24330000000.0),
                    "gpu0.memory_used_mb": _row(512, 40960, 40960, 81920, 81920, 81920),
                    "gpu0.energy_j": _row(999999.0, 1234567.0, 2345678.0, 9876543.0, 98765432.0, 123456789.0)},
        "above": [{"condition": "gpu0 temperature >= 85 C (critical)", "seconds": 90, "fraction": 0.0225},
                  {"condition": "host memory >= 90 %", "seconds": 0, "fraction": 0.0}],
        "events": [{"ts": 1796300100.0, "level": "critical", "state": "start", "message": "GPU 0 hot\x1b[31m"},
                   {"ts": 1796300190.0, "level": "info", "state": "clear", "message": "GPU 0 back"}]}
    assert draw.render_text(summary, "/var/log/hosttune", 2) == "\n".join([
        "hosttune monitor report: /var/log/hosttune, 3 samples, 2026-12-03 12:13:20Z .. 2026-12-03 13:20:00Z "
        "(1 h 02 min), 2 unreadable lines skipped",
        "",
        "metric                      min        mean         p50         p95         p99         max",
        "gpu0.power_w                 60       250.5      240.25         390         399         400",
        "host.mem_used_bytes     1.0 KiB     3.0 GiB     3.0 GiB    18.6 GiB    22.4 GiB    22.7 GiB",
        "gpu0.memory_used_mb   512.0 MiB    40.0 GiB    40.0 GiB    80.0 GiB    80.0 GiB    80.0 GiB",
        "gpu0.energy_j            999999   1.235e+06   2.346e+06   9.877e+06   9.877e+07   1.235e+08",
        "",
        "time above thresholds",
        "  gpu0 temperature >= 85 C (critical)      1 min 30 s    2.2 %",
        "  host memory >= 90 %                             0 s    0.0 %",
        "",
        "events (2)",
        "  2026-12-03 12:15:00Z  critical  GPU 0 hot\\x1b[31m",
        "  2026-12-03 12:16:30Z  info      cleared GPU 0 back",
    ]) + "\n"
    assert draw.render_text({"samples": 0}, "/l", 5) == "hosttune monitor report: /l: no samples in the chosen period\n"


class _Recorder:
    """A stand-in for matplotlib's pyplot, figure and axes (matplotlib is not installed where the suite runs): each
    call is recorded as (who, name, args, kwargs) in one shared list, in order."""

    def __init__(self, who: str, calls: List[Tuple[str, str, Any, Any]]) -> None:
        self.who, self.calls = who, calls

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((self.who, name, args, kwargs))
            if name == "subplots":
                return _Recorder("fig", self.calls), (_Recorder("ax1", self.calls), _Recorder("ax2", self.calls))
            if name == "get_legend_handles_labels":
                drawn = any(c[0] == self.who and c[1] == "plot" for c in self.calls)
                return (["line"], ["label"]) if drawn else ([], [])
            if name == "savefig":
                args[0].write(b"\x89PNG picture")
            return None
        return call


def test_render_png_draws_the_svgs_two_panels_through_pyplot() -> None:
    """render_png with a recording pyplot: the temperature panel (one line per GPU and CPU sensor, UTC times, the
    GPU's warning/critical lines dashed orange/red, legend), the memory panel (GPU memory, host memory, swap in %,
    the memory line, 0..100), the title, a PNG into memory, and the figure closed."""
    calls: List[Tuple[str, str, Any, Any]] = []
    samples = [{"ts": 0.0, "host": {"mem_used_pct": 10.0}, "gpus": [{"index": 0, "temperature_c": 40,
                                                                      "memory_used_pct": 5.0}]},
               {"ts": 60.0, "host": {"mem_used_pct": 20.0}, "gpus": [{"index": 0, "temperature_c": 50,
                                                                       "memory_used_pct": 6.0}]}]
    png = draw.render_png(_Recorder("plt", calls), samples, Thresholds(), "node7")
    t0, t1 = dt.datetime(1970, 1, 1, 0, 0), dt.datetime(1970, 1, 1, 0, 1)
    assert png == b"\x89PNG picture"
    assert [(who, name, args, kwargs) for who, name, args, kwargs in calls if name not in ("savefig", "close")] == [
        ("plt", "subplots", (2, 1), {"figsize": (10, 6), "sharex": True}),
        ("ax1", "plot", ([t0, t1], [40.0, 50.0]), {"label": "GPU 0"}),
        ("ax1", "axhline", (75.0,), {"ls": "--", "color": "orange"}),
        ("ax1", "axhline", (85.0,), {"ls": "--", "color": "red"}),
        ("ax1", "set_ylabel", ("C",), {}),
        ("ax2", "plot", ([t0, t1], [5.0, 6.0]), {"label": "GPU 0 memory"}),
        ("ax2", "plot", ([t0, t1], [10.0, 20.0]), {"label": "host memory"}),
        ("ax2", "axhline", (90.0,), {"ls": "--", "color": "red"}),
        ("ax2", "set_ylabel", ("% used",), {}),
        ("ax2", "set_ylim", (0, 100), {}),
        ("ax1", "get_legend_handles_labels", (), {}),
        ("ax1", "legend", (), {"loc": "upper left", "fontsize": "small"}),
        ("ax2", "get_legend_handles_labels", (), {}),
        ("ax2", "legend", (), {"loc": "upper left", "fontsize": "small"}),
        ("fig", "suptitle", ("node7",), {}),
    ]
    assert [(who, name, kwargs) for who, name, _args, kwargs in calls[-2:]] == [
        ("fig", "savefig", {"format": "png"}), ("plt", "close", {})]
    assert calls[-1][2][0].who == "fig"  # the figure drawn is the one closed
    calls.clear()
    draw.render_png(_Recorder("plt", calls), [], Thresholds(), "")  # no samples, no title: the default title
    assert [c[2] for c in calls if c[1] == "suptitle"] == [("hosttune monitor",)]
    assert [c[1] for c in calls if c[1] in ("plot", "legend")] == []


def test_pyplot_is_matplotlibs_on_the_agg_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyplot(): matplotlib.use("Agg") (no display on a server) before pyplot is imported, and pyplot returned."""
    used: List[str] = []
    mpl = types.ModuleType("matplotlib")
    mpl.use = used.append  # type: ignore[attr-defined]
    pyplot = types.ModuleType("matplotlib.pyplot")
    mpl.pyplot = pyplot  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "matplotlib", mpl)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    assert draw.pyplot() is pyplot
    assert used == ["Agg"]
