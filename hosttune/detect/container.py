"""Whether this root is a container, which runtime made it, and what that means for the facts beside it.

Evidence, strongest first: the runtimes' own marker files (/run/.containerenv from podman, /.dockerenv from docker,
/run/systemd/container from systemd-nspawn and others that follow systemd's container interface), the `container=`
variable of PID 1 where its environment is readable, the cgroup path of PID 1 and of this process (kubepods,
docker, libpod, containerd, cri-o, lxc, machine.slice) and the bind mounts a runtime puts over /etc/hostname,
/etc/hosts and /etc/resolv.conf (their source lies in the runtime's own state directory) or the service account a
kubelet mounts. A host that merely *runs* containers shows none of these for its own processes: its PID 1 is in
"/" or init.scope, and its /etc/hostname is its own file.

Inside a container /proc/meminfo, /proc/cpuinfo, the kernel's sysctls, /sys/kernel/mm and the PCI tree are the
host's; the limits that apply are the container's cgroup's, and the GPUs it can use are the /dev/nvidiaN nodes
passed in. `host_values` says which facts are the host's, so nobody reads them as the container's.
"""

import re
from typing import List, Optional, Sequence, Tuple

from hosttune.cpulist import format_cpulist
from hosttune.detect.hostio import HostIO
from hosttune.detect.mounts import MountEntry, read_mounts
from hosttune.facts import Cgroup, Container

# cgroup path -> runtime; the first match wins (kubepods first: a pod's container also names its runtime).
_CGROUP_RUNTIMES: Tuple[Tuple["re.Pattern[str]", str], ...] = (
    (re.compile(r"kubepods"), "kubernetes"),
    (re.compile(r"(^|/)libpod[-_]"), "podman"),
    (re.compile(r"(^|/)docker[-/]"), "docker"),
    (re.compile(r"(^|/)crio-"), "cri-o"),
    (re.compile(r"containerd"), "containerd"),
    (re.compile(r"(^|/)lxc(\.payload)?[./]"), "lxc"),
    (re.compile(r"machine\.slice/(systemd-nspawn@|machine-)"), "systemd-nspawn"),
)
# The source subtree of a runtime's bind mount over /etc/hostname, /etc/hosts, /etc/resolv.conf.
_MOUNT_RUNTIMES: Tuple[Tuple[str, str], ...] = (
    ("/kubelet/pods/", "kubernetes"),
    ("/docker/containers/", "docker"),
    ("/containers/storage/", "podman"),
    ("/libpod/", "podman"),
    ("/containerd/", "containerd"),
    ("/crio/", "cri-o"),
)
_RUNTIME_FILES = ("/etc/hostname", "/etc/hosts", "/etc/resolv.conf")
_K8S_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
_GPU_NODE = re.compile(r"nvidia[0-9]+")
_NAMES = {"docker": "docker", "podman": "podman", "oci": "oci", "lxc": "lxc", "lxc-libvirt": "lxc",
          "systemd-nspawn": "systemd-nspawn", "rkt": "rkt", "wsl": "wsl", "proot": "proot", "pouch": "pouch"}


def cgroup_runtime(text: Optional[str]) -> Optional[Tuple[str, str]]:
    """(runtime, path) of the first /proc/<pid>/cgroup line whose path names a container runtime, else None."""
    for line in (text or "").splitlines():
        path = line.strip().split(":", 2)[-1]
        for pattern, runtime in _CGROUP_RUNTIMES:
            if pattern.search(path):
                return runtime, path
    return None


def mount_runtime(mounts: Sequence[MountEntry]) -> Optional[Tuple[str, str]]:
    """(runtime, "mount <- source") when a runtime bind-mounted its own file over /etc/hostname and the like, or a
    kubelet mounted a service account."""
    for m in mounts:
        if m.mount.startswith(_K8S_ACCOUNT):
            return "kubernetes", m.mount
        if m.mount not in _RUNTIME_FILES:
            continue
        for part, runtime in _MOUNT_RUNTIMES:
            if part in m.root:
                return runtime, f"{m.mount} <- {m.root}"
    return None


def environ_container(text: Optional[str]) -> Optional[str]:
    """The `container=` value of a NUL-separated environment (PID 1's), else None."""
    for item in (text or "").split("\0"):
        if item.startswith("container="):
            value = item[len("container="):].strip()
            return value or None
    return None


def _runtime_name(value: str) -> str:
    word = value.strip().split()[0] if value.strip() else "unknown"
    return _NAMES.get(word.lower(), word.lower()[:32] if re.fullmatch(r"[A-Za-z0-9._-]+", word) else "unknown")


def _evidence(io: HostIO, mounts: Sequence[MountEntry]) -> List[Tuple[str, str]]:
    """(runtime, what said so) for every sign of a container, strongest first."""
    out: List[Tuple[str, str]] = []
    env = io.read("/run/.containerenv")
    if env is not None:
        engine = re.search(r'^engine="([a-z]+)', env, re.MULTILINE)
        out.append((engine.group(1) if engine else "podman", "/run/.containerenv exists"))
    if io.exists("/.dockerenv"):
        out.append(("docker", "/.dockerenv exists"))
    marker = io.read("/run/systemd/container")
    if marker:
        out.append((_runtime_name(marker), f"/run/systemd/container says {marker.strip()[:32]!r}"))
    value = environ_container(io.read("/proc/1/environ"))  # readable as root (or the same user) only
    if value:
        out.append((_runtime_name(value), f"/proc/1/environ has container={value[:32]}"))
    for pid in ("1", "self"):
        found = cgroup_runtime(io.read(f"/proc/{pid}/cgroup"))
        if found:
            out.append((found[0], f"/proc/{pid}/cgroup: {found[1][:120]}"))
    found = mount_runtime(mounts)
    if found:
        out.append((found[0], f"/proc/self/mountinfo: {found[1][:160]}"))
    return out


def _readonly(mounts: Sequence[MountEntry], path: str) -> Optional[bool]:
    """Whether `path` lies on a read-only mount: the last (topmost) mount at it or above it decides."""
    best: Optional[MountEntry] = None
    for m in mounts:
        here = m.mount.rstrip("/") or "/"
        if path == here or path.startswith(here.rstrip("/") + "/"):
            if best is None or len(here) >= len(best.mount.rstrip("/") or "/"):
                best = m
    if best is None:
        return None
    return "ro" in best.options.split(",")


def _limits(cg: Cgroup, online: Sequence[int]) -> Tuple[str, ...]:
    out = []
    if cg.cpuset is not None and set(cg.cpuset) != set(online):
        out.append(f"cpus {format_cpulist(cg.cpuset)} (cpuset of {len(online)} online)")
    if cg.quota_cpus is not None:
        out.append(f"{cg.quota_cpus:g} CPUs (cpu quota)")
    if cg.memory_max is not None:
        out.append(f"{cg.memory_max >> 20} MiB memory (memory limit)")
    return tuple(out)


def probe(io: HostIO, cg: Cgroup, online: Sequence[int] = ()) -> Container:
    mounts = read_mounts(io)
    found = _evidence(io, mounts)
    if not found:
        return Container()
    runtimes = [r for r, _ in found]
    runtime = "kubernetes" if "kubernetes" in runtimes else runtimes[0]
    proc_sys_ro = _readonly(mounts, "/proc/sys") if mounts else None
    sys_ro = _readonly(mounts, "/sys/kernel/mm") if mounts else None
    devices = tuple(n for n in io.listdir("/dev") if n.startswith("nvidia"))
    nodes = sum(1 for n in devices if _GPU_NODE.fullmatch(n))
    driver = io.listdir("/proc/driver/nvidia/gpus")
    limits = _limits(cg, online)
    host = ["kernel sysctls, transparent hugepages and cpufreq are the host's"
            + (" (read-only here)" if proc_sys_ro or sys_ro else ""),
            "cpu model, topology and numa nodes are the host's; cpu allowed is the container's",
            "memory total/available is the host's /proc/meminfo"
            + (f"; the container may use {cg.memory_max >> 20} MiB" if cg.memory_max is not None else
               "; no memory limit in the container's cgroup")]
    if driver and len(driver) != nodes:
        host.append(f"the driver has {len(driver)} GPUs on the host; {nodes} passed in as /dev/nvidiaN")
    return Container(detected=True, runtime=runtime, evidence=tuple(w for _, w in found),
                     proc_sys_readonly=proc_sys_ro, sys_readonly=sys_ro, nvidia_devices=devices, gpu_nodes=nodes,
                     driver_gpus=len(driver) if driver else None, cgroup_limits=limits, host_values=tuple(host))
