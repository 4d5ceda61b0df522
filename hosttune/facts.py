"""What a host is: frozen dataclasses produced by `hosttune.detect` and read by doctor, profiles, plans and launch.

Everything here is plain data. `to_dict()` gives the JSON contract of `hosttune facts --json` (design.md);
`Facts.from_dict()` reads it back, so a launcher can hand facts to its ranks without detecting again.
Optional fields are None when the source could not be read; what could not be read is named in `Facts.missing`.
"""

import dataclasses
import hashlib
import json
import sys
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

SCHEMA = "hosttune.facts/1"


@dataclass(frozen=True)
class Distro:
    id: str = "unknown"  # distro.id(): debian, ubuntu, centos, rhel, rocky, almalinux, fedora ...
    version: str = ""  # distro.version(): "12", "22.04", "9.3"
    version_best: str = ""  # distro.version(best=True): "12.5", "22.04.4"
    codename: str = ""
    like: str = ""  # ID_LIKE, space separated
    name: str = ""
    family: str = "unknown"  # debian | rhel | unknown: decides apt vs dnf in fixes


@dataclass(frozen=True)
class Kernel:
    release: Optional[str] = None  # uname -r (live) or proc/sys/kernel/osrelease
    cmdline: Optional[str] = None
    thp: Optional[str] = None  # transparent_hugepage/enabled mode in brackets: always | madvise | never
    thp_defrag: Optional[str] = None
    numa_balancing: Optional[int] = None  # kernel.numa_balancing
    swappiness: Optional[int] = None  # vm.swappiness
    governors: Tuple[str, ...] = ()  # distinct cpufreq scaling_governor values over online CPUs
    modules: Tuple[str, ...] = ()  # loaded modules of interest: nvidia, nouveau, nvidia_uvm, ib_core ...


@dataclass(frozen=True)
class Cgroup:
    version: Optional[int] = None  # 1, 2 or None when no cgroup could be found
    path: Optional[str] = None  # the process's cgroup path
    cpuset: Optional[Tuple[int, ...]] = None  # cpuset.cpus(.effective); None = no restriction found
    mems: Optional[Tuple[int, ...]] = None  # cpuset.mems(.effective)
    quota_cpus: Optional[float] = None  # cpu.max quota/period, or cfs_quota_us/cfs_period_us; None = unlimited
    memory_max: Optional[int] = None  # bytes; None = unlimited


@dataclass(frozen=True)
class Cpu:
    model: Optional[str] = None
    vendor: Optional[str] = None  # GenuineIntel, AuthenticAMD, ARM implementer ...
    arch: Optional[str] = None  # x86_64, aarch64, ppc64le
    flags: Tuple[str, ...] = ()  # only those that matter: avx2 avx512f avx512_bf16 amx_tile amx_bf16 ...
    online: Tuple[int, ...] = ()  # online logical CPUs
    logical: int = 0  # len(online)
    physical: int = 0  # cores (distinct core sibling sets among online CPUs)
    packages: int = 0
    smt: bool = False  # some core has more than one online PU
    smt_control: Optional[str] = None  # /sys/devices/system/cpu/smt/control: on | off | notsupported ...
    cores: Tuple[Tuple[int, ...], ...] = ()  # online PUs of each core, sorted; SMT siblings together
    package_cpus: Tuple[Tuple[int, ...], ...] = ()  # online PUs of each package
    allowed_cpus: Tuple[int, ...] = ()  # online ∩ cgroup cpuset ∩ (live) sched_getaffinity
    quota_cpus: Optional[float] = None  # cgroup CPU quota in CPUs, or None
    cgroup: Cgroup = field(default_factory=Cgroup)


@dataclass(frozen=True)
class NumaNode:
    id: int
    cpus: Tuple[int, ...] = ()  # online CPUs of the node ((): CPU-less / memory-only node)
    memory_mb: int = 0
    distances: Tuple[int, ...] = ()  # to every node in Numa.nodes order


@dataclass(frozen=True)
class Numa:
    nodes: Tuple[NumaNode, ...] = ()
    allowed_mems: Tuple[int, ...] = ()  # node ids this process may allocate on (cgroup cpuset.mems ∩ online)


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML index (PCI bus order) or the position in the PCI scan
    name: Optional[str] = None
    uuid: Optional[str] = None
    pci_bus_id: str = ""  # normalised "0000:3b:00.0" (lower case, 4-digit domain) - the key that matches GPUs
    numa_node: int = -1  # /sys/bus/pci/devices/<bdf>/numa_node; -1 = unknown
    local_cpus: Tuple[int, ...] = ()  # from the device's local_cpulist when present
    memory_mb: Optional[int] = None
    persistence_mode: Optional[bool] = None
    ecc_enabled: Optional[bool] = None
    ecc_pending: Optional[bool] = None
    pcie_gen: Optional[int] = None
    pcie_gen_max: Optional[int] = None
    pcie_width: Optional[int] = None
    pcie_width_max: Optional[int] = None
    temperature_c: Optional[int] = None
    temp_slowdown_c: Optional[int] = None  # NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: where the GPU starts cutting clocks
    clock_event_reasons: Optional[int] = None  # NVML bitmask
    ecc_uncorrected_volatile: Optional[int] = None
    retired_pages_pending: Optional[bool] = None
    remapped_rows_pending: Optional[bool] = None
    remapped_rows_failure: Optional[bool] = None
    vendor_id: str = "0x10de"
    device_id: Optional[str] = None
    pci_class: Optional[str] = None  # "0x030200"
    source: str = "pci"  # nvml | pci


@dataclass(frozen=True)
class Nvidia:
    driver: Optional[str] = None  # "550.54.15"
    cuda_driver: Optional[str] = None  # CUDA version the driver supports: "12.4"
    # ok | skipped (--root) | library_not_found | driver_not_loaded | version_mismatch | no_permission | error
    nvml: str = "skipped"
    nvml_error: Optional[str] = None
    cuda_toolkit: Optional[str] = None  # /usr/local/cuda*/version.json or nvcc
    cuda_toolkit_path: Optional[str] = None
    cudnn: Optional[str] = None  # system cuDNN version
    nccl: Optional[str] = None  # system NCCL version
    fabric_manager_installed: bool = False
    fabric_manager_running: Optional[bool] = None
    nvswitches: int = 0  # NVSwitch PCI devices (class 0x0680, vendor 0x10de)


@dataclass(frozen=True)
class TorchInstall:
    python: str  # the interpreter that was probed
    version: Optional[str] = None
    cuda: Optional[str] = None  # torch.version.cuda (None on CPU builds)
    cudnn: Optional[str] = None  # torch.backends.cudnn.version() as loaded by torch
    nccl: Optional[str] = None  # torch.cuda.nccl.version() as loaded by torch
    cuda_available: bool = False
    device_count: int = 0
    in_venv: Optional[bool] = None  # sys.prefix != sys.base_prefix or a conda env
    onednn: Optional[str] = None  # the oneDNN torch was built with (its headers' version), None if none shipped
    error: Optional[str] = None  # why the probe failed (timeout, import error)


@dataclass(frozen=True)
class Allocators:
    jemalloc: Optional[str] = None  # absolute path of libjemalloc.so[.N]
    tcmalloc: Optional[str] = None  # full tcmalloc (libtcmalloc.so[.N])
    tcmalloc_minimal: Optional[str] = None
    iomp5: Optional[str] = None  # Intel OpenMP
    gomp: Optional[str] = None  # GNU OpenMP


@dataclass(frozen=True)
class Tools:
    numactl: Optional[str] = None
    nvidia_smi: Optional[str] = None
    torchrun: Optional[str] = None
    libnuma: Optional[str] = None  # libnuma.so.1 for set_mempolicy


@dataclass(frozen=True)
class Mount:
    mount: str
    fstype: str
    source: str = ""
    device: Optional[str] = None  # the disk the mount ends up on: nvme0n1, sda, md0's members ...
    kind: str = "unknown"  # nvme | ssd | hdd | network | tmpfs | unknown
    size_mb: Optional[int] = None
    free_mb: Optional[int] = None


@dataclass(frozen=True)
class Memory:
    total_mb: Optional[int] = None
    available_mb: Optional[int] = None
    swap_total_mb: Optional[int] = None
    hugepages_total: Optional[int] = None
    hugepage_size_kb: Optional[int] = None
    shm_mb: Optional[int] = None  # size of /dev/shm


@dataclass(frozen=True)
class Limits:
    nofile_soft: Optional[int] = None  # -1 = unlimited
    nofile_hard: Optional[int] = None
    memlock_soft: Optional[int] = None  # bytes, -1 = unlimited
    memlock_hard: Optional[int] = None
    rdma_devices: int = 0  # /sys/class/infiniband entries


@dataclass(frozen=True)
class TunedSetting:
    id: str  # hosttune's tunable id: thp, thp_defrag, swappiness, numa_balancing, governor, epp
    option: str  # tuned's plugin.option: vm.transparent_hugepages, sysctl.vm.swappiness, cpu.governor ...
    value: str  # as the profile writes it (may hold tuned's ">" modifiers or ${variables})
    profile: str  # the profile (or included profile) that sets it


@dataclass(frozen=True)
class Tuned:
    installed: bool = False  # etc/tuned or tuned's profile directory exists
    running: Optional[bool] = None  # the daemon runs (pid file / systemctl); None when nothing could tell
    profile: Optional[str] = None  # etc/tuned/active_profile (space separated when several are merged)
    mode: Optional[str] = None  # etc/tuned/profile_mode: auto | manual
    settings: Tuple[TunedSetting, ...] = ()  # what the active profile, includes merged, sets for hosttune's tunables


@dataclass(frozen=True)
class Container:
    """Whether hosttune runs inside a container, and what that means for the facts beside it: /proc/meminfo,
    /proc/cpuinfo, the kernel's sysctls and the PCI tree are the host's; the cgroup limits and /dev are the
    container's own."""

    detected: bool = False
    runtime: Optional[str] = None  # docker | podman | kubernetes | containerd | lxc | systemd-nspawn | cri-o | ...
    evidence: Tuple[str, ...] = ()  # what said so: "/.dockerenv exists", "/proc/1/cgroup: .../kubepods/..." ...
    proc_sys_readonly: Optional[bool] = None  # /proc/sys mounted read-only (None: no mount table)
    sys_readonly: Optional[bool] = None  # /sys mounted read-only (THP, cpufreq governor)
    nvidia_devices: Tuple[str, ...] = ()  # /dev/nvidia* nodes present here: nvidia0, nvidiactl, nvidia-uvm ...
    gpu_nodes: Optional[int] = None  # /dev/nvidiaN nodes: the GPUs passed in (None: not in a container)
    driver_gpus: Optional[int] = None  # /proc/driver/nvidia/gpus entries: the GPUs the driver has on the host
    cgroup_limits: Tuple[str, ...] = ()  # the limits the container's cgroup sets: "cpus 0-3", "2 CPUs", "4096 MiB"
    host_values: Tuple[str, ...] = ()  # what the facts beside this show of the host, not of the container


@dataclass(frozen=True)
class Facts:
    schema: str = SCHEMA
    root: str = "/"
    hostname: Optional[str] = None
    distro: Distro = field(default_factory=Distro)
    kernel: Kernel = field(default_factory=Kernel)
    cpu: Cpu = field(default_factory=Cpu)
    numa: Numa = field(default_factory=Numa)
    gpus: Tuple[Gpu, ...] = ()
    nvidia: Nvidia = field(default_factory=Nvidia)
    torch: Optional[TorchInstall] = None
    allocators: Allocators = field(default_factory=Allocators)
    tools: Tools = field(default_factory=Tools)
    storage: Tuple[Mount, ...] = ()
    memory: Memory = field(default_factory=Memory)
    limits: Limits = field(default_factory=Limits)
    tuned: Tuned = field(default_factory=Tuned)
    container: Container = field(default_factory=Container)
    missing: Tuple[str, ...] = ()  # "what: why" for each source that could not be read

    def to_dict(self) -> Dict[str, Any]:
        return _to_json(self)  # type: ignore[no-any-return]

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Facts":
        if data.get("schema") != SCHEMA:
            raise ValueError(f"facts schema {data.get('schema')!r} is not {SCHEMA!r}")
        return _from_json(cls, data)  # type: ignore[no-any-return]

    def hardware_fingerprint(self) -> str:
        """A short hash of what a profile is generated for; a change means the profile is stale."""
        key = {
            "cpu": [self.cpu.model, self.cpu.logical, self.cpu.physical, list(self.cpu.flags)],
            "numa": [[n.id, list(n.cpus)] for n in self.numa.nodes],
            "gpus": sorted([g.pci_bus_id, g.name or ""] for g in self.gpus),
            "alloc": [self.allocators.jemalloc, self.allocators.tcmalloc, self.allocators.tcmalloc_minimal],
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _to_json(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value


def _from_json(tp: Any, data: Any) -> Any:
    """Rebuild a value of type `tp` from its `_to_json` form (dataclasses, tuples, Optionals)."""
    if data is None:
        return None
    origin = typing.get_origin(tp)
    args: Tuple[Any, ...] = typing.get_args(tp)
    if origin is typing.Union:  # Optional[X]
        inner = [a for a in args if a is not type(None)]
        return _from_json(inner[0], data)
    if origin in (tuple, Tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_json(args[0], v) for v in data)
        return tuple(data)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp, globalns=vars(sys.modules[__name__]))
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = _from_json(hints[f.name], data[f.name])
        return tp(**kwargs)
    return data
