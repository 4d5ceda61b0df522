"""The candidates: the default profile with one decision of the plan changed at a time.

What a plan decides (plan/): the allocator and its settings (jemalloc's decay and background thread; tcmalloc's
release rate and thread-cache size, the two performance settings gperftools reads from the environment:
TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD only reports large allocations), the binding (none, cores, cores + memory),
threads per rank, the OpenMP wait policy (the profile's literal env), and for the bundled engine its DataLoader
workers and pinning (the profile's `dataloader:` section, exported as HOSTTUNE_NUM_WORKERS / HOSTTUNE_PIN_MEMORY,
which the engine reads unless its own config sets num_workers / pin_memory; pinning only matters with CUDA). Each
candidate is the default profile (`profile.active`, what `hosttune exec` runs with no `--profile`) with the changes
below applied by `dataclasses.replace`, so it is validated and written like any profile. A candidate that changes
nothing, or only a variable the caller has set (the caller's own value wins in `exec`), is left out and said why.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from hosttune.policy import cpu as cpu_policy

DEFAULT = "default"
# jemalloc with purging on (its library defaults plus a background thread) and without the background thread
JEMALLOC_DECAY_CONF = "background_thread:true"
JEMALLOC_NO_BG_CONF = "oversize_threshold:1,background_thread:false,dirty_decay_ms:-1,muzzy_decay_ms:-1"
# gperftools (tcmalloc and tcmalloc_minimal) read these at start: the release rate (default 1.0; 0 = freed pages are
# never returned to the OS, so no page faults to take them back) and the bound on all thread caches together
TCMALLOC_NO_RELEASE = {"TCMALLOC_RELEASE_RATE": "0"}
TCMALLOC_BIG_CACHE = {"TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES": str(256 << 20)}

# The priority order, the order in which a budget that cannot hold every candidate leaves them out (budget.py keeps
# the first that fit). First, taken in turn, one alternative of each decision the default plan most often gets wrong
# on a given host, the decisions with the largest effects measured here: where the ranks run (hard pinning lost up
# to x0.53 in a contended round on a 2-vCPU VM; per-rank taskset + jemalloc ran x0.67-0.91 of the plain launcher in
# bench_autotune), which allocator, and how many threads (half the threads ran x4.3 on a loaded 2-vCPU VM). Then the
# refinements, knob by knob: DataLoader workers, the allocator's own settings, the OpenMP wait policy, pinned memory.
MAJOR_KNOBS = ("binding", "allocator", "threads")
MINOR_KNOBS = ("workers", "allocator settings", "openmp", "pinning")
PRIORITY_TEXT = ("listed in priority order, first kept when the budget holds fewer: binding, allocator and threads "
                 "in turn, then DataLoader workers, allocator settings, OpenMP wait policy, pinned memory")


@dataclass(frozen=True)
class Candidate:
    name: str
    why: str
    changes: Mapping[str, Any] = field(default_factory=dict)  # Profile field -> value
    env: Mapping[str, str] = field(default_factory=dict)  # added to the profile's literal env
    touches: Tuple[str, ...] = ()  # the variables it varies (the caller's own setting of one wins in exec)
    knob: str = ""  # the decision it changes (KNOBS: the order a budget leaves candidates out in)

    def apply(self, profile: Any) -> Any:
        """The default profile with this candidate's changes, its name and a reason per changed key."""
        reasons = dict(getattr(profile, "reasons", {}) or {})
        for key in self.changes:
            reasons[key] = f"autotune candidate {self.name}: {self.why}"
        for key in self.env:
            reasons[f"env.{key}"] = f"autotune candidate {self.name}: {self.why}"
        env = {**dict(profile.env), **dict(self.env)}
        return dataclasses.replace(profile, name=f"autotune-{self.name}", env=env, reasons=reasons,
                                   **dict(self.changes))


@dataclass(frozen=True)
class Host:
    """What the candidates depend on: the allocators found, a rank's threads under the default plan, SMT, engine."""

    jemalloc: bool = False
    tcmalloc: bool = False
    threads: Optional[int] = None  # OMP_NUM_THREADS of rank 0 under the default plan (exec --dry-run)
    logical_per_rank: Optional[int] = None  # CPUs rank 0 is bound to under the default plan
    engine: bool = False
    gpus: bool = False  # GPUs on the host (the engine pins DataLoader memory only with CUDA)
    engine_sets: Tuple[str, ...] = ()  # engine settings the command sets itself (--set num_workers=...)


def _allocators(default: Any, host: Host) -> List[Candidate]:
    uses_jemalloc = default.allocator in ("auto", "jemalloc") and host.jemalloc
    out = [Candidate("glibc", "glibc malloc, nothing preloaded", {"allocator": "system"},
                     touches=("LD_PRELOAD", "MALLOC_CONF"), knob="allocator")]
    if host.tcmalloc and default.allocator != "tcmalloc":
        out.append(Candidate("tcmalloc", "tcmalloc preloaded", {"allocator": "tcmalloc"},
                             touches=("LD_PRELOAD", "MALLOC_CONF"), knob="allocator"))
    if host.tcmalloc:
        for name, why, conf in (
                ("tcmalloc-norelease", "tcmalloc never returning freed memory to the OS (TCMALLOC_RELEASE_RATE=0)",
                 TCMALLOC_NO_RELEASE),
                ("tcmalloc-bigcache", "tcmalloc with 256 MiB of thread caches in all "
                 "(TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES)", TCMALLOC_BIG_CACHE)):
            out.append(Candidate(name, why, {"allocator": "tcmalloc", "tcmalloc": {**dict(default.tcmalloc), **conf}},
                                 touches=("LD_PRELOAD", *conf), knob="allocator settings"))
    if host.jemalloc:
        if not uses_jemalloc:
            out.append(Candidate("jemalloc", "jemalloc with the throughput settings",
                                 {"allocator": "jemalloc"}, touches=("LD_PRELOAD", "MALLOC_CONF"), knob="allocator"))
        out.append(Candidate("jemalloc-decay", "jemalloc purging freed pages (decay on, background thread)",
                             {"allocator": "jemalloc", "malloc_conf": JEMALLOC_DECAY_CONF},
                             touches=("LD_PRELOAD", "MALLOC_CONF"), knob="allocator settings"))
        out.append(Candidate("jemalloc-nobg", "jemalloc without its background purge thread",
                             {"allocator": "jemalloc", "malloc_conf": JEMALLOC_NO_BG_CONF},
                             touches=("LD_PRELOAD", "MALLOC_CONF"), knob="allocator settings"))
    return out


def _bindings(default: Any) -> List[Candidate]:
    out = [Candidate("unbound", "no CPU or memory binding", {"binding": "none", "memory_policy": "none"},
                     knob="binding")]
    if not (default.binding in ("auto", "cores") and default.memory_policy == "none"):
        out.append(Candidate("cores", "disjoint core sets, no memory binding",
                             {"binding": "cores", "memory_policy": "none"}, knob="binding"))
    if not (default.binding in ("auto", "cores") and default.memory_policy == "bind"):
        out.append(Candidate("cores+memory", "disjoint core sets, memory bound to their node",
                             {"binding": "cores", "memory_policy": "bind"}, knob="binding"))
    return out


def _threads(host: Host) -> List[Candidate]:
    out: List[Candidate] = []
    t = host.threads
    if t and t >= 2:
        out.append(Candidate(f"threads-{t // 2}", f"{t // 2} thread(s) per rank (half the default's {t})",
                             {"threads": t // 2}, touches=("OMP_NUM_THREADS",), knob="threads"))
    if t and host.logical_per_rank and host.logical_per_rank > t:
        n = host.logical_per_rank
        out.append(Candidate(f"threads-{n}", f"{n} threads per rank (every logical CPU of the rank)",
                             {"threads": n}, touches=("OMP_NUM_THREADS",), knob="threads"))
    return out


def _openmp() -> List[Candidate]:
    return [
        Candidate("omp-passive", "OpenMP threads sleep when idle (OMP_WAIT_POLICY=PASSIVE)",
                  env={"OMP_WAIT_POLICY": "PASSIVE"}, touches=("OMP_WAIT_POLICY",), knob="openmp"),
        Candidate("omp-active", "OpenMP threads spin when idle (OMP_WAIT_POLICY=ACTIVE)",
                  env={"OMP_WAIT_POLICY": "ACTIVE"}, touches=("OMP_WAIT_POLICY",), knob="openmp"),
    ]


def _dataloader(default: Any, host: Host) -> Tuple[List[Candidate], List[str]]:
    """Workers (none; twice the default's, or 2 where it runs none) and pinning flipped, for the bundled engine."""
    if not host.engine:
        return [], []
    dl, out, notes = default.dataloader, [], []
    if "num_workers" in host.engine_sets:
        notes.append("workers: left out, your command sets num_workers (the engine's config wins over the profile)")
    else:
        auto = cpu_policy.dataloader_workers(host.threads or 1)[0]
        now = auto if dl.num_workers == "auto" else int(dl.num_workers)
        more = 2 * now if now else 2
        if now:
            out.append(_workers(dl, 0, "no DataLoader worker processes"))
        out.append(_workers(dl, more, f"{more} DataLoader workers per rank (the default: {now})"))
    if "pin_memory" in host.engine_sets:
        notes.append("pin-memory: left out, your command sets pin_memory (the engine's config wins over the profile)")
    elif not host.gpus:
        notes.append("pin-memory: left out, no GPU (the engine pins DataLoader memory only with CUDA)")
    else:
        pinned = dl.pin_memory == "auto" or bool(dl.pin_memory)
        out.append(Candidate("pin-memory-" + ("off" if pinned else "on"),
                             "DataLoader batches " + ("not " if pinned else "") + "in pinned (page-locked) memory",
                             {"dataloader": dataclasses.replace(dl, pin_memory=not pinned)},
                             touches=("HOSTTUNE_PIN_MEMORY",), knob="pinning"))
    return out, notes


def _workers(dl: Any, n: int, why: str) -> Candidate:
    return Candidate(f"workers-{n}", why,
                     {"dataloader": dataclasses.replace(dl, num_workers=n, persistent_workers="auto",
                                                        prefetch_factor=dl.prefetch_factor if n else "auto")},
                     touches=("HOSTTUNE_NUM_WORKERS",), knob="workers")


def generate(default: Any, host: Host, environ: Mapping[str, str]) -> Tuple[List[Candidate], List[str]]:
    """(the candidates in priority order, one line per candidate left out and why)."""
    out: List[Candidate] = []
    loader, notes = _dataloader(default, host)
    base = default.to_dict()
    for cand in [*_allocators(default, host), *_bindings(default), *_threads(host), *_openmp(), *loader]:
        mine = [k for k in cand.touches if k in environ]
        if mine:
            notes.append(f"{cand.name}: left out, you set {', '.join(mine)} (your value wins under exec)")
            continue
        if _same(base, cand.apply(default).to_dict()):
            continue
        out.append(cand)
    return prioritized(out), notes


def prioritized(found: List[Candidate]) -> List[Candidate]:
    """The candidates in priority order (MAJOR_KNOBS in turn, then MINOR_KNOBS one after another; within a knob, as
    generated): stable, so the same host and command always leave out the same ones."""
    def key(i: int, c: Candidate) -> Tuple[int, int, int]:
        if c.knob in MAJOR_KNOBS:
            nth = [x.knob for x in found[:i]].count(c.knob)  # its place among its knob's alternatives
            return 0, nth, MAJOR_KNOBS.index(c.knob)
        tier = MINOR_KNOBS.index(c.knob) if c.knob in MINOR_KNOBS else len(MINOR_KNOBS)
        return 1, tier, i
    return [c for _, c in sorted(enumerate(found), key=lambda p: key(*p))]


def _same(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    skip = ("name", "reasons", "provenance", "summary", "source")
    return {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}


def by_name(cands: List[Candidate]) -> Dict[str, Candidate]:
    return {c.name: c for c in cands}
