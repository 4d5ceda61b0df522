"""`hosttune doctor`: the host health check for PyTorch training, as data.

A check is `Check(id, group, title, run)`; `run(ctx)` looks at `ctx.facts` (and, for the few things Facts cannot
hold, at `ctx.env` and `ctx.live`) and returns a `Finding(status, expected, actual, fix)`. The run function's
docstring is what `hosttune doctor --explain ID` prints, so it says why the threshold is what it is.
Fixes are real commands for the detected distro family (apt on Debian/Ubuntu, dnf on the RHEL family). A user pastes
them into a root shell, so a value that came from the host (os-release, a driver version, a path, a device name) is
put into a fix only after it matched a strict pattern, and always through `shlex.quote`; a value that fails gets a
fix without it.
A check that raises becomes a `skip` finding naming the exception: the user never sees a traceback.
"""

import dataclasses
import difflib
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune import nvml as nvmlmod
from hosttune.errors import UserError
from hosttune.facts import Facts, Gpu

SCHEMA = "hosttune.doctor/1"
STATUSES = ("pass", "warn", "fail", "skip")
GROUPS = ("os", "cpu", "storage", "tools", "nvidia", "torch", "hosttune")
SYSCTL_FILE = "/etc/sysctl.d/90-hosttune.conf"
LIMITS_FILE = "/etc/security/limits.d/90-hosttune.conf"
GiB = 1024
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# What a host-derived value must look like before a fix may contain it (fullmatch: no trailing newline slips by).
VERSION_ID = re.compile(r"[0-9][0-9A-Za-z._-]*")  # os-release(5): VERSION_ID is lower-case letters, digits, . _ -
DRIVER_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+){0,3}")  # 550.54.15, 12.4
PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_-]*\*?")  # a Debian/RPM package name, or a trailing-glob dnf spec
PCI_ADDRESS = re.compile(r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")  # [domain:]bus:dev.fn
COUNT = re.compile(r"[1-9][0-9]{0,5}")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Finding:
    status: str  # pass | warn | fail | skip
    actual: str = ""
    expected: str = ""
    fix: str = ""


@dataclass(frozen=True)
class Result:
    id: str
    group: str
    status: str
    title: str
    expected: str
    actual: str
    fix: str

    def to_dict(self) -> Dict[str, str]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Check:
    id: str
    group: str
    title: str
    run: Callable[["Context"], Finding]

    @property
    def explain(self) -> str:
        doc = (self.run.__doc__ or "").strip()
        lines = doc.splitlines()
        if len(lines) > 1:  # dedent the body the way inspect.cleandoc does
            body = [ln for ln in lines[1:] if ln.strip()]
            indent = min((len(ln) - len(ln.lstrip()) for ln in body), default=0)
            lines = [lines[0]] + [ln[indent:] for ln in lines[1:]]
        return "\n".join(lines)


class Live:
    """What doctor reads from the running host beyond Facts: disk space, `lspci -vvv`, a fresh NVML sample.

    Used only when the facts describe this host (no --root). Tests pass their own instance or rely on real
    temporary directories and the fake pynvml.
    """

    def disk_free_mb(self, path: str) -> Tuple[int, int]:
        usage = shutil.disk_usage(path)
        return usage.total // (1024 * 1024), usage.free // (1024 * 1024)

    def lspci_vvv(self) -> Optional[str]:
        # as root, only the system's directories: a PATH entry another user can write must not supply "lspci"
        exe = shutil.which("lspci", path=SYSTEM_PATH if os.geteuid() == 0 else None)
        if exe is None:
            return None
        try:
            # from "/": as root, nothing the caller's directory holds may take part in what runs
            proc = subprocess.run([exe, "-vvv"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd="/",
                                  text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError(f"lspci -vvv: {exc}") from None
        return proc.stdout

    def gpu_samples(self) -> Dict[int, Dict[str, Any]]:
        """A fresh NVML sample per GPU index; raises NvmlUnavailable/GpuLost."""
        with nvmlmod.Nvml() as session:
            return {i: session.sample(i) for i in range(session.count())}


@dataclass
class Context:
    facts: Facts
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    data: Sequence[str] = ()
    live: bool = True  # the facts describe the machine we run on (no --root)
    cwd: str = field(default_factory=os.getcwd)
    profile_paths: Optional[Sequence[Path]] = None  # None: ask hosttune.profile.generated_paths()
    python: Optional[str] = None  # --python: the training interpreter named by the user (None: python3 on PATH)
    probe: Live = field(default_factory=Live)
    _samples: Optional[Any] = None

    @property
    def family(self) -> str:
        return self.facts.distro.family

    def samples(self) -> Dict[int, Dict[str, Any]]:
        if self._samples is None:
            try:
                self._samples = self.probe.gpu_samples()
            except (nvmlmod.NvmlUnavailable, nvmlmod.GpuLost) as exc:
                self._samples = exc
        if isinstance(self._samples, Exception):
            raise self._samples
        return self._samples  # type: ignore[no-any-return]


# ---- helpers ----------------------------------------------------------------------------------------------------
def valid(pattern: "re.Pattern[str]", value: Optional[str]) -> Optional[str]:
    """`value` when all of it matches `pattern`, else None: the only way a host-derived value reaches a fix."""
    return value if value is not None and pattern.fullmatch(value) else None


def shell_path(path: Optional[str]) -> Optional[str]:
    """An absolute path, shell-quoted for a fix; None when it is relative or holds control characters (a newline
    would split the fix into two commands on the screen, whatever the quoting)."""
    if not path or not path.startswith("/") or _CONTROL.search(path):
        return None
    return shlex.quote(path)


def distro_major(ctx: Context) -> Optional[str]:
    """The distro's major version for a fix: "9" when unknown (the current RHEL), None when os-release holds
    something that is not a version (then the fix must not contain it)."""
    version = ctx.facts.distro.version
    if not version:
        return "9"
    if not valid(VERSION_ID, version):
        return None
    major = version.split(".")[0]
    return major if major.isdigit() else None


def _packages(names: str) -> str:
    """Each package name checked and shell-quoted (a dnf glob such as `foo-550*` comes out as 'foo-550*')."""
    out = []
    for name in names.split():
        if not PACKAGE.fullmatch(name):
            raise ValueError(f"not a package name: {name!r}")
        out.append(shlex.quote(name))
    return " ".join(out)


def install(ctx: Context, apt: str, dnf: str, epel: bool = False) -> str:
    """The install command for this distro family; both forms when the family is unknown."""
    apt, dnf = _packages(apt), _packages(dnf)
    dnf_cmd = f"dnf install -y {dnf}"
    if epel:
        dnf_cmd = f"{_epel(ctx)} && {dnf_cmd}"
    if ctx.family == "debian":
        return f"apt-get install -y {apt}"
    if ctx.family == "rhel":
        return dnf_cmd
    return f"apt-get install -y {apt}   # Debian/Ubuntu\n{dnf_cmd}   # RHEL/Rocky/Alma"


def _epel(ctx: Context) -> str:
    # an os-release version that is not one: let rpm say the major version on the host itself (EPEL's own docs)
    major = distro_major(ctx) or "$(rpm -E %rhel)"
    if ctx.facts.distro.id == "rhel":
        return (f"subscription-manager repos --enable codeready-builder-for-rhel-{major}-$(arch)-rpms && "
                f"dnf install -y https://dl.fedoraproject.org/pub/epel/epel-release-latest-{major}.noarch.rpm")
    return "dnf install -y epel-release"


def sysctl_fix(key: str, value: Any) -> str:
    return f"sysctl -w {key}={value}\necho '{key} = {value}' >> {SYSCTL_FILE}   # keep it after reboot"


def kernel_arg_fix(ctx: Context, arg: str) -> str:
    """How to add a kernel command-line argument for good on this family (takes effect after a reboot)."""
    grubby = f"grubby --update-kernel=ALL --args='{arg}' && reboot"
    grub = (f"sed -i 's/^GRUB_CMDLINE_LINUX_DEFAULT=\"/&{arg} /' /etc/default/grub && update-grub && reboot")
    if ctx.family == "rhel":
        return grubby
    if ctx.family == "debian":
        return grub
    return f"{grub}   # Debian/Ubuntu\n{grubby}   # RHEL family"


def gpus(ctx: Context) -> Tuple[Gpu, ...]:
    """NVIDIA GPUs (display/3D controllers); NVSwitches and other NVIDIA functions are not GPUs."""
    return tuple(g for g in ctx.facts.gpus if not g.pci_class or g.pci_class.startswith("0x03"))


def nvml_gpus(ctx: Context) -> Tuple[Gpu, ...]:
    return tuple(g for g in gpus(ctx) if g.source == "nvml")


def multi_node(ctx: Context) -> bool:
    return len(ctx.facts.numa.nodes) > 1


def is_vm(ctx: Context) -> bool:
    return "hypervisor" in ctx.facts.cpu.flags


def version_tuple(text: Optional[str]) -> Tuple[int, ...]:
    out = []
    for part in re.split(r"[.+-]", text or ""):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def gpu_label(g: Gpu) -> str:
    return f"GPU{g.index} ({g.pci_bus_id or '?'})"


def effective_cpus(ctx: Context) -> Optional[int]:
    """CPUs this process may really use: the allowed cpuset, capped by the cgroup CPU quota."""
    cpu = ctx.facts.cpu
    allowed = len(cpu.allowed_cpus) or cpu.logical
    if not allowed:
        return None
    quota = cpu.quota_cpus if cpu.quota_cpus is not None else cpu.cgroup.quota_cpus
    if quota is not None and quota > 0:
        # rounded down, as the planner does: 3 threads on a 2.5-CPU quota are throttled every period
        return max(1, min(allowed, int(math.floor(quota + 1e-9))))
    return allowed


def _no_gpu(ctx: Context) -> Optional[Finding]:
    if not gpus(ctx):
        return Finding("skip", "no NVIDIA GPU on this host", "")
    return None


def _needs_nvml(ctx: Context) -> Optional[Finding]:
    none = _no_gpu(ctx)
    if none:
        return none
    if ctx.facts.nvidia.nvml != "ok" or not nvml_gpus(ctx):
        return Finding("skip", f"NVML not available ({ctx.facts.nvidia.nvml}): see nvidia.nvml", "")
    return None


def _missing(ctx: Context, prefix: str) -> Optional[str]:
    for entry in ctx.facts.missing:
        if entry.startswith(prefix):
            return entry
    return None


# ---- OS ---------------------------------------------------------------------------------------------------------
SUPPORTED = {  # distro id -> (minimum major, what we say)
    "debian": (11, "Debian 11, 12, 13"),
    "ubuntu": (22, "Ubuntu 22.04, 24.04, 26.04 LTS"),
    "rhel": (8, "RHEL 8, 9, 10"),
    "rocky": (8, "Rocky 8, 9, 10"),
    "almalinux": (8, "AlmaLinux 8, 9, 10"),
    "centos": (9, "CentOS Stream 9, 10"),
}


def check_distro(ctx: Context) -> Finding:
    """The distribution is one hosttune targets and that still gets security updates.

    Targets: Debian 11+, Ubuntu LTS 22.04+, RHEL/Rocky/AlmaLinux 8+, CentOS Stream 9+. Older releases (CentOS 7,
    CentOS Stream 8, Debian 10, Ubuntu 20.04 and earlier) are past their standard support and NVIDIA's current
    drivers and CUDA 12/13 repositories no longer build for several of them. Ubuntu interim (non-LTS) releases
    and Fedora work but are not targets: a warning, not a failure.
    """
    d = ctx.facts.distro
    actual = f"{d.name or d.id} {d.version_best or d.version}".strip()
    if d.id not in SUPPORTED:
        if d.family in ("debian", "rhel"):
            return Finding("warn", actual, "Debian/Ubuntu LTS or RHEL-family", "not a target distro: fixes below "
                           f"use the {'apt' if d.family == 'debian' else 'dnf'} forms; check them before use")
        return Finding("warn", actual or "unknown", "Debian/Ubuntu LTS or RHEL-family",
                       "unknown distro family: fixes show both apt and dnf forms")
    minimum, say = SUPPORTED[d.id]
    ver = version_tuple(d.version)
    if not ver:
        return Finding("warn", actual, say, "could not read the distro version (/etc/os-release)")
    if ver[0] < minimum:
        return Finding("warn", f"{actual} (end of standard support)", say,
                       "upgrade the OS to a supported release; drivers and CUDA repos no longer target it")
    if d.id == "ubuntu" and (len(ver) < 2 or ver[0] % 2 or ver[1] != 4):
        return Finding("warn", f"{actual} (interim release, 9 months of support)", say,
                       "use an LTS release (xx.04 in even years)")
    return Finding("pass", actual, say)


def check_numa_balancing(ctx: Context) -> Finding:
    """Automatic NUMA balancing is off on multi-node hosts.

    kernel.numa_balancing=1 makes the kernel unmap pages periodically to see who touches them and migrate them:
    with ranks pinned to their GPU's node (what hosttune does) this only adds page faults and migrations in the
    training loop. On a single-node host there is nothing to balance and the setting does not matter.
    """
    k = ctx.facts.kernel
    nodes = len(ctx.facts.numa.nodes)
    if nodes <= 1:
        return Finding("pass", f"{nodes or 1} NUMA node: not relevant", "0 on multi-node hosts")
    if k.numa_balancing is None:
        return Finding("skip", "kernel.numa_balancing not readable", "0")
    if k.numa_balancing == 0:
        return Finding("pass", f"0 ({nodes} nodes)", "0")
    return Finding("warn", f"{k.numa_balancing} ({nodes} nodes)", "0", sysctl_fix("kernel.numa_balancing", 0))


def check_thp(ctx: Context) -> Finding:
    """Transparent huge pages are `madvise` (or `never`), not `always`.

    With `always`, khugepaged compacts and collapses memory in the background and page faults may stall on direct
    compaction: a known source of latency spikes in data loading and allocator-heavy training. `madvise` keeps
    huge pages for code that asks for them (jemalloc's metadata_thp:auto, which hosttune's profiles use, works
    with it). `never` is fine too.
    """
    mode = ctx.facts.kernel.thp
    if mode is None:
        return Finding("skip", "transparent_hugepage/enabled not readable", "madvise")
    if mode in ("madvise", "never"):
        return Finding("pass", mode, "madvise or never")
    persist = kernel_arg_fix(ctx, "transparent_hugepage=madvise")
    return Finding("warn", mode, "madvise or never",
                   f"echo madvise > /sys/kernel/mm/transparent_hugepage/enabled\n{persist}   # keep it after reboot")


def check_swappiness(ctx: Context) -> Finding:
    """vm.swappiness is at most 10 on a host with swap.

    A training host keeps big, cold-looking but essential memory (dataset shards in page cache, pinned staging
    buffers, DataLoader worker heaps). The default 60 lets the kernel swap those out under memory pressure and the
    next step stalls on swap-in. 10 is what tuned's throughput-performance profile sets: swap stays as a safety
    net but is used only when memory is really short. Without swap the setting has no effect.
    """
    k, m = ctx.facts.kernel, ctx.facts.memory
    if k.swappiness is None:
        return Finding("skip", "vm.swappiness not readable", "<= 10")
    if m.swap_total_mb == 0:
        return Finding("pass", f"{k.swappiness} (no swap configured)", "<= 10 when swap exists")
    if k.swappiness <= 10:
        return Finding("pass", str(k.swappiness), "<= 10")
    return Finding("warn", str(k.swappiness), "<= 10", sysctl_fix("vm.swappiness", 10))


def check_governor(ctx: Context) -> Finding:
    """The CPU frequency governor is `performance`.

    `powersave`/`ondemand`/`schedutil` ramp clocks up only after load appears; the host threads that feed GPUs
    (data loading, kernel launches, NCCL proxies) run in short bursts and pay the ramp-up every time. VMs and some
    clouds expose no cpufreq driver at all: then the hypervisor owns frequency and there is nothing to set (skip).
    """
    govs = ctx.facts.kernel.governors
    if not govs:
        why = "no cpufreq driver (typical of VMs: the hypervisor controls CPU frequency)"
        return Finding("skip", why, "performance")
    if set(govs) == {"performance"}:
        return Finding("pass", "performance", "performance")
    now = "echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"
    if ctx.family == "rhel":
        keep = "tuned-adm profile throughput-performance   # keeps it after reboot"
    else:
        keep = ("echo 'w /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - performance' > "
                "/etc/tmpfiles.d/90-hosttune-governor.conf   # keeps it after reboot")
    fix = f"{now}\n{keep}"
    return Finding("warn", ",".join(govs), "performance", fix)


def check_smt(ctx: Context) -> Finding:
    """Reports the SMT (hyper-threading) state; it is a choice, not an error.

    hosttune plans one compute thread per physical core and gives SMT siblings to data loading, so SMT on is fine.
    The finding exists so that the admin sees the state (and `smt/control`, e.g. `forceoff` set by a kernel
    argument for a CPU vulnerability) next to the rest. Unknown topology is a skip.
    """
    cpu = ctx.facts.cpu
    if not cpu.logical or not cpu.physical:
        return Finding("skip", "CPU topology not readable", "reported")
    ctrl = f", control={cpu.smt_control}" if cpu.smt_control else ""
    state = "on" if cpu.smt else "off"
    return Finding("pass", f"{state}: {cpu.logical} logical CPUs on {cpu.physical} cores{ctrl}", "reported")


# ---- CPU / limits -----------------------------------------------------------------------------------------------
def check_cgroup(ctx: Context) -> Finding:
    """The cgroup (container/systemd slice) lets this process use all CPUs, or the limit is known.

    PyTorch sizes its intra-op thread pool from the number of online CPUs, not from the cgroup cpuset or
    `cpu.max` quota. In a container limited to 8 of 64 CPUs it starts 32-64 threads that fight for 8 CPUs
    (measured here: oversubscription halves training throughput). The finding gives the effective CPU count;
    `hosttune exec` sizes threads to it, or set OMP_NUM_THREADS yourself.
    """
    cpu = ctx.facts.cpu
    eff = effective_cpus(ctx)
    if not cpu.logical or eff is None:
        return Finding("skip", "CPU count not readable", "")
    if eff >= cpu.logical:
        return Finding("pass", f"{eff} of {cpu.logical} CPUs usable", f"{cpu.logical} (no smaller limit)")
    quota = cpu.quota_cpus if cpu.quota_cpus is not None else cpu.cgroup.quota_cpus
    how = []
    if len(cpu.allowed_cpus) and len(cpu.allowed_cpus) < cpu.logical:
        how.append(f"cpuset {len(cpu.allowed_cpus)} CPUs")
    if quota is not None:
        how.append(f"cpu.max quota {quota:g} CPUs")
    actual = f"effective {eff} of {cpu.logical} CPUs ({', '.join(how) or 'limited'})"
    fix = (f"run training through `hosttune exec` (sizes threads to {eff}), or export OMP_NUM_THREADS={eff}; "
           "or give the container more CPUs (docker --cpus/--cpuset-cpus, systemd CPUQuota=/AllowedCPUs=)")
    return Finding("warn", actual, f"{cpu.logical} CPUs, or threads sized to {eff}", fix)


def _planned_threads(ctx: Context) -> Optional[Tuple[str, str]]:
    """(OMP_NUM_THREADS from hosttune's plan for one rank, where it came from), when a profile and plan exist."""
    try:
        from hosttune import plan as plan_mod
        from hosttune import profile as profile_mod
    except ImportError:
        return None
    paths = _profile_paths(ctx)
    if not paths:
        return None
    try:
        prof = profile_mod.load(str(paths[0]))
        environ = {k: v for k, v in ctx.env.items() if k != "OMP_NUM_THREADS"}  # the plan, not the shell's value
        rank = plan_mod.resolve(ctx.facts, prof, 0, 1, environ)
    except Exception:  # noqa: BLE001 - the profile checks report a broken profile; here it only means "no plan"
        return None
    value = rank.env.get("OMP_NUM_THREADS")
    return (str(value), str(paths[0])) if value else None


def check_omp_threads(ctx: Context) -> Finding:
    """OMP_NUM_THREADS, when set by hand, matches the plan (or at least the CPUs this process can use).

    A value left in a shell profile outlives the hardware it was chosen for. With a hosttune profile the expected
    value is what `hosttune env` plans for a single rank; without one, a value above the effective CPU count is
    certain oversubscription (measured: x0.5 throughput) and a non-integer value is ignored by libgomp with a
    warning. Under `hosttune exec`/torchrun each rank gets its own value: this check looks at your shell only.
    """
    raw = ctx.env.get("OMP_NUM_THREADS")
    eff = effective_cpus(ctx)
    if raw is None:
        return Finding("pass", "unset (hosttune exec / torchrun decide)", "unset, or matching the plan")
    try:
        value = int(raw.split(",")[0])
        if value < 1:
            raise ValueError
    except ValueError:
        return Finding("warn", f"OMP_NUM_THREADS={raw!r} is not a positive integer", "a positive integer",
                       "unset OMP_NUM_THREADS (and remove it from ~/.bashrc or /etc/environment)")
    planned = _planned_threads(ctx)
    if planned is not None:
        want, src = planned
        if str(value) == want:
            return Finding("pass", f"{value} (matches the plan)", want)
        # the planned value comes from a profile file: only a plain count goes into the command
        export = f", or export OMP_NUM_THREADS={want}" if valid(COUNT, want) else ""
        return Finding("warn", f"{value}, plan from {src} says {want}", want, f"unset OMP_NUM_THREADS{export}")
    if eff is not None and value > eff:
        return Finding("warn", f"{value} threads for {eff} usable CPUs", f"<= {eff}",
                       f"export OMP_NUM_THREADS={eff}   # or unset it and launch with `hosttune exec`")
    return Finding("pass", f"{value} (<= {eff} usable CPUs; no profile to compare with)", f"<= {eff}")


def check_nofile(ctx: Context) -> Finding:
    """The open-files soft limit (`ulimit -n`) is at least 65536.

    DataLoader workers share tensors through file descriptors (PyTorch's default `file_descriptor` sharing
    strategy keeps one open fd per shared storage), and sharded datasets, NCCL sockets and checkpoint writers add
    more: "RuntimeError: received 0 items of ancdata" / "Too many open files" at the default soft limit of 1024 is
    a classic (pytorch/pytorch#973). 65536 is the common recommendation and costs nothing.
    """
    lim = ctx.facts.limits
    if lim.nofile_soft is None:
        return Finding("skip", "RLIMIT_NOFILE not readable (captured host?)", ">= 65536")
    soft = "unlimited" if lim.nofile_soft == -1 else str(lim.nofile_soft)
    if lim.nofile_soft == -1 or lim.nofile_soft >= 65536:
        return Finding("pass", soft, ">= 65536")
    hard = lim.nofile_hard
    persist = (f"printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > {LIMITS_FILE}   # new logins; "
               "systemd services: LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576")
    if hard is not None and hard != -1 and hard < 65536:
        fix = f"{persist}\n# this shell's hard limit is {hard}: only a new login (or root) gets more"
    else:
        fix = f"ulimit -n 65536   # this shell\n{persist}"
    return Finding("warn", soft, ">= 65536", fix)


def check_memlock(ctx: Context) -> Finding:
    """Locked memory is unlimited on hosts with RDMA (InfiniBand/RoCE/EFA) devices.

    NCCL and GPUDirect RDMA register (pin) buffers with the NIC; with the default 64 KiB-8 MiB RLIMIT_MEMLOCK the
    registration fails and NCCL falls back to sockets or aborts ("ibv_reg_mr failed"). Hosts without
    /sys/class/infiniband devices do not need it.
    """
    lim = ctx.facts.limits
    if lim.rdma_devices == 0:
        return Finding("pass", "no RDMA devices: not relevant", "unlimited on RDMA hosts")
    if lim.memlock_soft is None:
        return Finding("skip", f"{lim.rdma_devices} RDMA devices; RLIMIT_MEMLOCK not readable", "unlimited")
    if lim.memlock_soft == -1:
        return Finding("pass", f"unlimited ({lim.rdma_devices} RDMA devices)", "unlimited")
    fix = (f"printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' > {LIMITS_FILE}   # then log in "
           "again; systemd services: LimitMEMLOCK=infinity; docker: --ulimit memlock=-1")
    return Finding("warn", f"{lim.memlock_soft // 1024} KiB with {lim.rdma_devices} RDMA devices", "unlimited", fix)


# ---- memory / storage -------------------------------------------------------------------------------------------
def check_shm(ctx: Context) -> Finding:
    """/dev/shm is big enough for DataLoader workers: fail below 256 MiB, warn below 1 GiB.

    DataLoader workers hand every batch to the trainer through shared memory in /dev/shm. Docker's default is
    64 MB: the first large batch dies with "Bus error" / "DataLoader worker ... killed ... insufficient shared
    memory (shm)". One batch of 256 ImageNet images in fp32 is 154 MB, and workers keep prefetch_factor batches
    each in flight, so 1 GiB is a floor, not a target.
    """
    shm = ctx.facts.memory.shm_mb
    if shm is None:
        return Finding("skip", "/dev/shm size not readable", ">= 1024 MiB")
    fix = ("docker run --shm-size=16g ... (or --ipc=host); Kubernetes: an emptyDir with medium: Memory on /dev/shm\n"
           "host: mount -o remount,size=50% /dev/shm && echo 'tmpfs /dev/shm tmpfs defaults,size=50% 0 0' "
           ">> /etc/fstab")
    if shm < 256:
        return Finding("fail", f"{shm} MiB", ">= 1024 MiB", fix)
    if shm < GiB:
        return Finding("warn", f"{shm} MiB", ">= 1024 MiB", fix)
    return Finding("pass", f"{shm} MiB", ">= 1024 MiB")


def _mount_for(ctx: Context, path: str) -> Optional[Any]:
    real = os.path.realpath(path)
    best = None
    for m in ctx.facts.storage:
        mp = m.mount.rstrip("/") or "/"
        if real == mp or real.startswith(mp.rstrip("/") + "/") or mp == "/":
            if best is None or len(mp) > len(best.mount.rstrip("/") or "/"):
                best = m
    return best


def check_data_storage(ctx: Context) -> Finding:
    """Each --data path is on local flash (NVMe/SSD), not on a spinning disk or a network filesystem.

    Random-access reads of many small samples run at ~100-200 IOPS on an HDD and at network round-trip latency on
    NFS/CIFS/Lustre clients without a local cache: the GPUs wait for data. Stage the dataset on local NVMe (or use
    a sequential shard format such as WebDataset/tar shards and enough DataLoader workers).
    """
    if not ctx.data:
        return Finding("skip", "no --data PATH given", "local nvme/ssd")
    if not ctx.live:
        return Finding("skip", "--data paths are on this machine, the storage facts are the captured host's",
                       "local nvme/ssd")
    bad, seen = [], []
    for path in ctx.data:
        m = _mount_for(ctx, path)
        kind = m.kind if m is not None else "unknown"
        where = f"{path}: {kind}" + (f" ({m.fstype} on {m.mount})" if m is not None else "")
        if kind == "hdd" and m is not None and (m.device or "").startswith(("vd", "xvd")):
            where += " [a virtual disk: it reports rotational whatever backs it; measure with fio to be sure]"
        seen.append(where)
        if kind in ("hdd", "network"):
            bad.append(where)
    if bad:
        return Finding("warn", "; ".join(bad), "local nvme/ssd",
                       "copy the dataset to local NVMe (e.g. rsync -a SRC /scratch/data/) or use sequential "
                       "shards (WebDataset) with more DataLoader workers")
    return Finding("pass", "; ".join(seen), "local nvme/ssd")


def space_status(total_mb: int, free_mb: int) -> str:
    """fail under 5 GiB free, warn under 50 GiB or under 10% of the filesystem, else pass."""
    if free_mb < 5 * GiB:
        return "fail"
    if free_mb < 50 * GiB or (total_mb and free_mb < total_mb // 10):
        return "warn"
    return "pass"


def check_free_space(ctx: Context) -> Finding:
    """There is room for checkpoints where they are written (the working directory and each --data path).

    A checkpoint of a 7B-parameter model with Adam state is about 100 GB; a run that fills the disk dies at the
    save, losing the work since the last good checkpoint (and a half-written file may corrupt it). Fail under
    5 GiB free, warn under 50 GiB or under 10% free.
    """
    if not ctx.live:
        return Finding("skip", "free space is measured on the live host only (--root given)", ">= 50 GiB free")
    places = [ctx.cwd] + [p for p in ctx.data if p != ctx.cwd]
    worst = "pass"
    notes = []
    for place in places:
        total, free = ctx.probe.disk_free_mb(place)
        status = space_status(total, free)
        notes.append(f"{place}: {free // GiB} GiB free of {total // GiB} GiB")
        if STATUSES.index(status) > STATUSES.index(worst):
            worst = status
    fix = "" if worst == "pass" else ("free space (old checkpoints: keep the last N), or write checkpoints to a "
                                      "bigger local disk (the engine's --set checkpoint.dir=/scratch/ckpt)")
    return Finding(worst, "; ".join(notes), ">= 50 GiB and >= 10% free", fix)


# ---- allocators / tools -----------------------------------------------------------------------------------------
def check_allocator(ctx: Context) -> Finding:
    """jemalloc or tcmalloc is installed, so profiles can preload it.

    glibc malloc fragments and returns memory to the OS eagerly under PyTorch's allocation pattern on the CPU side
    (data loading, CPU training, pinned staging); jemalloc with background threads measured x1.14-1.17 on CPU
    training here. hosttune profiles preload jemalloc (or tcmalloc) only when the library is present.
    """
    a = ctx.facts.allocators
    found = [p for p in (a.jemalloc, a.tcmalloc, a.tcmalloc_minimal) if p]
    if found:
        return Finding("pass", ", ".join(found), "jemalloc or tcmalloc")
    return Finding("warn", "neither jemalloc nor tcmalloc found", "jemalloc or tcmalloc",
                   install(ctx, "libjemalloc2", "jemalloc", epel=True))


def check_numactl(ctx: Context) -> Finding:
    """numactl is installed on multi-node (NUMA) hosts.

    `hosttune exec` binds each rank's memory to its GPU's NUMA node with `numactl --membind/--preferred` (or
    libnuma); without it ranks allocate on whatever node the first touch lands on, and cross-socket memory traffic
    slows data loading and host-device copies. One-node hosts do not need it.
    """
    if not multi_node(ctx):
        return Finding("pass", "one NUMA node: not needed", "numactl on multi-node hosts")
    if ctx.facts.tools.numactl:
        return Finding("pass", ctx.facts.tools.numactl, "numactl")
    return Finding("warn", f"not found ({len(ctx.facts.numa.nodes)} NUMA nodes)", "numactl",
                   install(ctx, "numactl", "numactl"))


# ---- NVIDIA -----------------------------------------------------------------------------------------------------
def _driver_install(ctx: Context) -> str:
    d = ctx.facts.distro
    major = distro_major(ctx)
    if d.id == "ubuntu":
        return "ubuntu-drivers install --gpgpu && reboot   # or apt-get install -y nvidia-driver-570-server"
    if ctx.family == "debian":
        return "apt-get install -y nvidia-driver firmware-misc-nonfree && reboot   # needs contrib non-free"
    if ctx.family == "rhel" and major is not None:
        repo = (f"dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/"
                f"rhel{major}/$(arch)/cuda-rhel{major}.repo")
        pkg = ("dnf install -y nvidia-open" if int(major) >= 10
               else "dnf module install -y nvidia-driver:open-dkms")
        return f"{repo} && {pkg} && reboot"
    return "install the NVIDIA driver from your distribution or https://www.nvidia.com/Download, then reboot"


def check_driver_loaded(ctx: Context) -> Finding:
    """NVIDIA GPUs on the PCI bus have the NVIDIA kernel driver loaded.

    A GPU that `lspci` shows but no `nvidia` module drives is invisible to CUDA: torch reports
    cuda.is_available() False. A host with no NVIDIA GPU passes (a CPU host is a valid training host).
    """
    found = gpus(ctx)
    if not found:
        return Finding("pass", "no NVIDIA GPU on the PCI bus (CPU host)", "driver loaded when GPUs are present")
    nv = ctx.facts.nvidia
    loaded = "nvidia" in ctx.facts.kernel.modules or nv.driver is not None or nv.nvml in ("ok", "version_mismatch")
    if loaded:
        return Finding("pass", f"{len(found)} GPU(s), driver {nv.driver or 'loaded'}", "driver loaded")
    if not ctx.facts.kernel.modules and _missing(ctx, "kernel.modules") and nv.nvml == "skipped":
        return Finding("skip", f"{len(found)} GPU(s); loaded modules not readable", "driver loaded")
    return Finding("fail", f"{len(found)} NVIDIA GPU(s) on PCI, nvidia module not loaded", "driver loaded",
                   _driver_install(ctx))


def check_nouveau(ctx: Context) -> Finding:
    """The open-source nouveau driver is not loaded.

    nouveau claims the GPU first and the NVIDIA driver then cannot bind ("NVRM: The NVIDIA probe routine was not
    called ... nouveau"). It has no CUDA support. Blacklist it and rebuild the initramfs.
    """
    if "nouveau" not in ctx.facts.kernel.modules:
        gone = _missing(ctx, "kernel.modules")
        if gone and not ctx.facts.kernel.modules:
            return Finding("skip", f"loaded modules not readable ({gone})", "not loaded")
        return Finding("pass", "not loaded", "not loaded")
    rebuild = {"debian": "update-initramfs -u", "rhel": "dracut --force"}.get(
        ctx.family, "update-initramfs -u   # or dracut --force")
    fix = ("printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > /etc/modprobe.d/blacklist-nouveau.conf && "
           f"{rebuild} && reboot")
    return Finding("fail", "nouveau loaded", "not loaded", fix)


def check_nvml(ctx: Context) -> Finding:
    """NVML (the NVIDIA management library) answers.

    "Driver/library version mismatch" means the user-space driver libraries were upgraded (often by unattended
    upgrades) while the old kernel module is still loaded: new CUDA processes fail until a reboot or a module
    reload. No permission means /dev/nvidia* is not accessible to this user. A host without NVIDIA GPUs passes.
    """
    nv = ctx.facts.nvidia
    if not gpus(ctx) and nv.nvml != "ok":
        return Finding("pass", f"no NVIDIA GPU (NVML: {nv.nvml})", "ok on GPU hosts")
    err = f": {nv.nvml_error}" if nv.nvml_error else ""
    lost = [m for m in ctx.facts.missing if re.match(r"gpu\d+: ", m) and "lost" in m.lower()]
    if lost:
        return Finding("fail", "; ".join(lost), "every GPU answers",
                       "the GPU fell off the bus (Xid 79): stop its jobs, collect nvidia-bug-report.sh, reboot; "
                       "if it repeats, check seating/power and RMA")
    if nv.nvml == "ok":
        return Finding("pass", f"ok, driver {nv.driver or '?'}", "ok")
    if nv.nvml == "skipped":
        return Finding("skip", "NVML not queried (captured host, --root)", "ok")
    if nv.nvml == "version_mismatch":
        return Finding("fail", f"driver/library version mismatch{err}", "ok",
                       "reboot (the driver was upgraded under the running kernel module), or stop all GPU "
                       "processes and: rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && modprobe nvidia && "
                       "modprobe nvidia_uvm")
    if nv.nvml == "driver_not_loaded":
        return Finding("fail", f"NVIDIA driver not loaded{err}", "ok", "modprobe nvidia   # if installed; else:\n"
                       + _driver_install(ctx))
    if nv.nvml == "no_permission":
        return Finding("warn", f"no permission{err}", "ok",
                       "ls -l /dev/nvidia*   # the device files must be readable by this user (mode 0666 or the "
                       "video group: usermod -aG video $USER)")
    if nv.nvml == "library_not_found":
        return Finding("warn", f"NVML library not found{err}", "ok",
                       "pip install nvidia-ml-py   # and check that libnvidia-ml.so.1 exists: ldconfig -p | grep "
                       "nvidia-ml")
    return Finding("warn", f"{nv.nvml}{err}", "ok", "nvidia-smi   # shows what the driver says")


# CUDA Toolkit minimum Linux x86_64 driver versions. Source: NVIDIA CUDA Toolkit Release Notes, "CUDA Toolkit and
# Corresponding Driver Versions" (Table 3, toolkit driver version for the GA release) and Table 2 (minimum driver
# for CUDA minor version compatibility within a major release).
CUDA_TOOLKIT_DRIVER = {
    (10, 2): "440.33",
    (11, 0): "450.51.05",
    (11, 1): "455.23",
    (11, 2): "460.27.03",
    (11, 3): "465.19.01",
    (11, 4): "470.42.01",
    (11, 5): "495.29.05",
    (11, 6): "510.39.01",
    (11, 7): "515.43.04",
    (11, 8): "520.61.05",
    (12, 0): "525.60.13",
    (12, 1): "530.30.02",
    (12, 2): "535.54.03",
    (12, 3): "545.23.06",
    (12, 4): "550.54.14",
    (12, 5): "555.42.02",
    (12, 6): "560.28.03",
    (12, 8): "570.26",
    (12, 9): "575.51.03",
    (13, 0): "580.65.06",
}
CUDA_MINOR_COMPAT_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580"}


def check_driver_cuda(ctx: Context) -> Finding:
    """The NVIDIA driver is new enough for the CUDA version torch was built with.

    Minimums from NVIDIA's CUDA Toolkit Release Notes, "CUDA Toolkit and Corresponding Driver Versions": each
    toolkit's GA driver (e.g. 12.1: 530.30.02, 12.4: 550.54.14, 12.6: 560.28.03, 12.8: 570.26, 12.9: 575.51.03,
    13.0: 580.65.06) and, for minor-version compatibility within a major, 11.x >= 450.80.02, 12.x >= 525.60.13,
    13.x >= 580. Below the major's minimum CUDA does not start (fail); between the two, it runs under minor-version
    compatibility, where PTX JIT of newer code and some new APIs fail (warn).
    """
    none = _no_gpu(ctx)
    if none:
        return none
    t, nv = ctx.facts.torch, ctx.facts.nvidia
    if t is None or not t.cuda:
        return Finding("skip", "torch is not a CUDA build (see nvidia.torch_build)", "")
    if not nv.driver:
        return Finding("skip", "driver version unknown (see nvidia.nvml)", "")
    cuda = version_tuple(t.cuda)[:2]
    drv = version_tuple(nv.driver)
    major_min = CUDA_MINOR_COMPAT_DRIVER.get(cuda[0]) if cuda else None
    exact = CUDA_TOOLKIT_DRIVER.get(cuda) if len(cuda) == 2 else None
    actual = f"driver {nv.driver}, torch built with CUDA {t.cuda}"
    if major_min is None and exact is None:
        return Finding("skip", f"{actual}: CUDA {t.cuda} is not in the table", "")
    upgrade = f"upgrade the NVIDIA driver (to >= {exact or major_min}):\n{_driver_install(ctx)}"
    if major_min and drv < version_tuple(major_min):
        return Finding("fail", actual, f">= {major_min} (CUDA {cuda[0]}.x)", upgrade)
    if exact and drv < version_tuple(exact):
        return Finding("warn", actual + " (minor-version compatibility only)", f">= {exact} (CUDA {t.cuda})",
                       upgrade + "\nor install a torch built for CUDA "
                       + (valid(DRIVER_VERSION, nv.cuda_driver) or "your driver"))
    return Finding("pass", actual, f">= {exact or major_min}")


def _torch_index(ctx: Context) -> str:
    """The newest PyTorch wheel index the driver can run."""
    have = version_tuple(ctx.facts.nvidia.cuda_driver)[:2]
    for tag, ver in (("cu130", (13, 0)), ("cu129", (12, 9)), ("cu128", (12, 8)), ("cu126", (12, 6)),
                     ("cu124", (12, 4)), ("cu121", (12, 1)), ("cu118", (11, 8))):
        if have and have >= ver:
            return tag
    return "cu126"


def check_torch_build(ctx: Context) -> Finding:
    """torch is a CUDA build and sees the GPUs, on a host that has NVIDIA GPUs.

    A CPU-only wheel (`pip install torch` from the wrong index, or a CPU build pulled in by another package) is the
    commonest reason for "the GPU is not used": everything runs, slowly, on the CPU. `collect_env` shows the
    system's nvcc next to "CUDA available: False", which hides it (pytorch/pytorch#78489).
    """
    none = _no_gpu(ctx)
    if none:
        return none
    t = ctx.facts.torch
    if t is None or not t.version:
        return Finding("skip", "no torch found (see torch.version)", "a CUDA build")
    py = shell_path(t.python)
    if not t.cuda:
        idx = _torch_index(ctx)
        note = "" if py else "   # with your training interpreter"
        return Finding("fail", f"torch {t.version} is a CPU-only build on a host with {len(gpus(ctx))} GPU(s)",
                       "a CUDA build", f"{py or 'python3'} -m pip install --force-reinstall torch --index-url "
                       f"https://download.pytorch.org/whl/{idx}{note}")
    if not t.cuda_available:
        run = f"{py} -c 'import torch; torch.zeros(1).cuda()'" if py else \
            "running `import torch; torch.zeros(1).cuda()` in your training interpreter"
        return Finding("fail", f"torch {t.version} (CUDA {t.cuda}) cannot use the GPUs: cuda.is_available() False",
                       "cuda available", "see nvidia.driver, nvidia.nvml and env.cuda_visible_devices; then "
                       f"{run} shows the CUDA error")
    return Finding("pass", f"torch {t.version}, CUDA {t.cuda}, {t.device_count} device(s)", "a CUDA build")


def check_cudnn_nccl(ctx: Context) -> Finding:
    """The cuDNN/NCCL that torch loaded are its own, not an older system copy picked up through LD_LIBRARY_PATH.

    pip wheels of torch bring their own cuDNN and NCCL (nvidia-cudnn-cu12, nvidia-nccl-cu12). A system
    /usr/local/cuda/lib64 placed first in LD_LIBRARY_PATH can make torch (or an extension) load a different
    version: "undefined symbol" errors or NCCL hangs. Different versions alone are normal; a difference while a
    CUDA library directory is on LD_LIBRARY_PATH is the warning.
    """
    none = _no_gpu(ctx)
    if none:
        return none
    t, nv = ctx.facts.torch, ctx.facts.nvidia
    if t is None or not t.cuda:
        return Finding("skip", "torch is not a CUDA build", "")
    parts, differ = [], []
    for lib, mine, system in (("cuDNN", t.cudnn, nv.cudnn), ("NCCL", t.nccl, nv.nccl)):
        parts.append(f"{lib} torch {mine or '?'} / system {system or 'none'}")
        if mine and system and version_tuple(str(mine))[:2] != version_tuple(str(system))[:2]:
            differ.append(lib)
    ld = [p for p in ctx.env.get("LD_LIBRARY_PATH", "").split(":") if p and "cuda" in p.lower()]
    if differ and ld:
        return Finding("warn", "; ".join(parts) + f"; LD_LIBRARY_PATH has {':'.join(ld)}",
                       "torch's own libraries first",
                       "remove the CUDA lib dirs from LD_LIBRARY_PATH for training (torch finds its own), or "
                       "install matching system " + " and ".join(differ))
    return Finding("pass", "; ".join(parts), "torch's own libraries")


def check_persistence(ctx: Context) -> Finding:
    """Persistence mode is on (or nvidia-persistenced runs).

    Without it the driver tears GPU state down when the last process exits: every new process pays seconds of
    initialisation and ECC/clock settings can be lost. NVIDIA recommends persistence on datacenter GPUs.
    """
    pre = _needs_nvml(ctx)
    if pre:
        return pre
    known = [g for g in nvml_gpus(ctx) if g.persistence_mode is not None]
    if not known:
        return Finding("skip", "persistence mode not reported (NotSupported)", "on")
    off = [gpu_label(g) for g in known if not g.persistence_mode]
    if off:
        return Finding("warn", "off on " + ", ".join(off), "on",
                       "nvidia-smi -pm 1\nsystemctl enable --now nvidia-persistenced   # keep it after reboot")
    return Finding("pass", f"on ({len(known)} GPUs)", "on")


DATACENTER = re.compile(r"\b(A100|A800|H100|H800|H200|H20|B100|B200|B300|GB200|GB300|L40S?|L20|L4|V100|A30|A40|"
                        r"A10|A16|A2|T4|P100|RTX PRO 6000 Blackwell Server)\b", re.I)


def check_ecc_mode(ctx: Context) -> Finding:
    """ECC is enabled on datacenter GPUs (A100/H100/H200/B200/L40/V100/A30/A10/T4 ...).

    Without ECC a flipped bit silently corrupts weights or gradients; on datacenter parts it costs a few percent of
    memory at most. A pending mode (set but not yet active) needs a GPU reset or reboot. Consumer GPUs are skipped.
    """
    pre = _needs_nvml(ctx)
    if pre:
        return pre
    dc = [g for g in nvml_gpus(ctx) if g.name and DATACENTER.search(g.name)]
    if not dc:
        return Finding("skip", "no datacenter GPU (ECC optional)", "on")
    off = [gpu_label(g) for g in dc if g.ecc_enabled is False]
    pending = [gpu_label(g) for g in dc if g.ecc_enabled is not None and g.ecc_pending is not None
               and g.ecc_pending != g.ecc_enabled]
    if off:
        idx = ",".join(str(g.index) for g in dc if g.ecc_enabled is False)
        fix = f"nvidia-smi -i {idx} -e 1 && reboot"
        if pending:
            fix = "reboot (ECC change already pending)"
        return Finding("warn", "ECC off on " + ", ".join(off), "on", fix)
    if pending:
        return Finding("warn", "ECC mode change pending on " + ", ".join(pending), "on, nothing pending", "reboot")
    if all(g.ecc_enabled is None for g in dc):
        return Finding("skip", "ECC mode not reported (NotSupported)", "on")
    return Finding("pass", f"on ({len(dc)} datacenter GPUs)", "on")


def check_ecc_errors(ctx: Context) -> Finding:
    """No uncorrected (double-bit) ECC errors since the last driver load.

    An uncorrected error means data was corrupted and the process that touched it got an Xid 48/63/94 error.
    Drain the GPU, reset it, and watch: repeats mean a failing GPU.
    """
    pre = _needs_nvml(ctx)
    if pre:
        return pre
    known = [g for g in nvml_gpus(ctx) if g.ecc_uncorrected_volatile is not None]
    if not known:
        return Finding("skip", "ECC counters not reported (ECC off or NotSupported)", "0")
    bad = [f"{gpu_label(g)}: {g.ecc_uncorrected_volatile}" for g in known if g.ecc_uncorrected_volatile]
    if bad:
        idx = ",".join(str(g.index) for g in known if g.ecc_uncorrected_volatile)
        return Finding("fail", "; ".join(bad), "0", f"stop jobs on GPU {idx}, then nvidia-smi -r -i {idx} (reset) "
                       "or reboot; if errors come back: nvidia-bug-report.sh and contact the vendor (RMA)")
    return Finding("pass", f"0 on {len(known)} GPUs", "0")


def check_pending_retire(ctx: Context) -> Finding:
    """No pending page retirement or row remapping (the fix is waiting for a GPU reset).

    After an ECC error the GPU schedules the bad memory page (pre-Ampere: retired pages) or row (Ampere+: row
    remapping) to be replaced; until the GPU is reset the bad memory is still in use.
    """
    pre = _needs_nvml(ctx)
    if pre:
        return pre
    g_all = nvml_gpus(ctx)
    known = [g for g in g_all if g.retired_pages_pending is not None or g.remapped_rows_pending is not None]
    if not known:
        return Finding("skip", "retired pages / remapped rows not reported (NotSupported)", "nothing pending")
    bad = [gpu_label(g) for g in known if g.retired_pages_pending or g.remapped_rows_pending]
    if bad:
        idx = ",".join(str(g.index) for g in known if g.retired_pages_pending or g.remapped_rows_pending)
        return Finding("warn", "pending on " + ", ".join(bad), "nothing pending",
                       f"stop jobs on GPU {idx}, then nvidia-smi -r -i {idx} (reset) or reboot")
    return Finding("pass", f"nothing pending on {len(known)} GPUs", "nothing pending")


def check_remap_failure(ctx: Context) -> Finding:
    """No row-remapping failure: the GPU ran out of spare rows.

    A remapping failure means the memory cannot be repaired any more; NVIDIA's guidance is to take the GPU out of
    service and RMA it.
    """
    pre = _needs_nvml(ctx)
    if pre:
        return pre
    known = [g for g in nvml_gpus(ctx) if g.remapped_rows_failure is not None]
    if not known:
        return Finding("skip", "row remapping not reported (pre-Ampere or NotSupported)", "no failure")
    bad = [gpu_label(g) for g in known if g.remapped_rows_failure]
    if bad:
        return Finding("fail", "row remapping failed on " + ", ".join(bad), "no failure",
                       "take the GPU out of service: nvidia-bug-report.sh, then RMA with the vendor")
    return Finding("pass", f"no failure on {len(known)} GPUs", "no failure")


def check_pcie(ctx: Context) -> Finding:
    """The PCIe link runs at its maximum generation and width while the GPU is busy.

    Idle GPUs drop to a lower link speed to save power, so a slow link at idle means nothing: this check judges
    only GPUs that are busy (>= 50% utilisation) in a fresh NVML sample, and says "idle: not judged" otherwise. A
    busy GPU on a narrower or older link than it supports points at a riser, slot, BIOS setting or a dirty contact.
    """
    pre = _needs_nvml(ctx)
    if pre:
        return pre
    if not ctx.live:
        return Finding("skip", "link state needs a live sample (--root given)", "max gen/width under load")
    try:
        samples = ctx.samples()
    except (nvmlmod.NvmlUnavailable, nvmlmod.GpuLost) as exc:
        return Finding("skip", f"live NVML sample failed: {exc}", "max gen/width under load")
    busy, idle, bad = [], [], []
    for g in nvml_gpus(ctx):
        s = samples.get(g.index, {})
        util = s.get("utilization_gpu_pct")
        if util is None or util < 50:
            idle.append(gpu_label(g))
            continue
        busy.append(g)
        gen, width = s.get("pcie_gen", g.pcie_gen), s.get("pcie_width", g.pcie_width)
        if (gen and g.pcie_gen_max and gen < g.pcie_gen_max) or (width and g.pcie_width_max and
                                                                 width < g.pcie_width_max):
            bad.append(f"{gpu_label(g)} Gen{gen} x{width} of Gen{g.pcie_gen_max} x{g.pcie_width_max} at {util}%")
    if bad:
        return Finding("warn", "; ".join(bad), "max gen/width under load",
                       "check the slot/riser and BIOS PCIe speed setting; nvidia-smi -q -d PCIE shows the link")
    if not busy:
        return Finding("pass", f"idle: not judged ({len(idle)} GPUs idle; link speed drops at idle by design)",
                       "max gen/width under load")
    return Finding("pass", f"{len(busy)} busy GPUs at max link" + (f", {len(idle)} idle not judged" if idle else ""),
                   "max gen/width under load")


def check_clock_reasons(ctx: Context) -> Finding:
    """No GPU is slowed by thermal or power clock events right now.

    NVML's current clock-event ("throttle") reasons: software thermal/power capping under full load is worth a
    look (cooling, power limit); hardware slowdown, hardware thermal slowdown and power-brake halve clocks or more
    and point at cooling or power-supply faults (fail). Idle and sync-boost are normal.
    """
    pre = _needs_nvml(ctx)
    if pre:
        return pre
    hard = 0x8 | 0x40 | 0x80
    soft = nvmlmod.THERMAL_REASONS | nvmlmod.POWER_REASONS
    known = [g for g in nvml_gpus(ctx) if g.clock_event_reasons is not None]
    if not known:
        return Finding("skip", "clock-event reasons not reported (NotSupported)", "none")
    worst, notes = "pass", []
    for g in known:
        mask = g.clock_event_reasons or 0
        if mask & (hard | soft):
            notes.append(f"{gpu_label(g)}: {','.join(nvmlmod.reason_names(mask & (hard | soft)))}")
            status = "fail" if mask & hard else "warn"
            if STATUSES.index(status) > STATUSES.index(worst):
                worst = status
    if worst == "pass":
        return Finding("pass", f"none on {len(known)} GPUs", "no thermal/power events")
    return Finding(worst, "; ".join(notes), "no thermal/power events",
                   "nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER; check airflow/fans and PSU; "
                   "nvidia-smi -pl shows/sets the power limit")


def check_temperature(ctx: Context) -> Finding:
    """GPU temperature is within 75 C (warn above, fail from 85 C).

    Datacenter GPUs run at 65-75 C under sustained load; above that clocks start to drop and at ~85-90 C
    (depends on the part's slowdown threshold, see `nvidia-smi -q -d TEMPERATURE`) the GPU throttles hard.
    """
    pre = _needs_nvml(ctx)
    if pre:
        return pre
    known = [g for g in nvml_gpus(ctx) if g.temperature_c is not None]
    if not known:
        return Finding("skip", "temperature not reported", "<= 75 C")
    hot = max(known, key=lambda g: g.temperature_c or 0)
    temp = hot.temperature_c or 0
    actual = f"max {temp} C ({gpu_label(hot)})"
    fix = "check airflow, fans and inlet temperature: nvidia-smi -q -d TEMPERATURE"
    if temp >= 85:
        return Finding("fail", actual, "<= 75 C", fix)
    if temp > 75:
        return Finding("warn", actual, "<= 75 C", fix)
    return Finding("pass", actual, "<= 75 C")


def check_fabric_manager(ctx: Context) -> Finding:
    """NVSwitch hosts (HGX/DGX A100/H100/H200/B200) run NVIDIA Fabric Manager.

    Without nvidia-fabricmanager the NVSwitch fabric is not set up and every CUDA program fails with
    "cudaErrorSystemNotReady" (CUDA error 802: system not yet initialized; pytorch/pytorch#35710). Its version
    must match the driver's.
    """
    nv = ctx.facts.nvidia
    if nv.nvswitches == 0:
        return Finding("pass", "no NVSwitch: not needed", "running on NVSwitch hosts")
    if nv.fabric_manager_running:
        return Finding("pass", f"running ({nv.nvswitches} NVSwitches)", "running")
    if nv.fabric_manager_running is None and nv.fabric_manager_installed:
        return Finding("skip", f"{nv.nvswitches} NVSwitches; service state unknown on a captured host", "running")
    driver = valid(DRIVER_VERSION, nv.driver)
    start = "systemctl enable --now nvidia-fabricmanager"
    if nv.fabric_manager_installed:
        return Finding("fail", f"installed but not running ({nv.nvswitches} NVSwitches)", "running", start)
    if driver is None:
        return Finding("fail", f"not installed ({nv.nvswitches} NVSwitches)", "running",
                       "install nvidia-fabricmanager-<major> (Debian/Ubuntu) or nvidia-fabric-manager (RHEL family) "
                       f"for the driver's major version (nvidia-smi shows it)\n{start}")
    major = driver.split(".")[0]
    pkg = install(ctx, f"nvidia-fabricmanager-{major}", f"nvidia-fabric-manager-{major}*")
    return Finding("fail", f"not installed ({nv.nvswitches} NVSwitches)", "running",
                   f"{pkg}   # same version as the driver\n{start}")


def check_gpu_numa(ctx: Context) -> Finding:
    """On multi-node hosts every GPU has a known NUMA node.

    hosttune pins each rank's CPU threads and memory to its GPU's node; `numa_node` = -1 in sysfs (a BIOS that
    does not publish PCIe locality, or "NUMA per socket" off) leaves that choice to chance.
    """
    found = gpus(ctx)
    if not found:
        return Finding("skip", "no NVIDIA GPU on this host", "")
    if not multi_node(ctx):
        return Finding("pass", "one NUMA node: not relevant", "known node per GPU")
    online = set(ctx.facts.cpu.online)
    # local_cpulist naming every CPU is what the kernel reports when it knows nothing: no locality either
    unknown = [gpu_label(g) for g in found
               if g.numa_node < 0 and (not g.local_cpus or (online and set(g.local_cpus) >= online))]
    if unknown:
        return Finding("warn", "no NUMA node for " + ", ".join(unknown), "known node per GPU",
                       "enable ACPI SRAT / 'NUMA nodes per socket' in the BIOS; meanwhile set the binding in a "
                       "profile (hosttune profile show)")
    where = [f"GPU{g.index}->node{g.numa_node}" if g.numa_node >= 0 else f"GPU{g.index}->local CPUs only"
             for g in found]
    return Finding("pass", ", ".join(where), "known node per GPU")


def check_iommu(ctx: Context) -> Finding:
    """On multi-GPU bare metal, an enabled IOMMU runs in pass-through mode (`iommu=pt`).

    With `intel_iommu=on`/`amd_iommu=on` and full translation, GPU peer-to-peer and GPUDirect RDMA traffic is
    remapped by the IOMMU: P2P is slow or hangs (NCCL troubleshooting guide: "IOMMU"). `iommu=pt` keeps the IOMMU
    for VFIO but lets host devices DMA directly. VMs are skipped (the hypervisor's IOMMU is what matters).
    """
    if len(gpus(ctx)) < 2:
        return Finding("pass", f"{len(gpus(ctx))} GPU: no peer-to-peer", "iommu=pt when the IOMMU is on")
    if is_vm(ctx):
        return Finding("skip", "virtual machine: the host's IOMMU setting applies", "")
    cmd = ctx.facts.kernel.cmdline
    if cmd is None:
        return Finding("skip", "kernel command line not readable", "iommu=pt when the IOMMU is on")
    args = cmd.split()
    on = [a for a in args if a in ("intel_iommu=on", "amd_iommu=on")]
    if on and "iommu=pt" not in args:
        return Finding("warn", " ".join(on) + " without iommu=pt", "iommu=pt", kernel_arg_fix(ctx, "iommu=pt"))
    return Finding("pass", " ".join(a for a in args if "iommu" in a) or "no IOMMU arguments", "iommu=pt when on")


def parse_acs(text: str) -> Tuple[List[str], bool]:
    """`lspci -vvv` text -> (bridges with ACS redirect/source-validation enabled, capabilities hidden).

    A device block starts with "BB:DD.F ..." at column 0; its ACSCtl line lists flags with +/-.
    """
    enabled: List[str] = []
    denied = "access denied" in text
    dev = ""
    for line in text.splitlines():
        if line and not line[0].isspace():
            dev = line.split(" ", 1)[0]
        elif "ACSCtl:" in line:
            flags = line.split("ACSCtl:", 1)[1]
            if any(f"{name}+" in flags for name in ("SrcValid", "ReqRedir", "CmpltRedir")):
                enabled.append(dev)
    return enabled, denied


def check_acs(ctx: Context) -> Finding:
    """PCIe ACS is off on the bridges between GPUs (multi-GPU bare metal).

    Access Control Services with request redirection send every GPU-to-GPU transfer up to the root complex: P2P
    becomes slow or NCCL hangs (NCCL troubleshooting: "PCI Access Control Services"). sysfs does not expose the ACS
    control register, so this needs `lspci -vvv` as root on the live host; otherwise it is skipped with the reason.
    """
    if len(gpus(ctx)) < 2:
        return Finding("pass", f"{len(gpus(ctx))} GPU: no peer-to-peer", "ACS off on GPU bridges")
    if is_vm(ctx):
        return Finding("skip", "virtual machine: ACS is the host's business", "")
    if not ctx.live:
        return Finding("skip", "ACS control is not in sysfs; needs lspci on the live host", "ACS off")
    try:
        text = ctx.probe.lspci_vvv()
    except RuntimeError as exc:
        return Finding("skip", f"{exc} (ACS control is not readable from sysfs)", "ACS off")
    if text is None:
        return Finding("skip", "lspci not installed (ACS control is not readable from sysfs)", "ACS off",
                       install(ctx, "pciutils", "pciutils"))
    enabled, denied = parse_acs(text)
    if enabled:
        # device addresses come from lspci's output: only a well-formed bus address goes into setpci
        ok = [d for d in enabled if valid(PCI_ADDRESS, d)]
        fix = "\n".join(f"setpci -s {shlex.quote(d)} ECAP_ACS+0x6.w=0000" for d in ok[:8]) or \
            "setpci -s BUS:DEV.FN ECAP_ACS+0x6.w=0000   # for each bridge lspci -vvv shows with ACSCtl SrcValid+"
        return Finding("warn", "ACS on for " + ", ".join(enabled), "ACS off",
                       fix + "\n# lost at reboot: disable ACS in the BIOS or run this from a boot-time unit")
    if denied:
        return Finding("skip", "lspci could not read capabilities (run doctor as root)", "ACS off")
    return Finding("pass", "no bridge with ACS redirect enabled", "ACS off")


# ---- PyTorch / environment --------------------------------------------------------------------------------------
def check_torch_version(ctx: Context) -> Finding:
    """torch is installed and at least 2.6.

    torch < 2.6 has CVE-2025-32434: `torch.load(..., weights_only=True)` can still run code from a crafted
    checkpoint. 2.6 also made weights_only the default. Older versions work with hosttune's launcher but not with
    loading untrusted checkpoints safely.
    """
    t = ctx.facts.torch
    if t is None:
        if not ctx.live:
            return Finding("skip", "torch not probed on a captured host", ">= 2.6")
        where = ctx.python or "the first python3 on PATH"
        return Finding("warn", f"no torch in {where}", ">= 2.6",
                       "python3 -m venv ~/venv && ~/venv/bin/pip install torch   # then: hosttune doctor "
                       "--python ~/venv/bin/python")
    py = shell_path(t.python)
    note = "" if py else "   # with your training interpreter"
    if t.error or not t.version:
        return Finding("warn", f"{t.python}: torch probe failed: {t.error or 'no version'}", ">= 2.6",
                       f"{py or 'python3'} -c 'import torch'   # shows the error"
                       + ("" if py else "; run it with your training interpreter"))
    if version_tuple(t.version)[:2] < (2, 6):
        return Finding("warn", f"{t.version} ({t.python})", ">= 2.6",
                       f"{py or 'python3'} -m pip install --upgrade 'torch>=2.6'{note}")
    return Finding("pass", f"{t.version} ({t.python})", ">= 2.6")


DEBUG_SWITCHES: Tuple[Tuple[str, Callable[[str], bool], str], ...] = (
    ("CUDA_LAUNCH_BLOCKING", lambda v: v not in ("", "0"), "serialises every kernel launch"),
    ("NCCL_DEBUG", lambda v: v.upper() in ("INFO", "TRACE"), "logs every collective"),
    ("NCCL_DEBUG_SUBSYS", lambda v: v != "", "verbose NCCL subsystems"),
    ("TORCH_DISTRIBUTED_DEBUG", lambda v: v.upper() in ("DETAIL", "INFO"), "wraps collectives with checks"),
    ("PYTORCH_NO_CUDA_MEMORY_CACHING", lambda v: v not in ("", "0"), "disables the caching allocator"),
    ("TORCH_COMPILE_DEBUG", lambda v: v not in ("", "0"), "dumps compiler artefacts"),
    ("TORCH_LOGS", lambda v: v != "", "extra torch logging"),
    ("TORCH_SHOW_CPP_STACKTRACES", lambda v: v not in ("", "0"), "C++ stack traces on every error"),
    ("TORCH_USE_CUDA_DSA", lambda v: v not in ("", "0"), "device-side assertions"),
    ("CUDA_DEVICE_DEBUG", lambda v: v not in ("", "0"), "CUDA debugger mode"),
    ("PYTORCH_DEBUG", lambda v: v not in ("", "0"), "debug mode"),
)


def check_debug_env(ctx: Context) -> Finding:
    """No debugging switches are left on in the environment.

    CUDA_LAUNCH_BLOCKING=1 (every kernel synchronous), NCCL_DEBUG=INFO/TRACE, TORCH_DISTRIBUTED_DEBUG=DETAIL,
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 (a cudaMalloc per tensor), TORCH_COMPILE_DEBUG, TORCH_LOGS and friends cost
    from a few percent to several times the step time. Autograd anomaly detection is switched on in code
    (torch.autograd.set_detect_anomaly), not by an environment variable: search your script for it.
    """
    if not ctx.live:
        return Finding("skip", "the environment belongs to this shell, not the captured host", "none set")
    on = [f"{k}={ctx.env[k]}" for k, bad, _ in DEBUG_SWITCHES if k in ctx.env and bad(ctx.env[k])]
    if on:
        names = " ".join(s.split("=")[0] for s in on)
        return Finding("warn", " ".join(on), "none set",
                       f"unset {names}   # and remove them from ~/.bashrc, /etc/environment, job scripts")
    return Finding("pass", "none set", "none set")


ALLOC_KEYS: Dict[str, str] = {
    "backend": "choice:native,cudaMallocAsync",
    "max_split_size_mb": "int>20",
    "max_non_split_rounding_mb": "int",
    "roundup_power2_divisions": "divisions",
    "garbage_collection_threshold": "fraction",
    "expandable_segments": "bool",
    "pinned_use_cuda_host_register": "bool",
    "pinned_num_register_threads": "pow2<=128",
    "pinned_use_background_threads": "bool",
    "pinned_max_round_threshold_mb": "int",
    "pinned_max_cached_size_mb": "int",
    "release_lock_on_cudamalloc": "bool",
    "graph_capture_record_stream_reuse": "bool",
    "per_process_memory_fraction": "fraction1",
}


def _split_top(text: str) -> List[str]:
    """Split on commas that are not inside [...] (roundup_power2_divisions takes a bracketed list)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def parse_alloc_conf(text: str) -> Tuple[List[str], List[str]]:
    """PYTORCH_CUDA_ALLOC_CONF -> (errors that make torch refuse it, keys this table does not know)."""
    errors: List[str] = []
    unknown: List[str] = []
    for item in _split_top(text):
        item = item.strip()
        if not item:
            continue
        if ":" not in item:
            errors.append(f"{item!r} is not key:value")
            continue
        key, value = (s.strip() for s in item.split(":", 1))
        kind = ALLOC_KEYS.get(key)
        if kind is None:
            unknown.append(key)
            continue
        ok = True
        if kind == "bool":
            ok = value in ("True", "False", "true", "false", "1", "0")
        elif kind.startswith("int"):
            ok = value.isdigit() and (kind != "int>20" or int(value) > 20)
        elif kind == "pow2<=128":
            ok = value.isdigit() and 0 < int(value) <= 128 and int(value) & (int(value) - 1) == 0
        elif kind.startswith("fraction"):
            try:
                f = float(value)
                ok = 0.0 < f < 1.0 or (kind == "fraction1" and f == 1.0)
            except ValueError:
                ok = False
        elif kind == "divisions":
            if value.startswith("["):
                ok = value.endswith("]") and all(
                    re.fullmatch(r"(\d+|>):\d+", p.strip()) for p in value[1:-1].split(",") if p.strip())
            else:
                ok = value.isdigit() and int(value) & (int(value) - 1) == 0
        elif kind.startswith("choice:"):
            ok = value in kind[len("choice:"):].split(",")
        if not ok:
            errors.append(f"{key}:{value} ({kind.replace('choice:', 'one of ')})")
    return errors, unknown


def check_alloc_conf(ctx: Context) -> Finding:
    """PYTORCH_CUDA_ALLOC_CONF (and PYTORCH_ALLOC_CONF) parses.

    torch parses it at the first CUDA allocation and aborts the run on a malformed value ("Unrecognized
    CachingAllocator option", "Expected a single True/False argument"), i.e. after the model is built and data is
    loading. Known keys: backend, max_split_size_mb (> 20), roundup_power2_divisions (power of 2 or
    [size:div,...,>:div]), garbage_collection_threshold (0..1), expandable_segments, pinned_use_cuda_host_register,
    pinned_num_register_threads (power of 2 <= 128), release_lock_on_cudamalloc, pinned_use_background_threads ...
    A key this table does not know may be from a newer torch: a warning, not a failure.
    """
    if not ctx.live:
        return Finding("skip", "the environment belongs to this shell, not the captured host", "parses")
    names = [k for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF") if ctx.env.get(k)]
    if not names:
        return Finding("pass", "unset", "unset or valid")
    errors, unknown = [], []
    for name in names:
        e, u = parse_alloc_conf(ctx.env[name])
        errors += [f"{name}: {x}" for x in e]
        unknown += [f"{name}: {x}" for x in u]
    actual = "; ".join(f"{n}={ctx.env[n]}" for n in names)
    if errors:
        return Finding("fail", actual + " -> " + "; ".join(errors), "key:value,... with known keys",
                       "fix or unset it, e.g. export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    if unknown:
        return Finding("warn", actual + " -> unknown key " + ", ".join(unknown), "known keys",
                       "check the spelling against https://pytorch.org/docs/stable/notes/cuda.html "
                       "(optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")
    return Finding("pass", actual, "valid")


def check_cuda_visible(ctx: Context) -> Finding:
    """CUDA_VISIBLE_DEVICES names GPUs that exist.

    It may hold indices, full or prefix UUIDs (GPU-...), or MIG ids. CUDA stops at the first entry it cannot
    resolve, so "0,1,7" on a 4-GPU host silently gives 2 GPUs, and an empty value hides all GPUs.
    """
    if not ctx.live:
        return Finding("skip", "the environment belongs to this shell, not the captured host", "")
    raw = ctx.env.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return Finding("pass", "unset (all GPUs visible)", "unset or existing GPUs")
    found = gpus(ctx)
    if raw.strip() == "" or raw.strip() == "-1":
        status = "warn" if found else "pass"
        return Finding(status, f"CUDA_VISIBLE_DEVICES={raw!r} hides every GPU", "existing GPUs",
                       "unset CUDA_VISIBLE_DEVICES" if found else "")
    if not found:
        return Finding("warn", f"CUDA_VISIBLE_DEVICES={raw} on a host without NVIDIA GPUs", "unset",
                       "unset CUDA_VISIBLE_DEVICES")
    uuids = [g.uuid or "" for g in found]
    bad = []
    for entry in (e.strip() for e in raw.split(",")):
        if entry.isdigit():
            if int(entry) >= len(found):
                bad.append(entry)
        elif entry.startswith("GPU-"):
            if not any(u.lower().startswith(entry.lower()) for u in uuids if u):
                bad.append(entry)
        elif entry.startswith("MIG-"):
            continue  # MIG instances are not in NVML's GPU list; CUDA resolves them
        else:
            bad.append(entry)
    if bad:
        valid = ",".join(str(i) for i in range(len(found)))
        return Finding("fail", f"CUDA_VISIBLE_DEVICES={raw}: no GPU {', '.join(bad)} ({len(found)} GPUs)",
                       f"entries among {valid} or GPU UUIDs", f"export CUDA_VISIBLE_DEVICES={valid}")
    return Finding("pass", f"CUDA_VISIBLE_DEVICES={raw}", "existing GPUs")


def check_venv(ctx: Context) -> Finding:
    """The training python is a virtual environment or conda env, not the system python.

    `pip install` into the system interpreter fights the distro's python3-* packages (Debian 12+ refuses it:
    "externally-managed-environment") and an OS upgrade can break torch. A venv also pins what `--python` means.
    """
    t = ctx.facts.torch
    if t is None or t.in_venv is None:
        return Finding("skip", "no torch interpreter probed", "a venv or conda env")
    if t.in_venv:
        return Finding("pass", f"{t.python} (venv/conda)", "a venv or conda env")
    return Finding("warn", f"{t.python} is not in a venv or conda env", "a venv or conda env",
                   "python3 -m venv /opt/train && /opt/train/bin/pip install torch   # then train with "
                   "/opt/train/bin/python")


# ---- hosttune itself --------------------------------------------------------------------------------------------
def _profile_paths(ctx: Context) -> List[Path]:
    if ctx.profile_paths is not None:
        return [Path(p) for p in ctx.profile_paths if Path(p).exists()]
    from hosttune import profile as profile_mod

    return [p for p in profile_mod.generated_paths() if p.exists()]


def _load_profiles(ctx: Context) -> Tuple[List[Tuple[Path, Any]], List[str]]:
    from hosttune import profile as profile_mod

    loaded, errors = [], []
    for p in _profile_paths(ctx):
        try:
            loaded.append((p, profile_mod.load(str(p))))
        except UserError as exc:
            errors.append(str(exc))
    return loaded, errors


def check_profile(ctx: Context) -> Finding:
    """A generated hosttune profile exists and loads.

    `hosttune exec` applies the generated profile (threads, pinning, allocator) per rank; without one it falls back
    to built-in defaults. A profile that does not load is an error that would stop `hosttune exec`.
    """
    if not ctx.live:
        return Finding("skip", "profiles live on this machine, not in the captured host", "present and valid")
    try:
        loaded, errors = _load_profiles(ctx)
    except ImportError:
        return Finding("skip", "hosttune.profile is not available in this build", "present and valid")
    if errors:
        return Finding("fail", "; ".join(errors), "a profile that loads",
                       "hosttune profile generate   # rewrites it from the current facts")
    if not loaded:
        return Finding("warn", "no generated profile", "present and valid", "hosttune profile generate")
    return Finding("pass", ", ".join(str(p) for p, _ in loaded), "present and valid")


def check_profile_fresh(ctx: Context) -> Finding:
    """The generated profile was made for this hardware (its fingerprint matches the current facts).

    The fingerprint covers CPU model/counts/flags, NUMA layout, GPUs by PCI address and the allocators found. After
    a hardware change (a GPU swapped, a socket added, jemalloc removed) the profile's pinning and thread counts are
    stale.
    """
    if not ctx.live:
        return Finding("skip", "profiles live on this machine, not in the captured host", "")
    try:
        loaded, _ = _load_profiles(ctx)
    except ImportError:
        return Finding("skip", "hosttune.profile is not available in this build", "")
    if not loaded:
        return Finding("skip", "no profile that loads (see hosttune.profile)", "")
    want = ctx.facts.hardware_fingerprint()
    stale = [f"{p} ({getattr(prof, 'fingerprint', None)})" for p, prof in loaded
             if getattr(prof, "fingerprint", None) != want]
    if stale:
        return Finding("warn", "made for other hardware: " + ", ".join(stale), f"fingerprint {want}",
                       "hosttune profile generate   # regenerate for this hardware")
    return Finding("pass", f"fingerprint {want}", f"fingerprint {want}")


# ---- the catalogue ----------------------------------------------------------------------------------------------
CHECKS: Tuple[Check, ...] = (
    Check("os.distro", "os", "Supported distribution", check_distro),
    Check("os.numa_balancing", "os", "Automatic NUMA balancing", check_numa_balancing),
    Check("os.thp", "os", "Transparent huge pages", check_thp),
    Check("os.swappiness", "os", "Swappiness", check_swappiness),
    Check("os.governor", "os", "CPU frequency governor", check_governor),
    Check("os.smt", "os", "SMT (hyper-threading) state", check_smt),
    Check("cpu.cgroup_limit", "cpu", "Usable CPUs vs machine (cgroup)", check_cgroup),
    Check("cpu.omp_threads", "cpu", "OMP_NUM_THREADS set by hand", check_omp_threads),
    Check("cpu.nofile", "cpu", "Open files limit (ulimit -n)", check_nofile),
    Check("cpu.memlock", "cpu", "Locked memory limit on RDMA hosts", check_memlock),
    Check("storage.shm", "storage", "/dev/shm size for DataLoader workers", check_shm),
    Check("storage.data", "storage", "Dataset storage (--data)", check_data_storage),
    Check("storage.free_space", "storage", "Free space for checkpoints", check_free_space),
    Check("tools.allocator", "tools", "jemalloc or tcmalloc installed", check_allocator),
    Check("tools.numactl", "tools", "numactl on NUMA hosts", check_numactl),
    Check("nvidia.driver", "nvidia", "NVIDIA driver loaded for the GPUs", check_driver_loaded),
    Check("nvidia.nouveau", "nvidia", "nouveau not loaded", check_nouveau),
    Check("nvidia.nvml", "nvidia", "NVML answers", check_nvml),
    Check("nvidia.driver_cuda", "nvidia", "Driver new enough for torch's CUDA", check_driver_cuda),
    Check("nvidia.torch_build", "nvidia", "torch is a CUDA build that sees the GPUs", check_torch_build),
    Check("nvidia.cudnn_nccl", "nvidia", "cuDNN/NCCL torch loaded vs system", check_cudnn_nccl),
    Check("nvidia.persistence", "nvidia", "Persistence mode", check_persistence),
    Check("nvidia.ecc_mode", "nvidia", "ECC on datacenter GPUs", check_ecc_mode),
    Check("nvidia.ecc_errors", "nvidia", "Uncorrected ECC errors", check_ecc_errors),
    Check("nvidia.pending_retire", "nvidia", "Pending page retirement / row remap", check_pending_retire),
    Check("nvidia.remap_failure", "nvidia", "Row remapping failure", check_remap_failure),
    Check("nvidia.pcie_link", "nvidia", "PCIe link gen/width under load", check_pcie),
    Check("nvidia.clock_reasons", "nvidia", "Thermal/power clock events", check_clock_reasons),
    Check("nvidia.temperature", "nvidia", "GPU temperature", check_temperature),
    Check("nvidia.fabric_manager", "nvidia", "Fabric Manager on NVSwitch hosts", check_fabric_manager),
    Check("nvidia.gpu_numa", "nvidia", "GPU NUMA locality known", check_gpu_numa),
    Check("nvidia.iommu", "nvidia", "IOMMU pass-through for P2P", check_iommu),
    Check("nvidia.acs", "nvidia", "PCIe ACS off between GPUs", check_acs),
    Check("torch.version", "torch", "torch version", check_torch_version),
    Check("torch.debug_env", "torch", "Debug switches left on", check_debug_env),
    Check("torch.alloc_conf", "torch", "PYTORCH_CUDA_ALLOC_CONF parses", check_alloc_conf),
    Check("torch.cuda_visible_devices", "torch", "CUDA_VISIBLE_DEVICES names real GPUs", check_cuda_visible),
    Check("torch.venv", "torch", "Training python in a venv/conda", check_venv),
    Check("hosttune.profile", "hosttune", "Profile present and valid", check_profile),
    Check("hosttune.profile_fresh", "hosttune", "Profile made for this hardware", check_profile_fresh),
)
BY_ID: Dict[str, Check] = {c.id: c for c in CHECKS}


@dataclass(frozen=True)
class Report:
    results: Tuple[Result, ...]

    @property
    def summary(self) -> Dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for r in self.results:
            out[r.status] += 1
        return out

    @property
    def exit_code(self) -> int:
        return 1 if any(r.status == "fail" for r in self.results) else 0

    def to_dict(self) -> Dict[str, Any]:
        return {"schema": SCHEMA, "findings": [r.to_dict() for r in self.results], "summary": self.summary}


def run_checks(ctx: Context, checks: Sequence[Check] = CHECKS, only: Optional[str] = None) -> Report:
    """Run the catalogue (or one group of it) over ctx. A check that raises becomes a skip naming the error."""
    out = []
    for check in checks:
        if only and check.group != only:
            continue
        try:
            f = check.run(ctx)
            if f.status not in STATUSES:
                raise ValueError(f"returned status {f.status!r}")
        except Exception as exc:  # noqa: BLE001 - a broken check must not hide the others
            f = Finding("skip", f"check crashed: {type(exc).__name__}: {exc}", "", "")
        out.append(Result(check.id, check.group, f.status, check.title, f.expected, f.actual, f.fix))
    return Report(tuple(out))


def explain(check_id: str) -> str:
    check = BY_ID.get(check_id)
    if check is None:
        close = difflib.get_close_matches(check_id, list(BY_ID), n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; ids: {', '.join(BY_ID)}"
        raise UserError(f"--explain: no check {check_id!r}{hint}")
    return f"{check.id} ({check.group}): {check.title}\n\n{check.explain}"


def diagnose(root: Optional[str] = None, python: Optional[str] = None, data: Sequence[str] = (),
             only: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> Report:
    """Detect the host (or read a captured one) and run the checks: what `hosttune doctor` does."""
    if only is not None and only not in GROUPS:
        close = difflib.get_close_matches(only, GROUPS, n=1)
        raise UserError(f"--only: no group {only!r}" + (f"; did you mean {close[0]}?" if close else "")
                        + f" (groups: {', '.join(GROUPS)})")
    for path in data:
        if not os.path.exists(path):
            raise UserError(f"--data: {path}: no such file or directory")
    if root is not None and not os.path.isdir(root):
        raise UserError(f"--root: {root}: not a directory")
    if python is not None and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise UserError(f"--python: {python}: not an executable file")
    from hosttune.detect import collect

    live = root is None or os.path.realpath(root) == "/"
    facts = collect(Path(root or "/"), python, probe_torch=live or python is not None, use_nvml=live)
    ctx = Context(facts=facts, env=dict(os.environ if env is None else env), data=tuple(data), live=live,
                  python=python)
    return run_checks(ctx, only=only)


# ---- rendering --------------------------------------------------------------------------------------------------
COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "skip": "bright_black"}


def render_table(report: Report, colour: bool = False) -> str:
    """One line per check (status, id, title, actual vs expected); the fix indented on the lines below.

    Every text that came from the host (a distro name, a path, a driver's answer) goes through `term.printable`, so a
    planted os-release or device name cannot move the cursor, retitle the terminal or hide a line.
    """
    import click

    from hosttune.term import printable

    width = max((len(r.id) for r in report.results), default=10)
    lines = []
    for r in report.results:
        tag = f"{r.status.upper():4}"
        if colour:
            tag = click.style(tag, fg=COLOURS[r.status], bold=r.status == "fail")
        vs = f" (expected {printable(r.expected)})" if r.expected and r.status in ("warn", "fail") else ""
        lines.append(f"{tag}  {r.id:{width}}  {printable(r.title)}: {printable(r.actual)}{vs}")
        if r.fix and r.status in ("warn", "fail"):
            pad = " " * (width + 6)
            for n, fix_line in enumerate(r.fix.split("\n")):  # only "\n" ends a fix line; any other control shows
                lines.append(f"{pad}{'fix: ' if n == 0 else '     '}{printable(fix_line)}")
    s = report.summary
    lines.append("")
    lines.append(f"{s['pass']} pass, {s['warn']} warn, {s['fail']} fail, {s['skip']} skip")
    return "\n".join(lines)


def isatty() -> bool:
    return sys.stdout.isatty()
