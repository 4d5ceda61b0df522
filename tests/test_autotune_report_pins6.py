"""Pins (issue 21, round 6) for hosttune/autotune (stats.py, metric.py, report.py, candidates.py, session.py): the
plan text --dry-run prints for a hand-built session (every line, the priority sentence, the engine's run-directory
lines, the session's defaults), the statistics' empty and one-round cases, a metric whose match has no number, and
the JSON row of a candidate without rounds. Pure, in-process."""

import json
import math

import pytest

from hosttune.autotune import budget, metric, report, search, stats
from hosttune.autotune import candidates as cands
from hosttune.autotune import session as S
from hosttune.profile.settings import Profile


def _session(**kw: object) -> S.Session:
    default = Profile("default", "the default", "built-in")
    found = [cands.Candidate("unbound", "no CPU or memory binding", {"binding": "none", "memory_policy": "none"},
                             knob="binding"),
             cands.Candidate("omp-passive", "OpenMP threads sleep", env={"OMP_WAIT_POLICY": "PASSIVE"},
                             knob="openmp")]
    s = S.Session(["python3", "job.py"], metric.compile_metric("([0-9.]+) it/s"), 600.0, None, default, found,
                  ["glibc: left out, you set LD_PRELOAD (your value wins under exec)", "bad\x1b[2Jnote"], **kw)
    s.window_s = 12.5
    return s


def test_the_session_defaults() -> None:
    s = _session()
    assert s.confirm == budget.CONFIRM and s.engine_runs is False and s.plan is None and s.job_threads == 0
    assert s.scratch is None and s.profiles == {} and s.runs is None


def test_profile_of_a_candidate_is_the_default_with_its_changes() -> None:
    s = _session()
    p = s.profile_of("unbound")
    assert (p.name, p.binding, p.memory_policy) == ("autotune-unbound", "none", "none")
    assert p.reasons["binding"] == "autotune candidate unbound: no CPU or memory binding"
    q = s.profile_of("omp-passive")
    assert dict(q.env) == {"OMP_WAIT_POLICY": "PASSIVE"} and q.binding == s.default.binding
    assert q.reasons["env.OMP_WAIT_POLICY"] == "autotune candidate omp-passive: OpenMP threads sleep"
    assert s.profile_of(cands.DEFAULT) is s.default
    with pytest.raises(KeyError):
        s.profile_of("nope")


def test_the_plan_text_line_by_line() -> None:
    s = _session()
    lines = report.plan_text(s).splitlines()
    assert lines[0] == ("autotune: 2 candidates against the default plan (default), metric '([0-9.]+) it/s'")
    assert lines[1] == "  unbound            no CPU or memory binding"
    assert lines[2] == "  omp-passive        OpenMP threads sleep"
    assert lines[3] == "  (glibc: left out, you set LD_PRELOAD (your value wins under exec))"
    assert lines[4] == "  (bad\\x1b[2Jnote)"  # a note is printed, never a terminal escape
    assert lines[5] == ("  (listed in priority order, first kept when the budget holds fewer: binding, allocator and "
                        "threads in turn, then DataLoader workers, allocator settings, OpenMP wait policy, pinned "
                        "memory)")
    assert lines[6].startswith("order: each round runs D c1 D c2 ... cn D")
    stages = budget.schedule(2, s.confirm)
    for i, st in enumerate(stages):
        what = "finalists, fresh rounds that decide" if st.label == "confirm" else "keep the better half"
        assert lines[7 + i] == (f"  {st.label:<8} {st.names} candidates x {st.rounds} round(s) = {st.trials} trials "
                                f"({what})")
    k = 7 + len(stages)
    assert lines[k] == (f"  busy host: up to {s.confirm} extra confirmation rounds, as the budget allows, when the "
                        "default's trials run contended")
    assert lines[k + 1] == f"budget: 600 s = {s.trials()} trials of at most 12.5 s"
    assert lines[k + 2].startswith("after the default's first two trials the plan is made again")
    assert len(lines) == k + 3
    assert "run directories" not in report.plan_text(s)


def test_the_plan_text_of_a_lower_is_better_metric_and_an_engine_session() -> None:
    s = _session(engine_runs=True)
    s.spec = metric.compile_metric("step ([0-9.]+) ms", lower_is_better=True)
    text = report.plan_text(s)
    assert text.splitlines()[0].endswith("metric 'step ([0-9.]+) ms' (lower is better)")
    assert ("run directories: each trial of the engine gets --run-dir in a fresh scratch directory under TMPDIR (no "
            "trial resumes another's checkpoints), removed after it unless the trial is dropped") in text.splitlines()
    assert ("the engine prints its samples/s once, when its run ends: give it few enough steps (--set steps=N) to end "
            "within a trial's window") in text.splitlines()


def test_median_of_nothing_is_nan_and_its_row_is_null() -> None:
    assert math.isnan(stats.median([]))
    assert stats.median([5.0]) == 5.0 and stats.median([2.0, 1.0]) == 1.5 and stats.median([3.0, 9.0, 1.0]) == 3.0
    assert stats.bootstrap_ci([]) == (pytest.approx(math.nan, nan_ok=True),) * 2
    assert stats.bootstrap_ci([1.25]) == (1.25, 1.25)
    s = stats.summarize("c", [])
    assert s.rounds == 0 and s.to_dict() == {"candidate": "c", "rounds": 0, "median_ratio": None, "ci_low": None,
                                             "ci_high": None}
    q = stats.quick("q", [1.0, 1.23456])
    assert q.to_dict() == {"candidate": "q", "rounds": 2, "median_ratio": 1.1173, "ci_low": None, "ci_high": None}
    assert q.ratios == (1.0, 1.23456)


def test_sign_p_and_swing_edges() -> None:
    assert stats.sign_p(0, 0) == 1.0 and stats.sign_p(3, 3) == 1 / 8 and stats.sign_p(2, 3) == 4 / 8
    assert stats.swing([]) == 1.0 and stats.swing([0.0, -1.0]) == 1.0
    assert stats.swing([2.0, 0.5, 1.0]) == pytest.approx(2.0)
    assert stats.floor_of([2.0, 0.25]) == pytest.approx(0.25) and stats.floor_of([]) == 1.0
    assert not stats.fragile([], [2.0]) and stats.fragile([0.5], [])
    assert not stats.fragile([0.9], []) and stats.fragile([0.899], [])
    s = stats.Summary("a", 0, math.nan, math.nan, math.nan)
    assert stats.widen(s, 2.0) is s
    t = stats.Summary("a", 3, 1.0, 0.9, 1.1)
    assert stats.widen(t, 1.0) is t and stats.widen(t, 0.5) is t


def test_adjacent_ratio_edges() -> None:
    assert stats.adjacent_ratio(2.0, 1.0, None) == 2.0 and stats.adjacent_ratio(2.0, None, 4.0) == 0.5
    assert stats.adjacent_ratio(2.0, 0.0, 4.0) == 0.5  # a zero default score is no side
    assert stats.adjacent_ratio(2.0, None, None) is None and stats.adjacent_ratio(0.0, 1.0, 1.0) is None
    assert stats.adjacent_ratio(None, 1.0, 1.0) is None and stats.adjacent_ratio(-1.0, 1.0, 1.0) is None
    assert stats.adjacent_ratio(4.0, 1.0, 4.0) == pytest.approx(2.0)


def test_a_match_without_a_number_is_no_metric() -> None:
    spec = metric.compile_metric("epoch done")
    assert metric._number(spec, "epoch done in 5 s") is None
    assert metric.read(spec, [(1.0, "epoch done"), (2.0, "epoch done")]) == (
        None, "printed no metric matching 'epoch done'")
    spec = metric.compile_metric(r"rate=\S+")
    assert metric._number(spec, "rate=1.5e3 rate=2") == 2.0
    assert metric._number(spec, "rate=abc") is None
    assert metric._number(metric.compile_metric(r"x(\w+)"), "xabc") is None  # the group holds no number
    named = metric.compile_metric(r"(a)(?P<value>[0-9]+)")
    assert metric._number(named, "a7 a9") == 9.0
    assert metric._number(metric.compile_metric(r"v=(\S+)"), "v=inf") is None
    assert metric._number(metric.compile_metric(r"v=(\S+)"), "v=-3") is None


def test_read_keeps_the_last_match_after_the_warmup() -> None:
    spec = metric.compile_metric(r"([0-9]+) it/s", warmup_matches=2, warmup_s=1.0)
    out = [(0.5, "9 it/s"), (2.0, "8 it/s"), (3.0, "nothing"), (4.0, "7 it/s"), (5.0, "6 it/s")]
    assert metric.read(spec, out) == (6.0, "")
    assert metric.read(spec, out[:3]) == (None, "printed 2 metric line(s), all in the warm-up (first 2 match(es), "
                                                "first 1 s)")
    assert metric.score(spec, 4.0) == 4.0
    assert metric.score(metric.compile_metric("x", lower_is_better=True), 4.0) == 0.25


def test_the_json_row_of_a_dropped_candidate_without_rounds() -> None:
    res = search.Result(["a", "b"], spent=10.0)
    res.ratios = {"a": [1.1, 1.2]}
    res.dropped = {"b": "exit status 1"}
    data = json.loads(report.to_json(res, 0.02, None))
    by = {r["candidate"]: r for r in data["candidates"]}
    assert by["b"] == {"candidate": "b", "rounds": 0, "median_ratio": None, "ci_low": None, "ci_high": None,
                       "confirmation": None, "dropped": "exit status 1"}
    assert by["a"]["rounds"] == 2 and by["a"]["median_ratio"] == 1.15 and by["a"]["dropped"] is None
    assert data["winner"] is None and data["stopped"] is None and data["trials"] == 0
    lines = report.table(res, 0.02).splitlines()
    assert lines[0] == "candidate  median ratio  95% CI          rounds  confirmation (decides)"
    assert lines[2].split() == ["b", "-", "-", "0", "dropped:", "exit", "status", "1"]
    assert report._ci(stats.Summary("z", 0, 1.0, 1.0, 1.0)) == "-"


def test_the_binding_alternatives_of_each_default() -> None:
    p = Profile("default", "the default", "built-in")
    got = {c.name: dict(c.changes) for c in cands._bindings(p)}
    assert got == {"unbound": {"binding": "none", "memory_policy": "none"},
                   "cores": {"binding": "cores", "memory_policy": "none"}}
    import dataclasses
    none = dataclasses.replace(p, binding="none", memory_policy="none")
    assert [c.name for c in cands._bindings(none)] == ["unbound", "cores", "cores+memory"]
    bound = dataclasses.replace(p, binding="cores", memory_policy="bind")
    assert [c.name for c in cands._bindings(bound)] == ["unbound", "cores"]
