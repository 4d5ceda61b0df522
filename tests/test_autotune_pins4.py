"""Pins (issue 21, round 4) for autotune's candidates, metric and contention: exact names, values and boundaries."""

import dataclasses
import math
from typing import Any, List

import pytest

from hosttune.autotune import candidates as cands
from hosttune.autotune import contention, metric
from hosttune.errors import UserError


def _profile(**kw: Any) -> Any:
    from hosttune.profile.settings import Profile

    return dataclasses.replace(Profile("default", "the default", "built-in"), **kw)


def _names(default: Any, host: "cands.Host", environ: Any = None) -> List[str]:
    return [c.name for c in cands.generate(default, host, environ or {})[0]]


# -- candidates ------------------------------------------------------------------------------------------------------

def test_the_whole_candidate_list_of_a_full_host_in_priority_order() -> None:
    """Every alternative of a host with both allocators, 8 threads on 16 logical CPUs, the engine and a GPU."""
    host = cands.Host(jemalloc=True, tcmalloc=True, threads=8, logical_per_rank=16, engine=True, gpus=True)
    assert _names(_profile(), host) == [
        "unbound", "glibc", "threads-4", "cores", "tcmalloc", "threads-16",
        "workers-0", "workers-8", "tcmalloc-norelease", "tcmalloc-bigcache", "jemalloc-decay", "jemalloc-nobg",
        "omp-passive", "omp-active", "pin-memory-off"]


def test_jemalloc_is_a_candidate_only_where_the_default_does_not_already_preload_it() -> None:
    assert "jemalloc" not in _names(_profile(), cands.Host(jemalloc=True))  # auto preloads jemalloc when found
    assert "jemalloc" not in _names(_profile(allocator="jemalloc"), cands.Host(jemalloc=True))
    assert "jemalloc" in _names(_profile(allocator="system"), cands.Host(jemalloc=True))
    assert "jemalloc" in _names(_profile(allocator="tcmalloc"), cands.Host(jemalloc=True, tcmalloc=True))
    # tcmalloc is no alternative to a default that already preloads it, nor where it is not installed
    assert "tcmalloc" not in _names(_profile(allocator="tcmalloc"), cands.Host(tcmalloc=True))
    assert "tcmalloc" not in _names(_profile(allocator="system"), cands.Host(jemalloc=True))
    assert "glibc" not in _names(_profile(allocator="system"), cands.Host())  # changes nothing: left out


def test_allocator_candidates_change_exactly_their_settings() -> None:
    default = _profile(allocator="system")
    by = cands.by_name(cands.generate(default, cands.Host(jemalloc=True, tcmalloc=True), {})[0])
    assert by["jemalloc"].apply(default).allocator == "jemalloc"
    assert by["jemalloc"].apply(default).malloc_conf is None
    decay = by["jemalloc-decay"].apply(default)
    assert (decay.allocator, decay.malloc_conf) == ("jemalloc", "background_thread:true")
    nobg = by["jemalloc-nobg"].apply(default)
    assert (nobg.allocator, nobg.malloc_conf) == (
        "jemalloc", "oversize_threshold:1,background_thread:false,dirty_decay_ms:-1,muzzy_decay_ms:-1")
    assert by["tcmalloc"].apply(default).allocator == "tcmalloc"
    glibc = cands.by_name(cands.generate(_profile(), cands.Host(), {})[0])["glibc"]
    assert glibc.touches == ("LD_PRELOAD", "MALLOC_CONF") and glibc.apply(_profile()).allocator == "system"
    assert by["tcmalloc-norelease"].touches == ("LD_PRELOAD", "TCMALLOC_RELEASE_RATE")
    assert by["tcmalloc-bigcache"].touches == ("LD_PRELOAD", "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES")
    assert {by[n].knob for n in ("jemalloc-decay", "jemalloc-nobg", "tcmalloc-norelease")} == {"allocator settings"}
    assert {by[n].knob for n in ("tcmalloc", "jemalloc")} == {"allocator"} and glibc.knob == "allocator"
    # the profile's own tcmalloc settings stay beside the candidate's
    mine = _profile(tcmalloc={"TCMALLOC_SAMPLE_PARAMETER": "0"})
    big = cands.by_name(cands.generate(mine, cands.Host(tcmalloc=True), {})[0])["tcmalloc-bigcache"].apply(mine)
    assert dict(big.tcmalloc) == {"TCMALLOC_SAMPLE_PARAMETER": "0",
                                  "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES": "268435456"}


@pytest.mark.parametrize("binding, policy, expected", [
    ("auto", "bind", ["unbound", "cores"]),
    ("cores", "bind", ["unbound", "cores"]),
    ("auto", "none", ["unbound", "cores+memory"]),
    ("cores", "none", ["unbound", "cores+memory"]),
    ("none", "none", ["cores", "cores+memory"]),  # unbound is the default itself: left out
])
def test_binding_candidates_are_the_alternatives_to_the_default(binding: str, policy: str, expected: list) -> None:
    default = _profile(binding=binding, memory_policy=policy)
    found = cands.generate(default, cands.Host(), {})[0]
    assert [c.name for c in found if c.knob == "binding"] == expected
    by = cands.by_name(found)
    for name, b, m in (("unbound", "none", "none"), ("cores", "cores", "none"), ("cores+memory", "cores", "bind")):
        if name in by:
            applied = by[name].apply(default)
            assert (applied.binding, applied.memory_policy) == (b, m)


@pytest.mark.parametrize("threads, logical, expected", [
    (None, 8, []), (1, 8, ["threads-8"]), (2, None, ["threads-1"]), (2, 2, ["threads-1"]),
    (3, 4, ["threads-1", "threads-4"]), (4, 3, ["threads-2"]), (8, 16, ["threads-4", "threads-16"]),
])
def test_thread_candidates_halve_and_fill_the_rank(threads: Any, logical: Any, expected: list) -> None:
    found = cands.generate(_profile(), cands.Host(threads=threads, logical_per_rank=logical), {})[0]
    got = [c for c in found if c.knob == "threads"]
    assert [c.name for c in got] == expected
    for c in got:
        assert c.changes == {"threads": int(c.name.split("-")[1])} and c.touches == ("OMP_NUM_THREADS",)


def test_openmp_candidates_set_the_wait_policy_in_the_profiles_env() -> None:
    default = _profile(env={"FOO": "1"})
    by = cands.by_name(cands.generate(default, cands.Host(), {})[0])
    passive = by["omp-passive"].apply(default)
    assert dict(passive.env) == {"FOO": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    assert dict(by["omp-active"].apply(default).env) == {"FOO": "1", "OMP_WAIT_POLICY": "ACTIVE"}
    assert passive.name == "autotune-omp-passive"
    assert passive.reasons["env.OMP_WAIT_POLICY"] == (
        "autotune candidate omp-passive: OpenMP threads sleep when idle (OMP_WAIT_POLICY=PASSIVE)")
    unbound = by["unbound"].apply(default)
    assert unbound.reasons["binding"] == unbound.reasons["memory_policy"] == (
        "autotune candidate unbound: no CPU or memory binding")
    assert "env.OMP_WAIT_POLICY" not in unbound.reasons and "binding" not in passive.reasons


def test_a_candidate_whose_variable_the_caller_set_is_left_out_and_said_why() -> None:
    found, notes = cands.generate(_profile(), cands.Host(), {"OMP_WAIT_POLICY": "ACTIVE", "LD_PRELOAD": "x"})
    names = [c.name for c in found]
    assert "omp-passive" not in names and "omp-active" not in names and "glibc" not in names
    assert "unbound" in names  # touches no variable
    assert "omp-passive: left out, you set OMP_WAIT_POLICY (your value wins under exec)" in notes
    assert "glibc: left out, you set LD_PRELOAD (your value wins under exec)" in notes


def test_worker_candidates_from_the_profiles_own_count() -> None:
    dl = _profile().dataloader
    for workers, expected in ((3, ["workers-0", "workers-6"]), (0, ["workers-2"]), (1, ["workers-0", "workers-2"])):
        default = _profile(dataloader=dataclasses.replace(dl, num_workers=workers, prefetch_factor=4))
        found = cands.generate(default, cands.Host(threads=8, engine=True), {})[0]
        got = [c for c in found if c.knob == "workers"]
        assert [c.name for c in got] == expected
        for c in got:
            n = int(c.name.split("-")[1])
            applied = c.apply(default).dataloader
            assert applied.num_workers == n and applied.persistent_workers == "auto"
            assert applied.prefetch_factor == (4 if n else "auto")  # no prefetch without workers
            assert c.touches == ("HOSTTUNE_NUM_WORKERS",)
    # auto: policy's count for the rank's threads (8 -> 4), or for one thread when unknown (none)
    assert [c.name for c in cands.generate(_profile(), cands.Host(threads=8, engine=True), {})[0]
            if c.knob == "workers"] == ["workers-0", "workers-8"]
    assert [c.name for c in cands.generate(_profile(), cands.Host(engine=True), {})[0]
            if c.knob == "workers"] == ["workers-2"]


def test_pinning_candidate_flips_the_profiles_setting() -> None:
    dl = _profile().dataloader
    for pin, name, value in (("auto", "pin-memory-off", False), (True, "pin-memory-off", False),
                             (False, "pin-memory-on", True)):
        default = _profile(dataloader=dataclasses.replace(dl, pin_memory=pin))
        found = cands.generate(default, cands.Host(engine=True, gpus=True), {})[0]
        got = [c for c in found if c.knob == "pinning"]
        assert [c.name for c in got] == [name]
        assert got[0].apply(default).dataloader.pin_memory is value
        assert got[0].touches == ("HOSTTUNE_PIN_MEMORY",)
    found, notes = cands.generate(_profile(), cands.Host(engine=True, gpus=True, engine_sets=("pin_memory",)), {})
    assert notes == ["pin-memory: left out, your command sets pin_memory (the engine's config wins over the profile)"]
    found, notes = cands.generate(_profile(), cands.Host(engine=True, engine_sets=("num_workers",)), {})
    assert notes == ["workers: left out, your command sets num_workers (the engine's config wins over the profile)",
                     "pin-memory: left out, no GPU (the engine pins DataLoader memory only with CUDA)"]


def test_prioritized_takes_one_of_each_major_knob_in_turn_then_the_minor_knobs_in_order() -> None:
    def c(name: str, knob: str) -> "cands.Candidate":
        return cands.Candidate(name, "", knob=knob)

    found = [c("p1", "pinning"), c("o1", "openmp"), c("a1", "allocator"), c("a2", "allocator"),
             c("s1", "allocator settings"),
             c("w1", "workers"), c("t1", "threads"), c("b1", "binding"), c("b2", "binding"), c("x1", "other"),
             c("s2", "allocator settings")]
    assert [x.name for x in cands.prioritized(found)] == [
        "b1", "a1", "t1", "b2", "a2", "w1", "s1", "s2", "o1", "p1", "x1"]


def test_same_ignores_only_the_bookkeeping_fields() -> None:
    base = {"name": "a", "reasons": {}, "provenance": 1, "summary": "s", "source": "x", "threads": 2}
    assert cands._same(base, {**base, "name": "b", "reasons": {"k": 1}, "provenance": 2, "summary": "t", "source": "y"})
    assert not cands._same(base, {**base, "threads": 3})


# -- metric ----------------------------------------------------------------------------------------------------------

def test_the_expression_length_limit_is_500_characters() -> None:
    assert metric.compile_metric("a" * 500).text == "a" * 500
    with pytest.raises(UserError, match="longer than 500 characters"):
        metric.compile_metric("a" * 501)


def test_groups_and_warmups_are_checked() -> None:
    assert metric.compile_metric(r"(a)(?P<value>\d+)").pattern.groups == 2  # named: accepted
    with pytest.raises(UserError, match="more than one group"):
        metric.compile_metric(r"(a)(\d+)")
    assert metric.compile_metric("x", warmup_matches=0, warmup_s=0.0).warmup_matches == 0
    for kw in ({"warmup_matches": -1}, {"warmup_s": -0.5}, {"warmup_s": math.inf}, {"warmup_s": math.nan}):
        with pytest.raises(UserError, match="--warmup"):
            metric.compile_metric("x", **kw)
    spec = metric.compile_metric("x", lower_is_better=True, warmup_matches=3, warmup_s=1.5)
    assert (spec.lower_is_better, spec.warmup_matches, spec.warmup_s) == (True, 3, 1.5)
    assert metric.compile_metric("x").warmup_matches == 1 and not metric.compile_metric("x").lower_is_better


def test_the_warmup_boundaries_keep_the_match_at_exactly_the_limit() -> None:
    spec = metric.compile_metric(r"([0-9.]+) samples/s", warmup_matches=2, warmup_s=1.0)
    out = [(0.1, "1 samples/s"), (0.2, "2 samples/s"), (1.0, "3 samples/s")]
    assert metric.read(spec, out) == (3.0, "")  # the third match, at exactly warmup_s
    assert metric.read(spec, [*out, (2.0, "8 samples/s")]) == (8.0, "")  # the last of those kept
    assert metric.read(spec, out[:2]) == (
        None, "printed 2 metric line(s), all in the warm-up (first 2 match(es), first 1 s)")
    late = [(5.0, "1 samples/s"), (5.1, "2 samples/s"), (5.2, "9 samples/s")]
    assert metric.read(spec, late) == (9.0, "")
    timed = metric.compile_metric(r"([0-9.]+) samples/s", warmup_matches=0, warmup_s=1.0)
    assert metric.read(timed, [(0.99, "4 samples/s")])[0] is None
    assert metric.read(timed, [(1.0, "4 samples/s"), (0.5, "6 samples/s")])[0] == 4.0


def test_a_line_gives_its_last_match_and_only_positive_finite_numbers() -> None:
    spec = metric.compile_metric(r"([0-9.]+) it/s", warmup_matches=0)
    assert metric.read(spec, [(1.0, "3 it/s then 7 it/s")]) == (7.0, "")
    assert metric.read(spec, [(1.0, "0 it/s")])[0] is None  # zero is no throughput
    assert metric.read(spec, [(1.0, "5 it/s"), (1.1, "0 it/s")]) == (5.0, "")
    whole = metric.compile_metric(r"rate=\S+ at \S+", warmup_matches=0)
    assert metric.read(whole, [(1.0, "rate=3 at 12.5")])[0] == 12.5  # the last number in the match
    assert metric.read(whole, [(1.0, "rate=x at y")]) == (None, "printed no metric matching 'rate=\\\\S+ at \\\\S+'")
    named = metric.compile_metric(r"(?P<value>[0-9.]+)/(?P<other>[0-9.]+)", warmup_matches=0)
    assert metric.read(named, [(1.0, "2/8")])[0] == 2.0
    assert metric._number(metric.compile_metric(r"v(\S*)"), "v") is None  # an empty group: no number


def test_score_turns_a_step_time_around() -> None:
    assert metric.score(metric.compile_metric("x"), 4.0) == 4.0
    assert metric.score(metric.compile_metric("x", lower_is_better=True), 4.0) == 0.25


def test_the_engine_regex_reads_the_engines_throughput() -> None:
    spec = metric.compile_metric(metric.ENGINE_REGEX, warmup_matches=0)
    assert metric.read(spec, [(1.0, "step 10 loss 2.1 1234.5 samples/s 3 ms")])[0] == 1234.5


# -- contention ------------------------------------------------------------------------------------------------------

class Clock:
    def __init__(self, *times: float) -> None:
        self.times = list(times)

    def __call__(self) -> float:
        return self.times.pop(0)


def test_psi_share_is_the_stall_over_the_trials_seconds() -> None:
    stalls = iter([10.0, 13.0])
    m = contention.Meter(psi=lambda: next(stalls), load=lambda: 99.0, clock=Clock(100.0, 112.0), cpus=4)
    assert m.stop(m.start()) == pytest.approx(0.25)


def test_psi_never_gives_a_negative_share() -> None:
    stalls = iter([10.0, 9.0])
    m = contention.Meter(psi=lambda: next(stalls), load=lambda: None, clock=Clock(0.0, 10.0), cpus=4)
    assert m.stop(m.start()) == 0.0


def test_a_zero_length_trial_falls_back_to_the_load() -> None:
    stalls = iter([10.0, 12.0])
    m = contention.Meter(psi=lambda: next(stalls), load=lambda: 6.0, clock=Clock(5.0, 5.0), cpus=4, job_threads=2)
    assert m.stop(m.start()) == pytest.approx(1.0)  # (6 - 2) / 4


def test_psi_missing_at_the_end_falls_back_to_the_load() -> None:
    stalls = iter([10.0, None])
    m = contention.Meter(psi=lambda: next(stalls), load=lambda: 3.0, clock=Clock(0.0, 10.0), cpus=2)
    assert m.stop(m.start()) == pytest.approx(1.5)


def test_psi_missing_at_the_start_is_not_read_at_the_end() -> None:
    calls: List[int] = []

    def psi() -> Any:
        calls.append(1)
        return None if len(calls) == 1 else 50.0

    m = contention.Meter(psi=psi, load=lambda: 1.0, clock=Clock(0.0, 10.0), cpus=2)
    assert m.stop(m.start()) == pytest.approx(0.5) and len(calls) == 1


def test_load_below_the_jobs_threads_is_quiet_and_zero_cpus_counts_as_one() -> None:
    m = contention.Meter(psi=lambda: None, load=lambda: 1.0, clock=lambda: 0.0, cpus=4, job_threads=3)
    assert m.stop(m.start()) == 0.0
    zero = contention.Meter(psi=lambda: None, load=lambda: 2.5, clock=lambda: 0.0, cpus=0)
    assert zero.stop(zero.start()) == pytest.approx(2.5)


def test_psi_some_total_reads_microseconds_and_only_the_some_line() -> None:
    assert contention.psi_some_total("full avg10=0 total=9\nsome avg10=0.00 total=2500000\n") == 2.5
    assert contention.psi_some_total("") is None
    assert contention.psi_some_total("\nsome avg10=0.00\n") is None
    assert contention.BUSY == 0.10


def test_read_psi_reads_the_file(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "cpu"
    f.write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\n")
    monkeypatch.setattr(contention, "PSI_CPU", str(f))
    assert contention.read_psi() == 1.0
    monkeypatch.setattr(contention, "PSI_CPU", str(tmp_path / "absent"))
    assert contention.read_psi() is None
