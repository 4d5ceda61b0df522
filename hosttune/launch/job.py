"""The job model of `hosttune exec`: what runs (torchrun rewritten, an srun task, anything else), each local rank's
plan, and the environment the top process gets; `prepare` builds it (detection happens once, here) and
`render_text` / `Launch.to_dict` are what --dry-run prints.

Four shapes of job:
- torchrun (`torchrun ...`, `python -m torch.distributed.run ...`): Python ranks (a script, `-m`, `--run-path`)
  run as the user wrote them and apply their plan at interpreter start through the per-rank hook (`hook`);
  `--no-python` ranks, and every rank when the hook directory cannot be used (as root: not root's alone), start
  through hosttune/shim.py instead (the argv rewritten by torchrun.py). The plans of the known world size reach
  both through the handoff (handoff.py).
- launcher: another launcher that starts Python ranks (launchers.identify: torch.distributed.launch, accelerate,
  deepspeed, mpirun/mpiexec, srun). It runs as given, supervised like torchrun; every rank applies its own plan at
  interpreter start through the per-rank hook (hook.py), for the local rank count the command line tells
  (`KnownLauncher.local_ranks`) or, when it does not, for the count the rank's own variables tell.
- an srun task (SLURM_LOCALID set, no launcher), or a rank of any other launcher that started hosttune itself
  (kind "rank": `mpirun -np 2 hosttune exec -- ...`, `torchrun --no-python hosttune exec -- ...`; the variables
  of rankvars.py): this process is one rank of the node's ranks.
- anything else (plain): one rank that owns the whole allowed set. Its Python children still find their own
  plans through the hook: ranks an unknown launcher or the program itself starts with LOCAL_RANK & co.
  (Lightning), and multiprocessing children without rank variables (an even share of threads, one warning).

Every kind puts the hook on the job's PYTHONPATH (hook.job_env) with a handoff that carries the plans of the world
sizes foreseen here (`more_plans`).
"""

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune.cpulist import format_cpulist as _cpulist
from hosttune.errors import UserError
from hosttune.launch import rankvars
from hosttune.launch.torchrun import TorchrunArgv, nproc_per_node, parse_torchrun, rewrite_torchrun
from hosttune.launch.torchrun import endpoint as torchrun_endpoint


@dataclass
class Launch:
    kind: str  # torchrun | launcher | srun | rank | plain
    argv: List[str]  # what runs (torchrun rewritten; plain/srun: the command itself, maybe behind numactl)
    ranks: List[Any]  # RankPlan of each local rank known now (torchrun: --nproc-per-node of them)
    env: Dict[str, str]  # the environment the top process gets (torchrun: common env; plain: the rank's env)
    touched: Dict[str, Optional[str]]  # variables set for torchrun -> the user's own value (None: was unset)
    facts: Any
    profile: Any
    no_bind: bool = False
    torchrun: Optional[TorchrunArgv] = None  # the user's torchrun command line, taken apart
    override: bool = False  # --override: the profile's values replace the caller's own (plan.settle)
    bound_by: Optional[str] = None  # the launcher binds the ranks itself (torchrun --numa-binding=MODE)
    launcher: Any = None  # kind "launcher": launchers.KnownLauncher
    more_plans: List[Any] = field(default_factory=list)  # plans of other world sizes, handed to the per-rank hook
    hook: bool = False  # torchrun: the ranks apply their plans through the hook, not the shim (argv as given)
    measured_note: Optional[str] = None  # the one line about the job's measured overlay (applied, or stale)

    def to_dict(self) -> Dict[str, Any]:
        """{kind, argv, ranks, env}: each rank is its `RankPlan.to_dict()`; with --no-bind nothing is bound."""
        ranks = []
        for plan in self.ranks:
            rank = plan.to_dict()
            if self.no_bind:
                rank.update(cpus=[], mems=[], mem_policy="none")
                if self.bound_by is None:  # --no-bind: the plan's binding and memory lines are not what happens
                    rank["reasons"] = ["binding: none - --no-bind, the environment only" if r.startswith("binding:")
                                       else r for r in rank["reasons"] if not r.startswith("memory:")]
            ranks.append(rank)
        return {"kind": self.kind, "argv": list(self.argv), "ranks": ranks, "env": dict(self.env)}


@dataclass(frozen=True)
class _Inputs:
    """What every shape of job is planned from: the host, the profile, the caller's environment, the options."""
    facts: Any
    prof: Any
    env_in: Dict[str, str]
    no_bind: bool
    override: bool


def prepare(
    command: Sequence[str],
    *,
    profile: Optional[str] = None,
    root: Optional[Path] = None,
    no_bind: bool = False,
    environ: Optional[Mapping[str, str]] = None,
    facts: Any = None,
    shim_python: Optional[str] = None,
    override: bool = False,
    measured: bool = True,
) -> Launch:
    """Detect once, pick the job's shape, and resolve the plan of every local rank known now. `environ` is the
    caller's own environment: what they set there wins over the profile unless `override` (plan.settle). Unless
    `measured` is False or `profile` is given, the job's measured overlay (profile.measured) is laid over the
    profile in use when it was measured on this kind of host; `measured_note` says so."""
    from hosttune import profile as profmod

    env_in: Dict[str, str] = dict(os.environ if environ is None else environ)
    if not command:
        raise UserError("exec: no COMMAND given (hosttune exec [OPTIONS] -- COMMAND [ARGS...])")
    if facts is None:
        from hosttune import detect

        facts = detect.collect(root or Path("/"), probe_torch=False, use_nvml=root is None)
    prof, note = profmod.active(profile, facts), None
    if measured and profile is None:
        from hosttune.profile import measured as overlays

        prof, note = overlays.apply(prof, command, facts.hardware_fingerprint(), env_in)
    job = _Inputs(facts, prof, env_in, no_bind, override)
    t = parse_torchrun(command, env_in)
    if t is not None:
        launch = _torchrun_job(job, command, t, shim_python)
    else:
        known = _identify(command, env_in, facts)
        launch = _launcher_job(job, known) if known is not None else _rank_job(job, command)
    launch.measured_note = note
    return launch


def _plans(job: _Inputs, n: int, plan_env: Mapping[str, str], bound_by: Optional[str],
           endpoint: Any = None) -> Tuple[List[Any], Dict[str, str]]:
    """The n ranks' plans and the env common to them, planned from `plan_env`. Torchrun and
    torch.distributed.launch force OMP_NUM_THREADS=1 (and warn) when it is unset: the common env carries rank 0's
    share instead, so that a rank the hook or shim cannot reach (a binary, `python -I`) still gets it, not 1."""
    from hosttune import plan as planmod

    ranks = [planmod.resolve(job.facts, job.prof, r, n, environ=plan_env, override=job.override, bound_by=bound_by,
                             endpoint=endpoint) for r in range(n)]
    common = dict(planmod.common_env(job.facts, job.prof, environ=plan_env, override=job.override, endpoint=endpoint))
    if "OMP_NUM_THREADS" not in job.env_in and ranks and "OMP_NUM_THREADS" in ranks[0].env:
        common["OMP_NUM_THREADS"] = ranks[0].env["OMP_NUM_THREADS"]
    return ranks, common


def _torchrun_job(job: _Inputs, command: Sequence[str], t: TorchrunArgv, shim_python: Optional[str]) -> Launch:
    from hosttune.launch import hook

    env_in = job.env_in
    n = nproc_per_node(t, env_in, job.facts)
    mode = t.value("numa_binding", env_in, "")
    bound_by = f"torchrun --numa-binding={mode}" if mode else None  # torchrun binds: we must not on top
    ranks, common = _plans(job, n, env_in, bound_by, torchrun_endpoint(t, env_in))
    hooked = t.mode != "no_python" and bool(hook.job_env(env_in))
    argv = list(command) if hooked else rewrite_torchrun(t, env_in, shim_python or sys.executable)
    return Launch(kind="torchrun", argv=argv, ranks=ranks, env=common, touched={k: env_in.get(k) for k in common},
                  facts=job.facts, profile=job.prof, no_bind=job.no_bind or bound_by is not None, torchrun=t,
                  override=job.override, bound_by=bound_by, hook=hooked)


def _launcher_job(job: _Inputs, known: Any) -> Launch:
    n = known.local_ranks
    bound_by = known.bound_by
    # A thread count given to the launcher (accelerate --num_cpu_threads_per_process, mpirun -x
    # OMP_NUM_THREADS=N) is the user's own OMP_NUM_THREADS for every rank: it wins like one set in the env.
    plan_env = job.env_in if known.threads is None else {**job.env_in, "OMP_NUM_THREADS": str(known.threads)}
    ranks, common = _plans(job, n or 0, plan_env, bound_by, known.endpoint)
    more = _foreseen(job.facts, job.prof, plan_env, job.override, bound_by, {n} if n else set(), known.endpoint)
    return Launch(kind="launcher", argv=list(known.argv), ranks=ranks, env=common,
                  touched={k: job.env_in.get(k) for k in common}, facts=job.facts, profile=job.prof,
                  no_bind=job.no_bind or bound_by is not None, override=job.override, bound_by=bound_by,
                  launcher=known, more_plans=more)


def _rank_job(job: _Inputs, command: Sequence[str]) -> Launch:
    """`srun hosttune exec --`, `mpirun -np 2 hosttune exec --` ...: one rank of them; else plain, one rank of one."""
    from hosttune import plan as planmod

    env_in = job.env_in
    place = rankvars.place(env_in)
    kind = "plain" if place is None else "srun" if place.source == rankvars.SLURM_RANK else "rank"
    local, size = (0, 1) if place is None else (place.local_rank, place.local_world_size)
    plan = planmod.resolve(job.facts, job.prof, local, size, environ=env_in, override=job.override)
    more = _foreseen(job.facts, job.prof, env_in, job.override, None, {size})
    return Launch(kind=kind, argv=list(command), ranks=[plan], env=dict(plan.env),
                  touched={k: env_in.get(k) for k in plan.env}, facts=job.facts, profile=job.prof,
                  no_bind=job.no_bind, override=job.override, more_plans=more)


def _identify(command: Sequence[str], environ: Mapping[str, str], facts: Any) -> Any:
    """launchers.identify with this host's GPU and NUMA counts (their default rank counts depend on them)."""
    from hosttune.launch import launchers

    nodes = getattr(getattr(facts, "numa", None), "nodes", ()) or ()
    numa_nodes = sum(1 for node in nodes if getattr(node, "cpus", ())) or None
    return launchers.identify(command, environ, gpus=len(facts.gpus), numa_nodes=numa_nodes)


# World sizes planned ahead for the hook besides the one the command line tells: the common shapes (two ranks,
# one per GPU, one per NUMA node). Every other size is planned inside the rank from the handed facts, which costs
# that rank an import of the planner (tens of ms); planning them all here would cost every job.
def _foreseen(facts: Any, prof: Any, environ: Mapping[str, str], override: bool, bound_by: Optional[str],
              known: "set[int]", endpoint: Any = None) -> List[Any]:
    from hosttune import plan as planmod
    from hosttune.launch.torchrun import MAX_NPROC_PER_NODE

    nodes = getattr(getattr(facts, "numa", None), "nodes", ()) or ()
    sizes = {2, len(facts.gpus), sum(1 for node in nodes if getattr(node, "cpus", ()))}
    out: List[Any] = []
    for n in sorted(s for s in sizes - known if 2 <= s <= MAX_NPROC_PER_NODE):
        out.extend(planmod.resolve(facts, prof, r, n, environ=environ, override=override, bound_by=bound_by,
                                   endpoint=endpoint) for r in range(n))
    return out


def notices(launch: Launch) -> List[str]:
    """What `exec` says once on stderr when the job starts: who binds when it is not hosttune, and each variable
    the caller's own setting kept (the same line for every rank, said once)."""
    lines: List[str] = []
    from hosttune.plan.network import WARNING

    lines.extend(r for r in (launch.ranks[0].reasons if launch.ranks else ()) if r.startswith(WARNING))
    if launch.bound_by:
        lines.append(f"{launch.bound_by} binds the ranks; hosttune does not bind on top (it sets threads, "
                     f"allocator and env){_no_gpu_note(launch)}")
    for plan in launch.ranks:
        for line in plan.kept_lines():
            if line not in lines:
                lines.append(line)
    return lines


def _no_gpu_note(launch: Launch) -> str:
    if launch.kind == "torchrun" and not getattr(launch.facts, "gpus", ()):
        # torch.numa.binding finds each rank's NUMA node from cuda:LOCAL_RANK: without a GPU torchrun cannot start
        return "; but this host has no GPU, and torchrun's NUMA binding places each rank by its GPU, so it will fail"
    return ""


def render_text(launch: Launch) -> str:
    import shlex

    d = launch.to_dict()
    what = f" ({launch.launcher.name}, {launch.launcher.local_ranks or 'unknown'} local ranks)" \
        if launch.launcher is not None else ""
    lines = [f"# {launch.kind} job{what}", "argv: " + shlex.join(d["argv"])]
    if launch.launcher is not None:
        lines.extend(f"# {note}" for note in launch.launcher.notes)
    if launch.bound_by:
        lines.append(f"# {launch.bound_by} binds each rank: hosttune binds nothing on top (no affinity, memory "
                     f"policy or numactl); threads, allocator and env as below{_no_gpu_note(launch)}")
    if launch.kind in ("torchrun", "launcher"):
        lines.append(f"{launch.launcher.name if launch.launcher else 'torchrun'} env (same for every rank):")
        lines.extend(f"  {k}={shlex.quote(v)}" for k, v in sorted(d["env"].items()))
    for r in d["ranks"]:
        cpus = _cpulist(r["cpus"]) or "(not bound)"
        mems = _cpulist(r["mems"]) or "-"
        gpu = f" gpu {r['gpu']}" if r["gpu"] else ""
        head = f"rank {r['local_rank']}/{r['local_world_size']}"
        lines.append(f"{head}: cpus {cpus} mems {mems} ({r['mem_policy']}){gpu}")
        common = d["env"] if launch.kind in ("torchrun", "launcher") else {}
        for k, v in sorted(r["env"].items()):
            if common.get(k) != v:
                lines.append(f"  {k}={shlex.quote(v)}")
        lines.extend(f"  # {reason}" for reason in r["reasons"])
    if launch.kind == "torchrun":
        how = "per-rank hook" if launch.hook else "shim"
        lines.append(f"(restarted ranks and a changed world size get their plan again from the {how})")
    elif launch.kind == "launcher":
        lines.append("(each Python rank applies its plan at start from LOCAL_RANK/OMPI_COMM_WORLD_LOCAL_RANK/... "
                     "through hosttune's per-rank hook)")
    else:
        lines.append("(Python processes this job starts with rank variables apply their own plan at start; "
                     "multiprocessing children without them get an even share of the threads)")
    return "\n".join(lines)

