"""Pins of mutation round 4 (issue 21) on hosttune/monitor/sinks.py's exposition: numbers as Prometheus reads them
(booleans, ints, NaN, both infinities), label escaping, families in first-seen order with HELP and TYPE once, a
missing value left out, and the file a stopped monitor leaves."""

import math

from hosttune.monitor import sinks as S


def test_numbers() -> None:
    assert [S._num(v) for v in (True, False, 0, 7, -3, 1.5, 2.0, float("nan"), math.inf, -math.inf, 1e20)] == [
        "1", "0", "0", "7", "-3", "1.5", "2.0", "NaN", "+Inf", "-Inf", "1e+20"]


def test_labels_and_escaping() -> None:
    assert S._escape('a\\b\n"c"') == 'a\\\\b\\n\\"c\\"'
    assert S._labels({"gpu": 0, "name": 'x"y'}) == 'gpu="0",name="x\\"y"'
    assert S._labels({}) == ""


def test_families_in_order_with_help_and_type_once() -> None:
    ex = S._Exposition()
    ex.add("b_metric", "gauge", "B help.", {"gpu": 1}, 2)
    ex.add("a_metric", "counter", "A help.", {}, 5)
    ex.add("b_metric", "gauge", "ignored", 'gpu="0"', 3.5)
    ex.add("c_metric", "gauge", "C help.", {}, None)  # no reading: no family at all
    assert ex.text() == ("# HELP b_metric B help.\n# TYPE b_metric gauge\nb_metric{gpu=\"1\"} 2\n"
                         "b_metric{gpu=\"0\"} 3.5\n# HELP a_metric A help.\n# TYPE a_metric counter\na_metric 5\n")
    assert S._Exposition().text() == "\n"


def test_render_stopped() -> None:
    assert S.render_stopped(1700000000.5, {"samples": 12}) == (
        f"# HELP hosttune_monitor_up {S._UP_HELP}\n# TYPE hosttune_monitor_up gauge\nhosttune_monitor_up 0\n"
        "# HELP hosttune_monitor_last_success_timestamp_seconds Unix time of the last sample the monitor completed.\n"
        "# TYPE hosttune_monitor_last_success_timestamp_seconds gauge\n"
        "hosttune_monitor_last_success_timestamp_seconds 1700000000.5\n"
        "# HELP hosttune_monitor_samples_total Samples taken since the monitor started.\n"
        "# TYPE hosttune_monitor_samples_total counter\nhosttune_monitor_samples_total 12\n")
    text = S.render_stopped(None, {})
    assert "last_success" not in text and text.endswith("hosttune_monitor_samples_total 0\n")
