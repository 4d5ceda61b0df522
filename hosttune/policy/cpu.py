"""The CPUs a job may really use, and what follows from them: the thread budget and DataLoader workers.

The one CPU-count unit. Threads are counted in PHYSICAL cores of the allowed set (SMT siblings count once), capped
by the cgroup quota rounded down: the planner sizes OMP_NUM_THREADS with it, doctor quotes it, the deep checks
measure against it. `usable_cpus` (logical CPUs, capped by the quota) only says whether a cgroup limits the process.
Why physical: two threads on SMT siblings share one core's FMA units, so a second thread per core adds contention,
not FLOPs (hyperthreads help latency-bound code, not GEMM), and oversubscription costs x0.48-0.53 (perf-notes).
"""

import math
from typing import Iterable, List, Optional, Tuple

from hosttune.facts import Cpu

Core = Tuple[int, ...]  # the allowed PUs of one physical core (SMT siblings together)


def quota(cpu: Cpu) -> Optional[float]:
    """The cgroup CPU quota in CPUs (the tightest of this cgroup and its parents), or None when unlimited."""
    q = cpu.quota_cpus if cpu.quota_cpus is not None else cpu.cgroup.quota_cpus
    return q if q is not None and q > 0 else None


def quota_threads(q: float) -> int:
    """Threads a quota of `q` CPUs sustains: rounded down (3 threads on a 2.5-CPU quota are throttled every
    period, which costs more than the half CPU gains), never below 1."""
    return max(1, int(math.floor(q + 1e-9)))


def allowed_pus(cpu: Cpu, fallback: Iterable[int] = ()) -> List[int]:
    """The logical CPUs (PUs) this process may run on: the allowed set, else the online CPUs, else `fallback`
    (the planner passes the NUMA nodes' CPUs)."""
    return sorted(set(cpu.allowed_cpus or cpu.online or fallback))


def allowed_cores(cpu: Cpu, fallback: Iterable[int] = ()) -> List[Core]:
    """The physical cores this process may use, each as its allowed PUs (SMT siblings together); an allowed PU no
    core lists (topology not captured) is a core of its own. In the order of `cpu.cores`, leftovers after."""
    allowed = set(allowed_pus(cpu, fallback))
    cores: List[Core] = []
    covered: set = set()
    for core in cpu.cores:
        pus = tuple(sorted(set(core) & allowed))
        if pus:
            cores.append(pus)
            covered.update(pus)
    cores.extend((c,) for c in sorted(allowed - covered))
    return cores


def cap_by_quota(threads: int, cpu: Cpu) -> int:
    """`threads` capped by what the cgroup quota sustains (`quota_threads`)."""
    q = quota(cpu)
    return min(threads, quota_threads(q)) if q is not None else threads


def usable_cpus(cpu: Cpu) -> Optional[int]:
    """Logical CPUs this process may run on, capped by the quota: less than `cpu.logical` means a cgroup (cpuset
    or cpu.max) limits it. Not a thread count (see `thread_budget`). None when nothing is known."""
    allowed = len(cpu.allowed_cpus) or cpu.logical
    return cap_by_quota(allowed, cpu) if allowed else None


def thread_budget(cpu: Cpu, fallback: Iterable[int] = ()) -> Optional[int]:
    """Threads one process may run: physical cores of the allowed set, capped by the quota (the planner's count
    for a lone rank). Without CPU ids (hand-made facts) the counts stand in. None when nothing is known."""
    cores = len(allowed_cores(cpu, fallback)) or cpu.physical or cpu.logical
    return cap_by_quota(cores, cpu) if cores else None


def dataloader_workers(cpus: int) -> Tuple[int, str]:
    """DataLoader workers for a rank that may run `cpus` threads (its thread budget), and why.

    Workers take cores from compute: on a 2-core box they cost x0.70-0.79 of training throughput (perf-notes), so
    a rank with 2 cores or fewer gets none; beyond that, half the cores, at most 4 (more rarely pays off for the
    in-memory and memory-mapped datasets the bundled engine uses, and each worker holds prefetch_factor batches).
    """
    if cpus <= 2:
        return 0, "<= 2 cores: workers would take cores from compute"
    n = min(4, cpus // 2)
    return n, f"{cpus} cores: half of them, at most 4"


def workers(cpu: Cpu) -> Optional[int]:
    """DataLoader workers of a lone rank on this host: `dataloader_workers` of the thread budget (None: unknown)."""
    budget = thread_budget(cpu)
    return dataloader_workers(budget)[0] if budget else None
