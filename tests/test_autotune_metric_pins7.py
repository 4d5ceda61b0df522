"""Pins (issue 21, round 7 practice) for hosttune/autotune/metric.py: every refusal of compile_metric with its exact
line, the number read from each of a table of lines under four kinds of --metric (no group, one group, a named
`value` group, warm-up), what read() keeps and why it keeps nothing, and score()."""

from typing import Any, Dict

import pytest

from hosttune.autotune import metric
from hosttune.errors import UserError


@pytest.mark.parametrize("text,kw,want", [
    ("", {}, "--metric: empty regular expression"),
    ("x" * 501, {}, "--metric: longer than 500 characters"),
    ("(", {}, "--metric: not a regular expression: missing ), unterminated subpattern at position 0"),
    ("(a)(b)", {}, "--metric: more than one group: name the number's group (?P<value>...)"),
    ("a", {"warmup_matches": -1}, "--warmup: must be a count and seconds of at least 0"),
    ("a", {"warmup_s": -1.0}, "--warmup: must be a count and seconds of at least 0"),
    ("a", {"warmup_s": float("inf")}, "--warmup: must be a count and seconds of at least 0"),
    ("a", {"warmup_s": float("nan")}, "--warmup: must be a count and seconds of at least 0"),
])
def test_compile_metric_refusals(text: str, kw: Dict[str, Any], want: str) -> None:
    with pytest.raises(UserError) as info:
        metric.compile_metric(text, **kw)
    assert str(info.value) == want


def test_compile_metric_accepts_these() -> None:
    assert metric.compile_metric("x" * 500).text == "x" * 500
    spec = metric.compile_metric(r"(step) (?P<value>\S+)", lower_is_better=True, warmup_matches=0, warmup_s=2.5)
    assert (spec.text, spec.lower_is_better, spec.warmup_matches, spec.warmup_s) == (
        r"(step) (?P<value>\S+)", True, 0, 2.5)


LINES = ["epoch 1 120.5 samples/s", "rate=3e2 rate=4.5", "rate=abc", "step 7 ms", "step -1 ms", "1e400 samples/s",
         "no match", "0 samples/s", "x 1.5 tok/s", "a=2.5samples/s 8 samples/s", "step 1.5 ms step 2.5 ms"]


@pytest.mark.parametrize("text,want", [
    # no group: the last number in the last match; zero, negative and infinite values are no value
    (r"\S+ samples/s", [120.5, None, None, None, None, None, None, None, None, 8.0, None]),
    (r"rate=(\S+)", [None, 4.5, None, None, None, None, None, None, None, None, None]),  # one group: the last match's
    (r"(step) (?P<value>\S+) ms", [None, None, None, 7.0, None, None, None, None, None, None, 2.5]),  # the named one
])
def test_the_number_read_from_each_line(text: str, want: list) -> None:
    spec = metric.compile_metric(text)
    assert [metric._number(spec, line) for line in LINES] == want


def test_read_keeps_the_last_value_after_the_warm_up_or_says_why_none() -> None:
    w = metric.compile_metric(r"\S+ tok/s", warmup_matches=2, warmup_s=5.0)
    lines = [(1.0, "10 tok/s"), (2.0, "11 tok/s"), (3.0, "12 tok/s"), (6.0, "13 tok/s"), (7.0, "14 tok/s")]
    assert metric.read(w, lines) == (14.0, "")
    assert metric.read(w, [(1.0, "10 tok/s"), (9.0, "11 tok/s"), (9.5, "12 tok/s")]) == (12.0, "")
    assert metric.read(w, [(1.0, "10 tok/s"), (2.0, "11 tok/s"), (3.0, "12 tok/s")]) == (
        None, "printed 3 metric line(s), all in the warm-up (first 2 match(es), first 5 s)")
    assert metric.read(w, [(1.0, "nothing"), (9.0, "0 tok/s")]) == (None, r"printed no metric matching '\\S+ tok/s'")
    assert metric.read(metric.compile_metric(r"\S+ tok/s", warmup_matches=0), [(0.0, "3 tok/s")]) == (3.0, "")


def test_score_inverts_a_lower_is_better_metric() -> None:
    assert metric.score(metric.compile_metric("x", lower_is_better=True), 4.0) == 0.25
    assert metric.score(metric.compile_metric("x"), 4.0) == 4.0
