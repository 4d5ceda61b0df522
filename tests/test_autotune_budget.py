"""hosttune autotune plans its budget (issue 24): before any trial at the window's length, after the default's first
two trials (the first a cold start) at the second's measured length; the candidates the budget cannot hold with the
confirmation rounds are left out in priority order and said so; a budget too small for one candidate is exit 2
before any trial; the budget is never exceeded. Synthetic jobs on a simulated clock (each trial reports how long it
took; no wall time is read)."""

import json
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from hosttune.autotune import budget, report, search
from hosttune.autotune import candidates as cands
from hosttune.autotune.candidates import DEFAULT
from tests.conftest import run_cli

NAMES = [f"c{i}" for i in range(9)]


class Clocked:
    """A job whose speed depends on the plan in a known way: the default scores 100, candidate c scores 100 x
    factors[c]; each trial takes seconds[name] (default `each`) on a simulated clock, `cut` when the window ended
    it. `late(i)` gives the length of every trial after the first two (a host that slows down after the plan), `cold`
    the first one's (a cold start); `busy` the host's contention during every trial."""

    def __init__(self, factors: Dict[str, float], each: float = 10.0, seconds: Optional[Dict[str, float]] = None,
                 cut: bool = False, fail: frozenset = frozenset(), late: Optional[Callable[[int], float]] = None,
                 cold: Optional[float] = None, busy: Optional[float] = None):
        self.factors, self.each, self.seconds, self.cut = factors, each, dict(seconds or {}), cut
        self.fail, self.late, self.cold, self.busy = fail, late, cold, busy
        self.calls: List[str] = []

    def run(self, name: str) -> search.Trial:
        self.calls.append(name)
        length = self.seconds.get(name, self.each)
        if self.late is not None and len(self.calls) > 2:
            length = self.late(len(self.calls))
        if self.cold is not None and len(self.calls) == 1:
            length = self.cold
        if name in self.fail:  # a hung trial: the window ends it, it printed nothing
            return search.Trial(name, None, length, "printed no metric within the window", cut=True)
        return search.Trial(name, 100.0 * self.factors.get(name, 1.0), length, cut=self.cut, busy=self.busy)


def test_a_budget_that_fits_some_candidates_confirms_the_best_of_those_and_leaves_the_rest_out() -> None:
    """c5 is the fastest, but after the two default trials the budget holds three candidates with their confirmation
    rounds at the measured 10 s (+10%) a trial: c0-c2 are searched, c1 (the best of them) confirmed and kept, c3-c5
    left out, said so."""
    names = NAMES[:6]
    fake = Clocked({"c1": 1.3, "c5": 1.6})
    assert 20 + budget.need(3, 11.0, 8, 12.0, done=2) <= 440 < 20 + budget.need(4, 11.0, 8, 12.0, done=2)
    res = search.search(names, fake, 440.0, 12.0, replan=True)
    assert res.plan is not None and res.plan.kept == ("c0", "c1", "c2") and res.plan.left_out == ("c3", "c4", "c5")
    assert not {"c3", "c4", "c5"} & set(fake.calls) and res.candidates == ["c0", "c1", "c2"]
    w = res.winner(0.01)
    assert w is not None and w.name == "c1" and w.rounds == search.CONFIRM
    assert not res.stopped and res.spent == 10.0 * budget.total_trials(3) <= 440.0  # 40 trials
    why = ("budget 440s fits 3 of 6 candidates at 11 s a trial, the default's second trial's 10 s +10%, the last two "
           "up to the 12 s window")
    table = report.table(res, 0.01).splitlines()
    assert f"left out: c5 ({why})" in table and [x for x in table if x.startswith("left out: ")] == \
        [f"left out: {n} ({why})" for n in ("c3", "c4", "c5")]
    assert f"plan: {why}: 40 trials" in table
    data = json.loads(report.to_json(res, 0.01, None))["budget"]
    assert data["left_out"] == ["c3", "c4", "c5"] and data["measured"]["fits"] == 3
    assert data["measured"]["measured_s"] == 10.0 and data["measured"]["planned_trials"] == 40
    assert report.trial_line(res.trials[-1], res, 999).startswith("[40/40] ")  # the count the search planned


def test_replanning_uses_the_measured_trial_time_a_fast_job_fits_more_than_the_window_suggests() -> None:
    """A 20 s window holds 4 of 9 candidates in 900 s; the job ends by itself in 5 s, so after its first trial
    the search plans again and all 9 fit: c7, which the window's plan leaves out, is found and kept."""
    at_window = budget.make(NAMES, 900.0, 20.0, search.CONFIRM, "window")
    assert at_window.kept == tuple(NAMES[:4]) and "c7" in at_window.left_out
    fake = Clocked({"c7": 1.4}, each=5.0)
    res = search.search(NAMES, fake, 900.0, 20.0, replan=True)
    res.window_plan = at_window
    assert res.plan is not None and res.plan.kept == tuple(NAMES) and res.plan.trial_s == pytest.approx(5.5)
    w = res.winner(0.01)
    assert w is not None and w.name == "c7" and not res.stopped
    assert res.budget_lines() == [f"plan: {res.plan.why()}: 90 trials (at the window's 20 s: 4)"]
    # a job that runs until the window ends it, and a second to stop: no slack added, but one candidate fewer
    assert len(budget.make(NAMES, 840.0, 20.0, search.CONFIRM, "window").kept) == 4  # 42 trials x 20 s = 840 s
    slow = Clocked({"c3": 1.4}, each=21.0, cut=True)
    res = search.search(NAMES, slow, 840.0, 20.0, replan=True)
    assert res.plan is not None and res.plan.trial_s == 21.0 and res.plan.kept == ("c0", "c1", "c2")  # 40 x 21 s
    assert "c3" not in slow.calls and res.spent <= 840.0 and not res.stopped


def test_a_cold_first_trial_does_not_shrink_the_plan() -> None:
    """bench_autotune's GPT job: the default's first trial took 22.4 s (a cold start), the trials after it ~12 s.
    Planned at the second trial, 12m hold 4 candidates; planned at the cold one, they would hold 1."""
    fake = Clocked({"c3": 1.3}, each=12.0, cold=22.4)
    res = search.search(NAMES, fake, 720.0, 30.0, replan=True)
    assert res.plan is not None and res.plan.measured_s == 12.0 and len(res.plan.kept) == 4
    assert budget.make(NAMES, 720.0, 22.4 * 1.1, search.CONFIRM, "measured", bound_s=30.0, spent_s=22.4,
                       done=1).kept == ("c0",)
    w = res.winner(0.01)
    assert w is not None and w.name == "c3" and res.spent <= 720.0 and not res.stopped


def test_when_trials_run_longer_than_planned_the_rungs_give_way_to_the_confirmation_rounds() -> None:
    """Planned at the second default trial's 10 s (+10%), every later trial takes 14 s of its 14 s window: the
    halving rungs are cut, the confirmation rounds (the only ones that decide) still run in full, and the budget
    holds."""
    names = NAMES[:8]
    fake = Clocked({"c2": 1.3}, late=lambda i: 14.0)
    res = search.search(names, fake, 730.0, 14.0, replan=True)
    assert res.plan is not None and len(res.plan.kept) == 8  # 20 s, then 62 trials x 11 s + 2 x 14 s = 730 s
    assert res.stopped == "the budget ran out during the halving rungs"
    assert len(res.confirm["c2"]) == search.CONFIRM
    w = res.winner(0.01)
    assert w is not None and w.name == "c2" and res.spent <= 730.0


def test_a_budget_the_measured_trials_cannot_fill_with_one_confirmed_candidate_stops_after_two_default_trials() -> None:
    fake = Clocked({"c0": 2.0}, each=11.0, cut=True)
    res = search.search(NAMES, fake, 170.0, 10.0, replan=True)
    assert fake.calls == [DEFAULT, DEFAULT] and res.winner(0.01) is None
    assert res.plan is not None and res.plan.kept == () and res.plan.left_out == tuple(NAMES)
    assert res.stopped == ("the budget holds no candidate with its 8 confirmation rounds at 11 s a trial, as long as "
                           "the default's second: give --budget 4m or more")  # 18 x 11 s = 198 s


def test_a_busy_hosts_extra_confirmation_rounds_are_whole_rounds_within_the_budget() -> None:
    """Was (seen on a real run, 08:50 UTC): the extra round the window no longer had room for was cut before its
    first trial and still counted ("1 extra confirmation round(s) run") with no trial run."""
    fake = Clocked({"c": 1.3}, each=10.0, busy=0.5)
    res = search.search(["c"], fake, 250.0, 30.0, replan=True)  # 18 trials = 180 s; one more round fits at 30 s
    assert res.busy() and res.extra_rounds == 1 and len(res.confirm["c"]) == search.CONFIRM + 1
    assert res.spent == 200.0 and len(fake.calls) == 20
    assert "1 extra confirmation round(s) run before deciding (of 8; the budget held no more)" in res.contention_line()


@pytest.mark.parametrize("seed", range(6))
def test_the_budget_is_never_exceeded(seed: int) -> None:
    """On the simulated clock, whatever the budget, however long each trial takes within its 16 s window (slow
    candidates, a hung one the window ends, the first trial faster than all the rest, trials that keep getting
    longer): the trials spent never pass the budget."""
    names = NAMES[:7]
    lengths = {n: 6.0 + ((seed * 7 + i * 5) % 11) for i, n in enumerate(names)}  # 6-16 s by candidate
    lates: List[Optional[Callable[[int], float]]] = [None, lambda i: 13.0, lambda i: min(16.0, 6.0 + i / 4)]
    for total in (200.0, 260.0, 333.0, 480.0, 700.0, 1111.0, 2500.0):
        for late in lates:
            fake = Clocked({names[seed % 7]: 1.25}, each=8.0, seconds=lengths, fail=frozenset({names[(seed + 3) % 7]}),
                           late=late)
            res = search.search(names, fake, total, 16.0, replan=True)
            assert res.spent <= total, (total, late, res.spent)
            assert res.spent == pytest.approx(sum(t.seconds for t in res.trials))


def test_candidates_are_left_out_in_priority_order_binding_allocator_threads_before_openmp() -> None:
    from hosttune.profile.settings import Profile

    default = Profile("default", "the default", "built-in")
    host = cands.Host(jemalloc=True, tcmalloc=True, threads=2, logical_per_rank=2)
    found, _ = cands.generate(default, host, {})
    order = [c.name for c in found]
    assert order[:3] == ["unbound", "glibc", "threads-1"]  # one alternative of each major decision first
    assert order.index("tcmalloc") < order.index("jemalloc-decay") < order.index("omp-passive")
    assert order[-2:] == ["omp-passive", "omp-active"]
    assert cands.prioritized(list(reversed(found))) != found  # the order is the table's, within a knob as given
    assert [c.name for c in cands.prioritized(found)] == order  # stable: the same list keeps its order
    plan = budget.make(order, 12 * 60.0, 39.0, search.CONFIRM, "measured", measured_s=39.0)
    assert plan.kept == ("unbound",) and plan.left_out[-1] == "omp-active"  # 18 x 39 s = 702 s
    assert plan.lines()[-1] == ("left out: omp-active (budget 12m fits 1 of 11 candidates at 39 s a trial, as long as "
                                "the default's second)")


def test_the_dry_run_plan_says_what_fits_at_the_window_and_what_is_left_out() -> None:
    from hosttune.autotune import metric, session
    from hosttune.profile.settings import Profile

    default = Profile("default", "the default", "built-in")
    found, notes = cands.generate(default, cands.Host(jemalloc=True, tcmalloc=True, threads=2, logical_per_rank=2), {})
    s = session.Session(["python3", "job.py"], metric.compile_metric("([0-9.]+) it/s"), 1200.0, None, default,
                        found, notes)
    s.window_s = session.window_for(1200.0, len(found), s.confirm, 30.0)
    s.plan = budget.make(s.names, 1200.0, s.window_s, s.confirm, "window")
    text = report.plan_text(s).splitlines()
    assert "plan: budget 20m fits 3 of 11 candidates at 30 s a trial, the window" in text  # 40 x 30 = 1200 s
    assert "  left out: omp-active (budget 20m fits 3 of 11 candidates at 30 s a trial, the window)" in text
    assert "budget: 1200 s = 40 trials of at most 30.0 s" in text
    assert "  rung 0   3 candidates x 1 round(s) = 6 trials (keep the better half)" in text
    assert f"  ({cands.PRIORITY_TEXT})" in text and cands.PRIORITY_TEXT.startswith("listed in priority order")
    # no --trial: the window is the budget over the trials of every candidate, less 10% to start and stop each
    w = session.window_for(1200.0, len(found), s.confirm, None)
    assert w == pytest.approx(1200.0 / (1.1 * budget.total_trials(len(found))))
    assert budget.make(s.names, 1200.0, w, s.confirm, "window").left_out == ()


NO_CANDIDATE = "holds no candidate with its 8 confirmation rounds"


@pytest.mark.parametrize("args, need", [
    (["--budget", "5m", "--trial", "60"], (NO_CANDIDATE, "give --budget 18m or more, or a shorter --trial")),
    (["--budget", "40s"], (NO_CANDIDATE, "give --budget 60s or more")),
    (["--budget", "5m", "--trial", "60", "--dry-run"], (NO_CANDIDATE, "give --budget 18m or more")),
    (["--budget", "1h", "--trial", "2"], ("--trial 2: a trial needs at least 3 s",)),
])
def test_a_budget_too_small_for_one_candidate_is_exit_2_before_any_trial(tmp_path: Path, args: List[str],
                                                                         need: Tuple[str, ...]) -> None:
    marker = tmp_path / "ran"
    job = tmp_path / "job.py"
    job.write_text(f"open({str(marker)!r}, 'w').write('x')\nprint('1 it/s')\n")
    res = run_cli(["autotune", *args, "--metric", "([0-9.]+) it/s", "--", sys.executable, str(job)])
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert all(x in line for x in need) and "Traceback" not in line, line
    assert not marker.exists() and res.stdout == ""


def test_a_trial_the_window_ended_is_marked_cut_so_the_plan_adds_no_slack_to_it() -> None:
    from hosttune.autotune import metric, runner

    spec = metric.compile_metric("([0-9.]+) it/s", warmup_matches=0)
    out = runner._Output(spec, 0.0, matched=[(1.0, "5 it/s")], tail=["5 it/s"])
    ended = runner._judge("c", spec, out, -15, True, 21.0, 20.0)
    assert ended.cut and ended.score == 5.0 and budget.estimate(ended.seconds, ended.cut) == 21.0
    by_itself = runner._judge("c", spec, out, 0, False, 8.0, 20.0)
    assert not by_itself.cut and budget.estimate(by_itself.seconds, by_itself.cut) == pytest.approx(8.8)


def test_the_json_carries_what_was_planned_measured_and_left_out(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """Through the real CLI, in-process: the session, the plans and the report are the real ones; only the job is
    not started (each trial takes 1 s of a 10 s window). At the window 5m hold one of the two candidates; at the
    measured length both: the JSON says both plans, the window's left out and the measured one's none."""
    import tempfile

    from hosttune.autotune import runner

    def trial(self: Any, name: str, command: Any = None, environ: Any = None) -> search.Trial:
        return search.Trial(name, 100.0, 1.0)

    monkeypatch.setattr(runner.ExecRunner, "_run", trial)
    scratch = tmp_path / "tmp"  # the session's scratch profiles, removed after
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    res = run_cli(["autotune", "--budget", "5m", "--trial", "10", "--candidates", "omp-passive,omp-active", "--json",
                   "--metric", "([0-9.]+) it/s", "--", sys.executable, "job.py"])
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    window, measured = data["budget"]["window"], data["budget"]["measured"]
    assert (window["fits"], window["left_out"], window["trial_s"]) == (1, ["omp-active"], 10.0)
    assert (measured["fits"], measured["left_out"], measured["measured_s"]) == (2, [], 1.0)
    assert measured["planned_trials"] == data["trials"] == budget.total_trials(2) and data["spent_s"] <= 300
    assert data["budget"]["left_out"] == [] and data["winner"] is None
    assert "plan: budget 5m fits 1 of 2 candidates at 10 s a trial, the window" in res.stderr
    assert "[1/18] default: 100 (1.0 s;" in res.stderr and "[34/34] default: 100 (1.0 s;" in res.stderr
    assert list(scratch.iterdir()) == []
