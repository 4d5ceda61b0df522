"""Pins (issue 21, round 8 practice) for hosttune/autotune/session.py (and the plan text report.py makes of it):
`prepare` whole, on a fixed host (detect.collect replaced by fixed Facts: jemalloc and tcmalloc found, no GPU) with
`hosttune exec --dry-run` answered in-process from each profile file it is given (a plan that ignores the memory
policy, as on a one-node host): the candidates kept in priority order, every note (a variable the caller set, the
same plan as an earlier candidate, no GPU for pinning, no scratch run directory), the window and the plan at the
confirm count given, the job's threads, the profile files in a private scratch directory, and the plan text."""

import stat
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping

import pytest

import hosttune.detect
from hosttune.autotune import metric, report, stats
from hosttune.autotune import session as S
from hosttune.facts import Allocators, Facts

_FACTS = Facts(allocators=Allocators(jemalloc="/usr/lib/libjemalloc.so.2", tcmalloc="/usr/lib/libtcmalloc.so.4"))
# the settings a plan of this fake host depends on (memory_policy is not one: one NUMA node)
_KEYS = ("allocator:", "malloc_conf:", "threads:", "binding:", "env:", "  OMP_", "tcmalloc:", "  TCMALLOC_",
         "  num_workers:", "  pin_memory:")


def _plan(command: List[str], path: Path, env: Mapping[str, str]) -> Dict[str, Any]:
    key = [line.split("#")[0].strip() for line in path.read_text().splitlines() if line.startswith(_KEYS)]
    return {"ranks": [{"threads": 4, "cpus": [0, 1, 2, 3], "env": {"KEY": "|".join(key)}},
                      {"threads": 4, "cpus": [4, 5, 6, 7], "env": {}}], "env": {}}


NAMES = ["unbound", "glibc", "threads-2", "cores", "tcmalloc", "workers-0", "workers-4", "tcmalloc-norelease",
         "tcmalloc-bigcache", "jemalloc-decay", "jemalloc-nobg"]

NOTES = [
    "pin-memory: left out, no GPU (the engine pins DataLoader memory only with CUDA)",
    "omp-passive: left out, you set OMP_WAIT_POLICY (your value wins under exec)",
    "omp-active: left out, you set OMP_WAIT_POLICY (your value wins under exec)",
    "run directories: the command is not `hosttune train` nor `python -m hosttune.engine`, so no scratch --run-dir "
    "is added: the trials write where the job writes",
    "cores+memory: left out, the same plan as cores on this host",
]


def _prepare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Any:
    monkeypatch.setattr(hosttune.detect, "collect", lambda root, probe_torch=False: _FACTS)
    monkeypatch.setattr(S.runner, "dry_plan", _plan)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp makes the scratch directory
    env = {"HOSTTUNE_ETC_DIR": str(tmp_path / "etc"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "PATH": "/usr/bin:/bin", "OMP_WAIT_POLICY": "PASSIVE"}
    return S.prepare(["python3", "train.py"], metric.compile_metric(r"rate (\d+)"), 1800.0, engine=True, confirm=3,
                     environ=env, **kw)


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    s = _prepare(tmp_path, monkeypatch)
    yield s
    s.close()


def test_prepare_whole(session: Any, tmp_path: Path) -> None:
    s = session
    assert s.names == NAMES
    assert s.notes == NOTES
    assert (s.confirm, s.budget_s, s.job_threads, s.engine_runs, s.runs) == (3, 1800.0, 8, False, None)
    # 11 candidates at confirm=3: the warm-up, the first default, 22 + 24 + 18 rung trials, 2 x 2 x 3 confirming
    assert s.window_s == pytest.approx(1800.0 / (1.1 * 78))
    assert s.plan.to_dict() == {"basis": "window", "budget_s": 1800.0, "trial_s": 20.98, "measured_s": None,
                                "bound_s": None, "fits": 11, "of": 11, "planned_trials": 78, "kept": NAMES,
                                "left_out": []}
    assert (s.planned(), s.trials(), [st.trials for st in s.stages()]) == (11, 78, [22, 24, 18, 12])
    assert s.scratch.parent == tmp_path and s.scratch.name.startswith("hosttune-autotune-")
    assert stat.S_IMODE(s.scratch.stat().st_mode) == 0o700
    written = ["default", *NAMES, "cores+memory"]  # written before the dry plans left cores+memory out
    assert sorted(p.name for p in s.scratch.iterdir()) == sorted(f"{n}.yaml" for n in written)
    assert s.profiles == {n: s.scratch / f"{n}.yaml" for n in written}


def test_the_plan_text_of_the_session(session: Any) -> None:
    assert report.plan_text(session) == "\n".join(PLAN_TEXT)


PLAN_TEXT = [
    "autotune: 11 candidates against the default plan (throughput), metric 'rate (\\\\d+)'",
    "  unbound            no CPU or memory binding",
    "  glibc              glibc malloc, nothing preloaded",
    "  threads-2          2 thread(s) per rank (half the default's 4)",
    "  cores              disjoint core sets, no memory binding",
    "  tcmalloc           tcmalloc preloaded",
    "  workers-0          no DataLoader worker processes",
    "  workers-4          4 DataLoader workers per rank (the default: 2)",
    "  tcmalloc-norelease tcmalloc never returning freed memory to the OS (TCMALLOC_RELEASE_RATE=0)",
    "  tcmalloc-bigcache  tcmalloc with 256 MiB of thread caches in all (TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES)",
    "  jemalloc-decay     jemalloc purging freed pages (decay on, background thread)",
    "  jemalloc-nobg      jemalloc without its background purge thread",
    *[f"  ({n})" for n in NOTES],
    "  (listed in priority order, first kept when the budget holds fewer: binding, allocator and threads in turn, "
    "then DataLoader workers, allocator settings, OpenMP wait policy, pinned memory)",
    "order: each round runs D c1 D c2 ... cn D (D = the default, candidates reshuffled every round); each "
    "candidate's ratio is to the default trials next to it",
    "  rung 0   11 candidates x 1 round(s) = 22 trials (keep the better half)",
    "  rung 1   6 candidates x 2 round(s) = 24 trials (keep the better half)",
    "  rung 2   3 candidates x 3 round(s) = 18 trials (keep the better half)",
    "  confirm  2 candidates x 3 round(s) = 12 trials (finalists, fresh rounds that decide)",
    "  busy host: up to 3 extra confirmation rounds, as the budget allows, when the default's trials run contended",
    "budget: 1800 s = 78 trials of at most 21.0 s",
    "plan: budget 30m fits 11 of 11 candidates at 21 s a trial, the window",
    "after the default's first two trials the plan is made again at the second's length: a job that ends before "
    "its window fits more candidates, one that runs past it fewer",
]


def test_a_winner_saved_again_replaces_the_jobs_overlay_and_output_names_the_file(session: Any, tmp_path: Path) -> None:
    from hosttune import profile as profmod
    from hosttune.profile import measured

    s = session
    day0 = time.strftime("%Y-%m-%d", time.gmtime())
    first = report.save(s, None, stats.Summary("glibc", 8, 1.123, 1.05, 1.2), None)  # type: ignore[arg-type]
    again = report.save(s, None, stats.Summary("unbound", 6, 1.2, 1.1, 1.3), None)  # type: ignore[arg-type]
    assert first == again == measured.save_path(["python3", "train.py"])
    prof = profmod.load(str(again))
    when = prof.reasons["measured.date"]
    assert when in (day0, time.strftime("%Y-%m-%d", time.gmtime()))  # today (a run across midnight: either day)
    assert (prof.name, prof.binding, prof.memory_policy, prof.allocator) == (
        f"measured-{again.stem}", "none", "none", "jemalloc")
    assert prof.summary == (f"measured by hosttune autotune on {when}: unbound x1.200 the default (95% CI "
                            "1.100-1.300, 6 rounds)")
    assert {k: v for k, v in prof.reasons.items() if k.startswith("measured.")} == {
        "measured.candidate": "unbound", "measured.changes": "binding,memory_policy", "measured.date": when,
        "measured.interval": "1.100-1.300", "measured.job": "python3 train.py", "measured.ratio": "1.200",
        "measured.rounds": "6"}
    out = tmp_path / "out" / "mine.yaml"
    out.parent.mkdir()
    out.write_text("old\n")
    assert report.save(s, None, stats.Summary("glibc", 8, 1.1, 1.0, 1.2), str(out)) == out  # type: ignore[arg-type]
    mine = profmod.load(str(out))
    assert (mine.name, mine.allocator) == ("mine", "system")


@pytest.mark.parametrize("only,names", [
    ([], []), (["glibc", "unbound"], ["unbound", "glibc"]),  # asked for, in priority order
    (["cores+memory"], ["cores+memory"]),  # alone, it is compared with the default only
])
def test_only_the_candidates_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, only: List[str],
                                       names: List[str]) -> None:
    s = _prepare(tmp_path, monkeypatch, only=only)
    try:
        assert s.names == names
    finally:
        s.close()
