"""What a check looks at: the Context (facts, this shell's environment, the live-host probes, the profile in use),
the few questions many checks ask of it (which GPUs, how many CPUs), and the prerequisites (`Need`s) the runner
evaluates before a check runs.
"""

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Tuple

from hosttune import nvml as nvmlmod
from hosttune.detect.hostio import HostIO
from hosttune.doctor.model import Need
from hosttune.facts import Facts, Gpu

if TYPE_CHECKING:
    from hosttune.profile import Active, Profile

class Live:
    """What doctor reads from the running host beyond Facts: disk space, `lspci -vvv`, a fresh NVML sample.

    Used only when the facts describe this host (no --root). Tests pass their own instance or rely on real
    temporary directories and the fake pynvml.
    """

    def disk_free_mb(self, path: str) -> Tuple[int, int]:
        usage = shutil.disk_usage(path)
        return usage.total // (1024 * 1024), usage.free // (1024 * 1024)

    def lspci_vvv(self) -> Optional[str]:
        # Through the detector's process gateway: as root, "lspci" only from directories root alone can write,
        # started in "/" with the caller's code-loading variables dropped.
        io = HostIO(Path("/"))
        exe = io.which("lspci")
        if exe is None:
            return None
        proc = io.run([exe, "-vvv"], timeout=10, note=False)
        if proc is None:
            raise RuntimeError(f"lspci -vvv: {io.last_error}")
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
    # which profile is in use (a hosttune.profile.Active); None: profile.locate_active over `env`, exec's answer
    profile: Optional["Active"] = None
    python: Optional[str] = None  # --python: the training interpreter named by the user (None: python3 on PATH)
    probe: Live = field(default_factory=Live)
    deep: Optional[Any] = None  # doctor --deep: the run's hosttune.doctor.deep.DeepRun (measures on first use)
    _samples: Optional[Any] = None
    _loaded: Optional[Tuple["Active", Optional["Profile"], str]] = None

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

    def active_profile(self) -> "Active":
        """Which profile is in use, as `hosttune exec` picks it from this environment: a `profile.Active`."""
        if self.profile is None:
            from hosttune import profile as profile_mod

            self.profile = profile_mod.locate_active(environ=self.env)
        return self.profile

    def load_profile(self) -> Tuple["Active", Optional["Profile"], str]:
        """(the Active, the loaded Profile or None, the error that stopped loading or ""). A profile is loaded only
        when one is configured; the built-in default is generated per run and has nothing to load."""
        if self._loaded is None:
            from hosttune import profile as profile_mod
            from hosttune.errors import UserError

            active = self.active_profile()
            prof: Optional[Profile] = None
            error = ""
            if active.ref is not None:
                try:
                    prof = profile_mod.load(active.ref)
                except UserError as exc:
                    error = str(exc)
            self._loaded = (active, prof, error)
        return self._loaded


# ---- questions many checks ask ----------------------------------------------------------------------------------
def gpus(ctx: Context) -> Tuple[Gpu, ...]:
    """NVIDIA GPUs (display/3D controllers); NVSwitches and other NVIDIA functions are not GPUs."""
    return tuple(g for g in ctx.facts.gpus if not g.pci_class or g.pci_class.startswith("0x03"))


def nvml_gpus(ctx: Context) -> Tuple[Gpu, ...]:
    return tuple(g for g in gpus(ctx) if g.source == "nvml")


def multi_node(ctx: Context) -> bool:
    return len(ctx.facts.numa.nodes) > 1


def is_vm(ctx: Context) -> bool:
    return "hypervisor" in ctx.facts.cpu.flags


# Kubernetes lets a pod set only namespaced sysctls (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*, net.*).
_NAMESPACED_SYSCTL = ("kernel.shm", "kernel.msg", "kernel.sem", "fs.mqueue.", "net.")


def in_container(ctx: Context) -> bool:
    return ctx.facts.container.detected


def host_setting_fix(ctx: Context, where: str, fix: str, sysctl: str = "") -> str:
    """`fix` as a container should read it: the kernel setting under `where` ("/proc/sys" or "/sys") is the host's.
    Read-only here (an unprivileged container): set it on the host, not here; writable (a privileged one): what it
    does changes the host for every container on it, and only the host keeps it after a reboot. `sysctl` names the
    key, so a pod is told whether its securityContext.sysctls can set it. Outside a container: `fix` unchanged."""
    c = ctx.facts.container
    if not c.detected:
        return fix
    runtime = c.runtime or "unknown runtime"
    readonly = c.proc_sys_readonly if where == "/proc/sys" else c.sys_readonly
    if sysctl and sysctl.startswith(_NAMESPACED_SYSCTL):
        pod = f"or the pod's securityContext.sysctls ({sysctl} is namespaced)"
    elif sysctl:
        pod = f"a pod's securityContext.sysctls cannot: {sysctl} is not a namespaced sysctl"
    else:
        pod = f"{where} is the host's kernel, no pod setting reaches it"
    if readonly:
        head = f"read-only inside a container ({runtime}): set it on the host ({pod})"
    else:
        head = (f"inside a container ({runtime}) {where} is the host's: a change here changes it for every container "
                f"on the host and is lost at its reboot; set it on the host ({pod})")
    return f"{head}\non the host:\n{fix}"


def version_tuple(text: Optional[str]) -> Tuple[int, ...]:
    out = []
    for part in re.split(r"[.+-]", text or ""):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def gpu_label(g: Gpu) -> str:
    return f"GPU{g.index} ({g.pci_bus_id or '?'})"


def missing(ctx: Context, prefix: str) -> Optional[str]:
    """The first gap the detector recorded under `prefix`, if any."""
    for entry in ctx.facts.missing:
        if entry.startswith(prefix):
            return entry
    return None


# ---- prerequisites ----------------------------------------------------------------------------------------------
GPU = Need("gpu", lambda ctx: bool(gpus(ctx)), "no NVIDIA GPU on this host")
NVML = Need("nvml", lambda ctx: ctx.facts.nvidia.nvml == "ok" and bool(nvml_gpus(ctx)),
            lambda ctx: f"NVML not available ({ctx.facts.nvidia.nvml}): see nvidia.nvml")
DATA = Need("data", lambda ctx: bool(ctx.data), "no --data PATH given", "local nvme/ssd")


def live(why: str, expected: str = "", name: str = "live") -> Need:
    """Needs the facts to describe this machine (no --root): `why` says what the captured host cannot give."""
    return Need(name, lambda ctx: ctx.live, why, expected)


def shell_env(expected: str = "") -> Need:
    """Looks at this shell's environment, which says nothing about a captured host."""
    return live("the environment belongs to this shell, not the captured host", expected, "shell_env")


def local_profiles(expected: str = "") -> Need:
    """Looks at the profiles of this machine, which say nothing about a captured host."""
    return live("profiles live on this machine, not in the captured host", expected, "local_profiles")
