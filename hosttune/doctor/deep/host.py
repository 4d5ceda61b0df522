"""What doctor --deep reads from the host besides measurements: the CPU clock for the peak, whether we run inside a
container, and the NVIDIA Container Toolkit's pieces. Readers go through HostIO (bounded, under a root); parsers
take text."""

import json
import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

from hosttune.detect.hostio import HostIO

CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
DOCKER_DAEMON_JSON = "/etc/docker/daemon.json"


# ---- CPU clock ----------------------------------------------------------------------------------------------------
def parse_model_ghz(model: Optional[str]) -> Optional[float]:
    """The nominal clock in an Intel-style model name: "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz" -> 2.5."""
    m = re.search(r"@\s*([0-9]+(?:\.[0-9]+)?)\s*GHz", model or "")
    return float(m.group(1)) if m else None


def parse_cpuinfo_mhz(text: Optional[str]) -> Optional[float]:
    """The highest "cpu MHz" in /proc/cpuinfo (x86; under a hypervisor the host's nominal clock)."""
    best = None
    for m in re.finditer(r"^cpu MHz\s*:\s*([0-9]+(?:\.[0-9]+)?)\s*$", text or "", re.M):
        v = float(m.group(1))
        best = v if best is None or v > best else best
    return best


def cpu_clock_ghz(io: HostIO, model: Optional[str]) -> Tuple[Optional[float], str]:
    """(GHz, where it came from): cpufreq's cpuinfo_max_freq (the highest clock the CPU reports; wide vectors run
    below it), else the model name's nominal clock, else /proc/cpuinfo's current "cpu MHz"."""
    khz = io.read_int("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if khz and khz > 0:
        return khz / 1e6, "cpufreq cpuinfo_max_freq"
    ghz = parse_model_ghz(model)
    if ghz:
        return ghz, "model name"
    mhz = parse_cpuinfo_mhz(io.read("/proc/cpuinfo"))
    if mhz:
        return mhz / 1e3, "/proc/cpuinfo cpu MHz"
    return None, "unknown"


# ---- NVIDIA Container Toolkit -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Toolkit:
    nvidia_ctk: Optional[str]
    docker: Optional[str]
    podman: Optional[str]
    cdi_specs: Tuple[str, ...]  # spec files that define nvidia.com/gpu devices
    docker_nvidia_runtime: bool  # daemon.json names a runtime "nvidia"
    docker_cdi: bool  # daemon.json enables the cdi feature (docker >= 25 then takes --device nvidia.com/gpu=all)


def parse_daemon_json(text: Optional[str]) -> Tuple[bool, bool]:
    """(nvidia runtime configured, CDI feature on) from docker's daemon.json; (False, False) when unreadable."""
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return False, False
    if not isinstance(data, dict):
        return False, False
    runtimes = data.get("runtimes")
    features = data.get("features")
    runtimes = runtimes if isinstance(runtimes, dict) else {}
    features = features if isinstance(features, dict) else {}
    return "nvidia" in runtimes or data.get("default-runtime") == "nvidia", bool(features.get("cdi"))


def toolkit(io: HostIO) -> Toolkit:
    specs: List[str] = []
    for d in CDI_DIRS:
        for name in sorted(io.listdir(d)):
            if name.endswith((".yaml", ".yml", ".json")):
                path = f"{d}/{name}"
                if "nvidia.com/gpu" in (io.read(path) or ""):
                    specs.append(path)
    runtime, cdi = parse_daemon_json(io.read(DOCKER_DAEMON_JSON)) if io.exists(DOCKER_DAEMON_JSON) else (False, False)
    return Toolkit(nvidia_ctk=io.which("nvidia-ctk"), docker=io.which("docker"), podman=io.which("podman"),
                   cdi_specs=tuple(specs), docker_nvidia_runtime=runtime, docker_cdi=cdi)
