"""Per-rank plans: Facts + Profile + (local rank, local world size) -> RankPlan(cpus, mems, env, reasons).

Pure: the only inputs are the arguments (and the allocator files' ownership, read under `facts.root`). The whole
node's layout is computed for every call and the rank's slice returned, so ranks planned in separate processes
agree: their CPU sets are disjoint and together cover the allowed CPUs.

Policy (measured in shared/perf-notes.md): threads = physical cores of the rank's binding, never more than the
cgroup quota over all ranks; a lone process keeps all its cores; jemalloc preloaded with pinning; GPU ranks bound
to the CPUs and memory of their GPU's NUMA node, the GPU found by PCI bus id through CUDA_VISIBLE_DEVICES.

The user wins (`settle`, the only place this is decided): a variable the caller already set keeps its value and is
listed in `RankPlan.kept` with a reason line, unless `override`; LD_PRELOAD is merged, never replaced. `environ` is
always the caller's own environment: whoever plans inside a launcher undoes what the launcher added first
(rank.users_env; torchrun's own OMP_NUM_THREADS=1 is recognised here, `launcher_default`). A launcher that binds
its ranks itself is named by `bound_by`: the plan then binds nothing and still sizes threads.

The package: `model` (RankPlan and the fixed env tables: cheap, dataclasses only), `userwins` (`settle`,
`launcher_default`), `env` (what every rank shares: allocator, CUDA, switches), `layout` (the node's cores, each
rank's share, threads under the quota; counts from `policy.cpu`), `rank` (one rank's binding, memory, threads,
workers and the caller's settings, as named steps) and here `resolve`, which composes them. Every name this module
had as plan.py is still importable from `hosttune.plan`.
"""

import os
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Tuple

from hosttune.cpulist import format_cpulist as cpulist  # re-exported: `plan.cpulist` formats CPU/node lists
from hosttune.errors import UserError
from hosttune.facts import Facts
from hosttune.plan import rank as _rank
from hosttune.plan.env import (
    ALLOC_CONF,
    ALLOC_CONF_NAMES,
    CUDA_ALLOC_CONF,
    _alloc_conf_env,
    _choose_allocator,
    _common,
    _dl_followers,
    _preload_library,
    _preload_list,
    _visible_gpus,
    alloc_conf_names,
    common_env,
)
from hosttune.plan.layout import _balanced, _chunks, _layout, _Slot, _threads, _Topo, _topology
from hosttune.plan.model import DEBUG_ENV, DETERMINISTIC_ENV, INTEL_KMP, Core, RankPlan, kept_line
from hosttune.plan.network import Endpoint
from hosttune.plan.userwins import MALLOC_LIBS, NOT_THE_USERS, _threads_of, launcher_default, settle, users_choice
from hosttune.profile import Profile

__all__ = [
    "ALLOC_CONF", "ALLOC_CONF_NAMES", "CUDA_ALLOC_CONF", "Core", "DEBUG_ENV", "DETERMINISTIC_ENV", "Endpoint",
    "INTEL_KMP", "MALLOC_LIBS", "NOT_THE_USERS", "RankPlan", "alloc_conf_names", "common_env", "cpulist", "kept_line",
    "launcher_default", "resolve", "resolve_all", "settle", "users_choice",
]
# private helpers tests and older callers reach as plan._name (kept importable from here)
_PRIVATE = (_alloc_conf_env, _balanced, _choose_allocator, _chunks, _common, _dl_followers, _preload_library,
            _preload_list, _threads_of, _topology, _visible_gpus)


@dataclass(frozen=True)
class _Node:
    """The part of a plan every rank of the node shares: common env, topology, the whole layout, threads."""

    common: Mapping[str, str]
    reasons: Tuple[str, ...]
    topo: _Topo
    slots: List[_Slot]
    threads: List[int]
    tnotes: Tuple[str, ...]


# The last node layout, for the same facts and profile objects (frozen) and the same inputs from the environment:
# a launcher resolving each of N ranks in turn then costs O(N) instead of O(N^2) (4,000 ranks: seconds -> ms).
# Holding the objects keeps their ids from being reused.
_LAST: List[Tuple[Facts, Profile, Tuple[Any, ...], _Node]] = []


def _node_plan(facts: Facts, profile: Profile, n: int, environ: Mapping[str, str], override: bool,
               bound_by: Optional[str], endpoint: Optional[Endpoint]) -> _Node:
    key = (n, override, bound_by, endpoint, tuple(sorted(environ.items())))
    if _LAST and _LAST[0][0] is facts and _LAST[0][1] is profile and _LAST[0][2] == key:
        return _LAST[0][3]
    common, reasons = _common(facts, profile, environ, override, endpoint)
    topo = _topology(facts)
    slots = _layout(facts, profile, n, environ, topo)
    # bound by someone else: threads still match the rank's share of the cores (never the whole node per rank)
    threads, tnotes = _threads(profile, slots, topo, "cores" if bound_by else profile.binding)
    node = _Node(common, tuple(reasons), topo, slots, threads, tuple(tnotes))
    _LAST[:] = [(facts, profile, key, node)]
    return node



def _callers_env(environ: Optional[Mapping[str, str]]) -> Tuple[Mapping[str, str], Optional[str]]:
    """The caller's own environment, less a variable the launcher set on its own (`launcher_default`), and its name."""
    environ = os.environ if environ is None else environ
    default = launcher_default(environ)
    if default is not None:
        environ = {k: v for k, v in environ.items() if k != default}
    return environ, default


def resolve(
    facts: Facts,
    profile: Profile,
    local_rank: int,
    local_world_size: int,
    environ: Optional[Mapping[str, str]] = None,
    *,
    override: bool = False,
    bound_by: Optional[str] = None,
    endpoint: Optional[Endpoint] = None,
) -> RankPlan:
    """The plan for one local rank; every rank of the node gets a disjoint slice of the same layout.

    `environ` is the caller's own environment (not what a launcher added for its workers): a variable set there
    wins over the profile's value and is listed in `kept` (see `settle`); `override` makes the profile win.
    `bound_by` names who binds the rank instead (e.g. "torchrun --numa-binding=node"): no CPUs, no memory policy,
    threads still sized to the rank's share of the cores. `endpoint`: where the job's nodes meet, from the launcher's
    command line (else MASTER_ADDR in `environ`): the interface that reaches it is named (plan.network)."""
    if local_world_size < 1:
        raise UserError(f"local world size must be at least 1, not {local_world_size}")
    if not 0 <= local_rank < local_world_size:
        raise UserError(f"local rank {local_rank} is outside 0..{local_world_size - 1}")
    environ, default = _callers_env(environ)
    node = _node_plan(facts, profile, local_world_size, environ, override, bound_by, endpoint)
    reasons = list(node.reasons)
    if default is not None:
        reasons.append(f"{default}=1 was torchrun's default for its workers, not yours: the plan sets it")
    env = dict(node.common)
    me = node.slots[local_rank]
    reasons.extend(me.notes)
    reasons.extend(node.tnotes)
    cpus = _rank.binding(me, node.topo, profile.binding, bound_by, reasons)
    mem_policy, mems = _rank.memory(profile, me, node.topo, cpus, bound_by, reasons)
    t = _rank.threads(profile, me, node.topo, node.threads[local_rank], bound_by, env, environ, reasons)
    _rank.workers(profile, me, t, env, reasons)
    env, kept, overridden, t = _rank.users_win(profile, env, environ, override, t, reasons)
    first = _rank.gpu_line(me)
    if first is not None:
        reasons.insert(0, first)
    return RankPlan(
        local_rank=local_rank, local_world_size=local_world_size, cpus=cpus, mems=mems, mem_policy=mem_policy,
        env=env, gpu=me.gpu.pci_bus_id if me.gpu is not None else None, reasons=tuple(reasons), threads=t or None,
        cuda_device=me.cuda_device, common={k: env[k] for k in node.common if k in env}, kept=kept,
        overridden=overridden, bound_by=bound_by,
    )


def resolve_all(
    facts: Facts, profile: Profile, local_world_size: int, environ: Optional[Mapping[str, str]] = None, *,
    override: bool = False, bound_by: Optional[str] = None, endpoint: Optional[Endpoint] = None,
) -> List[RankPlan]:
    """Every local rank's plan (dry runs, tests)."""
    return [resolve(facts, profile, r, local_world_size, environ, override=override, bound_by=bound_by,
                    endpoint=endpoint) for r in range(local_world_size)]
