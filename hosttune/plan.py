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
(handoff.users_env; torchrun's own OMP_NUM_THREADS=1 is recognised here, `launcher_default`). A launcher that binds
its ranks itself is named by `bound_by`: the plan then binds nothing and still sizes threads.
"""

import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from hosttune import trust
from hosttune.cpulist import format_cpulist as cpulist  # re-exported: `plan.cpulist` formats CPU/node lists
from hosttune.errors import UserError
from hosttune.facts import Facts, Gpu
from hosttune.policy import cpu as cpu_policy
from hosttune.policy import cuda_visible, names
from hosttune.profile import Profile
from hosttune.term import printable
from hosttune.yamlio import brief

Core = Tuple[int, ...]  # the allowed PUs of one physical core (SMT siblings together)

INTEL_KMP = {"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}
DEBUG_ENV = {
    "CUDA_LAUNCH_BLOCKING": "1",
    "NCCL_DEBUG": "INFO",
    "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
    "TORCH_SHOW_CPP_STACKTRACES": "1",
}
DETERMINISTIC_ENV = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "PYTHONHASHSEED": "0"}


@dataclass(frozen=True)
class RankPlan:
    local_rank: int
    local_world_size: int
    cpus: Tuple[int, ...]  # () = do not bind
    mems: Tuple[int, ...]  # () = no memory policy
    mem_policy: str  # bind | preferred | none
    env: Mapping[str, str]  # the full set of variables this rank gets (common + per rank)
    gpu: Optional[str] = None  # pci bus id of the rank's GPU
    reasons: Tuple[str, ...] = ()  # human-readable why for each decision
    threads: Optional[int] = None  # OMP_NUM_THREADS chosen (None: left unset)
    cuda_device: Optional[int] = None  # the torch device ordinal of `gpu` (cuda:N) under CUDA_DEVICE_ORDER=PCI_BUS_ID
    common: Mapping[str, str] = field(default_factory=dict)  # the part of env identical for every rank
    # The user wins (see `settle`): variable -> the profile's value NOT applied because the caller had already set
    # the variable (env holds the caller's value); and variable -> the caller's value that --override replaced.
    kept: Mapping[str, str] = field(default_factory=dict)
    overridden: Mapping[str, str] = field(default_factory=dict)
    bound_by: Optional[str] = None  # who binds this rank instead of hosttune (e.g. "torchrun --numa-binding=node")

    def kept_lines(self) -> List[str]:
        """One line per variable the caller's own setting kept, as `exec` prints them once on stderr."""
        return [kept_line(k, self.env.get(k, ""), v) for k, v in sorted(self.kept.items())]

    def to_dict(self) -> Dict[str, Any]:
        """The one JSON shape of a plan (`env --json`, `exec --dry-run --json`, the launcher's handoff). `common`
        is left out: it is the node's view, carried once by the launcher, not per rank."""
        return {
            "local_rank": self.local_rank,
            "local_world_size": self.local_world_size,
            "cpus": list(self.cpus),
            "mems": list(self.mems),
            "mem_policy": self.mem_policy,
            "threads": self.threads,
            "gpu": self.gpu,
            "cuda_device": self.cuda_device,
            "env": dict(self.env),
            "reasons": list(self.reasons),
            "kept": [{"name": k, "value": self.env.get(k), "profile": v} for k, v in sorted(self.kept.items())],
            "overridden": [{"name": k, "yours": v, "value": self.env.get(k)}
                           for k, v in sorted(self.overridden.items())],
            "bound_by": self.bound_by,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RankPlan":
        """A plan back from `to_dict()` (`common` comes back empty); a missing or mistyped field is a ValueError."""
        try:
            return cls(
                local_rank=int(data["local_rank"]),
                local_world_size=int(data["local_world_size"]),
                cpus=tuple(int(c) for c in data["cpus"]),
                mems=tuple(int(m) for m in data["mems"]),
                mem_policy=str(data["mem_policy"]),
                env={str(k): str(v) for k, v in dict(data["env"]).items()},
                gpu=None if data.get("gpu") is None else str(data["gpu"]),
                reasons=tuple(str(r) for r in data.get("reasons") or ()),
                threads=None if data.get("threads") is None else int(data["threads"]),
                cuda_device=None if data.get("cuda_device") is None else int(data["cuda_device"]),
                kept={str(k["name"]): str(k["profile"]) for k in data.get("kept") or ()},
                overridden={str(k["name"]): str(k["yours"]) for k in data.get("overridden") or ()},
                bound_by=None if data.get("bound_by") is None else str(data["bound_by"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a plan: {exc}") from None


# ---------------------------------------------------------------------------------------------------------------
# Allocators and other environment every rank shares


def _preload_library(path: str, root: str) -> Tuple[Optional[str], Optional[str]]:
    """(the path to put into LD_PRELOAD, None), or (None, why not). The library is resolved once and checked by
    `trust.check_library` (every component root's and not group/other-writable, an ELF file); the *resolved* path is
    what goes on, so re-pointing a link after this changes nothing. Under a captured root (`facts.root`) the file is
    looked up inside the root, must resolve inside it, and is named by its path on that host."""
    if not path or not path.startswith("/"):
        return None, f"{brief(path)} is not an absolute path"
    if any(c in path for c in _PRELOAD_SEPARATORS):
        return None, f"{brief(path)} contains a separator LD_PRELOAD cannot carry"
    top = os.path.realpath(root) if root not in ("", "/") else ""
    try:
        real = trust.check_library(top + path, "preload library")
    except UserError as exc:
        return None, str(exc)
    if top:
        if not real.startswith(top + "/"):
            return None, f"{path} resolves outside the captured root {root}"
        real = real[len(top):]
    if any(c in real for c in _PRELOAD_SEPARATORS):
        return None, f"{path} resolves to {brief(real)}, which LD_PRELOAD cannot carry"
    return real, None


_PRELOAD_SEPARATORS = " :\t\n\x00"


def _preload_list(value: str) -> List[str]:
    return [p for p in re.split(r"[:\s]+", value or "") if p]


def _choose_allocator(facts: Facts, profile: Profile) -> Tuple[str, Optional[str], List[str]]:
    """(allocator, path to preload or None, reasons). Falls back jemalloc -> tcmalloc -> system, saying why."""
    a = facts.allocators
    found = {"jemalloc": a.jemalloc, "tcmalloc": a.tcmalloc or a.tcmalloc_minimal}
    order = {
        "auto": ["jemalloc", "tcmalloc", "system"],
        "jemalloc": ["jemalloc", "tcmalloc", "system"],
        "tcmalloc": ["tcmalloc", "system"],
        "system": ["system"],
    }[profile.allocator]
    reasons: List[str] = []
    for i, name in enumerate(order):
        if name == "system":
            why = "glibc malloc" if profile.allocator == "system" else "glibc malloc (no usable jemalloc/tcmalloc)"
            reasons.append(f"allocator: {why}")
            return "system", None, reasons
        path = profile.allocator_path if (profile.allocator_path and i == 0 and profile.allocator == name) else None
        path = path or found[name]
        if not path:
            reasons.append(f"allocator: {name} not found on this host")
            continue
        real, problem = _preload_library(path, facts.root)
        if real is None:
            reasons.append(f"allocator: {name} refused for LD_PRELOAD: {problem}")
            continue
        shown = path if real == path else f"{path} (resolved: {real})"
        reasons.append(f"allocator: {name} preloaded from {shown}")
        return name, real, reasons
    return "system", None, reasons  # pragma: no cover - "system" ends every order


def _visible_gpus(facts: Facts, environ: Mapping[str, str]) -> Tuple[List[Optional[Gpu]], List[str]]:
    """The GPUs CUDA will number cuda:0, cuda:1 ... with CUDA_DEVICE_ORDER=PCI_BUS_ID (`policy.cuda_visible`), and
    what the plan says about CUDA_VISIBLE_DEVICES. A MIG instance of an unknown GPU stays in the list as None (its
    rank is planned without NUMA locality)."""
    vis = cuda_visible.select(facts.gpus, environ.get("CUDA_VISIBLE_DEVICES"))
    if vis.raw is None:
        return list(vis.gpus), []
    reasons = [f"CUDA_VISIBLE_DEVICES={vis.raw!r}"]
    reasons.extend(f"{n}; its rank gets no GPU-local binding" for n in vis.notes)
    if vis.stopped_at is not None:
        reasons.append(f"CUDA_VISIBLE_DEVICES: CUDA stops at entry {vis.stopped_at!r} ({vis.why})")
    return list(vis.gpus), reasons


# ---------------------------------------------------------------------------------------------------------------
# The user wins: a variable the caller already set keeps the caller's value, and the plan says so

ALLOC_CONF = "PYTORCH_ALLOC_CONF"
CUDA_ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
ALLOC_CONF_NAMES = (ALLOC_CONF, CUDA_ALLOC_CONF)

# Variables the plan sets that stay hosttune's even when the caller set them: LD_PRELOAD is merged instead (the
# profile's library first, the caller's entries after), CUDA_DEVICE_ORDER=PCI_BUS_ID is what makes the plan's cuda:N
# the GPU it bound the rank near, and HOSTTUNE_* are hosttune's own switches.
NOT_THE_USERS = frozenset({"LD_PRELOAD", "CUDA_DEVICE_ORDER"})

# Preloaded libraries that replace malloc: one of these in the caller's LD_PRELOAD is the caller's allocator choice.
MALLOC_LIBS = ("libjemalloc", "libtcmalloc", "libmimalloc", "libtbbmalloc_proxy", "libhoard", "libsnmallocshim")


def users_choice(name: str) -> bool:
    """True when a value the caller already set for `name` wins over the profile's (unless --override)."""
    return name not in NOT_THE_USERS and not name.startswith("HOSTTUNE_")


def _show(value: str, limit: int = 80) -> str:
    text = printable(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def kept_line(name: str, yours: str, profile_value: str) -> str:
    """The reason line for a variable the caller's own value kept (dry run, `env`, and once on stderr at run)."""
    return (f"{name}={_show(yours)} kept: set by you (profile: {_show(profile_value) or repr('')}; "
            f"--override to use the profile)")


def settle(
    planned: Mapping[str, str], environ: Mapping[str, str], override: bool = False
) -> Tuple[Dict[str, str], Dict[str, str], Dict[str, str], List[str]]:
    """The one place the rule lives: (env, kept, overridden, reasons) for what the profile `planned`.

    A variable the caller already set (present in `environ`, the caller's own environment: never what a launcher
    added for its workers) keeps the caller's value, and `kept` maps it to the profile's value that was not used;
    with `override` the profile's value is used and `overridden` maps it to the caller's. `env` is then the value
    every variable really gets, so applying it over the caller's environment changes only what the plan decided."""
    env = dict(planned)
    kept: Dict[str, str] = {}
    overridden: Dict[str, str] = {}
    reasons: List[str] = []
    for key in sorted(planned):
        value = planned[key]
        yours = environ.get(key)
        if yours is None or yours == value or not users_choice(key):
            continue
        if override:
            overridden[key] = yours
            reasons.append(f"{key}={_show(value)} replaces yours ({_show(yours)}): --override")
        else:
            env[key] = yours
            kept[key] = value
            reasons.append(kept_line(key, yours, value))
    return env, kept, overridden, reasons


def launcher_default(environ: Mapping[str, str]) -> Optional[str]:
    """The variable in `environ` that a launcher set on its own, so it is not the caller's choice; None if none.

    torchrun (torch/distributed/run.py, 2.x) sets OMP_NUM_THREADS=1 for its workers when it is unset and
    nproc_per_node > 1; a worker shows it with TORCHELASTIC_RUN_ID and LOCAL_WORLD_SIZE > 1. Inside such a worker
    (`eval "$(hosttune env)"`, a per-rank hook) a 1 there is taken for torchrun's default: a caller who really
    wants one thread per rank gets the profile's count, which is never more than the rank's cores."""
    if environ.get("OMP_NUM_THREADS") == "1" and environ.get("TORCHELASTIC_RUN_ID") is not None:
        size = environ.get("LOCAL_WORLD_SIZE", "")
        if size.isdigit() and int(size) > 1:
            return "OMP_NUM_THREADS"
    return None


def _version(text: Optional[str]) -> Optional[Tuple[int, int, bool]]:
    """(major, minor, is a release) of a torch version string ("2.10.0+cu128", "2.10.0a0+git1234"); None if not one."""
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?(\S*)", text or "")
    if not m:
        return None
    tail = m.group(4).split("+")[0]
    return int(m.group(1)), int(m.group(2)), not re.search(r"(a|b|rc|dev)", tail)


def alloc_conf_names(torch_version: Optional[str]) -> Tuple[str, ...]:
    """The variable name(s) that carry the allocator setting to the job's torch.

    - torch 2.10 and later: PYTORCH_ALLOC_CONF. c10/core/AllocatorConfig.cpp reads PYTORCH_ALLOC_CONF first and
      only when it is unset falls back to PYTORCH_CUDA_ALLOC_CONF (then PYTORCH_HIP_ALLOC_CONF), warning that the
      old name is deprecated; the two are never merged. The CUDA caching allocator takes its options from that
      shared config since pytorch#165135 ("Reuse AcceleratorAllocatorConfig in CUDAAllocatorConfig", 2.10). The
      installed 2.13 lists the three names in that order in libc10.so (`strings libc10.so | grep ALLOC_CONF`).
    - before 2.10: PYTORCH_CUDA_ALLOC_CONF, the only name the CUDA allocator reads. torch 2.9 already had the
      device-generic PYTORCH_ALLOC_CONF (and its deprecation warning for the old name), but its CUDA allocator
      still read expandable_segments etc. from PYTORCH_CUDA_ALLOC_CONF only: pytorch#183387 ("PYTORCH_ALLOC_CONF
      silently ignored for CUDA in 2.9.1", fixed by 2.11 per its reporter); older torch knows no other name.
    - unknown (no probe, not a version) or a 2.10 pre-release: both names with the same value. Every torch then
      reads our value under the name it prefers and nothing else, so this is safe whatever torch runs.

    The caller's own setting under either name is a different rule (`_alloc_conf_env`): theirs wins."""
    v = _version(torch_version)
    if v is None or (v[:2] == (2, 10) and not v[2]):
        return ALLOC_CONF_NAMES
    return (ALLOC_CONF,) if v[:2] >= (2, 10) else (CUDA_ALLOC_CONF,)


def _alloc_conf_env(value: str, torch_version: Optional[str], environ: Mapping[str, str],
                    override: bool) -> Tuple[Dict[str, str], List[str]]:
    """The allocator setting under the right name(s). A caller who set either name keeps theirs under the name they
    used, and the profile sets neither name (torch prefers PYTORCH_ALLOC_CONF: ours beside theirs would silently
    win, or be silently ignored); with --override ours goes under the name torch reads and every name they set."""
    yours = [n for n in ALLOC_CONF_NAMES if n in environ]
    reasons: List[str] = []
    names = alloc_conf_names(torch_version)
    shown = f"torch {torch_version}" if torch_version else "torch version unknown: both names, same value"
    if yours and not override:
        env = {n: value for n in yours}  # settle() keeps the caller's value and reports the profile's
        if names == (CUDA_ALLOC_CONF,) and yours == [ALLOC_CONF]:
            reasons.append(f"allocator config: torch {torch_version} takes CUDA allocator options from "
                           f"{CUDA_ALLOC_CONF} only, so your {ALLOC_CONF} may have no effect there")
        return env, reasons
    env = {n: value for n in [*names, *[n for n in yours if n not in names]]}
    reasons.append(f"allocator config: {', '.join(env)}={_show(value)} ({shown})")
    return env, reasons


def _same_library(a: str, b: str, root: str) -> bool:
    if a == b:
        return True
    if root not in ("", "/") or not (a.startswith("/") and b.startswith("/")):
        return False
    return os.path.realpath(a) == os.path.realpath(b)


def _users_malloc(preload: List[str]) -> Optional[str]:
    return next((p for p in preload if os.path.basename(p).startswith(MALLOC_LIBS)), None)


def _common(facts: Facts, profile: Profile, environ: Mapping[str, str],
            override: bool = False) -> Tuple[Dict[str, str], List[str]]:
    """What every rank gets, as the profile wants it: `settle` then lets the caller's own settings win."""
    env: Dict[str, str] = {}
    reasons: List[str] = []
    preload: List[str] = []
    for p in _preload_list(environ.get("LD_PRELOAD", "")):
        if not any(_same_library(p, q, facts.root) for q in preload):
            preload.append(p)
    name, path, why = _choose_allocator(facts, profile)
    theirs = _users_malloc(preload)
    if theirs is not None and path and not override and not _same_library(theirs, path, facts.root):
        # a different malloc already preloaded is the caller's choice: ours first would silently replace it
        name, path = "yours", None
        why = [f"allocator: {theirs} from your LD_PRELOAD kept, the profile's {profile.allocator} not added "
               f"(--override to put the profile's first)"]
    reasons.extend(why)
    ours: List[str] = []
    if path:
        ours.append(path)
    if profile.openmp == "intel":
        iomp = facts.allocators.iomp5
        real, problem = _preload_library(iomp, facts.root) if iomp else (None, "libiomp5 not found")
        if real is None:
            reasons.append(f"openmp: Intel OpenMP not preloaded: {problem}")
        else:
            ours.append(real)
            reasons.append(f"openmp: Intel OpenMP preloaded from {real}")
    new = ours + [p for p in preload if not any(_same_library(p, o, facts.root) for o in ours)]
    if ours:  # always stated, so a rank's env is the same whether or not its parent already carried it
        env["LD_PRELOAD"] = ":".join(new)
        if len(new) > len(ours):
            reasons.append(f"LD_PRELOAD: the profile's {', '.join(ours)} first, yours after "
                           f"({_show(':'.join(new[len(ours):]))})")
    if name == "jemalloc" and profile.malloc_conf:
        env["MALLOC_CONF"] = profile.malloc_conf
    if name == "tcmalloc":
        env.update(profile.tcmalloc)

    gpus, _ = _visible_gpus(facts, environ)
    if profile.device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
        reasons.append("device: cpu - CUDA_VISIBLE_DEVICES='' hides the GPUs")
        gpus = []
    elif facts.gpus:
        # cuda:i and NVML index i are the same GPU only in PCI bus order (pitfalls.md).
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        if profile.cuda_alloc_conf and gpus:
            version = facts.torch.version if facts.torch is not None else None
            conf, why = _alloc_conf_env(profile.cuda_alloc_conf, version, environ, override)
            env.update(conf)
            reasons.extend(why)
    dl = profile.dataloader
    cuda_torch = facts.torch is None or facts.torch.cuda is not None
    if dl.pin_memory == "auto":
        pin = bool(gpus) and cuda_torch
        if gpus and not cuda_torch:
            reasons.append("pin_memory: off - the torch build has no CUDA")
    else:
        pin = bool(dl.pin_memory)
    env[names.PIN_MEMORY] = "1" if pin else "0"
    if dl.num_workers != "auto":
        env[names.NUM_WORKERS] = str(dl.num_workers)
        _dl_followers(env, int(dl.num_workers), profile)
    env[names.DETERMINISTIC] = "1" if profile.deterministic else "0"
    if profile.deterministic:
        env.update(DETERMINISTIC_ENV)
    if profile.debug:
        env.update(DEBUG_ENV)
    for k, v in profile.env.items():
        env[k] = str(v)
    if profile.env:
        reasons.append(f"env: {len(profile.env)} literal entries from the profile ({', '.join(sorted(profile.env))})")
    return env, reasons


def _dl_followers(env: Dict[str, str], workers: int, profile: Profile) -> None:
    """persistent_workers and prefetch_factor only mean something with workers (torch refuses them otherwise)."""
    dl = profile.dataloader
    env.pop(names.PREFETCH_FACTOR, None)
    if workers > 0:
        pers = True if dl.persistent_workers == "auto" else bool(dl.persistent_workers)
        env[names.PERSISTENT_WORKERS] = "1" if pers else "0"
        env[names.PREFETCH_FACTOR] = str(2 if dl.prefetch_factor == "auto" else dl.prefetch_factor)
    else:
        env[names.PERSISTENT_WORKERS] = "0"


def common_env(facts: Facts, profile: Profile, environ: Optional[Mapping[str, str]] = None,
               override: bool = False) -> Dict[str, str]:
    """What every rank gets (allocator, CUDA order, switches, literal env), the caller's own settings kept (see
    `settle`): set once, e.g. for torchrun."""
    environ = os.environ if environ is None else environ
    return settle(_common(facts, profile, environ, override)[0], environ, override)[0]


# ---------------------------------------------------------------------------------------------------------------
# CPU layout for the whole node


@dataclass
class _Topo:
    cores: List[Core]  # allowed cores, node by node
    node_of: Dict[Core, int]  # core -> NUMA node id (-1 unknown)
    by_node: Dict[int, List[Core]]  # node -> its allowed cores (only nodes that have some)
    mem_ok: Tuple[int, ...]  # nodes memory may be bound to
    quota: Optional[float]


def _topology(facts: Facts) -> _Topo:
    node_cpus = {n.id: set(n.cpus) for n in facts.numa.nodes}
    allowed = set(facts.cpu.allowed_cpus or facts.cpu.online or [c for s in node_cpus.values() for c in s])
    cores: List[Core] = []
    covered: set = set()
    for core in facts.cpu.cores:
        pus = tuple(sorted(set(core) & allowed))
        if pus:
            cores.append(pus)
            covered.update(pus)
    cores.extend((c,) for c in sorted(allowed - covered))
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
               bound_by: Optional[str]) -> _Node:
    key = (n, override, bound_by, tuple(sorted(environ.items())))
    if _LAST and _LAST[0][0] is facts and _LAST[0][1] is profile and _LAST[0][2] == key:
        return _LAST[0][3]
    common, reasons = _common(facts, profile, environ, override)
    topo = _topology(facts)
    slots = _layout(facts, profile, n, environ, topo)
    # bound by someone else: threads still match the rank's share of the cores (never the whole node per rank)
    threads, tnotes = _threads(profile, slots, topo, "cores" if bound_by else profile.binding)
    node = _Node(common, tuple(reasons), topo, slots, threads, tuple(tnotes))
    _LAST[:] = [(facts, profile, key, node)]
    return node


def resolve(
    facts: Facts,
    profile: Profile,
    local_rank: int,
    local_world_size: int,
    environ: Optional[Mapping[str, str]] = None,
    *,
    override: bool = False,
    bound_by: Optional[str] = None,
) -> RankPlan:
    """The plan for one local rank; every rank of the node gets a disjoint slice of the same layout.

    `environ` is the caller's own environment (not what a launcher added for its workers): a variable set there
    wins over the profile's value and is listed in `kept` (see `settle`); `override` makes the profile win.
    `bound_by` names who binds the rank instead (e.g. "torchrun --numa-binding=node"): no CPUs, no memory policy,
    threads still sized to the rank's share of the cores."""
    if local_world_size < 1:
        raise UserError(f"local world size must be at least 1, not {local_world_size}")
    if not 0 <= local_rank < local_world_size:
        raise UserError(f"local rank {local_rank} is outside 0..{local_world_size - 1}")
    environ = os.environ if environ is None else environ
    default = launcher_default(environ)
    if default is not None:
        environ = {k: v for k, v in environ.items() if k != default}
    node = _node_plan(facts, profile, local_world_size, environ, override, bound_by)
    reasons = list(node.reasons)
    if default is not None:
        reasons.append(f"{default}=1 was torchrun's default for its workers, not yours: the plan sets it")
    env = dict(node.common)
    topo, slots, threads, tnotes = node.topo, node.slots, node.threads, node.tnotes
    binding = profile.binding
    me = slots[local_rank]
    reasons.extend(me.notes)
    reasons.extend(tnotes)

    cores = me.cores
    if bound_by:
        cpus: Tuple[int, ...] = ()
        reasons.append(f"binding: left to {bound_by}; hosttune does not bind on top (no affinity, memory policy "
                       f"or numactl)")
    elif binding == "none" or not cores:
        cpus = ()
        reasons.append("binding: none - the rank is not pinned" if binding == "none" else "binding: no CPU topology")
    elif binding == "numa":
        nodes = sorted({topo.node_of[c] for c in cores})
        cpus = tuple(sorted(p for nid in nodes for c in topo.by_node.get(nid, []) for p in c))
        reasons.append(f"binding: numa - all allowed CPUs of node(s) {cpulist(nodes)}: {cpulist(cpus)}")
    else:
        cpus = tuple(sorted(p for c in cores for p in c))
        nodes = sorted({topo.node_of[c] for c in cores} - {-1})
        where = f" on NUMA node(s) {cpulist(nodes)}" if nodes else ""
        what = "shared with other ranks (more ranks than cores)" if me.shared else "disjoint from the other ranks"
        reasons.append(f"binding: {len(cores)} core(s) {cpulist(cpus)}{where}, {what}")

    gpu_node = me.gpu.numa_node if me.gpu is not None and me.gpu.numa_node >= 0 else None
    if me.gpu is not None and gpu_node is None and me.cpu_node is not None:
        gpu_node = me.cpu_node  # inferred from the GPU's local_cpulist
    mem_policy = profile.memory_policy
    auto_mem = mem_policy == "auto"
    if auto_mem:  # decided here, for the host being planned: a one-node host has nothing to bind
        mem_policy = "bind" if len(topo.mem_ok) > 1 else "none"
    mems: Tuple[int, ...] = ()
    if bound_by:
        mem_policy = "none"
    elif mem_policy != "none":
        if gpu_node is not None and gpu_node in topo.mem_ok:
            mems = (gpu_node,)
        elif cpus:
            mems = tuple(sorted({topo.node_of[c] for c in cores} & set(topo.mem_ok)))
        if len(mems) > 1 and mem_policy == "preferred":
            # MPOL_PREFERRED (numactl --preferred) takes one node: the one holding most of this rank's cores
            mems = (max(mems, key=lambda m: (sum(1 for c in cores if topo.node_of[c] == m), -m)),)
        if mems:
            reasons.append(f"memory: {mem_policy} to node(s) {cpulist(mems)}"
                           + (f" (auto: {len(topo.mem_ok)} NUMA nodes)" if auto_mem else ""))
        else:
            reasons.append("memory: no policy (no allowed memory node for this rank's CPUs)")
            mem_policy = "none"
    elif auto_mem:
        reasons.append("memory: no policy (auto: a single NUMA node, nothing to bind)")
    else:
        reasons.append("memory: no policy (profile says none)")

    t = threads[local_rank]
    if cores or binding == "none" and topo.cores:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(t)
        core_word = "core" if t == 1 else "cores"
        under = f", its even share of the cores {bound_by} binds it to" if bound_by else ""
        reasons.append(f"threads: {t} ({t} physical {core_word} for this rank{under}; SMT siblings count once)")
        preloaded = _preload_list(env.get("LD_PRELOAD", environ.get("LD_PRELOAD", "")))
        intel = profile.openmp == "intel" or profile.openmp == "auto" and any("iomp5" in p for p in preloaded)
        if intel:
            env.update(INTEL_KMP)
            reasons.append("KMP_AFFINITY/KMP_BLOCKTIME: Intel OpenMP is preloaded")
    else:
        t = 0
        reasons.append("threads: left to the program (no CPU topology known)")

    if profile.dataloader.num_workers == "auto":
        eff = t if t else len(cores)
        workers, why = cpu_policy.dataloader_workers(eff)
        env[names.NUM_WORKERS] = str(workers)
        _dl_followers(env, workers, profile)
        reasons.append(f"dataloader: {workers} workers ({why})")
    for k, v in profile.env.items():  # literal env wins over anything computed
        env[k] = str(v)
    env, kept, overridden, settled = settle(env, environ, override)
    reasons.extend(settled)
    if "OMP_NUM_THREADS" in kept:
        t = _threads_of(env["OMP_NUM_THREADS"]) or 0  # what the program will really run with
    if "OMP_NUM_THREADS" in kept and "MKL_NUM_THREADS" in env and "MKL_NUM_THREADS" not in environ:
        del env["MKL_NUM_THREADS"]  # MKL reads OMP_NUM_THREADS when its own is unset: one choice, the caller's
        reasons.append("MKL_NUM_THREADS: not set, so MKL follows your OMP_NUM_THREADS")
    if me.gpu is not None:
        reasons.insert(0, f"gpu: cuda:{me.cuda_device} = {me.gpu.pci_bus_id} ({me.gpu.name or 'GPU'}), NUMA node "
                       f"{me.gpu.numa_node if me.gpu.numa_node >= 0 else 'unknown'}")
    return RankPlan(
        local_rank=local_rank,
        local_world_size=local_world_size,
        cpus=cpus,
        mems=mems,
        mem_policy=mem_policy,
        env=env,
        gpu=me.gpu.pci_bus_id if me.gpu is not None else None,
        reasons=tuple(reasons),
        threads=t or None,
        cuda_device=me.cuda_device,
        common={k: env[k] for k in node.common if k in env},
        kept=kept,
        overridden=overridden,
        bound_by=bound_by,
    )


def _threads_of(value: Optional[str]) -> Optional[int]:
    """The thread count an OMP_NUM_THREADS value gives the outer parallel region ("4", "4,2"); None if none."""
    head = (value or "").split(",")[0].strip()
    return int(head) if head.isdigit() and int(head) > 0 else None


def resolve_all(
    facts: Facts, profile: Profile, local_world_size: int, environ: Optional[Mapping[str, str]] = None, *,
    override: bool = False, bound_by: Optional[str] = None,
) -> List[RankPlan]:
    """Every local rank's plan (dry runs, tests)."""
    return [resolve(facts, profile, r, local_world_size, environ, override=override, bound_by=bound_by)
            for r in range(local_world_size)]
