"""hosttune/autotune/session.py's pure parts (issue 21): the trial window (given, spread over the budget, or refused
with exit 2), `--candidates` against what this host offers, what counts as the same plan (each rank's CPUs, memory,
env and the top env; nothing else), a candidate left out for planning what the default or an earlier one does, the
host the candidates are generated for (allocators, rank 0's threads and CPUs, the engine and its DataLoader
settings), the job's thread count, and the session's plan counts and scratch directory."""

import os
import stat
import types
from pathlib import Path
from typing import Any, Dict, List

import pytest

from hosttune.autotune import budget
from hosttune.autotune import candidates as cands
from hosttune.autotune import session as S
from hosttune.errors import UserError


# ---- window_for ----------------------------------------------------------------------------------------------------
def test_window_as_given_or_spread_over_the_budget() -> None:
    assert S.window_for(600.0, 4, 2, 10.0) == 10.0
    assert S.window_for(600.0, 4, 2, None) == budget.default_window(600.0, 4, 2)
    assert S.window_for(600.0, 4, 2, None) >= S.MIN_WINDOW_S


def test_window_refused_with_the_budgets_line() -> None:
    with pytest.raises(UserError) as e:
        S.window_for(10.0, 4, 2, 5.0)
    assert str(e.value) == budget.too_small(10.0, 5.0, 2)
    with pytest.raises(UserError, match="a trial needs at least 3 s"):
        S.window_for(600.0, 4, 2, 2.0)


# ---- _only ---------------------------------------------------------------------------------------------------------
def cand(name: str) -> Any:
    return types.SimpleNamespace(name=name)


def test_only_keeps_the_named_in_their_order_of_priority() -> None:
    found = [cand("a"), cand("b"), cand("c")]
    assert [c.name for c in S._only(found, [], ["c", "a"])] == ["a", "c"]
    assert S._only(found, ["d: left out, the same plan as default"], ["d"]) == []  # known, left out


def test_only_refuses_a_name_this_host_has_not() -> None:
    with pytest.raises(UserError) as e:
        S._only([cand("b"), cand("a")], [], ["a", "zz"])
    assert str(e.value) == "--candidates: no candidate 'zz' on this host (there are: a, b)"
    with pytest.raises(UserError, match=r"\(there are: none\)"):
        S._only([], [], ["x"])


# ---- _effective / _distinct ----------------------------------------------------------------------------------------
def plan(cpus: str = "0-3", env: Any = None, top: Any = None, **rank: Any) -> Dict[str, Any]:
    r = dict({"cpus": cpus, "mems": "0", "mem_policy": "bind", "env": env or {"OMP_NUM_THREADS": "4"}}, **rank)
    return {"ranks": [r], "env": top or {}}


def test_effective_is_what_the_ranks_get() -> None:
    base = S._effective(plan())
    assert S._effective(plan(threads=9, note="x")) == base  # what the plan says about itself is not the job's
    assert S._effective(plan(cpus="0-1")) != base
    assert S._effective(plan(mems="1")) != base and S._effective(plan(mem_policy="preferred")) != base
    assert S._effective(plan(env={"OMP_NUM_THREADS": "2"})) != base
    assert S._effective(plan(top={"MALLOC_CONF": "x"})) != base
    assert S._effective({"ranks": [plan()["ranks"][0], "junk"], "env": {}}) == base
    assert S._effective({}) == S._effective({"ranks": None, "env": None})


def test_distinct_leaves_out_the_same_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    plans = {"a": plan(cpus="0-1"), "b": plan(), "c": plan(cpus="0-1"), "d": plan(cpus="2-3")}
    monkeypatch.setattr(S.runner, "dry_plan", lambda command, path, env: plans[path])
    s = types.SimpleNamespace(candidates=[cand(n) for n in "abcd"], notes=[], command=["x"],
                              profiles={n: n for n in "abcd"})
    S._distinct(s, plan(), {})  # type: ignore[arg-type]
    assert [c.name for c in s.candidates] == ["a", "d"]
    assert s.notes == ["b: left out, the same plan as default on this host",
                       "c: left out, the same plan as a on this host"]


# ---- _host, _engine_sets, _job_threads -----------------------------------------------------------------------------
def facts(jemalloc: Any = None, tcmalloc: Any = None, minimal: Any = None, gpus: Any = ()) -> Any:
    a = types.SimpleNamespace(jemalloc=jemalloc, tcmalloc=tcmalloc, tcmalloc_minimal=minimal)
    return types.SimpleNamespace(allocators=a, gpus=list(gpus))


def test_host_from_rank_zero() -> None:
    h = S._host(facts(jemalloc="/lib/libjemalloc.so.2"), {"ranks": [{"threads": 6, "cpus": [0, 1, 2]}, {}]}, False,
                ["python", "train.py"])
    assert (h.jemalloc, h.tcmalloc, h.threads, h.logical_per_rank, h.engine, h.gpus, h.engine_sets) == (
        True, False, 6, 3, False, False, ())
    h = S._host(facts(minimal="/lib/libtcmalloc_minimal.so", gpus=[1]), {}, True)
    assert (h.jemalloc, h.tcmalloc, h.threads, h.logical_per_rank, h.engine, h.gpus) == (
        False, True, None, None, True, True)
    h = S._host(facts(tcmalloc="/lib/libtcmalloc.so"), {"ranks": ["junk"]}, False)
    assert h.tcmalloc is True and h.threads is None
    assert S._host(facts(), {"ranks": [{"threads": "6"}]}, False).threads is None


def test_engine_sets() -> None:
    assert S._engine_sets(["hosttune", "train", "--set", "num_workers=2", "--set=pin_memory=1"]) == (
        "num_workers", "pin_memory")
    assert S._engine_sets(["x", "pin_memory"]) == ("pin_memory",)
    assert S._engine_sets(["x", "num_workers_total=3", "--set=pin_memoryx"]) == ()


def test_job_threads() -> None:
    assert S._job_threads({"ranks": [{"threads": 4}, {"threads": 0}, {}, {"threads": "8"}, "junk"]}) == 7
    assert S._job_threads({}) == 0 and S._job_threads({"ranks": None}) == 0


# ---- the session ---------------------------------------------------------------------------------------------------
def session(names: List[str]) -> S.Session:
    return S.Session(["x"], None, 600.0, None, "DEFAULT-PROFILE", [cand(n) for n in names], [], 2)  # type: ignore


def test_plan_counts_follow_the_budget_plan() -> None:
    s = session(["a", "b", "c", "d"])
    assert s.names == ["a", "b", "c", "d"] and s.planned() == 4
    assert s.trials() == budget.total_trials(4, 2) and s.stages() == budget.schedule(4, 2)
    s.plan = budget.make(s.names, 1e9, 5.0, 2, "window")
    assert s.planned() == len(s.plan.kept)
    s.plan = types.SimpleNamespace(kept=("a", "b"))  # type: ignore[assignment]
    assert s.planned() == 2 and s.trials() == budget.total_trials(2, 2)
    assert s.profile_of(cands.DEFAULT) == "DEFAULT-PROFILE"


def test_start_writes_each_profile_privately_and_close_removes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    import hosttune.profile as profmod

    written: List[Path] = []

    def write(profile: Any, path: Path, force: bool = False) -> None:
        assert force is True
        path.write_text(str(profile))
        written.append(path)

    monkeypatch.setattr(profmod, "write", write)
    s = session(["a"])
    monkeypatch.setattr(s, "profile_of", lambda name: f"profile {name}")
    s.start()
    try:
        assert s.scratch is not None and stat.S_IMODE(os.stat(s.scratch).st_mode) == 0o700
        assert s.scratch.name.startswith("hosttune-autotune-")
        assert s.profiles == {cands.DEFAULT: s.scratch / f"{cands.DEFAULT}.yaml", "a": s.scratch / "a.yaml"}
        assert (s.scratch / "a.yaml").read_text() == "profile a"
        s.candidates.append(cand("b"))
        s.start()  # only the new one is written
        assert [p.name for p in written] == [f"{cands.DEFAULT}.yaml", "a.yaml", "b.yaml"]
    finally:
        scratch = s.scratch
        s.close()
    assert scratch is not None and not scratch.exists() and s.scratch is None
    s.close()
