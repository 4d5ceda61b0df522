"""Pins of mutation round 4 (issue 21) on hosttune/monitor/draw.py: the report's text table and the SVG picture,
value for value (scales, ticks, threshold lines and their colours, legend colours, gaps, one-point series)."""

import xml.etree.ElementTree as ET
from typing import Any, Dict, List

from hosttune.monitor import draw
from hosttune.monitor.config import Thresholds

T0 = 1_700_000_000.0


def _four() -> List[Dict[str, Any]]:
    return [{"ts": T0 + 10 * i, "host": {"mem_used_pct": 50.0 + i, "cpu_temps_c": {"pkg": 40.0}},
             "gpus": [{"index": 0, "temperature_c": 60.0 + 2 * i, "memory_used_pct": 20.0}]} for i in range(4)]


# The whole picture of `_four()`: every coordinate is something a reader of the plot sees (a mutant that moves a
# scale, a tick, a threshold line, a colour or a legend entry changes this text). Regenerate only for an intended
# change of the drawing, after looking at the picture.
GOLDEN = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="686" viewBox="0 0 1000 686" font-family'
    '="sans-serif" font-size="12">\n'
    '<rect width="1000" height="686" fill="white"/>\n'
    '<text x="64" y="22" font-size="15" font-weight="bold">a&lt;b</text>\n'
    '<text x="64" y="40" fill="#555">2023-11-14 22:13:20Z .. 2023-11-14 22:13:50Z, times in UTC</text>\n'
    '<g class="panel" id="temperature">\n'
    '<text x="64" y="68" font-weight="bold">Temperature (°C)</text>\n'
    '<rect x="64" y="76" width="706" height="260" fill="none" stroke="#999"/>\n'
    '<line x1="64" x2="770" y1="312.4" y2="312.4" stroke="#eee"/>\n'
    '<text x="58" y="316.4" text-anchor="end">40</text>\n'
    '<line x1="64" x2="770" y1="217.8" y2="217.8" stroke="#eee"/>\n'
    '<text x="58" y="221.8" text-anchor="end">60</text>\n'
    '<line x1="64" x2="770" y1="123.3" y2="123.3" stroke="#eee"/>\n'
    '<text x="58" y="127.3" text-anchor="end">80</text>\n'
    '<line x1="64.0" x2="64.0" y1="76" y2="336" stroke="#eee"/>\n'
    '<text x="64.0" y="352" text-anchor="middle">22:13</text>\n'
    '<line x1="181.7" x2="181.7" y1="76" y2="336" stroke="#eee"/>\n'
    '<text x="181.7" y="352" text-anchor="middle">22:13</text>\n'
    '<line x1="299.3" x2="299.3" y1="76" y2="336" stroke="#eee"/>\n'
    '<text x="299.3" y="352" text-anchor="middle">22:13</text>\n'
    '<line x1="417.0" x2="417.0" y1="76" y2="336" stroke="#eee"/>\n'
    '<text x="417.0" y="352" text-anchor="middle">22:13</text>\n'
    '<line x1="534.7" x2="534.7" y1="76" y2="336" stroke="#eee"/>\n'
    '<text x="534.7" y="352" text-anchor="middle">22:13</text>\n'
    '<line x1="652.3" x2="652.3" y1="76" y2="336" stroke="#eee"/>\n'
    '<text x="652.3" y="352" text-anchor="middle">22:13</text>\n'
    '<line x1="770.0" x2="770.0" y1="76" y2="336" stroke="#eee"/>\n'
    '<text x="770.0" y="352" text-anchor="middle">22:13</text>\n'
    '<line class="threshold" x1="64" x2="770" y1="146.9" y2="146.9" stroke="#e69500" stroke-dasharray="6,'
    '4"/>\n'
    '<text x="766" y="142.9" text-anchor="end" fill="#e69500">warning 75 °C</text>\n'
    '<line class="threshold" x1="64" x2="770" y1="99.6" y2="99.6" stroke="#d62728" stroke-dasharray="6,4"'
    '/>\n'
    '<text x="766" y="95.6" text-anchor="end" fill="#d62728">critical 85 °C</text>\n'
    '<polyline class="series" data-series="CPU pkg" fill="none" stroke="#1f77b4" stroke-width="1.5" point'
    's="64.0,312.4 299.0,312.4 535.0,312.4 770.0,312.4"/>\n'
    '<line x1="784" x2="800" y1="86" y2="86" stroke="#1f77b4" stroke-width="3"/>\n'
    '<text x="804" y="90">CPU pkg</text>\n'
    '<polyline class="series" data-series="GPU 0" fill="none" stroke="#d62728" stroke-width="1.5" points='
    '"64.0,217.8 299.0,208.4 535.0,198.9 770.0,189.5"/>\n'
    '<line x1="784" x2="800" y1="102" y2="102" stroke="#d62728" stroke-width="3"/>\n'
    '<text x="804" y="106">GPU 0</text>\n'
    '</g>\n'
    '<g class="panel" id="memory-used">\n'
    '<text x="64" y="378" font-weight="bold">Memory used (%)</text>\n'
    '<rect x="64" y="386" width="706" height="260" fill="none" stroke="#999"/>\n'
    '<line x1="64" x2="770" y1="646.0" y2="646.0" stroke="#eee"/>\n'
    '<text x="58" y="650.0" text-anchor="end">0</text>\n'
    '<line x1="64" x2="770" y1="594.0" y2="594.0" stroke="#eee"/>\n'
    '<text x="58" y="598.0" text-anchor="end">20</text>\n'
    '<line x1="64" x2="770" y1="542.0" y2="542.0" stroke="#eee"/>\n'
    '<text x="58" y="546.0" text-anchor="end">40</text>\n'
    '<line x1="64" x2="770" y1="490.0" y2="490.0" stroke="#eee"/>\n'
    '<text x="58" y="494.0" text-anchor="end">60</text>\n'
    '<line x1="64" x2="770" y1="438.0" y2="438.0" stroke="#eee"/>\n'
    '<text x="58" y="442.0" text-anchor="end">80</text>\n'
    '<line x1="64" x2="770" y1="386.0" y2="386.0" stroke="#eee"/>\n'
    '<text x="58" y="390.0" text-anchor="end">100</text>\n'
    '<line x1="64.0" x2="64.0" y1="386" y2="646" stroke="#eee"/>\n'
    '<text x="64.0" y="662" text-anchor="middle">22:13</text>\n'
    '<line x1="181.7" x2="181.7" y1="386" y2="646" stroke="#eee"/>\n'
    '<text x="181.7" y="662" text-anchor="middle">22:13</text>\n'
    '<line x1="299.3" x2="299.3" y1="386" y2="646" stroke="#eee"/>\n'
    '<text x="299.3" y="662" text-anchor="middle">22:13</text>\n'
    '<line x1="417.0" x2="417.0" y1="386" y2="646" stroke="#eee"/>\n'
    '<text x="417.0" y="662" text-anchor="middle">22:13</text>\n'
    '<line x1="534.7" x2="534.7" y1="386" y2="646" stroke="#eee"/>\n'
    '<text x="534.7" y="662" text-anchor="middle">22:13</text>\n'
    '<line x1="652.3" x2="652.3" y1="386" y2="646" stroke="#eee"/>\n'
    '<text x="652.3" y="662" text-anchor="middle">22:13</text>\n'
    '<line x1="770.0" x2="770.0" y1="386" y2="646" stroke="#eee"/>\n'
    '<text x="770.0" y="662" text-anchor="middle">22:13</text>\n'
    '<line class="threshold" x1="64" x2="770" y1="412.0" y2="412.0" stroke="#d62728" stroke-dasharray="6,'
    '4"/>\n'
    '<text x="766" y="408.0" text-anchor="end" fill="#d62728">90 %</text>\n'
    '<polyline class="series" data-series="GPU 0 memory" fill="none" stroke="#d62728" stroke-width="1.5" '
    'points="64.0,594.0 299.0,594.0 535.0,594.0 770.0,594.0"/>\n'
    '<line x1="784" x2="800" y1="396" y2="396" stroke="#d62728" stroke-width="3"/>\n'
    '<text x="804" y="400">GPU 0 memory</text>\n'
    '<polyline class="series" data-series="host memory" fill="none" stroke="#2ca02c" stroke-width="1.5" p'
    'oints="64.0,516.0 299.0,513.4 535.0,510.8 770.0,508.2"/>\n'
    '<line x1="784" x2="800" y1="412" y2="412" stroke="#2ca02c" stroke-width="3"/>\n'
    '<text x="804" y="416">host memory</text>\n'
    '</g>\n'
    '</svg>\n'
)


def test_the_whole_svg_of_a_small_log() -> None:
    assert draw.render_svg(_four(), Thresholds(), "a<b") == GOLDEN


def test_svg_of_no_samples_draws_both_empty_panels() -> None:
    svg = draw.render_svg([], Thresholds(), "")
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text for t in root.iter(ns + "text")]
    assert texts[0] == "hosttune monitor"
    assert texts.count("no readings") == 2
    assert "1970-01-01 00:00:00Z .. 1970-01-01 00:00:01Z, times in UTC" in texts
    # with no GPU in the log the table's lines are drawn: 75 C warning, 85 C critical; and the 90 % memory line
    lines = [(ln.get("stroke"), ln.get("y1")) for ln in root.iter(ns + "line") if ln.get("class") == "threshold"]
    assert [c for c, _ in lines] == ["#e69500", "#d62728", "#d62728"]
    assert "warning 75 \u00b0C" in texts and "critical 85 \u00b0C" in texts and "90 %" in texts


def test_a_gap_splits_the_line_and_a_single_point_still_has_two_ends() -> None:
    samples = [{"ts": T0 + 10 * i, "gpus": [{"index": 0, "temperature_c": 50.0}]} for i in range(3)]
    samples += [{"ts": T0 + 3600, "gpus": [{"index": 0, "temperature_c": 70.0}]}]
    root = ET.fromstring(draw.render_svg(samples, Thresholds(), "t"))
    polys = [p.get("points") for p in root.iter("{http://www.w3.org/2000/svg}polyline")]
    assert len(polys) == 2
    assert polys[0].split()[0].startswith("64.0,") and len(polys[0].split()) == 3
    y = polys[1].split()[0].split(",")[1]
    assert polys[1].split() == [f"770.0,{y}", f"771.0,{y}"]


def test_runs_split_only_past_the_gap() -> None:
    assert draw._runs([(0, 1), (10, 2), (40, 3), (41, 4)], 30) == [[(0, 1), (10, 2), (40, 3), (41, 4)]]
    assert draw._runs([(0, 1), (30, 2)], 30) == [[(0, 1), (30, 2)]]
    assert draw._runs([(0, 1), (31, 2)], 30) == [[(0, 1)], [(31, 2)]]
    assert draw._runs([], 30) == []


def test_max_per_pixel_keeps_the_spike() -> None:
    assert draw._max_per_pixel([(0, 1), (0.2, 5), (0.4, 3), (2, 1)], lambda t: t) == [(0, 5), (2, 1)]
    assert draw._max_per_pixel([(0, 5), (0.2, 1)], lambda t: t) == [(0, 5), (1, 5)]
    assert draw._max_per_pixel([(5, 7)], lambda t: t) == [(5, 7), (6, 7)]
    assert draw._max_per_pixel([(1, 1), (2, 2)], lambda t: t) == [(1, 1), (2, 2)]


def test_ticks() -> None:
    assert draw._nice_ticks(0, 100) == [0, 20, 40, 60, 80, 100]
    assert draw._nice_ticks(55, 97) == [60, 70, 80, 90]
    assert draw._nice_ticks(0, 1, 4) == [0, 0.25, 0.5, 0.75, 1.0]
    assert draw._nice_ticks(5, 5) == [5.0]
    assert draw._time_ticks(0, 30) == [0, 5, 10, 15, 20, 25, 30]
    assert draw._time_ticks(0, 3600) == [0, 600, 1200, 1800, 2400, 3000, 3600]
    assert draw._time_ticks(0, 480) == [0, 60, 120, 180, 240, 300, 360, 420, 480]
    assert draw._time_ticks(0, 540) == [0, 300]
    assert draw._time_ticks(0, 86400 * 30) == [0, 604800, 1209600, 1814400, 2419200]
    assert draw._time_ticks(0, 86400 * 365)[:2] == [0, 86400 * 365 // 6]


def test_durations_and_sizes_in_words() -> None:
    assert [draw._hms(v) for v in (0, 59.4, 59.6, 60, 3599, 3600, 3661, 86400)] == [
        "0 s", "59 s", "1 min 00 s", "1 min 00 s", "59 min 59 s", "1 h 00 min", "1 h 01 min", "24 h 00 min"]
    assert [draw.human_bytes(v) for v in (0, 1023, 1024, 1024 ** 2 - 1, 1024 ** 2, 1024 ** 3, 3 * 1024 ** 4,
                                          -2048)] == [
        "0 B", "1023 B", "1.0 KiB", "1024.0 KiB", "1.0 MiB", "1.0 GiB", "3.0 TiB", "-2.0 KiB"]
    assert [draw._fmt(v) for v in (1.5, 2.0, 1.234, 1e6, -1e6, 999999.5, -1.10, 0.0)] == [
        "1.5", "2", "1.23", "1e+06", "-1e+06", "999999.5", "-1.1", "0"]
    assert draw._fmt(3, "gpu0.memory_used_mb") == "3.0 MiB"
    assert draw._fmt(2048, "host.mem_used_bytes") == "2.0 KiB"
    assert draw._fmt(2048, "host.mem_used") == "2048"
    assert draw._esc('<a href="x">&</a>') == "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
    assert draw._utc(T0) == "2023-11-14 22:13:20Z"


def _summary() -> Dict[str, Any]:
    return {"samples": 3, "first": T0, "last": T0 + 3725, "covered_seconds": 3725,
            "metrics": {"host.mem_used_pct": {"min": 1, "mean": 2.5, "p50": 2, "p95": 3.25, "p99": 3.333, "max": 4,
                                              "samples": 3},
                        "gpu0.memory_used_mb": {"min": 1024, "mean": 1024, "p50": 1024, "p95": 1024, "p99": 1024,
                                                "max": 2048}},
            "above": [{"condition": "host memory >= 90 %", "seconds": 125, "fraction": 0.0336}],
            "events": [{"ts": T0, "level": "warning", "message": "hot\x1b[31m", "state": "clear"},
                       {"ts": T0 + 1, "level": "critical", "message": "x"}]}


def test_the_whole_text_report() -> None:
    assert draw.render_text(_summary(), "/var/log/x", 2) == (
        "hosttune monitor report: /var/log/x, 3 samples, 2023-11-14 22:13:20Z .. 2023-11-14 23:15:25Z (1 h 02 min), "
        "2 unreadable lines skipped\n"
        "\n"
        "metric                      min        mean         p50         p95         p99         max\n"
        "host.mem_used_pct             1         2.5           2        3.25        3.33           4\n"
        "gpu0.memory_used_mb     1.0 GiB     1.0 GiB     1.0 GiB     1.0 GiB     1.0 GiB     2.0 GiB\n"
        "\n"
        "time above thresholds\n"
        "  host memory >= 90 %      2 min 05 s    3.4 %\n"
        "\n"
        "events (2)\n"
        "  2023-11-14 22:13:20Z  warning   cleared hot\\x1b[31m\n"
        "  2023-11-14 22:13:21Z  critical  x\n")


def test_text_report_edges() -> None:
    assert draw.render_text({"samples": 0}, "/d", 5) == "hosttune monitor report: /d: no samples in the chosen period\n"
    s = _summary()
    s["above"], s["events"] = [], []
    text = draw.render_text(s, "/d", 0)
    assert text.splitlines()[0] == ("hosttune monitor report: /d, 3 samples, 2023-11-14 22:13:20Z .. "
                                    "2023-11-14 23:15:25Z (1 h 02 min)")
    assert "time above thresholds\n  (no readings to compare)\n\nevents (0)\n" in text
    s["metrics"] = {"m": {"min": 1, "max": 2}}  # a row shows only the columns it has; the name column is >= 6 wide
    assert "\nm                1           2\n" in draw.render_text(s, "/d", 0)


def _time_labels(span: float) -> List[str]:
    samples = [{"ts": T0, "gpus": [{"index": 0, "temperature_c": 50.0}]},
               {"ts": T0 + span, "gpus": [{"index": 0, "temperature_c": 50.0}]}]
    root = ET.fromstring(draw.render_svg(samples, Thresholds(), "t"))
    return [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("text-anchor") == "middle"
            and t.text != "no readings"]


def test_time_labels_gain_the_date_from_two_days_on() -> None:
    short = _time_labels(2 * 86400 - 1)
    assert short and all(len(x) == 5 and x[2] == ":" for x in short)
    long = _time_labels(2 * 86400)
    assert long and all(len(x) == 11 and x[2] == "-" for x in long)
    assert long[0] == "11-15 00:00"  # 6-hour steps from the first multiple of 6 h



def test_the_temperature_scale_is_the_readings_and_lines_padded() -> None:
    # no readings, configured lines 80 / 80.5 C: the scale runs 75 .. 85.5 (the lowest value's ten, less 5; the
    # highest plus 5, which is never under lowest + 10)
    root = ET.fromstring(draw.render_svg([], Thresholds(gpu_temp_warn_c=80.0, gpu_temp_crit_c=80.5), "t"))
    ns = "{http://www.w3.org/2000/svg}"
    lines = [(ln.get("stroke"), ln.get("y1")) for ln in root.iter(ns + "line") if ln.get("class") == "threshold"]
    assert lines[:2] == [("#e69500", f"{336 - 5 / 10.5 * 260:.1f}"), ("#d62728", f"{336 - 5.5 / 10.5 * 260:.1f}")]


def test_eleven_gpus_cycle_through_the_ten_colours_and_keep_them_across_panels() -> None:
    samples = [{"ts": T0 + 10 * i, "gpus": [{"index": g, "temperature_c": 50.0 + g, "memory_used_pct": 10.0 + g}
                                           for g in range(11)]} for i in range(2)]
    root = ET.fromstring(draw.render_svg(samples, Thresholds(), "t"))
    ns = "{http://www.w3.org/2000/svg}"
    stroke = {p.get("data-series"): p.get("stroke") for p in root.iter(ns + "polyline")}
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
               "#bcbd22"]
    order = sorted(f"GPU {g}" for g in range(11))  # "GPU 0", "GPU 1", "GPU 10", "GPU 2", ...
    assert [stroke[name] for name in order] == palette + palette[:1]
    assert all(stroke[f"GPU {g} memory"] == stroke[f"GPU {g}"] for g in range(11))


def test_each_time_step_is_chosen_at_eight_of_it() -> None:
    for step in (60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400):
        ticks = draw._time_ticks(0, 8 * step)
        assert ticks == [i * step for i in range(9)], step
    assert draw._time_ticks(0, 8 * 60 + 1) == [0, 300]  # just past eight minutes: five-minute steps
