"""One rank's slice of the node plan, in named steps: its CPU binding, memory policy, threads and DataLoader
workers, then the caller's own settings (`settle`). `hosttune.plan.resolve` composes them."""

from typing import Dict, List, Mapping, Optional, Tuple

from hosttune.cpulist import format_cpulist as cpulist
from hosttune.plan.env import _dl_followers, _preload_list
from hosttune.plan.layout import _Slot, _Topo
from hosttune.plan.model import INTEL_KMP
from hosttune.plan.userwins import _threads_of, settle
from hosttune.policy import cpu as cpu_policy
from hosttune.policy import names
from hosttune.profile import Profile

Settled = Tuple[Dict[str, str], Dict[str, str], Dict[str, str], int]


def binding(me: _Slot, topo: _Topo, binding: str, bound_by: Optional[str],
            reasons: List[str]) -> Tuple[int, ...]:
    """The CPUs the rank is bound to (() = none), and why."""
    cores = me.cores
    if bound_by:
        reasons.append(f"binding: left to {bound_by}; hosttune does not bind on top (no affinity, memory policy "
                       f"or numactl)")
        return ()
    if binding == "none" or not cores:
        reasons.append("binding: none - the rank is not pinned" if binding == "none" else "binding: no CPU topology")
        return ()
    if binding == "numa":
        nodes = sorted({topo.node_of[c] for c in cores})
        cpus = tuple(sorted(p for nid in nodes for c in topo.by_node.get(nid, []) for p in c))
        reasons.append(f"binding: numa - all allowed CPUs of node(s) {cpulist(nodes)}: {cpulist(cpus)}")
        return cpus
    cpus = tuple(sorted(p for c in cores for p in c))
    nodes = sorted({topo.node_of[c] for c in cores} - {-1})
    where = f" on NUMA node(s) {cpulist(nodes)}" if nodes else ""
    what = "shared with other ranks (more ranks than cores)" if me.shared else "disjoint from the other ranks"
    reasons.append(f"binding: {len(cores)} core(s) {cpulist(cpus)}{where}, {what}")
    return cpus


def memory(profile: Profile, me: _Slot, topo: _Topo, cpus: Tuple[int, ...], bound_by: Optional[str],
           reasons: List[str]) -> Tuple[str, Tuple[int, ...]]:
    """(memory policy, its nodes): the GPU's node, else the nodes of the rank's cores; auto binds only on a
    host with more than one memory node."""
    cores = me.cores
    gpu_node = me.gpu.numa_node if me.gpu is not None and me.gpu.numa_node >= 0 else None
    if me.gpu is not None and gpu_node is None and me.cpu_node is not None:
        gpu_node = me.cpu_node  # inferred from the GPU's local_cpulist
    mem_policy = profile.memory_policy
    auto_mem = mem_policy == "auto"
    if auto_mem:  # decided here, for the host being planned: a one-node host has nothing to bind
        mem_policy = "bind" if len(topo.mem_ok) > 1 else "none"
    mems: Tuple[int, ...] = ()
    if bound_by:
        return "none", ()
    if mem_policy == "none":
        reasons.append("memory: no policy (auto: a single NUMA node, nothing to bind)" if auto_mem
                       else "memory: no policy (profile says none)")
        return mem_policy, ()
    if gpu_node is not None and gpu_node in topo.mem_ok:
        mems = (gpu_node,)
    elif cpus:
        mems = tuple(sorted({topo.node_of[c] for c in cores} & set(topo.mem_ok)))
    if len(mems) > 1 and mem_policy == "preferred":
        # MPOL_PREFERRED (numactl --preferred) takes one node: the one holding most of this rank's cores
        mems = (max(mems, key=lambda m: (sum(1 for c in cores if topo.node_of[c] == m), -m)),)
    if not mems:
        reasons.append("memory: no policy (no allowed memory node for this rank's CPUs)")
        return "none", ()
    reasons.append(f"memory: {mem_policy} to node(s) {cpulist(mems)}"
                   + (f" (auto: {len(topo.mem_ok)} NUMA nodes)" if auto_mem else ""))
    return mem_policy, mems


def threads(profile: Profile, me: _Slot, topo: _Topo, t: int, bound_by: Optional[str], env: Dict[str, str],
            environ: Mapping[str, str], reasons: List[str]) -> int:
    """OMP_NUM_THREADS/MKL_NUM_THREADS = the rank's `t` physical cores (0: no CPU topology, left to the
    program), and Intel OpenMP's affinity when it is preloaded. Returns the threads set (0: none)."""
    if not (me.cores or profile.binding == "none" and topo.cores):
        reasons.append("threads: left to the program (no CPU topology known)")
        return 0
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(t)
    core_word = "core" if t == 1 else "cores"
    under = f", its even share of the cores {bound_by} binds it to" if bound_by else ""
    reasons.append(f"threads: {t} ({t} physical {core_word} for this rank{under}; SMT siblings count once)")
    preloaded = _preload_list(env.get("LD_PRELOAD", environ.get("LD_PRELOAD", "")))
    intel = profile.openmp == "intel" or profile.openmp == "auto" and any("iomp5" in p for p in preloaded)
    if intel:
        env.update(INTEL_KMP)
        reasons.append("KMP_AFFINITY/KMP_BLOCKTIME: Intel OpenMP is preloaded")
    return t


def workers(profile: Profile, me: _Slot, t: int, env: Dict[str, str], reasons: List[str]) -> None:
    """DataLoader workers from the rank's threads (policy.cpu.dataloader_workers), when the profile says auto."""
    if profile.dataloader.num_workers != "auto":
        return
    n, why = cpu_policy.dataloader_workers(t if t else len(me.cores))
    env[names.NUM_WORKERS] = str(n)
    _dl_followers(env, n, profile)
    reasons.append(f"dataloader: {n} workers ({why})")


def users_win(profile: Profile, env: Dict[str, str], environ: Mapping[str, str], override: bool, t: int,
              reasons: List[str]) -> Settled:
    """The profile's literal env over anything computed, then the caller's own settings (`settle`): (env, kept,
    overridden, the threads the program will really run with)."""
    for k, v in profile.env.items():  # literal env wins over anything computed
        env[k] = str(v)
    env, kept, overridden, settled = settle(env, environ, override)
    reasons.extend(settled)
    if "OMP_NUM_THREADS" in kept:
        t = _threads_of(env["OMP_NUM_THREADS"]) or 0  # what the program will really run with
    if "OMP_NUM_THREADS" in kept and "MKL_NUM_THREADS" in env and "MKL_NUM_THREADS" not in environ:
        del env["MKL_NUM_THREADS"]  # MKL reads OMP_NUM_THREADS when its own is unset: one choice, the caller's
        reasons.append("MKL_NUM_THREADS: not set, so MKL follows your OMP_NUM_THREADS")
    return env, kept, overridden, t


def gpu_line(me: _Slot) -> Optional[str]:
    """The first reason line of a GPU rank: which GPU, under which cuda:N, on which NUMA node."""
    if me.gpu is None:
        return None
    node = me.gpu.numa_node if me.gpu.numa_node >= 0 else "unknown"
    return f"gpu: cuda:{me.cuda_device} = {me.gpu.pci_bus_id} ({me.gpu.name or 'GPU'}), NUMA node {node}"
