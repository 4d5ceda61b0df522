"""The detector: one probe module per source, each reading through `HostIO`; `collect(root)` builds Facts.

`collect(Path("/"))` reads the live host (NVML, the torch probe subprocess, sched_getaffinity, rlimits, statvfs);
`collect(Path(DIR))` reads a captured host from DIR's proc/, sys/, etc/ and nothing else. `probe_torch=False` is the
launcher's fast path: no subprocess, no py-cpuinfo, and NVML is asked only its static queries (identity, memory,
modes; no temperatures or counters); `use_nvml=False` skips NVML as well (GPUs then come from the PCI tree).
"""

import os
import socket
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence

from hosttune.detect import (
    allocators,
    cgroup,
    container,
    cpu,
    distro,
    gpu,
    kernel,
    limits,
    numa,
    nvidia,
    storage,
    torchenv,
    tuned,
)
from hosttune.detect.hostio import HostIO
from hosttune.facts import Facts, Gpu, TorchInstall
from hosttune.policy import cuda_visible


def _hostname(io: HostIO) -> Optional[str]:
    if io.live:
        return socket.gethostname()
    return io.read("/etc/hostname") or io.read("/proc/sys/kernel/hostname")


def collect(root: Path = Path("/"), python: Optional[str] = None, *, probe_torch: bool = True,
            use_nvml: bool = True, nvml_module: Any = None,
            trace: Optional[Callable[[str, str, Optional[bytes]], None]] = None) -> Facts:
    """Detect a host. Never raises for what a host lacks: each gap is a "what: why" line in `Facts.missing`.

    `nvml_module` replaces nvidia-ml-py (tests pass the fake); it also lets NVML run against a foreign root so the
    GPU probe's sysfs lookups (numa_node, local_cpulist) can be tested on a synthetic tree. `trace` is told every
    path read or looked at (HostIO.trace): how `facts --capture` knows what `--root` needs.
    """
    io = HostIO(Path(root))
    io.trace = trace
    io.allow_run = probe_torch
    cg = cgroup.probe(io)
    cpu_facts = cpu.probe(io, cg, affinity=cpu.live_affinity() if io.live else None, slow_fallback=probe_torch)
    numa_facts = numa.probe(io, cpu_facts.online, cg.mems)
    gpus, nvml_info, switches = gpu.probe(io, use_nvml=use_nvml, module=nvml_module, sample=probe_torch)
    nv = nvidia.probe(io, gpu.nvidia_base(nvml_info, switches))

    torch_facts: Optional[TorchInstall] = None
    lib_dirs: Sequence[str] = ()
    if probe_torch and io.live:
        target = python or torchenv.default_python(io)
        if target is None:
            io.note("torch", "no python3 on PATH")
        else:
            data: Dict[str, Any] = torchenv.run_probe(io, target)
            lib_dirs = torchenv.env_lib_dirs(data)
            # The devices CUDA will number, read as the planner and doctor read them; a MIG instance whose parent
            # is not known here still counts as a device.
            seen = cuda_visible.select(gpus, os.environ.get("CUDA_VISIBLE_DEVICES"))
            visible = [g if g is not None else Gpu(index=-1, name="MIG instance") for g in seen.gpus]
            torch_facts = torchenv.from_probe(target, data, nv.cuda_driver, visible)

    alloc, tools = allocators.probe(io, lib_dirs)
    mounts, shm = storage.probe(io, sizes=probe_torch)  # the fast path skips statvfs (NFS can block it)
    return Facts(
        root=str(root),
        hostname=_hostname(io),
        distro=distro.probe(io),
        kernel=kernel.probe(io, cpu_facts.online),
        cpu=cpu_facts,
        numa=numa_facts,
        gpus=gpus,
        nvidia=nv,
        torch=torch_facts,
        allocators=alloc,
        tools=tools,
        storage=mounts,
        memory=storage.memory(io, shm),
        limits=limits.probe(io),
        tuned=tuned.probe(io),
        container=container.probe(io, cg, cpu_facts.online),
        missing=tuple(io.missing),
    )


__all__ = ["collect", "HostIO"]
