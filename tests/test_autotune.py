"""hosttune autotune (issue 24): the metric parser, the statistics and the search on a fake runner whose speeds
are known (deterministic: seeded noise, fake trial seconds, no wall time), the CLI's one-line errors, and one real
end-to-end run on a tiny job whose speed depends on a variable a candidate sets."""

import dataclasses
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import AbstractSet, Any, Callable, Dict, Optional

import pytest

from hosttune.autotune import budget, contention, metric, search, stats
from hosttune.autotune.candidates import DEFAULT
from hosttune.errors import UserError
from tests.conftest import run_cli

NAMES = [f"c{i}" for i in range(9)]


class FakeRunner:
    """Trial scores = 100 x drift(trial index) x the candidate's true factor x seeded log-normal noise."""

    def __init__(self, factors: Dict[str, float], sigma: float, seed: int = 0, seconds: float = 10.0,
                 drift: Optional[Callable[[int], float]] = None, fail: AbstractSet[str] = frozenset(),
                 silent_default: bool = False):
        self.factors, self.sigma, self.rng, self.seconds = factors, sigma, random.Random(seed), seconds
        self.drift = drift or (lambda i: 1.0)
        self.fail, self.silent_default, self.count = set(fail), silent_default, 0
        self.calls: Dict[str, int] = {}

    def run(self, name: str) -> search.Trial:
        self.count += 1
        self.calls[name] = self.calls.get(name, 0) + 1
        if name in self.fail:
            return search.Trial(name, None, self.seconds, "exit status 1; last line: Segmentation fault")
        if name == DEFAULT and self.silent_default:
            return search.Trial(name, None, self.seconds, "printed no metric")
        noise = math.exp(self.rng.gauss(0, self.sigma)) if self.sigma else 1.0
        return search.Trial(name, 100 * self.drift(self.count) * self.factors.get(name, 1.0) * noise, self.seconds)


BIG = 10 ** 7  # a budget that never binds


# -- the metric parser --------------------------------------------------------------------------------------------

def test_metric_takes_the_last_match_after_the_warm_up_matches() -> None:
    spec = metric.compile_metric(r"([0-9.]+) samples/s", warmup_matches=2)
    out = [(0.1, "epoch 0: 5 samples/s"), (0.2, "loading"), (0.3, "9 samples/s"), (0.4, "100 samples/s"),
           (0.5, "step: 120.5 samples/s, loss 3")]
    assert metric.read(spec, out) == (120.5, "")


def test_metric_discards_the_first_seconds() -> None:
    spec = metric.compile_metric(r"([0-9.]+) samples/s", warmup_matches=0, warmup_s=2.0)
    assert metric.read(spec, [(0.5, "7 samples/s"), (2.5, "50 samples/s"), (3.0, "55 samples/s")])[0] == 55.0
    value, why = metric.read(spec, [(0.5, "7 samples/s"), (1.9, "8 samples/s")])
    assert value is None and "all in the warm-up" in why


def test_metric_no_match_is_a_reason_not_a_value() -> None:
    spec = metric.compile_metric(r"([0-9.]+) samples/s")
    value, why = metric.read(spec, [(0.1, "Traceback (most recent call last):")])
    assert value is None and "printed no metric" in why


def test_engine_metric_reads_the_one_line_the_engine_prints() -> None:
    """Was: --engine kept --warmup's default of 1 match, and the engine prints its samples/s once, in its last line
    (evaluate.py's summary): every engine trial was dropped as 'all in the warm-up'."""
    from hosttune.commands.autotune import _spec

    done = ("hosttune.engine: done: gpt-tiny step 30 on 1 rank(s) in 148.03s, 6.48 samples/s, train loss 2.4427, "
            "val loss 2.3380")
    engine = _spec(None, True, False, None, 0.0)
    assert engine.warmup_matches == 0 and metric.read(engine, [(150.0, done)]) == (6.48, "")
    assert _spec("([0-9.]+) it/s", False, False, None, 0.0).warmup_matches == 1
    assert _spec(None, True, False, 2, 0.0).warmup_matches == 2  # an explicit --warmup stays


def test_metric_named_group_whole_match_and_garbage() -> None:
    named = metric.compile_metric(r"step (?P<step>\d+) took (?P<value>[0-9.]+) s", warmup_matches=0,
                                  lower_is_better=True)
    assert metric.read(named, [(1.0, "step 3 took 0.25 s")])[0] == 0.25
    assert metric.score(named, 0.25) == 4.0  # a step time: smaller is faster, the score turns it round
    whole = metric.compile_metric(r"throughput=\S+", warmup_matches=0)
    assert metric.read(whole, [(1.0, "throughput=1.5e3")])[0] == 1500.0
    grouped = metric.compile_metric(r"rate (\S+)", warmup_matches=0)
    assert metric.read(grouped, [(1.0, "rate nan"), (1.1, "rate -3"), (1.2, "rate x")])[0] is None


# -- the candidates: allocator settings, DataLoader workers and pinning ------------------------------------------

def _profile() -> Any:
    from hosttune.profile.settings import Profile

    return Profile("default", "the default", "built-in")


def test_tcmalloc_settings_are_candidates_beside_jemalloc_decay() -> None:
    """gperftools reads TCMALLOC_RELEASE_RATE and TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES at start; each is a candidate
    (tcmalloc preloaded, the setting in the profile's `tcmalloc:` map), unless the caller set that variable."""
    from hosttune.autotune import candidates as cands

    default = _profile()
    found, notes = cands.generate(default, cands.Host(jemalloc=True, tcmalloc=True), {})
    by = cands.by_name(found)
    assert {"tcmalloc-norelease", "tcmalloc-bigcache", "jemalloc-decay", "jemalloc-nobg"} <= set(by)
    norel = by["tcmalloc-norelease"].apply(default)
    assert norel.allocator == "tcmalloc" and dict(norel.tcmalloc) == {"TCMALLOC_RELEASE_RATE": "0"}
    big = by["tcmalloc-bigcache"].apply(default)
    assert dict(big.tcmalloc) == {"TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES": str(256 << 20)}
    mine, notes = cands.generate(default, cands.Host(tcmalloc=True), {"TCMALLOC_RELEASE_RATE": "5"})
    assert "tcmalloc-norelease" not in cands.by_name(mine) and "tcmalloc-bigcache" in cands.by_name(mine)
    assert any(n.startswith("tcmalloc-norelease: left out, you set TCMALLOC_RELEASE_RATE") for n in notes)
    assert not any(c.name.startswith("tcmalloc") for c in cands.generate(default, cands.Host(jemalloc=True), {})[0])


def test_engine_jobs_get_workers_and_pinning_candidates_where_the_engine_reads_them() -> None:
    from hosttune.autotune import candidates as cands

    default = _profile()
    gpu = cands.Host(threads=4, engine=True, gpus=True)
    by = cands.by_name(cands.generate(default, gpu, {})[0])
    assert by["workers-0"].apply(default).dataloader.num_workers == 0
    assert by["workers-4"].apply(default).dataloader.num_workers == 4  # twice policy's 2 for a 4-thread rank
    assert by["pin-memory-off"].apply(default).dataloader.pin_memory is False  # auto pins with a GPU
    unpinned = dataclasses.replace(default, dataloader=dataclasses.replace(default.dataloader, pin_memory=False))
    assert "pin-memory-on" in cands.by_name(cands.generate(unpinned, gpu, {})[0])
    cpu_only, notes = cands.generate(default, cands.Host(threads=2, engine=True), {})
    names = [c.name for c in cpu_only]
    assert "workers-2" in names and "workers-0" not in names  # policy runs none on 2 cores: the default is 0
    assert not any(n.startswith("pin-memory") for n in names) and any("no GPU" in n for n in notes)
    sets, notes = cands.generate(default, cands.Host(threads=4, engine=True, gpus=True,
                                                     engine_sets=("num_workers", "pin_memory")), {})
    assert not any(c.name.startswith(("workers-", "pin-memory")) for c in sets) and len(notes) == 2
    assert not any(c.name.startswith(("workers-", "pin-memory"))
                   for c in cands.generate(default, cands.Host(threads=4, gpus=True), {})[0])  # not the engine


@pytest.mark.parametrize("text, msg", [("(", "not a regular expression"), ("", "empty"),
                                       ("(a)(b)", "more than one group"), ("x" * 501, "longer than")])
def test_bad_metric_is_one_user_error(text: str, msg: str) -> None:
    with pytest.raises(UserError, match=msg):
        metric.compile_metric(text)


# -- statistics ---------------------------------------------------------------------------------------------------

def test_ratio_is_to_the_adjacent_defaults() -> None:
    assert stats.adjacent_ratio(120.0, 100.0, 100.0) == pytest.approx(1.2)
    assert stats.adjacent_ratio(120.0, 90.0, 160.0) == pytest.approx(120.0 / 120.0)  # geometric mean of the two
    assert stats.adjacent_ratio(120.0, None, 100.0) == pytest.approx(1.2)  # one default trial dropped
    assert stats.adjacent_ratio(120.0, None, None) is None
    assert stats.adjacent_ratio(None, 100.0, 100.0) is None


def test_bootstrap_interval_is_seeded_and_holds_the_median() -> None:
    ratios = [1.1, 1.2, 1.15, 1.3, 1.05, 1.22, 1.18, 1.12]
    lo, hi = stats.bootstrap_ci(ratios)
    assert (lo, hi) == stats.bootstrap_ci(list(ratios))
    assert lo <= stats.median(ratios) <= hi and lo >= min(ratios) and hi <= max(ratios)


def test_a_win_needs_rounds_an_interval_above_one_and_a_sign_test() -> None:
    assert stats.wins(stats.summarize("a", [1.2] * 8), 0.01)
    assert not stats.wins(stats.summarize("a", [1.2] * 4), 0.01)  # too few rounds
    assert not stats.wins(stats.summarize("a", [1.005] * 8), 0.01)  # not by the margin
    mixed = [1.3, 1.3, 1.3, 1.3, 1.3, 1.3, 0.9, 0.9]  # a high median, but a coin does this often
    assert not stats.wins(stats.summarize("a", mixed), 0.01, alpha=0.005)


# -- the search on a fake runner ----------------------------------------------------------------------------------

def test_the_right_winner_is_found_within_the_budget() -> None:
    factors = {"c0": 0.8, "c4": 1.25, "c5": 1.05, "c7": 0.95}
    budget_s = 10.0 * (budget.planned_trials(len(NAMES)) + 2)
    fake = FakeRunner(factors, 0.03, seed=1)
    res = search.search(NAMES, fake, budget_s, 10.0)
    w = res.winner(0.01)
    assert w is not None and w.name == "c4"
    assert w.rounds == search.CONFIRM and w.lo > 1.15
    assert res.spent <= budget_s and not res.stopped


def test_a_job_without_gain_keeps_the_default_whatever_the_seed() -> None:
    for seed in range(12):
        res = search.search(NAMES, FakeRunner({}, 0.05, seed=seed), BIG, 10.0)
        assert res.winner(0.01) is None, seed


def test_a_noisy_job_widens_the_interval_and_does_not_pick_noise() -> None:
    quiet = search.search(NAMES, FakeRunner({}, 0.02, seed=3), BIG, 10.0)
    for seed in range(12):
        noisy = search.search(NAMES, FakeRunner({}, 0.3, seed=seed), BIG, 10.0)
        assert noisy.winner(0.01) is None, seed
    width = {r.name: r.hi - r.lo for r in noisy.confirmed()}
    assert min(width.values()) > 3 * max(r.hi - r.lo for r in quiet.confirmed())


def test_drift_on_the_machine_is_not_a_gain() -> None:
    # the host gets 3x faster over the run: absolute numbers would crown whatever ran last; adjacent ratios do not
    res = search.search(NAMES, FakeRunner({}, 0.01, seed=5, drift=lambda i: 1 + i / 50), BIG, 10.0)
    assert res.winner(0.01) is None
    assert all(abs(s.median - 1) < 0.1 for s in res.summaries() if s.rounds)


def test_failing_and_silent_trials_are_dropped_never_scored() -> None:
    fake = FakeRunner({"c2": 1.3}, 0.02, seed=2, fail={"c1", "c6"})
    res = search.search(NAMES, fake, BIG, 10.0)
    assert set(res.dropped) == {"c1", "c6"} and "Segmentation fault" in res.dropped["c1"]
    assert res.ratios["c1"] == [] and res.ratios["c6"] == []
    assert fake.calls["c1"] == 1 and fake.calls["c6"] == 1  # a candidate that failed is not run again
    w = res.winner(0.01)
    assert w is not None and w.name == "c2"


def test_a_default_that_prints_no_metric_ends_the_search() -> None:
    with pytest.raises(search.DefaultFailed, match="no metric"):
        search.search(NAMES, FakeRunner({}, 0.0, silent_default=True), BIG, 10.0)


def test_the_budget_is_respected_and_a_short_one_says_so() -> None:
    fake = FakeRunner({"c3": 1.5}, 0.0, seconds=10.0)
    res = search.search(NAMES, fake, 400.0, 10.0)
    assert res.spent <= 400.0 and fake.count * 10.0 == res.spent
    assert res.stopped and res.winner(0.01) is None  # not enough left to confirm: no winner claimed


def test_the_window_is_an_upper_bound_the_first_round_runs_and_then_real_lengths_count() -> None:
    # a 12 s window that would not fit 41 trials in 410 s, but the job's trials take 5 s: the whole schedule runs
    fake = FakeRunner({"c1": 1.4}, 0.0, seconds=5.0)
    res = search.search(NAMES[:4], fake, 410.0, 12.0)
    assert all(res.ratios[n] for n in NAMES[:4]) and not res.stopped
    w = res.winner(0.01)
    assert w is not None and w.name == "c1"


def test_every_candidate_trial_sits_between_two_default_trials() -> None:
    order = []

    class Recording(FakeRunner):
        def run(self, name: str) -> search.Trial:
            order.append(name)
            return super().run(name)

    search.search(NAMES, Recording({}, 0.0), BIG, 10.0)
    assert order[0] == DEFAULT and order[-1] == DEFAULT
    for i, name in enumerate(order):
        if name != DEFAULT:
            assert order[i - 1] == DEFAULT and order[i + 1] == DEFAULT
    assert len(order) == budget.planned_trials(len(NAMES))


def test_schedule_halves_then_confirms() -> None:
    st = budget.schedule(9)
    assert [(s.names, s.rounds) for s in st] == [(9, 1), (5, 2), (3, 3), (2, search.CONFIRM)]
    assert budget.schedule(1)[-1].label == "confirm" and budget.schedule(0) == []


# -- the command line ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, msg", [
    (["--", "true"], "give --metric"),
    (["--engine", "--metric", "x", "--", "true"], "give one"),
    (["--metric", "(", "--", "true"], "not a regular expression"),
    (["--metric", "x", "--budget", "soon", "--", "true"], "a duration"),
    (["--metric", "x", "--budget", "inf", "--", "true"], "a duration"),
    (["--metric", "x"], "no COMMAND"),
    (["--bogus", "--", "true"], "autotune: no such option: --bogus"),
    (["--metric", "x", "--candidates", ",", "--", "true"], "at least one name"),
    (["--metric", "x", "--min-gain", "-1", "--", "true"], "--min-gain"),
])
def test_bad_input_is_one_line_exit_2(args: list, msg: str) -> None:
    res = run_cli(["autotune", *args])
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0] and "Traceback" not in res.stderr


# -- one real run -------------------------------------------------------------------------------------------------

JOB = """
import os, sys
policy = os.environ.get("OMP_WAIT_POLICY")
if policy == "ACTIVE":
    sys.exit("crashed")  # a candidate whose trials fail: reported and dropped
rate = 200.0 if policy == "PASSIVE" else 100.0  # known: the PASSIVE candidate is twice as fast, on any machine
for i in range(3):
    print(f"step {i}: {rate:.1f} samples/s", flush=True)
"""


@pytest.mark.slow
@pytest.mark.integration
def test_real_autotune_finds_saves_and_the_next_exec_applies_the_winner(tmp_path: Path) -> None:
    """The one real end-to-end run (issue 21: it was two, one per way of saving): a candidate whose trials fail is
    dropped, the winner is saved as the job's measured overlay, and the next plain `hosttune exec` of the same job
    runs it under the winner's plan. `--output` (a whole profile file for exec --profile) is the same search saved
    elsewhere: test_profile_measured.py::test_autotune_output_writes_a_whole_profile_that_exec_profile_runs."""
    from hosttune.profile import measured

    job = tmp_path / "job.py"
    job.write_text(JOB)
    scratch = tmp_path / "tmp"  # the trials' profile files go to a private directory under TMPDIR, removed after
    scratch.mkdir()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    env["TMPDIR"] = str(scratch)
    cmd = [sys.executable, str(job)]
    argv = [sys.executable, "-m", "hosttune", "autotune", "--budget", "10m", "--candidates", "omp-passive,omp-active",
            "--metric", r"([0-9.]+) samples/s", "--", *cmd]
    res = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "winner: omp-passive, x2.000" in res.stdout
    assert "omp-active" in res.stdout and "dropped: exit status 1" in res.stdout
    saved = measured.save_path(cmd)  # this test's own XDG_CONFIG_HOME (conftest's per-test scrub)
    assert f"saved: {saved}" in res.stdout, res.stdout
    text = saved.read_text()
    assert "OMP_WAIT_POLICY: PASSIVE" in text and "measured by hosttune autotune" in text
    assert list(scratch.iterdir()) == []
    # the next plain exec of the same job applies the overlay, says so once, and the job runs under it
    again = subprocess.run([sys.executable, "-m", "hosttune", "exec", "--", *cmd], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == "step 2: 200.0 samples/s", again.stdout  # OMP_WAIT_POLICY=PASSIVE
    assert again.stderr.count("measured overlay applied: omp-passive") == 1, again.stderr


def test_hosttune_train_is_tried_as_the_torchrun_line_it_runs(tmp_path: Path) -> None:
    """Was: `hosttune train --nproc 2 ...` ran as given inside each trial's exec, a single-process plan whose
    OMP_NUM_THREADS (the caller's, to train's own exec) every rank then took. Now the trials run train's ranks' line,
    planned as the 2-rank torchrun job it is, with the engine's scratch run directories."""
    import importlib.util

    from hosttune.autotune import rundirs
    from hosttune.commands.autotune import train_job

    assert train_job((sys.executable, "job.py", "--bs", "8")) == ([sys.executable, "job.py", "--bs", "8"], None)
    for bad, msg in ((["--profile", str(tmp_path / "p.yaml"), "--preset", "gpt-tiny"], "leave --profile"),
                     (["--preset", "nope"], "engine: "),
                     (["--nproc", "0", "--preset", "gpt-tiny"], "hosttune train: ")):
        with pytest.raises(UserError, match=msg):
            train_job(("hosttune", "train", *bad))
    if importlib.util.find_spec("torch") is None:
        pytest.skip("this interpreter has no torch for hosttune train's --python")
    job, note = train_job(("hosttune", "train", "--nproc", "2", "--python", sys.executable, "--preset", "gpt-tiny",
                           "--set", "steps=5"))
    i = job.index("torch.distributed.run")
    assert job[:i + 1] == [sys.executable, "-m", "torch.distributed.run"] and "--nproc_per_node=2" in job
    assert job[-4:] == ["--preset", "gpt-tiny", "--set", "steps=5"] and rundirs.engine_command(job)
    assert note is not None and note.startswith("hosttune train runs under its own hosttune exec")


# -- busy hosts: contention measured outside the job (a synthetic pressure source and clock, no wall time) ---------

class SyntheticHost:
    """A fake clock and a synthetic /proc/pressure/cpu `some total`: each trial advances the clock by its seconds and
    the stall counter by the share of them other work held the CPUs."""

    def __init__(self) -> None:
        self.now, self.stall = 0.0, 0.0

    def meter(self, psi: bool = True) -> "contention.Meter":
        return contention.Meter(psi=(lambda: self.stall) if psi else (lambda: None), load=lambda: None,
                                clock=lambda: self.now, cpus=2)

    def spend(self, seconds: float, share: float) -> None:
        self.now += seconds
        self.stall += share * seconds


class ScriptedRunner:
    """Scores from `score(name, trial index)`, contention from `share(trial index)`, read through a Meter on a
    SyntheticHost exactly as ExecRunner reads the real one."""

    def __init__(self, score: Callable[[str, int], Optional[float]], share: Callable[[int], float]):
        self.score, self.share, self.count = score, share, 0
        self.host = SyntheticHost()
        self.meter = self.host.meter()

    def run(self, name: str) -> search.Trial:
        token = self.meter.start()
        i, self.count = self.count, self.count + 1
        self.host.spend(10.0, self.share(i))
        return search.Trial(name, self.score(name, i), 10.0, busy=self.meter.stop(token))


def test_pressure_is_read_from_psi_else_from_the_load_above_the_job() -> None:
    text = "some avg10=1.72 avg60=2.50 avg300=14.44 total=10243688668\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    assert contention.psi_some_total(text) == pytest.approx(10243.688668)
    assert contention.psi_some_total("full avg10=0 total=5\n") is None
    assert contention.psi_some_total("some total=x\n") is None
    host = SyntheticHost()
    m = host.meter()
    token = m.start()
    host.spend(20.0, 0.25)
    assert m.stop(token) == pytest.approx(0.25)  # 5 s of stall in 20 s
    fallback = contention.Meter(psi=lambda: None, load=lambda: 3.0, clock=lambda: 0.0, cpus=2, job_threads=2)
    assert fallback.stop(fallback.start()) == pytest.approx(0.5)  # one runnable thread beyond the job's two, 2 CPUs
    blind = contention.Meter(psi=lambda: None, load=lambda: None, clock=lambda: 0.0, cpus=2)
    assert blind.stop(blind.start()) is None


def test_exec_runner_measures_each_trial_with_its_meter() -> None:
    from hosttune.autotune import runner

    host = SyntheticHost()
    r = runner.ExecRunner(["true"], {}, metric.compile_metric("x"), 5.0, {}, meter=host.meter())

    def fake_run(name: str) -> search.Trial:
        host.spend(8.0, 0.5)
        return search.Trial(name, 42.0, 8.0)

    r._run = fake_run  # type: ignore[method-assign]
    t = r.run(DEFAULT)
    assert t.score == 42.0 and t.busy == pytest.approx(0.5)


def _swinging_default(gain: float) -> Callable[[str, int], Optional[float]]:
    """The default alternates 100 / 80 from one trial to the next (a host whose tenants come and go); the candidate
    scores exactly `gain` x its two neighbours' geometric mean, so every round's ratio is `gain`."""
    def score(name: str, i: int) -> Optional[float]:
        d = [100.0, 80.0]
        return gain * math.sqrt(d[0] * d[1]) if name != DEFAULT else d[(i // 2) % 2]
    return score


def test_a_quiet_host_says_nothing_and_keeps_the_bootstrap_interval() -> None:
    res = search.search(["c"], ScriptedRunner(_swinging_default(1.06), lambda i: 0.01), BIG, 10.0)
    assert res.busy_share() == pytest.approx(0.01) and not res.busy() and res.contention_line() == ""
    w = res.winner(0.01)
    assert w is not None and (w.lo, w.hi) == pytest.approx((1.06, 1.06))


def test_a_busy_host_says_so_and_widens_by_the_defaults_own_swing() -> None:
    res = search.search(["c"], ScriptedRunner(_swinging_default(1.06), lambda i: 0.4), BIG, 10.0)
    assert res.busy() and res.widening() == pytest.approx(1.25)  # 100 vs 80: the default swings by x1.25
    line = res.contention_line()
    assert line.startswith("busy host: ") and "40%" in line and "x1.250" in line and "\n" not in line
    (c,) = res.confirmed()
    assert (c.lo, c.hi) == pytest.approx((1.06 / 1.25, 1.06 * 1.25))
    assert res.winner(0.01) is None  # a 6% gain is inside what the host does to the same plan twice
    assert res.contention_dict()["busy"] is True
    big = search.search(["c"], ScriptedRunner(_swinging_default(1.4), lambda i: 0.4), BIG, 10.0)
    w = big.winner(0.01)
    assert w is not None and w.name == "c" and w.lo == pytest.approx(1.4 / 1.25)  # a real gain still wins


def test_the_report_says_a_busy_host_in_the_table_the_json_and_each_trial_line() -> None:
    from hosttune.autotune import report

    res = search.search(["c"], ScriptedRunner(_swinging_default(1.06), lambda i: 0.4), BIG, 10.0)
    table = report.table(res, 0.01).splitlines()
    assert res.contention_line() in table and table.index(res.contention_line()) == len(table) - 1 - bool(res.stopped)
    assert json.loads(report.to_json(res, 0.01, None))["contention"] == res.contention_dict()
    assert report.trial_line(res.trials[0], res, 10).endswith("; host busy 40%)")
    quiet = search.search(["c"], ScriptedRunner(_swinging_default(1.06), lambda i: 0.0), BIG, 10.0)
    assert not any(line.startswith("busy host") for line in report.table(quiet, 0.01).splitlines())
    assert "host busy" not in report.trial_line(quiet.trials[0], quiet, 10)


def test_a_busy_host_gets_extra_confirmation_rounds_within_the_budget_and_says_so() -> None:
    """Was: a busy host got the same 8 confirmation rounds as a quiet one. Now the finalists get up to `confirm`
    more before the decision, as many as the budget holds, and the contention line says how many."""
    busy = search.search(["c"], ScriptedRunner(_swinging_default(1.4), lambda i: 0.4), BIG, 10.0)
    assert (busy.extra_planned, busy.extra_rounds) == (search.CONFIRM, search.CONFIRM)
    assert len(busy.confirm["c"]) == 2 * search.CONFIRM and len(busy.trials) == 1 + 2 * 2 * search.CONFIRM
    assert f"; {search.CONFIRM} extra confirmation round(s) run before deciding (of {search.CONFIRM})" in \
        busy.contention_line()
    assert busy.contention_dict()["extra_rounds"] == search.CONFIRM
    w = busy.winner(0.01)
    assert w is not None and w.rounds == 2 * search.CONFIRM  # crowned on every confirmation round
    # the budget bounds them: 8 rounds of one candidate are 17 trials of 10 s; 60 s more hold 3 rounds of 2 trials
    tight = search.search(["c"], ScriptedRunner(_swinging_default(1.4), lambda i: 0.4), 170 + 60, 10.0)
    assert tight.extra_rounds == 3 and tight.spent <= 230
    assert "3 extra confirmation round(s) run before deciding (of 8; the budget held no more)" in \
        tight.contention_line()
    cut = search.search(["c"], ScriptedRunner(_swinging_default(1.4), lambda i: 0.4), 100, 10.0)
    assert cut.stopped and cut.extra_rounds == 0 and "0 extra confirmation round(s) run before deciding (of 8; the " \
        "budget held no more)" in cut.contention_line()
    quiet = search.search(["c"], ScriptedRunner(_swinging_default(1.4), lambda i: 0.0), BIG, 10.0)
    assert (quiet.extra_planned, quiet.extra_rounds) == (0, 0) and len(quiet.confirm["c"]) == search.CONFIRM
    none = search.search(["c"], ScriptedRunner(_swinging_default(1.4), lambda i: 0.4), BIG, 10.0, extra=0)
    assert none.extra_rounds == 0 and "extra" not in none.contention_line()


def _rung_then_quiet(busy_c0: float) -> Callable[[str, int], Optional[float]]:
    """Three candidates; the first 7 trials (the halving rung) run under contention, the rest on a quiet host. c0 is
    the fastest when quiet (x1.3) and scores `busy_c0` of the default under contention; c1 is x1.15 throughout."""
    def score(name: str, i: int) -> Optional[float]:
        if name == "c0":
            return 100.0 * (busy_c0 if i < 7 else 1.3)
        return {DEFAULT: 100.0, "c1": 115.0, "c2": 40.0}[name]
    return score


def test_a_plan_that_collapses_under_contention_is_not_the_winner() -> None:
    def busy(i: int) -> float:
        return 0.5 if i < 7 else 0.0

    fragile = search.search(["c0", "c1", "c2"], ScriptedRunner(_rung_then_quiet(0.53), busy), BIG, 10.0)
    assert fragile.finalists == ["c1", "c0"] and not fragile.busy()  # most default trials were quiet: no widening
    assert fragile.fragile() == {"c0": pytest.approx(0.53)}
    w = fragile.winner(0.01)
    assert w is not None and w.name == "c1"  # c0's x1.3 when quiet does not buy its x0.53 under contention
    assert "c0 not kept: x0.53 in a contended round (the default's worst: x1.00)" in fragile.contention_line()
    graceful = search.search(["c0", "c1", "c2"], ScriptedRunner(_rung_then_quiet(0.95), busy), BIG, 10.0)
    assert graceful.fragile() == {} and graceful.contention_line() == ""
    w = graceful.winner(0.01)
    assert w is not None and w.name == "c0"


SLEEPER = """
import os, sys, time
open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(1)
"""


@pytest.mark.slow
@pytest.mark.integration
def test_sigterm_to_autotune_stops_the_running_trial(tmp_path: Path) -> None:
    job, marker = tmp_path / "job.py", tmp_path / "pid"
    job.write_text(SLEEPER)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), TMPDIR=str(tmp_path))
    # a 600 s trial window (the job is still running when SIGTERM comes); 4h: one candidate's 18 trials of 600 s fit
    argv = [sys.executable, "-m", "hosttune", "autotune", "--budget", "4h", "--trial", "600", "--candidates",
            "omp-passive", "--metric", "x", "--", sys.executable, str(job), str(marker)]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = 600
        while not marker.exists() and proc.poll() is None and deadline > 0:  # the first trial's job has started
            deadline -= 1
            subprocess.run(["sleep", "0.5"])
        assert marker.exists(), "the trial never started"
        pid = int(marker.read_text())
        proc.terminate()
        assert proc.wait(timeout=120) != 0
        for _ in range(240):  # its job goes with it (SIGTERM to the trial's group, SIGKILL after the grace)
            if not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid):
                break
            subprocess.run(["sleep", "0.5"])
        assert not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid), "the trial's job outlived autotune"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if marker.exists():  # on failure, leave no job behind
            try:
                os.kill(int(marker.read_text()), 9)
            except (ProcessLookupError, ValueError):
                pass


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:", 1)[1].split("\n", 1)[0]
    except (OSError, IndexError):
        return "zombie"


# ---- the root boundary: a trial and --dry-run start hosttune, never a `hosttune/` in the working directory ----------
@pytest.mark.integration  # real hosttune processes as root in another user's directory (make check leaves it out)
def test_as_root_autotune_dry_run_in_another_users_directory_never_imports_their_hosttune(
        other_user: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: `[sys.executable, "-m", "hosttune", "exec", ...]`, so `sudo hosttune autotune` run from a directory
    another user can write imported their `hosttune/` package as root (the working directory is first on sys.path
    under -m; PYTHONPATH, kept by `sudo -E`, too)."""
    marker = tmp_path / "planted-ran"
    home = other_user.home
    for rel in ("hosttune/__init__.py", "hosttune/__main__.py", "json.py", "yaml.py"):
        other_user.write(rel, f"open({str(marker)!r}, 'a').write({rel!r})\n")
    monkeypatch.chdir(home)
    monkeypatch.setenv("PYTHONPATH", str(home))
    r = run_cli(["autotune", "--dry-run", "--metric", "rate ([0-9.]+)", "--", "true"])
    assert not marker.exists(), f"planted code ran as root: {marker.read_text()}"
    assert r.returncode == 0, r.stderr
