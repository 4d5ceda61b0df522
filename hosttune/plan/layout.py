"""The CPU layout of the whole node: allowed physical cores by NUMA node (policy.cpu.allowed_cores), each rank's
disjoint NUMA-aligned share (near its GPU when it has one), and each rank's threads under the cgroup quota."""

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple

from hosttune.facts import Facts, Gpu
from hosttune.plan.env import _visible_gpus
from hosttune.plan.model import Core
from hosttune.policy import cpu as cpu_policy
from hosttune.profile import Profile


@dataclass
class _Topo:
    cores: List[Core]  # allowed cores, node by node
    node_of: Dict[Core, int]  # core -> NUMA node id (-1 unknown)
    by_node: Dict[int, List[Core]]  # node -> its allowed cores (only nodes that have some)
    mem_ok: Tuple[int, ...]  # nodes memory may be bound to
    quota: Optional[float]


def _topology(facts: Facts) -> _Topo:
    """The allowed physical cores (policy.cpu.allowed_cores: the one CPU-count unit), node by node."""
    node_cpus = {n.id: set(n.cpus) for n in facts.numa.nodes}
    cores = cpu_policy.allowed_cores(facts.cpu, fallback=[c for s in node_cpus.values() for c in s])
    cpu_node: Dict[int, int] = {}
    for nid in sorted(node_cpus):
        for c in node_cpus[nid]:
            cpu_node.setdefault(c, nid)
    node_of = {core: cpu_node.get(core[0], -1) for core in cores}
    cores.sort(key=lambda c: (node_of[c], c))
    by_node: Dict[int, List[Core]] = {}
    for core in cores:
        by_node.setdefault(node_of[core], []).append(core)
    known_mem = any(n.memory_mb > 0 for n in facts.numa.nodes)
    mem_ok = tuple(
        n.id
        for n in sorted(facts.numa.nodes, key=lambda n: n.id)
        if (not facts.numa.allowed_mems or n.id in facts.numa.allowed_mems) and (n.memory_mb > 0 or not known_mem)
    )
    return _Topo(cores, node_of, by_node, mem_ok, cpu_policy.quota(facts.cpu))


def _chunks(items: List[Core], n: int) -> List[List[Core]]:
    """Split into n contiguous chunks whose sizes differ by at most one (larger first); n <= len(items)."""
    q, r = divmod(len(items), n)
    out, i = [], 0
    for k in range(n):
        size = q + (1 if k < r else 0)
        out.append(items[i : i + size])
        i += size
    return out


def _balanced(groups: List[List[Core]], n: int) -> Tuple[List[List[Core]], bool]:
    """Split node groups of cores among n ranks: disjoint, NUMA-aligned. Returns (per-rank cores, shared)."""
    groups = [g for g in groups if g]
    flat = [c for g in groups for c in g]
    if not flat:
        return [[] for _ in range(n)], False
    if n > len(flat):  # more ranks than cores: they must share, one core each, round robin
        return [[flat[r % len(flat)]] for r in range(n)], True
    k = len(groups)
    if n <= k:
        # contiguous runs of whole nodes, cut where the running core count is closest to an even share
        cum = [0]
        for g in groups:
            cum.append(cum[-1] + len(g))
        bounds = [0]
        for r in range(1, n):
            lo, hi = bounds[-1] + 1, k - (n - r)
            target = r * cum[-1] / n
            bounds.append(min(range(lo, hi + 1), key=lambda b: (abs(cum[b] - target), b)))
        bounds.append(k)
        return [[c for g in groups[bounds[r] : bounds[r + 1]] for c in g] for r in range(n)], False
    # more ranks than nodes: ranks per node proportional to its cores (at least one, at most its cores)
    total = len(flat)
    alloc = [min(len(g), max(1, n * len(g) // total)) for g in groups]
    while sum(alloc) < n:
        i = max((i for i in range(k) if alloc[i] < len(groups[i])), key=lambda i: (len(groups[i]) / alloc[i], -i))
        alloc[i] += 1
    while sum(alloc) > n:
        i = min((i for i in range(k) if alloc[i] > 1), key=lambda i: (len(groups[i]) / alloc[i], -i))
        alloc[i] -= 1
    out: List[List[Core]] = []
    for g, a in zip(groups, alloc):
        out.extend(_chunks(g, a))
    return out, False


def _nearest_node_with_cpus(facts: Facts, node: int, topo: _Topo) -> Optional[int]:
    ids = [n.id for n in facts.numa.nodes]
    me = next((n for n in facts.numa.nodes if n.id == node), None)
    if me is None or len(me.distances) != len(ids):
        return None
    cands = [(d, nid) for d, nid in zip(me.distances, ids) if nid in topo.by_node and nid >= 0]
    return min(cands)[1] if cands else None


@dataclass
class _Slot:
    cores: List[Core]
    gpu: Optional[Gpu] = None
    cuda_device: Optional[int] = None
    shared: bool = False
    cpu_node: Optional[int] = None  # the node chosen for a GPU rank's CPUs
    notes: List[str] = field(default_factory=list)


def _layout(facts: Facts, profile: Profile, n: int, environ: Mapping[str, str], topo: _Topo) -> List[_Slot]:
    gpus, gnotes = ([], []) if profile.device == "cpu" else _visible_gpus(facts, environ)
    if not gpus:
        parts, shared = _balanced(list(topo.by_node.values()), n)
        return [_Slot(cores=p, shared=shared, notes=list(gnotes)) for p in parts]
    slots = [_Slot(cores=[], gpu=gpus[r % len(gpus)], cuda_device=r % len(gpus)) for r in range(n)]
    if gnotes:
        slots[0].notes.extend(gnotes)
    if n > len(gpus):
        for s in slots:
            s.notes.append(f"{n} ranks share {len(gpus)} GPUs")
    for s in slots:
        g = s.gpu
        if g is None:
            continue
        if g.numa_node < 0 and g.local_cpus:
            # numa_node -1 (single-node firmware, some BIOSes) but local_cpulist narrows it down: use that node
            nodes = {topo.node_of[c] for c in topo.cores if set(c) & set(g.local_cpus)} - {-1}
            if len(nodes) == 1 and len(nodes) < len(topo.by_node):
                s.cpu_node = nodes.pop()
                s.notes.append(f"GPU numa_node is -1; its local_cpulist lies on node {s.cpu_node}")
            continue
        if g.numa_node < 0:
            continue
        if g.numa_node in topo.by_node:
            s.cpu_node = g.numa_node
        else:
            near = _nearest_node_with_cpus(facts, g.numa_node, topo)
            s.cpu_node = near
            if near is not None:
                s.notes.append(f"GPU node {g.numa_node} has no allowed CPUs; CPUs from the nearest node {near}")
    placed: Dict[int, List[_Slot]] = {}
    for s in slots:
        if s.cpu_node is not None:
            placed.setdefault(s.cpu_node, []).append(s)
    for node, group in placed.items():
        cores = topo.by_node[node]
        if len(group) > len(cores):
            for i, s in enumerate(group):
                s.cores, s.shared = [cores[i % len(cores)]], True
        else:
            for s, part in zip(group, _chunks(cores, len(group))):
                s.cores = part
    rest = [s for s in slots if s.cpu_node is None]
    if rest:
        free = [cs for nid, cs in topo.by_node.items() if nid not in placed] or list(topo.by_node.values())
        parts, shared = _balanced(free, len(rest))
        for s, p in zip(rest, parts):
            s.cores, s.shared = p, shared
            s.notes.append("GPU NUMA node unknown (-1): NUMA-balanced share of the CPUs")
    return slots


def _threads(profile: Profile, slots: List[_Slot], topo: _Topo, binding: str) -> Tuple[List[int], List[str]]:
    n = len(slots)
    notes: List[str] = []
    if binding == "none":
        per = max(1, len(topo.cores) // n) if topo.cores else 1
        want = [per] * n
    else:
        want = [1 if s.shared else max(1, len(s.cores)) for s in slots]
    if profile.threads != "auto":
        asked = int(profile.threads)
        capped = [min(asked, w) for w in want]
        if capped != [asked] * n:
            notes.append(f"threads: the profile's {asked} capped to the rank's cores (no oversubscription)")
        want = capped
    if topo.quota:
        limit = cpu_policy.quota_threads(topo.quota)
        if sum(want) > limit:
            total = sum(want)
            scaled = [max(1, w * limit // total) for w in want]
            i = 0
            while sum(scaled) < limit and any(s < w for s, w in zip(scaled, want)):
                if scaled[i % n] < want[i % n]:
                    scaled[i % n] += 1
                i += 1
            notes.append(f"threads: cgroup quota {topo.quota:g} CPUs caps the {n} ranks to {limit} threads in all")
            if sum(scaled) > limit:
                notes.append(f"threads: {n} ranks exceed the quota of {limit} CPUs even at 1 thread each")
            want = scaled
    return want, notes

