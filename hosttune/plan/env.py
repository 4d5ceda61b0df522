"""What every rank of the node gets (`common_env`): allocator preload, CUDA order and allocator config, the
DataLoader and determinism switches, debug variables, the profile's literal env and the network interface that
reaches the job's other nodes (plan.network)."""

import os
import re
from typing import Dict, List, Mapping, Optional, Tuple

from hosttune import trust
from hosttune.errors import UserError
from hosttune.facts import Facts, Gpu
from hosttune.plan import network
from hosttune.plan.model import DEBUG_ENV, DETERMINISTIC_ENV, _show
from hosttune.plan.userwins import MALLOC_LIBS, settle
from hosttune.policy import cuda_visible, names
from hosttune.profile import Profile
from hosttune.yamlio import brief


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



ALLOC_CONF = "PYTORCH_ALLOC_CONF"
CUDA_ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
ALLOC_CONF_NAMES = (ALLOC_CONF, CUDA_ALLOC_CONF)


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



def _preload_env(facts: Facts, profile: Profile, environ: Mapping[str, str],
                 override: bool) -> Tuple[Dict[str, str], List[str]]:
    """LD_PRELOAD (the profile's allocator and Intel OpenMP first, the caller's entries after) and the allocator's
    own settings; a different malloc the caller already preloads is kept instead of ours."""
    env: Dict[str, str] = {}
    preload: List[str] = []
    for p in _preload_list(environ.get("LD_PRELOAD", "")):
        if not any(_same_library(p, q, facts.root) for q in preload):
            preload.append(p)
    name, path, reasons = _choose_allocator(facts, profile)
    theirs = _users_malloc(preload)
    if theirs is not None and path and not override and not _same_library(theirs, path, facts.root):
        # a different malloc already preloaded is the caller's choice: ours first would silently replace it
        name, path = "yours", None
        reasons = [f"allocator: {theirs} from your LD_PRELOAD kept, the profile's {profile.allocator} not added "
                   f"(--override to put the profile's first)"]
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
    return env, reasons


def _device_env(facts: Facts, profile: Profile, environ: Mapping[str, str], override: bool,
                env: Dict[str, str], reasons: List[str]) -> List[Optional[Gpu]]:
    """Which GPUs the ranks see (device: cpu hides them), CUDA's PCI bus order and the allocator config; returns
    the GPUs."""
    gpus, _ = _visible_gpus(facts, environ)
    if profile.device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
        reasons.append("device: cpu - CUDA_VISIBLE_DEVICES='' hides the GPUs")
        return []
    if facts.gpus:
        # cuda:i and NVML index i are the same GPU only in PCI bus order (pitfalls.md).
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        if profile.cuda_alloc_conf and gpus:
            version = facts.torch.version if facts.torch is not None else None
            conf, why = _alloc_conf_env(profile.cuda_alloc_conf, version, environ, override)
            env.update(conf)
            reasons.extend(why)
    return gpus


def _switches_env(facts: Facts, profile: Profile, gpus: List[Optional[Gpu]], env: Dict[str, str],
                  reasons: List[str]) -> None:
    """pin_memory, fixed DataLoader workers, determinism, debug variables and the profile's literal env."""
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


def _common(facts: Facts, profile: Profile, environ: Mapping[str, str],
            override: bool = False, endpoint: Optional[network.Endpoint] = None) -> Tuple[Dict[str, str], List[str]]:
    """What every rank gets, as the profile wants it: `settle` then lets the caller's own settings win. `endpoint`:
    where the job's nodes meet (the launcher's command line), else MASTER_ADDR from `environ` (plan.network)."""
    env, reasons = _preload_env(facts, profile, environ, override)
    gpus = _device_env(facts, profile, environ, override, env, reasons)
    _switches_env(facts, profile, gpus, env, reasons)
    net = network.live_decide(endpoint or network.from_environ(environ), facts.root)
    env.update(net.env)
    reasons.extend(net.reasons)
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
               override: bool = False, endpoint: Optional[network.Endpoint] = None) -> Dict[str, str]:
    """What every rank gets (allocator, CUDA order, switches, literal env), the caller's own settings kept (see
    `settle`): set once, e.g. for torchrun."""
    environ = os.environ if environ is None else environ
    return settle(_common(facts, profile, environ, override, endpoint)[0], environ, override)[0]

