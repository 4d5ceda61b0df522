"""The user wins: a variable the caller already set keeps the caller's value, and the plan says so (`settle`, the
only place this is decided); a launcher's own defaults are not the caller's (`launcher_default`)."""

from typing import Dict, List, Mapping, Optional, Tuple

from hosttune.detect.hostio import small_int
from hosttune.plan.model import _show, kept_line

# Variables the plan sets that stay hosttune's even when the caller set them: LD_PRELOAD is merged instead (the
# profile's library first, the caller's entries after), CUDA_DEVICE_ORDER=PCI_BUS_ID is what makes the plan's cuda:N
# the GPU it bound the rank near, and HOSTTUNE_* are hosttune's own switches.
NOT_THE_USERS = frozenset({"LD_PRELOAD", "CUDA_DEVICE_ORDER"})

# Preloaded libraries that replace malloc: one of these in the caller's LD_PRELOAD is the caller's allocator choice.
MALLOC_LIBS = ("libjemalloc", "libtcmalloc", "libmimalloc", "libtbbmalloc_proxy", "libhoard", "libsnmallocshim")


def users_choice(name: str) -> bool:
    """True when a value the caller already set for `name` wins over the profile's (unless --override)."""
    return name not in NOT_THE_USERS and not name.startswith("HOSTTUNE_")



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
            reasons.append(f"{key}={_show(value)} replaces yours ({_show(yours) or repr('')}): --override")
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
        if size.isdigit() and (small_int(size) or 0) > 1:
            return "OMP_NUM_THREADS"
    return None



def _threads_of(value: Optional[str]) -> Optional[int]:
    """The thread count an OMP_NUM_THREADS value gives the outer parallel region ("4", "4,2"); None if none."""
    head = (value or "").split(",")[0].strip()
    n = small_int(head) if head.isdigit() else None  # unsigned: small_int takes a sign (and refuses "²")
    return n if n is not None and n > 0 else None

