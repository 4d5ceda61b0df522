"""Pins (issue 21, round 4) for hosttune/autotune/report.py on hand-built results: each trial's line, the table's
rows, the verdict and the JSON."""

import json

from hosttune.autotune import report, search, stats


def test_a_trial_line_scored_dropped_busy_and_quiet() -> None:
    res = search.Result(["c1"], spent=123.4)
    res.trials.extend([search.Trial("default", 10.0, 5.0), search.Trial("c1", 12.3456, 6.04, busy=0.10)])
    assert report.trial_line(res.trials[1], res, 9) == "[2/9] c1: 12.35 (6.0 s; 123 s spent; host busy 10%)"
    just_below = search.Trial("c1", 2.0, 1.0, busy=0.0999)
    assert report.trial_line(just_below, res, 9) == "[2/9] c1: 2 (1.0 s; 123 s spent)"
    dropped = search.Trial("c1", None, 3.0, "exit 1\x1b[2J")
    assert report.trial_line(dropped, res, 9) == "[2/9] c1: dropped: exit 1\\x1b[2J (3.0 s; 123 s spent)"


def test_ci_cell() -> None:
    assert report._ci(None) == "-"
    assert report._ci(stats.summarize("c", [])) == "-"
    s = stats.summarize("c", [1.1, 1.2, 1.3, 1.2, 1.25])
    assert report._ci(s) == f"{s.median:.3f} [{s.lo:.3f}, {s.hi:.3f}] n=5"


def _won() -> search.Result:
    res = search.Result(["fast", "slow", "gone"], spent=600.0)
    res.ratios = {"fast": [1.3] * 6, "slow": [0.9, 1.0, 0.95]}
    res.finalists = ["fast"]
    res.confirm = {"fast": [1.3, 1.31, 1.29, 1.3, 1.32, 1.3, 1.3, 1.3]}  # 8: the sign test at 1% needs 7
    res.dropped = {"gone": "exit status 1", "slow": "not in the better half"}
    return res


def test_the_table_rows_and_the_verdict_of_a_win() -> None:
    res = _won()
    lines = report.table(res, 0.02).splitlines()
    assert lines[0].split() == ["candidate", "median", "ratio", "95%", "CI", "rounds", "confirmation", "(decides)"]
    assert lines[1].startswith("fast ") and lines[1].split()[1:3] == ["1.300", "[1.300,"]
    assert lines[1].split()[4] == "6" and lines[1].endswith("n=8")
    assert lines[2].split() == ["slow", "0.950", "[0.900,", "1.000]", "3", "dropped:", "not", "in", "the", "better",
                                "half"]
    assert lines[3].split() == ["gone", "-", "-", "0", "dropped:", "exit", "status", "1"]
    w = res.winner(0.02)
    assert w is not None and lines[4] == report.verdict(res, 0.02) == (
        f"winner: fast, x{w.median:.3f} the default (95% CI {w.lo:.3f}-{w.hi:.3f}, 8 confirmation rounds)")
    assert len(lines) == 5  # no plan, quiet host, not stopped


def test_no_gain_keeps_the_default_and_a_stop_is_noted() -> None:
    res = _won()
    assert report.verdict(res, 0.5) == ("no measurable gain: no candidate's confirmation interval is above 1.50 with "
                                        "at least 5 rounds; the default plan stays")
    res.stopped = "the default failed"
    assert report.table(res, 0.5).splitlines()[-1] == "note: the default failed (600 s spent)"


def test_the_json_names_the_winner_and_every_row() -> None:
    res = _won()
    res.trials.extend([search.Trial("default", 1.0, 1.0)] * 3)
    data = json.loads(report.to_json(res, 0.02, None))
    assert data["winner"] == "fast" and data["winner_confirmation"]["rounds"] == 8
    assert [r["candidate"] for r in data["candidates"]] == ["fast", "slow", "gone"]
    by = {r["candidate"]: r for r in data["candidates"]}
    assert by["gone"]["dropped"] == "exit status 1" and by["gone"]["confirmation"] is None
    assert by["fast"]["dropped"] is None and by["fast"]["confirmation"]["rounds"] == 8
    assert (data["spent_s"], data["trials"], data["stopped"], data["saved"]) == (600.0, 3, None, None)
    none = json.loads(report.to_json(res, 0.5, None))
    assert none["winner"] is None and none["winner_confirmation"] is None
    from pathlib import Path
    assert json.loads(report.to_json(res, 0.02, Path("/x/y.yaml")))["saved"] == "/x/y.yaml"
