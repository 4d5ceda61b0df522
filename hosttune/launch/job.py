"""The job model of `hosttune exec`: what runs (torchrun rewritten, an srun task, anything else), each local rank's
plan, and the environment the top process gets; `prepare` builds it (detection happens once, here) and
`render_text` / `Launch.to_dict` are what --dry-run prints.

Three shapes of job:
- torchrun (`torchrun ...`, `python -m torch.distributed.run ...`): the argv is rewritten (torchrun.py) so that
  every rank starts through hosttune/shim.py; the plans of the known world size reach the shims through the
  handoff (handoff.py).
- an srun task (SLURM_LOCALID set, no torchrun): this process is one rank of the node's tasks.
- anything else: one rank that owns the whole allowed set.
"""

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from hosttune.cpulist import format_cpulist as _cpulist
from hosttune.errors import UserError
from hosttune.launch.slurm import slurm_rank
from hosttune.launch.torchrun import TorchrunArgv, nproc_per_node, parse_torchrun, rewrite_torchrun


@dataclass
class Launch:
    kind: str  # torchrun | srun | plain
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

    def to_dict(self) -> Dict[str, Any]:
        """{kind, argv, ranks, env}: each rank is its `RankPlan.to_dict()`; with --no-bind nothing is bound."""
        ranks = []
        for plan in self.ranks:
            rank = plan.to_dict()
            if self.no_bind:
                rank.update(cpus=[], mems=[], mem_policy="none")
            ranks.append(rank)
        return {"kind": self.kind, "argv": list(self.argv), "ranks": ranks, "env": dict(self.env)}


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
) -> Launch:
    """Detect once, pick the job's shape, and resolve the plan of every local rank known now. `environ` is the
    caller's own environment: what they set there wins over the profile unless `override` (plan.settle)."""
    from hosttune import plan as planmod
    from hosttune import profile as profmod

    env_in: Dict[str, str] = dict(os.environ if environ is None else environ)
    if not command:
        raise UserError("exec: no COMMAND given (hosttune exec [OPTIONS] -- COMMAND [ARGS...])")
    if facts is None:
        from hosttune import detect

        facts = detect.collect(root or Path("/"), probe_torch=False, use_nvml=root is None)
    prof = profmod.active(profile, facts)
    t = parse_torchrun(command, env_in)
    if t is not None:
        n = nproc_per_node(t, env_in, facts)
        mode = t.value("numa_binding", env_in, "")
        bound_by = f"torchrun --numa-binding={mode}" if mode else None  # torchrun binds: we must not on top
        ranks = [planmod.resolve(facts, prof, r, n, environ=env_in, override=override, bound_by=bound_by)
                 for r in range(n)]
        common = dict(planmod.common_env(facts, prof, environ=env_in, override=override))
        # torchrun forces OMP_NUM_THREADS=1 (and warns) when it is unset; every shim sets its rank's own value.
        if "OMP_NUM_THREADS" not in env_in and ranks and "OMP_NUM_THREADS" in ranks[0].env:
            common["OMP_NUM_THREADS"] = ranks[0].env["OMP_NUM_THREADS"]
        touched = {k: env_in.get(k) for k in common}
        argv = rewrite_torchrun(t, env_in, shim_python or sys.executable)
        return Launch(kind="torchrun", argv=argv, ranks=ranks, env=common, touched=touched, facts=facts, profile=prof,
                      no_bind=no_bind or bound_by is not None, torchrun=t, override=override, bound_by=bound_by)
    slurm = slurm_rank(env_in)
    kind = "plain" if slurm is None else "srun"
    local, size = (0, 1) if slurm is None else slurm
    plan = planmod.resolve(facts, prof, local, size, environ=env_in, override=override)
    return Launch(kind=kind, argv=list(command), ranks=[plan], env=dict(plan.env), touched={}, facts=facts,
                  profile=prof, no_bind=no_bind, override=override)


def notices(launch: Launch) -> List[str]:
    """What `exec` says once on stderr when the job starts: who binds when it is not hosttune, and each variable
    the caller's own setting kept (the same line for every rank, said once)."""
    lines: List[str] = []
    if launch.bound_by:
        lines.append(f"{launch.bound_by} binds the ranks; hosttune does not bind on top (it sets threads, "
                     f"allocator and env)")
    for plan in launch.ranks:
        for line in plan.kept_lines():
            if line not in lines:
                lines.append(line)
    return lines


def render_text(launch: Launch) -> str:
    import shlex

    d = launch.to_dict()
    lines = [f"# {launch.kind} job", "argv: " + shlex.join(d["argv"])]
    if launch.bound_by:
        lines.append(f"# {launch.bound_by} binds each rank: hosttune binds nothing on top (no affinity, memory "
                     f"policy or numactl); threads, allocator and env as below")
    if launch.kind == "torchrun":
        lines.append("torchrun env (same for every rank):")
        lines.extend(f"  {k}={shlex.quote(v)}" for k, v in sorted(d["env"].items()))
    for r in d["ranks"]:
        cpus = _cpulist(r["cpus"]) or "(not bound)"
        mems = _cpulist(r["mems"]) or "-"
        gpu = f" gpu {r['gpu']}" if r["gpu"] else ""
        head = f"rank {r['local_rank']}/{r['local_world_size']}"
        lines.append(f"{head}: cpus {cpus} mems {mems} ({r['mem_policy']}){gpu}")
        common = d["env"] if launch.kind == "torchrun" else {}
        for k, v in sorted(r["env"].items()):
            if common.get(k) != v:
                lines.append(f"  {k}={shlex.quote(v)}")
        lines.extend(f"  # {reason}" for reason in r["reasons"])
    if launch.kind == "torchrun":
        lines.append("(restarted ranks and a changed world size get their plan again from the shim)")
    return "\n".join(lines)

