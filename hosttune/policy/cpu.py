"""The CPUs a job may really use, and what follows from them: thread budget and DataLoader workers."""

import math
from typing import Optional, Tuple

from hosttune.facts import Cpu


def quota(cpu: Cpu) -> Optional[float]:
    """The cgroup CPU quota in CPUs (the tightest of this cgroup and its parents), or None when unlimited."""
    q = cpu.quota_cpus if cpu.quota_cpus is not None else cpu.cgroup.quota_cpus
    return q if q is not None and q > 0 else None


def quota_threads(q: float) -> int:
    """Threads a quota of `q` CPUs sustains: rounded down (3 threads on a 2.5-CPU quota are throttled every
    period, which costs more than the half CPU gains), never below 1."""
    return max(1, int(math.floor(q + 1e-9)))


def thread_budget(cpu: Cpu) -> Optional[int]:
    """CPUs this process may really use: the allowed cpuset, capped by the quota. None when nothing is known."""
    allowed = len(cpu.allowed_cpus) or cpu.logical
    if not allowed:
        return None
    q = quota(cpu)
    return min(allowed, quota_threads(q)) if q is not None else allowed


def dataloader_workers(cpus: int) -> Tuple[int, str]:
    """DataLoader workers for a rank that may use `cpus` CPUs, and why.

    Workers take cores from compute: on a 2-core box they cost x0.70-0.79 of training throughput (perf-notes), so
    a rank with 2 cores or fewer gets none; beyond that, half the cores, at most 4 (more rarely pays off for the
    in-memory and memory-mapped datasets the bundled engine uses, and each worker holds prefetch_factor batches).
    """
    if cpus <= 2:
        return 0, "<= 2 cores: workers would take cores from compute"
    n = min(4, cpus // 2)
    return n, f"{cpus} cores: half of them, at most 4"
