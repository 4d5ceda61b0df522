"""Pins (issue 21, round 8 practice) for hosttune/monitor/draw.py render_text, the whole report text: the header
(samples, UTC span, covered time, unreadable lines), the metrics table (plain numbers trimmed, bytes and MiB in
binary units, values of a million and more in 4 significant digits), the time above thresholds, the events (a
clear tagged, control characters shown escaped)."""

from hosttune.monitor import draw


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
