"""CPU and memory binding of this process to a rank's plan (sched_setaffinity, set_mempolicy through libnuma, or a
numactl prefix), and the CPUs/nodes a plan really gets inside what this process is allowed.

Used by the launcher for plain/srun jobs and by every torchrun rank's shim, so it stays cheap to import: ctypes
and the programs gateway are imported only inside the functions that need them, and no dataclasses (a NamedTuple
is enough).
A plan here is anything with `cpus`, `mems` and `mem_policy` (a RankPlan, or the shim's view of
`RankPlan.to_dict()`).
"""

import os
from typing import Any, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from hosttune.cpulist import format_cpulist as _cpulist
from hosttune.launch.procfs import self_mems_allowed

MPOL_PREFERRED = 1
MPOL_BIND = 2
MPOL_PREFERRED_MANY = 5  # Linux 5.15+


def effective_cpus(plan_cpus: Sequence[int], allowed: Iterable[int]) -> Tuple[int, ...]:
    """The plan's CPUs inside the allowed set; the allowed set itself when they do not meet (never EINVAL)."""
    allowed_set = set(allowed)
    cpus = tuple(sorted(set(plan_cpus) & allowed_set))
    return cpus or tuple(sorted(allowed_set))


def effective_mems(plan: Any, allowed: Optional[Sequence[int]] = None) -> Tuple[str, Tuple[int, ...]]:
    """(policy, nodes) the rank really gets: plan nodes inside Mems_allowed (`allowed`; None: this process's own,
    from /proc/self/status); ("none", ()) when nothing is left. An unreadable Mems_allowed keeps the plan's nodes."""
    if plan.mem_policy not in ("bind", "preferred") or not plan.mems:
        return "none", ()
    if allowed is None:
        allowed = self_mems_allowed()
    nodes = tuple(sorted(set(plan.mems) & set(allowed))) if allowed else tuple(sorted(plan.mems))
    if not nodes:
        return "none", ()
    return plan.mem_policy, nodes


def _libnuma(path: Optional[str]) -> Optional[Any]:
    import ctypes

    for name in [p for p in (path, "libnuma.so.1", "libnuma.so") if p]:
        try:
            return ctypes.CDLL(name, use_errno=True)
        except OSError:
            continue
    return None


def set_mempolicy(policy: str, nodes: Sequence[int], libnuma_path: Optional[str] = None) -> Optional[str]:
    """Set this process's memory policy (inherited across fork and exec). None on success, else why not."""
    import ctypes

    lib = _libnuma(libnuma_path)
    if lib is None or not hasattr(lib, "set_mempolicy"):
        return "libnuma.so.1 not found"
    bits = ctypes.sizeof(ctypes.c_ulong) * 8
    words = max(nodes) // bits + 1
    mask = (ctypes.c_ulong * words)()
    for node in nodes:
        mask[node // bits] |= 1 << (node % bits)
    fn = lib.set_mempolicy
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_ulong), ctypes.c_ulong]
    fn.restype = ctypes.c_long
    modes = [MPOL_BIND] if policy == "bind" else [MPOL_PREFERRED]
    if policy == "preferred" and len(nodes) > 1:
        modes = [MPOL_PREFERRED_MANY, MPOL_PREFERRED]  # one preferred node only before Linux 5.15
    err = 0
    for mode in modes:
        if mode == MPOL_PREFERRED and len(nodes) > 1:
            mask = (ctypes.c_ulong * words)()
            mask[nodes[0] // bits] |= 1 << (nodes[0] % bits)
        # maxnode counts one past the last bit, as libnuma itself passes it (numa_set_membind: size + 1)
        if fn(mode, mask, words * bits + 1) == 0:
            return None
        err = ctypes.get_errno()
    return f"set_mempolicy failed: {os.strerror(err)}"


class Binding(NamedTuple):
    cpus: Tuple[int, ...]  # () = not bound
    mem_policy: str
    mems: Tuple[int, ...]
    prefix: Tuple[str, ...]  # ("numactl", "--membind=0") when libnuma was not usable
    notes: Tuple[str, ...]


def _numactl() -> Tuple[Optional[str], str]:
    """(numactl's path, "") through the programs gateway (as root only a numactl root alone can change), else
    (None, why not)."""
    from hosttune import programs
    from hosttune.errors import UserError

    try:
        return programs.resolve("numactl", "numactl"), ""
    except programs.NotFound:
        return None, "numactl not found either"
    except UserError as exc:  # trust.Untrusted, as root: one line, and the rank runs without the memory binding
        return None, str(exc)


def bind_self(plan: Any, libnuma_path: Optional[str] = None, numactl: Optional[str] = None) -> Binding:
    """Bind this process to the plan (CPUs, then memory); exec afterwards so every thread of the job inherits it."""
    notes: List[str] = []
    allowed = os.sched_getaffinity(0)
    cpus: Tuple[int, ...] = ()
    if plan.cpus:
        cpus = effective_cpus(plan.cpus, allowed)
        if set(cpus) != set(plan.cpus):
            notes.append(f"plan CPUs {_cpulist(plan.cpus)} narrowed to the allowed {_cpulist(cpus)}")
        os.sched_setaffinity(0, cpus)
    policy, nodes = effective_mems(plan)
    prefix: Tuple[str, ...] = ()
    if policy != "none":
        why = set_mempolicy(policy, nodes, libnuma_path)
        if why is not None:
            tool, missing = (numactl, "") if numactl else _numactl()
            if tool:
                flag = "--membind" if policy == "bind" else "--preferred"
                prefix = (tool, f"{flag}={_cpulist(nodes) if policy == 'bind' else nodes[0]}")
            else:
                notes.append(f"memory not bound ({why}; {missing})")
                policy, nodes = "none", ()
    return Binding(cpus, policy, nodes, prefix, tuple(notes))
