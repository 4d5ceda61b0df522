"""CPU facts: model, vendor, ISA flags, online CPUs, cores, packages (sysfs topology), with cgroup limits applied."""

import os
import platform
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hosttune.cpulist import MAX_CPUS
from hosttune.detect.hostio import HostIO
from hosttune.facts import Cgroup, Cpu

# The ISA flags that change what hosttune recommends (bf16 autocast on CPU, AMX, vector width).
FLAGS_OF_INTEREST = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
    "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8",
    # running under a hypervisor: doctor skips bare-metal-only checks (IOMMU, ACS)
    "hypervisor",
    # aarch64 Features
    "asimd", "sve", "sve2", "bf16", "i8mm", "asimdhp",
    # POWER
    "vsx", "mma",
)

ARM_IMPLEMENTERS = {
    "0x41": "ARM", "0x42": "Broadcom", "0x43": "Cavium", "0x46": "Fujitsu", "0x48": "HiSilicon", "0x4e": "NVIDIA",
    "0x50": "APM", "0x51": "Qualcomm", "0x53": "Samsung", "0x56": "Marvell", "0x61": "Apple", "0x69": "Intel",
    "0xc0": "Ampere",
}

# (implementer, part) -> core name, as util-linux lscpu names them; aarch64 /proc/cpuinfo has no "model name".
ARM_PARTS = {
    ("0x41", "0xd08"): "Cortex-A72", ("0x41", "0xd0c"): "Neoverse-N1", ("0x41", "0xd40"): "Neoverse-V1",
    ("0x41", "0xd49"): "Neoverse-N2", ("0x41", "0xd4f"): "Neoverse-V2", ("0x41", "0xd8e"): "Neoverse-N3",
    ("0x41", "0xd84"): "Neoverse-V3", ("0x41", "0xd85"): "Cortex-X925", ("0x41", "0xd87"): "Cortex-A725",
    ("0x48", "0xd01"): "Kunpeng-920", ("0x43", "0x0af"): "ThunderX2 99xx", ("0x46", "0x001"): "A64FX",
    ("0xc0", "0xac3"): "Ampere-1", ("0xc0", "0xac4"): "Ampere-1a", ("0x61", "0x022"): "M1",
}


def parse_cpuinfo(text: Optional[str]) -> Dict[str, Any]:
    """/proc/cpuinfo -> {model, vendor, flags} from the first processor that names them (x86, ARM, POWER)."""
    out: Dict[str, Any] = {"model": None, "vendor": None, "flags": []}
    if not text:
        return out
    first: Dict[str, str] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key not in first and value:
            first[key] = value
    out["model"] = first.get("model name") or first.get("cpu model") or first.get("cpu")
    if not out["model"] and "Processor" in first:  # old ARM kernels
        out["model"] = first["Processor"]
    if not out["model"] and "CPU implementer" in first:
        impl = first["CPU implementer"].lower()
        parts = sorted({line.partition(":")[2].strip().lower() for line in text.splitlines()
                        if line.startswith("CPU part")})
        names = [ARM_PARTS.get((impl, p)) for p in parts]
        if names and all(names):  # a hybrid chip (DGX Spark: X925 + A725) lists every core type
            out["model"] = " + ".join(n for n in names if n)  # else None: py-cpuinfo may know the part
    vendor = first.get("vendor_id")
    if not vendor and "CPU implementer" in first:
        vendor = ARM_IMPLEMENTERS.get(first["CPU implementer"].lower(), first["CPU implementer"])
    if not vendor and first.get("cpu", "").upper().startswith("POWER"):
        vendor = "IBM"
    out["vendor"] = vendor
    flags = (first.get("flags") or first.get("Features") or "").split()
    out["flags"] = flags
    return out


def interesting_flags(flags: Sequence[str]) -> Tuple[str, ...]:
    have = set(flags)
    return tuple(f for f in FLAGS_OF_INTEREST if f in have)


def cpuinfo_model_fallback() -> Optional[str]:
    """py-cpuinfo, only when /proc/cpuinfo names no model: a call costs about a second.

    Debian 12's py-cpuinfo 5.0 says `brand`, newer releases `brand_raw`."""
    try:
        import cpuinfo  # type: ignore[import-untyped]

        info = cpuinfo.get_cpu_info()
    except Exception:  # noqa: BLE001 - an optional, best-effort fallback
        return None
    return info.get("brand_raw") or info.get("brand") or None


def online_cpus(io: HostIO) -> List[int]:
    """cpu/online, else each cpuN/online (cpu0 often has none: online), else every cpuN folder."""
    base = "/sys/devices/system/cpu"
    present = sorted(int(n[3:]) for n in io.listdir(base)
                     if n.startswith("cpu") and n[3:].isdigit() and len(n) <= 8 and int(n[3:]) < MAX_CPUS)
    listed = io.cpus(f"{base}/online", "cpu.online")
    if listed is not None:
        # Keep only CPUs that have a folder: a trimmed capture (nvidiagpunumanodes) says 0-175 but holds 32.
        have = set(present)
        return [c for c in listed if c in have] if present else listed
    if not present:
        io.note("cpu.online", f"{base} has no cpuN folders")
        return []
    out = []
    for cpu in present:
        flag = io.read(f"{base}/cpu{cpu}/online")
        if flag is None or flag.strip() != "0":
            out.append(cpu)
    return out


def topology(io: HostIO, online: Sequence[int]) -> Tuple[List[Tuple[int, ...]], List[Tuple[int, ...]]]:
    """(cores, packages) as sorted tuples of online PUs.

    A core is the online PUs that share their package, their thread_siblings set AND their core_id, which is what
    hwloc counts (and so our fixtures' expected answer):
    - AMD Bulldozer (64amd64-4s2n4ca2co): thread_siblings pairs a compute unit, but each PU has its own core_id;
      hwloc says 64 cores without SMT, not 32 two-thread cores.
    - AMD Magny-Cours (32amd64-*, 48amd64-*): core_id repeats for each die inside a package and there is no die_id
      file; thread_siblings tells the dies' cores apart, so (package, core_id) alone would merge them.
    Without topology files each PU is its own core.
    """
    base = "/sys/devices/system/cpu"
    online_set = set(online)
    core_of: Dict[Tuple[Any, ...], List[int]] = {}
    pkg_of: Dict[Any, List[int]] = {}
    for cpu in online:
        topo = f"{base}/cpu{cpu}/topology"
        pkg = io.read_int(f"{topo}/physical_package_id")
        if pkg is None or pkg < 0:
            # Some ARM firmware leaves package id -1: use the sibling mask as the package's identity.
            sib_rel = next((f"{topo}/{n}" for n in ("package_cpus_list", "core_siblings_list")
                            if io.read(f"{topo}/{n}")), None)
            pkg_key: Any = ("mask", tuple(io.cpus(sib_rel, "cpu.topology") or ())) if sib_rel else ("cpu", cpu)
        else:
            pkg_key = pkg
        pkg_of.setdefault(pkg_key, []).append(cpu)
        sib_rel = f"{topo}/thread_siblings_list"
        if io.read(sib_rel) is None:
            sib_rel = f"{topo}/core_cpus_list"
        sibs = io.cpus(sib_rel, "cpu.topology", f"{topo}/thread_siblings") or []
        siblings = tuple(c for c in sibs if c in online_set) or (cpu,)
        core_id = io.read_int(f"{topo}/core_id")
        key: Tuple[Any, ...] = (pkg_key, siblings, core_id if core_id is not None else cpu)
        core_of.setdefault(key, []).append(cpu)
    cores = sorted(tuple(sorted(v)) for v in core_of.values())
    packages = sorted(tuple(sorted(v)) for v in pkg_of.values())
    return cores, packages


def probe(io: HostIO, cgroup: Cgroup, affinity: Optional[Sequence[int]] = None, slow_fallback: bool = True) -> Cpu:
    """`affinity` is the live os.sched_getaffinity(0) (None with a foreign root)."""
    info = parse_cpuinfo(io.read("/proc/cpuinfo", "cpu.cpuinfo"))
    model = info["model"]
    if model is None and io.live and slow_fallback:
        model = cpuinfo_model_fallback()
    online = online_cpus(io)
    cores, packages = topology(io, online) if online else ([], [])
    if not online:
        io.note("cpu.topology", "no online CPUs found")
    allowed = set(online)
    if cgroup.cpuset is not None:
        allowed &= set(cgroup.cpuset)
    if affinity is not None:
        allowed &= set(affinity)
    arch = platform.machine() if io.live else _arch_from_cpuinfo(info)
    return Cpu(
        model=model,
        vendor=info["vendor"],
        arch=arch,
        flags=interesting_flags(info["flags"]),
        online=tuple(online),
        logical=len(online),
        physical=len(cores),
        packages=len(packages),
        smt=any(len(c) > 1 for c in cores),
        smt_control=io.read("/sys/devices/system/cpu/smt/control"),
        cores=tuple(cores),
        package_cpus=tuple(packages),
        allowed_cpus=tuple(sorted(allowed)),
        quota_cpus=cgroup.quota_cpus,
        cgroup=cgroup,
    )


def _arch_from_cpuinfo(info: Dict[str, Any]) -> Optional[str]:
    flags = set(info["flags"])
    if "lm" in flags or "sse2" in flags:
        return "x86_64"
    if "asimd" in flags or "fp" in flags:
        return "aarch64"
    if (info["model"] or "").upper().startswith("POWER"):
        return "ppc64le"
    return None


def live_affinity() -> Optional[List[int]]:
    getter = getattr(os, "sched_getaffinity", None)
    return sorted(getter(0)) if getter else None
