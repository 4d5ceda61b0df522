"""This process's CPUs, read from the live host in the shape `hosttune.policy.cpu` counts (a `facts.Cpu`), for the
DataLoader workers of a rank started without `hosttune exec` (under exec the planner hands them over in
HOSTTUNE_NUM_WORKERS).

The counting is policy's, the one CPU-count unit the planner, doctor and the deep checks use: physical cores of the
allowed set (SMT siblings count once), capped by the cgroup CPU quota. Only the reading is here, because the engine
imports no detector: the allowed PUs (sched_getaffinity, which the cpuset already narrows), each PU's core from
sysfs topology, and the quota of this process's cgroup and its parents (v2 cpu.max; v1 cpu.cfs_quota_us).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from hosttune import fsio
from hosttune.cpulist import parse_cpulist
from hosttune.facts import Cpu
from hosttune.policy import cpu as cpu_policy

SYS_CPU = "sys/devices/system/cpu"
CGROUP_FS = "sys/fs/cgroup"


def _read(path: Path) -> Optional[str]:
    try:
        return fsio.read_bounded(path, 1 << 16).decode("utf-8", "replace")
    except OSError:
        return None


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int((text or "").split()[0])
    except (ValueError, IndexError):
        return None


def live_affinity() -> List[int]:
    getter = getattr(os, "sched_getaffinity", None)
    return sorted(getter(0)) if getter else list(range(os.cpu_count() or 1))


def cores_of(root: Path, pus: Iterable[int]) -> List[Tuple[int, ...]]:
    """The cores of `pus`, each as its PUs: PUs that share package, thread siblings and core id (what hwloc and
    hosttune's detector count); a PU without topology files is a core of its own."""
    groups: Dict[Tuple[object, ...], List[int]] = {}
    for pu in pus:
        topo = root / SYS_CPU / f"cpu{pu}" / "topology"
        siblings = _read(topo / "thread_siblings_list") or _read(topo / "core_cpus_list")
        if siblings is None:
            groups[("pu", pu)] = [pu]
            continue
        key = (_int(_read(topo / "physical_package_id")), tuple(parse_cpulist(siblings)),
               _int(_read(topo / "core_id")))
        groups.setdefault(key, []).append(pu)
    return sorted(tuple(sorted(g)) for g in groups.values())


def _ancestors(base: Path, path: str) -> List[Path]:
    """`base`/`path` and each of its parents up to `base` itself."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    return [base.joinpath(*parts[:i]) for i in range(len(parts), -1, -1)]


def _v2_quota(text: Optional[str]) -> Optional[float]:
    fields = (text or "").split()  # "max 100000" or "150000 100000"
    quota, period = (_int(fields[0]), _int(fields[1])) if len(fields) == 2 else (None, None)
    return quota / period if quota and period and quota > 0 and period > 0 else None


def _v1_quota(where: Path) -> Optional[float]:
    quota, period = _int(_read(where / "cpu.cfs_quota_us")), _int(_read(where / "cpu.cfs_period_us"))
    return quota / period if quota and period and quota > 0 and period > 0 else None


def cgroup_quota(root: Path) -> Optional[float]:
    """The tightest CPU quota (in CPUs) of this process's cgroup and its parents, or None when unlimited."""
    found: List[float] = []
    for line in (_read(root / "proc/self/cgroup") or "").splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        hierarchy, controllers, path = fields
        if hierarchy == "0" and not controllers:  # cgroup v2
            found += [q for d in _ancestors(root / CGROUP_FS, path) if (q := _v2_quota(_read(d / "cpu.max")))]
        elif "cpu" in controllers.split(","):  # cgroup v1, mounted as cpu,cpuacct (or cpu) in the usual place
            for mount in {controllers, "cpu,cpuacct", "cpu"}:
                found += [q for d in _ancestors(root / CGROUP_FS / mount, path) if (q := _v1_quota(d))]
    return min(found) if found else None


def live_cpu(root: Path = Path("/"), affinity: Optional[Iterable[int]] = None) -> Cpu:
    """This process's CPUs as facts: the allowed PUs (`affinity`, else sched_getaffinity), their cores, the quota.
    `root` moves the sysfs/procfs reads (tests)."""
    allowed = sorted(set(affinity)) if affinity is not None else live_affinity()
    cores = cores_of(root, allowed)
    online = parse_cpulist(_read(root / SYS_CPU / "online")) or allowed
    return Cpu(online=tuple(online), logical=len(online), physical=len(cores), cores=tuple(cores),
               smt=any(len(c) > 1 for c in cores), allowed_cpus=tuple(allowed), quota_cpus=cgroup_quota(root))


def local_ranks(env: Mapping[str, str]) -> int:
    """Ranks on this host that share its CPUs: torchrun's LOCAL_WORLD_SIZE, else 1."""
    n = _int(env.get("LOCAL_WORLD_SIZE"))
    return n if n is not None and n > 0 else 1


def rank_workers(cpu: Cpu, ranks: int = 1) -> int:
    """DataLoader workers for one of `ranks` ranks sharing this host: policy's rule (dataloader_workers) of the
    rank's even share of the thread budget (policy's count: allowed physical cores capped by the quota), as the
    planner shares the cores between the ranks it plans."""
    budget = cpu_policy.thread_budget(cpu) or 1
    return cpu_policy.dataloader_workers(max(1, budget // max(1, ranks)))[0]
