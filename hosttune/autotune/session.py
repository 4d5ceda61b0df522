"""An autotune session: the default profile and the candidates for this host and command, their profile files in
a private scratch directory, the schedule and the trial window that fit the budget, and the search run on them.

`prepare` detects the host once, loads the default profile (`profile.active`: what `hosttune exec` uses without
`--profile`), asks `hosttune exec --dry-run --json` for rank 0's threads and CPUs under it, and builds the
candidates (in priority order, candidates.prioritized). The budget is planned before any trial (budget.py): one
too small for even one candidate with its confirmation rounds is refused at once, and `plan` holds the candidates
the budget holds at the window's length; the search plans again at the default's second trial's measured length.
`start` writes every candidate (and the default) as a profile file (`profile.write` -> `fsio`) into a
fresh 0700 directory that `close` removes: only hosttune's own files, never anything of the job's. A command that
starts the bundled engine gets a scratch run directory per trial (rundirs.py), made in `run` and removed as it goes.
"""

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune.autotune import budget, contention, metric, rundirs, runner, search
from hosttune.autotune import candidates as cands
from hosttune.errors import UserError

MIN_WINDOW_S = budget.MIN_WINDOW_S


@dataclass
class Session:
    command: List[str]
    spec: metric.MetricSpec
    budget_s: float
    facts: Any
    default: Any  # Profile
    candidates: List[cands.Candidate]
    notes: List[str]
    confirm: int = budget.CONFIRM
    window_s: float = 0.0
    scratch: Optional[Path] = None
    profiles: Dict[str, Path] = field(default_factory=dict)
    job_threads: int = 0  # runnable threads of the job under the default plan (the load-average fallback's share)
    engine_runs: bool = False  # the command starts the bundled engine: each trial in a scratch run directory
    runs: Optional[rundirs.RunDirs] = None
    plan: Optional[budget.Plan] = None  # what the budget holds at the window's length (before any trial)

    @property
    def names(self) -> List[str]:
        return [c.name for c in self.candidates]

    def planned(self) -> int:
        """The candidates the search plans for before any trial: those the budget holds at the window's length."""
        return len(self.plan.kept) if self.plan is not None else len(self.candidates)

    def stages(self) -> List[budget.Stage]:
        return budget.schedule(self.planned(), self.confirm)

    def trials(self) -> int:
        return budget.total_trials(self.planned(), self.confirm)

    def profile_of(self, name: str) -> Any:
        if name == cands.DEFAULT:
            return self.default
        return cands.by_name(self.candidates)[name].apply(self.default)

    def start(self) -> None:
        """Write the default and every candidate as a profile file into a fresh private directory."""
        from hosttune import profile as profmod

        if self.scratch is None:
            self.scratch = Path(tempfile.mkdtemp(prefix="hosttune-autotune-"))
        for name in [cands.DEFAULT, *self.names]:
            if name not in self.profiles:
                path = self.scratch / f"{name}.yaml"
                profmod.write(self.profile_of(name), path, force=True)
                self.profiles[name] = path

    def run(self, progress: Optional[Callable[[search.Trial, search.Result], None]] = None,
            environ: Optional[Mapping[str, str]] = None) -> search.Result:
        if self.scratch is None:
            self.start()
        if self.engine_runs and self.runs is None:
            self.runs = rundirs.RunDirs()
        r = runner.ExecRunner(self.command, self.profiles, self.spec, self.window_s, environ,
                              contention.Meter(job_threads=self.job_threads), self.runs)
        res = search.search(self.names, r, self.budget_s, self.window_s, confirm=self.confirm, progress=progress,
                            replan=True)
        res.window_plan = self.plan
        return res

    def close(self) -> None:
        if self.runs is not None:
            self.runs.close()
            self.runs = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


def window_for(budget_s: float, n: int, confirm: int, window_s: Optional[float]) -> float:
    """The trial window: as given, else the budget spread over the trials of as many candidates as get at least
    MIN_WINDOW_S each (budget.default_window); a budget too small for one candidate is a UserError (exit 2)."""
    problem = budget.too_small(budget_s, window_s, confirm)
    if problem is not None:
        raise UserError(problem)
    return window_s if window_s is not None else budget.default_window(budget_s, n, confirm)


def prepare(command: Sequence[str], spec: metric.MetricSpec, budget_s: float, *, window_s: Optional[float] = None,
            engine: bool = False, confirm: int = budget.CONFIRM, only: Optional[Sequence[str]] = None,
            environ: Optional[Mapping[str, str]] = None) -> Session:
    """Everything up to the first trial (the plan --dry-run prints); `only`: these candidates' names. The caller
    closes the session."""
    from hosttune import detect
    from hosttune import profile as profmod

    problem = budget.too_small(budget_s, window_s, confirm)
    if problem is not None:  # before anything runs: no candidate could be confirmed, whatever the host
        raise UserError(problem)
    env = dict(os.environ if environ is None else environ)
    facts = detect.collect(Path("/"), probe_torch=False)
    default = profmod.active(None, facts, env)
    s = Session(list(command), spec, budget_s, facts, default, [], [], confirm)
    s.engine_runs = rundirs.engine_command(command)
    try:
        s.start()  # the default as a file: the dry plans below read exactly what the trials will run
        plan = runner.dry_plan(command, s.profiles[cands.DEFAULT], env)
        s.candidates, s.notes = cands.generate(default, _host(facts, plan, engine, command), env)
        s.job_threads = _job_threads(plan)
        if engine and not s.engine_runs:
            s.notes.append("run directories: the command is not `hosttune train` nor `python -m hosttune.engine`, so "
                           "no scratch --run-dir is added: the trials write where the job writes")
        if only is not None:
            s.candidates = _only(s.candidates, s.notes, only)
        s.start()
        _distinct(s, plan, env)
        s.window_s = window_for(budget_s, len(s.candidates), confirm, window_s)
        s.plan = budget.make(s.names, budget_s, s.window_s, confirm, "window")
    except BaseException:
        s.close()
        raise
    return s


def _only(found: List[cands.Candidate], notes: List[str], only: Sequence[str]) -> List[cands.Candidate]:
    names = {c.name for c in found}
    left = {n.split(":", 1)[0] for n in notes}
    unknown = [n for n in only if n not in names and n not in left]
    if unknown:
        raise UserError(f"--candidates: no candidate {unknown[0]!r} on this host (there are: "
                        f"{', '.join(sorted(names)) or 'none'})")
    return [c for c in found if c.name in only]


def _effective(plan: Mapping[str, Any]) -> Any:
    """What a plan does to the job: each rank's CPUs, memory and env, and the top process's env."""
    ranks = [(r.get("cpus"), r.get("mems"), r.get("mem_policy"), sorted((r.get("env") or {}).items()))
             for r in plan.get("ranks") or [] if isinstance(r, dict)]
    return json.dumps([ranks, sorted((plan.get("env") or {}).items())], sort_keys=True, default=str)


def _distinct(s: Session, default_plan: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """Leave out a candidate whose plan for this command on this host is the default's or an earlier one's."""
    seen = {_effective(default_plan): cands.DEFAULT}
    kept: List[cands.Candidate] = []
    for c in s.candidates:
        eff = _effective(runner.dry_plan(s.command, s.profiles[c.name], env))
        if eff in seen:
            s.notes.append(f"{c.name}: left out, the same plan as {seen[eff]} on this host")
            continue
        seen[eff] = c.name
        kept.append(c)
    s.candidates = kept


def _host(facts: Any, plan: Mapping[str, Any], engine: bool, command: Sequence[str] = ()) -> cands.Host:
    ranks = plan.get("ranks") or [{}]
    r0 = ranks[0] if isinstance(ranks[0], dict) else {}
    threads = r0.get("threads")
    cpus = r0.get("cpus") or []
    a = facts.allocators
    return cands.Host(jemalloc=bool(a.jemalloc), tcmalloc=bool(a.tcmalloc or a.tcmalloc_minimal),
                      threads=threads if isinstance(threads, int) else None,
                      logical_per_rank=len(cpus) or None, engine=engine or rundirs.engine_command(command),
                      gpus=bool(facts.gpus), engine_sets=_engine_sets(command))


def _engine_sets(command: Sequence[str]) -> Tuple[str, ...]:
    """The DataLoader settings the engine's own config takes from the command (`--set num_workers=2`)."""
    return tuple(k for k in ("num_workers", "pin_memory") if any(w.split("=", 1)[0] == k or w.startswith(f"--set={k}=")
                                                                  for w in command))


def _job_threads(plan: Mapping[str, Any]) -> int:
    """The job's threads under a plan: each rank's OMP threads (1 when the plan leaves them unset)."""
    ranks = [r for r in plan.get("ranks") or [] if isinstance(r, dict)]
    return sum(r["threads"] if isinstance(r.get("threads"), int) and r["threads"] > 0 else 1 for r in ranks)
