"""What each tunable expects and when it applies: the one home `hosttune tune` and `hosttune doctor` both read.

- `expected(tid, tune)`: the value the profile's `tune:` section asks for (what apply writes, what verify and
  doctor compare with).
- `ok(tid, actual, expected)`: whether a value read on the host satisfies it (a lower swappiness is fine, a higher
  open-files limit is fine, `never` is at most `madvise` for huge pages).
- `not_here(tid, host)`: why the tunable does not apply on this host (swappiness without swap, locked memory
  without RDMA, NUMA balancing on one node), or None. `Host` holds the few facts these rules look at; tune reads
  them from the tree (`host_of_tree`) with the detector's reader, doctor from its facts (`host_of_facts`).

Pure rules: nothing here reads the host but `host_of_tree`.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from hosttune.profile.settings import Tune

THP_ORDER = ("never", "madvise", "always")  # least to most huge-page activity


@dataclass(frozen=True)
class Host:
    numa_nodes: int = 1
    swap_mb: Optional[int] = None  # None: unknown (the tunable is judged)
    rdma_devices: int = 0


def _exactly(actual: str, expected: str) -> bool:
    return actual == expected


def _at_most(actual: str, expected: str) -> bool:
    return actual.isdigit() and expected.isdigit() and int(actual) <= int(expected)


def _at_least(actual: str, expected: str) -> bool:
    return actual == "unlimited" or (actual.isdigit() and expected.isdigit() and int(actual) >= int(expected))


def _thp_at_most(actual: str, expected: str) -> bool:
    """`never` satisfies a profile asking for `madvise` (fewer huge pages, no background compaction)."""
    if actual in THP_ORDER and expected in THP_ORDER:
        return THP_ORDER.index(actual) <= THP_ORDER.index(expected)
    return actual == expected


EXPECTED: Dict[str, Callable[[Tune], str]] = {
    "thp": lambda t: t.thp,
    "thp_defrag": lambda t: t.thp_defrag,
    "numa_balancing": lambda t: "1" if t.numa_balancing else "0",
    "swappiness": lambda t: str(10 if t.swappiness == "auto" else t.swappiness),
    "governor": lambda t: t.governor,
    "epp": lambda t: t.epp,
    "nofile": lambda t: str(65536 if t.nofile == "auto" else t.nofile),
    "memlock": lambda t: t.memlock,
    "shm": lambda t: f"size={t.shm_size}",
    "persistence": lambda t: "enabled, active",
}

OK: Dict[str, Callable[[str, str], bool]] = {
    "thp": _thp_at_most,
    "swappiness": _at_most,
    "nofile": _at_least,
    "memlock": _at_least,
}

NOT_HERE: Dict[str, Callable[[Host], Optional[str]]] = {
    "numa_balancing": lambda h: f"{h.numa_nodes or 1} NUMA node: nothing to balance" if h.numa_nodes <= 1 else None,
    "swappiness": lambda h: "no swap configured: swappiness has no effect" if h.swap_mb == 0 else None,
    "memlock": lambda h: "no RDMA devices: only RDMA pins memory" if h.rdma_devices == 0 else None,
}


def expected(tid: str, tune: Tune) -> str:
    return EXPECTED[tid](tune)


def ok(tid: str, actual: str, want: str) -> bool:
    return OK.get(tid, _exactly)(actual, want)


def not_here(tid: str, host: Host) -> Optional[str]:
    rule = NOT_HERE.get(tid)
    return rule(host) if rule is not None else None


def size_kib(size: Optional[str], mem_kib: Optional[int]) -> Optional[int]:
    """A tmpfs size= value in KiB: NNN[kKmMgGtT] (bytes without a suffix) or NN% of MemTotal (tmpfs(5))."""
    if not size:
        return None
    v = size[len("size="):] if size.startswith("size=") else size
    try:
        if v.endswith("%"):
            return int(mem_kib * int(v[:-1]) / 100) if mem_kib else None
        mult = {"k": 1, "m": 1024, "g": 1 << 20, "t": 1 << 30}.get(v[-1:].lower())
        return int(v[:-1]) * mult if mult else int(v) // 1024
    except ValueError:
        return None


def shm_slack(want_kib: int) -> int:
    """How far below the profile's size a mounted /dev/shm still counts as that size (tmpfs rounds to pages)."""
    return max(4, want_kib // 1000)


def shm_big_enough(have_kib: int, want_kib: int) -> bool:
    """A /dev/shm at least the profile's size is right: a bigger one is no problem to fix."""
    return have_kib >= want_kib - shm_slack(want_kib)


def host_of_tree(root: Path) -> Host:
    """The rules' facts of the host under `root`, read the way the detector reads them (`HostIO`)."""
    from hosttune.detect.hostio import HostIO
    from hosttune.detect.numa import parse_meminfo

    io = HostIO(Path(root))
    nodes = [n for n in io.listdir("/sys/devices/system/node") if n.startswith("node") and n[4:].isdigit()]
    info = parse_meminfo(io.read("/proc/meminfo"))
    swap = info.get("SwapTotal")
    return Host(numa_nodes=len(nodes) or 1, swap_mb=None if swap is None else swap // 1024,
                rdma_devices=len(io.listdir("/sys/class/infiniband")))


def host_of_facts(facts: Any) -> Host:
    """The rules' facts from doctor's `Facts` (hosttune.facts)."""
    return Host(numa_nodes=len(facts.numa.nodes) or 1, swap_mb=facts.memory.swap_total_mb,
                rdma_devices=facts.limits.rdma_devices)
