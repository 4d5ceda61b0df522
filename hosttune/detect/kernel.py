"""Kernel facts: release, command line, THP, NUMA balancing, swappiness, cpufreq governors, loaded modules."""

import os
import re
from typing import Iterable, List, Optional

from hosttune.detect.hostio import HostIO
from hosttune.facts import Kernel

# Modules whose presence changes what doctor/profiles say (GPU driver, its rival nouveau, RDMA stacks).
INTERESTING_MODULES = (
    "nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia_peermem", "nv_peer_mem", "nouveau",
    "ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib", "mlx4_core", "rdma_ucm", "efa", "gdrdrv", "nvme",
)


def parse_bracketed(text: Optional[str]) -> Optional[str]:
    """"always [madvise] never" -> "madvise"."""
    if not text:
        return None
    m = re.search(r"\[([^\]]+)\]", text)
    if m:
        return m.group(1)
    words = text.split()
    return words[0] if len(words) == 1 else None


def parse_modules(text: Optional[str], wanted: Iterable[str] = INTERESTING_MODULES) -> List[str]:
    """/proc/modules ("name size refcount deps state addr") -> the wanted module names that are loaded."""
    if not text:
        return []
    loaded = {line.split()[0] for line in text.splitlines() if line.strip()}
    return [m for m in wanted if m in loaded]


def probe(io: HostIO, online: Iterable[int] = ()) -> Kernel:
    release = os.uname().release if io.live else io.read("/proc/sys/kernel/osrelease", "kernel.release")
    thp_dir = "/sys/kernel/mm/transparent_hugepage"
    governors = []
    for cpu in online:
        gov = io.read(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")
        if gov and gov not in governors:
            governors.append(gov)
    modules_text = io.read("/proc/modules", "kernel.modules")
    return Kernel(
        release=release,
        cmdline=io.read("/proc/cmdline"),
        thp=parse_bracketed(io.read(f"{thp_dir}/enabled", "kernel.thp")),
        thp_defrag=parse_bracketed(io.read(f"{thp_dir}/defrag")),
        numa_balancing=io.read_int("/proc/sys/kernel/numa_balancing"),
        swappiness=io.read_int("/proc/sys/vm/swappiness", "kernel.swappiness"),
        governors=tuple(sorted(governors)),
        modules=tuple(parse_modules(modules_text)),
    )
