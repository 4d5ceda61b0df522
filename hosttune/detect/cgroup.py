"""This process's cgroup limits: cpuset CPUs and mems, CPU quota, memory limit (cgroup v2, v1, legacy cpuset fs)."""

import posixpath
from typing import Dict, List, Optional, Sequence, Tuple, TypeVar

from hosttune.detect.hostio import HostIO, small_int
from hosttune.detect.mounts import MountEntry, read_mounts
from hosttune.facts import Cgroup

# memory.max / limit_in_bytes at or above this is "no limit" (v1 reports 2^63 rounded down to the page size).
_UNLIMITED_BYTES = 1 << 62

N = TypeVar("N", int, float)


def parse_proc_cgroup(text: Optional[str]) -> Tuple[Optional[str], Dict[str, str]]:
    """/proc/self/cgroup -> (v2 path or None, {v1 controller: path}). Lines are "ID:controllers:path"."""
    v2: Optional[str] = None
    v1: Dict[str, str] = {}
    for line in (text or "").splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and controllers == "":
            v2 = path
        else:
            for c in controllers.split(","):
                if c:
                    v1[c] = path
    return v2, v1


def parse_cpu_max(text: Optional[str]) -> Optional[float]:
    """cgroup v2 cpu.max: "max 100000" -> None (unlimited); "150000 100000" -> 1.5 CPUs."""
    if not text:
        return None
    fields = text.split()
    if not fields or fields[0] == "max":
        return None
    quota = small_int(fields[0])
    period = small_int(fields[1]) if len(fields) > 1 else 100000
    if quota is None or period is None:
        return None
    return quota / period if period > 0 and quota > 0 else None


def parse_cfs(quota: Optional[str], period: Optional[str]) -> Optional[float]:
    """cgroup v1 cpu.cfs_quota_us (-1 = unlimited) / cpu.cfs_period_us."""
    q = small_int(((quota or "").split() or [""])[0])
    p = small_int(((period or "100000").split() or [""])[0])
    if q is None or p is None or q <= 0 or p <= 0:
        return None
    return q / p


def parse_memory_max(text: Optional[str]) -> Optional[int]:
    """memory.max ("max" or bytes) / memory.limit_in_bytes -> bytes or None (unlimited)."""
    if not text or text.strip() == "max":
        return None
    value = small_int((text.split() or [""])[0])
    if value is None:
        return None
    return None if value >= _UNLIMITED_BYTES else value


def _inside(mount: MountEntry, path: str) -> str:
    """The host path of cgroup `path` in a hierarchy mounted at `mount` (mount root may be a subtree: namespaces)."""
    rel = path
    if mount.root not in ("", "/") and (path == mount.root or path.startswith(mount.root.rstrip("/") + "/")):
        rel = path[len(mount.root.rstrip("/")):]
    return posixpath.normpath(mount.mount.rstrip("/") + "/" + rel.lstrip("/"))


def _ancestors(io: HostIO, mount: MountEntry, path: str) -> List[str]:
    """The cgroup's folder and each parent up to the mount point (leaf first)."""
    leaf = _inside(mount, path)
    out = [leaf]
    top = posixpath.normpath(mount.mount)
    while out[-1] != top and out[-1] not in ("/", ""):
        out.append(posixpath.dirname(out[-1]))
    return out


def _first(io: HostIO, dirs: List[str], names: Tuple[str, ...]) -> Optional[str]:
    for d in dirs:
        for name in names:
            text = io.read(f"{d}/{name}")
            if text is not None:
                return text
    return None


def _tightest(values: Sequence[Optional[N]]) -> Optional[N]:
    """The smallest limit among the levels (None: no level sets one)."""
    real = [v for v in values if v is not None]
    return min(real) if real else None


def _v1_mount(mounts: List[MountEntry], controller: str) -> Optional[MountEntry]:
    for m in mounts:
        if m.fstype == "cgroup" and controller in m.options.split(","):
            return m
        if controller == "cpuset" and m.fstype == "cpuset":  # the legacy cpuset filesystem (/dev/cpuset)
            return m
    return None


def _version(v1: Dict[str, str], v2_path: Optional[str], cpuset_path: Optional[str],
             mounts: List[MountEntry]) -> Optional[int]:
    """Hybrid hosts list v1 controllers next to a "0::" line: the controllers (and so the limits) are v1 there.
    Without /proc/self/cgroup (some captures, old kernels) /proc/self/cpuset names the path."""
    if any(c in v1 for c in ("cpuset", "cpu", "cpuacct", "memory")):  # not just a named "name=systemd" hierarchy
        return 1
    if v2_path is not None:
        return 2
    if cpuset_path is not None:
        return 1 if _v1_mount(mounts, "cpuset") is not None else 2
    return None


def probe(io: HostIO) -> Cgroup:
    v2_path, v1 = parse_proc_cgroup(io.read("/proc/self/cgroup"))
    cpuset_path = io.read("/proc/self/cpuset")  # the only hint on old kernels and in some captures
    mounts = read_mounts(io)
    version = _version(v1, v2_path, cpuset_path, mounts)
    if version == 2:
        return _probe_v2(io, mounts, v2_path, cpuset_path)
    if version == 1:
        return _probe_v1(io, mounts, v1, cpuset_path)
    io.note("cgroup", "no proc/self/cgroup or proc/self/cpuset")
    return Cgroup()


def _probe_v2(io: HostIO, mounts: List[MountEntry], v2_path: Optional[str], cpuset_path: Optional[str]) -> Cgroup:
    cgroup2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
    if cgroup2 is None:
        io.note("cgroup", "cgroup2 filesystem not mounted")
        return Cgroup(version=2, path=v2_path or cpuset_path)
    path = v2_path if v2_path is not None else (cpuset_path or "/")
    dirs = _ancestors(io, cgroup2, path)
    if not io.isdir(dirs[0]):
        io.note("cgroup", f"cgroup2 folder {dirs[0]} not found")
    cpus_text = _first(io, dirs, ("cpuset.cpus.effective",))
    mems_text = _first(io, dirs, ("cpuset.mems.effective",))
    return Cgroup(
        version=2,
        path=path,
        cpuset=tuple(io.cpulist(cpus_text, "cgroup", "cpuset.cpus.effective")) if cpus_text else None,
        mems=tuple(io.cpulist(mems_text, "cgroup", "cpuset.mems.effective")) if mems_text else None,
        quota_cpus=_tightest([parse_cpu_max(io.read(f"{d}/cpu.max")) for d in dirs]),
        memory_max=_tightest([parse_memory_max(io.read(f"{d}/memory.max")) for d in dirs]),
    )


def _probe_v1(io: HostIO, mounts: List[MountEntry], v1: Dict[str, str], cpuset_path: Optional[str]) -> Cgroup:
    path = v1.get("cpuset", cpuset_path)
    cpus, mems = _v1_cpuset(io, _v1_mount(mounts, "cpuset"), path)
    quota = None
    cpu_path = v1.get("cpu", v1.get("cpuacct"))
    cm = _v1_mount(mounts, "cpu")
    if cm is not None and cpu_path is not None:
        quota = _tightest([parse_cfs(io.read(f"{d}/cpu.cfs_quota_us"), io.read(f"{d}/cpu.cfs_period_us"))
                           for d in _ancestors(io, cm, cpu_path)])
    memory_max = None
    mm = _v1_mount(mounts, "memory")
    if mm is not None and "memory" in v1:
        memory_max = _tightest([parse_memory_max(io.read(f"{d}/memory.limit_in_bytes"))
                                for d in _ancestors(io, mm, v1["memory"])])
    return Cgroup(version=1, path=path or cpu_path, cpuset=cpus, mems=mems, quota_cpus=quota, memory_max=memory_max)


def _v1_cpuset(io: HostIO, m: Optional[MountEntry],
               path: Optional[str]) -> Tuple[Optional[Tuple[int, ...]], Optional[Tuple[int, ...]]]:
    """(cpus, mems) of the v1 cpuset at `path` in the hierarchy mounted at `m`."""
    if m is None or path is None:
        if path is not None and path != "/":
            io.note("cgroup", "cpuset hierarchy not mounted")
        return None, None
    dirs = _ancestors(io, m, path)
    if not io.isdir(dirs[0]):
        io.note("cgroup", f"cpuset folder {dirs[0]} not found")
    # cpuset.cpus, as hwloc reads it: v1's effective_cpus only differs after CPU hotplug, and a live host
    # intersects with sched_getaffinity anyway, which is what the kernel enforces.
    cpus_text = _first(io, dirs, ("cpuset.cpus", "cpus", "cpuset.effective_cpus"))
    mems_text = _first(io, dirs, ("cpuset.mems", "mems", "cpuset.effective_mems"))
    cpus = tuple(io.cpulist(cpus_text, "cgroup", "cpuset.cpus")) if cpus_text else None
    mems = tuple(io.cpulist(mems_text, "cgroup", "cpuset.mems")) if mems_text else None
    return cpus, mems
