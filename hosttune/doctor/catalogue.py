"""The catalogue of checks (in the order doctor reports them) and the runner: prerequisites, crash handling,
`--explain`, and `diagnose`, what `hosttune doctor` does."""

import difflib
import os
from pathlib import Path
from typing import Dict, Mapping, Optional, Sequence, Tuple

from hosttune import trust
from hosttune.detect.storage import data_path_problem
from hosttune.doctor.checks import cpu, gpu, nvidia, storage, tools, topology
from hosttune.doctor.checks import hosttune as hosttune_checks
from hosttune.doctor.checks import os as os_checks
from hosttune.doctor.checks import torch as torch_checks
from hosttune.doctor.checks import tunables as tune_checks
from hosttune.doctor.context import DATA, GPU, NVML, Context, live, local_profiles, shell_env
from hosttune.doctor.deep import DEEP_CHECKS, DeepOptions, DeepRun
from hosttune.doctor.model import GROUPS, Check, Finding, Report, Result
from hosttune.errors import UserError
from hosttune.term import printable

NVIDIA_HEALTH = (GPU, NVML)  # per-GPU state only NVML reports
SKIPPED = "not run (--skip)"

CHECKS: Tuple[Check, ...] = (
    Check("os.distro", "os", "Supported distribution", os_checks.check_distro),
    Check("os.numa_balancing", "os", "Automatic NUMA balancing", os_checks.check_numa_balancing),
    Check("os.thp", "os", "Transparent huge pages", os_checks.check_thp),
    Check("os.swappiness", "os", "Swappiness", os_checks.check_swappiness),
    Check("os.governor", "os", "CPU frequency governor", os_checks.check_governor),
    Check("os.smt", "os", "SMT (hyper-threading) state", os_checks.check_smt),
    Check("os.container", "os", "Inside a container: what it can see", os_checks.check_container),
    Check("os.tuned", "os", "tuned profile agrees with these checks", os_checks.check_tuned),
    Check("cpu.cgroup_limit", "cpu", "Usable CPUs vs machine (cgroup)", cpu.check_cgroup),
    Check("cpu.omp_threads", "cpu", "OMP_NUM_THREADS set by hand", cpu.check_omp_threads),
    Check("cpu.nofile", "cpu", "Open files limit (ulimit -n)", tune_checks.check_nofile),
    Check("cpu.memlock", "cpu", "Locked memory limit on RDMA hosts", tune_checks.check_memlock),
    Check("storage.shm", "storage", "/dev/shm size for DataLoader workers", tune_checks.check_shm),
    Check("storage.data", "storage", "Dataset storage (--data)", storage.check_data_storage,
          needs=(DATA, live("--data paths are on this machine, the storage facts are the captured host's",
                            "local nvme/ssd"))),
    Check("storage.free_space", "storage", "Free space for checkpoints", storage.check_free_space,
          needs=(live("free space is measured on the live host only (--root given)", ">= 50 GiB free"),)),
    Check("tools.allocator", "tools", "jemalloc or tcmalloc installed", tools.check_allocator),
    Check("tools.numactl", "tools", "numactl on NUMA hosts", tools.check_numactl),
    Check("nvidia.driver", "nvidia", "NVIDIA driver loaded for the GPUs", nvidia.check_driver_loaded),
    Check("nvidia.nouveau", "nvidia", "nouveau not loaded", nvidia.check_nouveau),
    Check("nvidia.nvml", "nvidia", "NVML answers", nvidia.check_nvml),
    Check("nvidia.driver_cuda", "nvidia", "Driver new enough for torch's CUDA", nvidia.check_driver_cuda,
          needs=(GPU,)),
    Check("nvidia.torch_build", "nvidia", "torch is a CUDA build that sees the GPUs", nvidia.check_torch_build,
          needs=(GPU,)),
    Check("nvidia.cudnn_nccl", "nvidia", "cuDNN/NCCL torch loaded vs system", nvidia.check_cudnn_nccl, needs=(GPU,)),
    Check("nvidia.persistence", "nvidia", "Persistence mode", gpu.check_persistence, needs=NVIDIA_HEALTH),
    Check("nvidia.ecc_mode", "nvidia", "ECC on datacenter GPUs", gpu.check_ecc_mode, needs=NVIDIA_HEALTH),
    Check("nvidia.ecc_errors", "nvidia", "Uncorrected ECC errors", gpu.check_ecc_errors, needs=NVIDIA_HEALTH),
    Check("nvidia.pending_retire", "nvidia", "Pending page retirement / row remap", gpu.check_pending_retire,
          needs=NVIDIA_HEALTH),
    Check("nvidia.remap_failure", "nvidia", "Row remapping failure", gpu.check_remap_failure, needs=NVIDIA_HEALTH),
    Check("nvidia.pcie_link", "nvidia", "PCIe link gen/width under load", gpu.check_pcie,
          needs=NVIDIA_HEALTH + (live("link state needs a live sample (--root given)", "max gen/width under load"),)),
    Check("nvidia.clock_reasons", "nvidia", "Thermal/power clock events", gpu.check_clock_reasons,
          needs=NVIDIA_HEALTH),
    Check("nvidia.temperature", "nvidia", "GPU temperature", gpu.check_temperature, needs=NVIDIA_HEALTH),
    Check("nvidia.fabric_manager", "nvidia", "Fabric Manager on NVSwitch hosts", nvidia.check_fabric_manager),
    Check("nvidia.gpu_numa", "nvidia", "GPU NUMA locality known", topology.check_gpu_numa, needs=(GPU,)),
    Check("nvidia.iommu", "nvidia", "IOMMU pass-through for P2P", topology.check_iommu),
    Check("nvidia.acs", "nvidia", "PCIe ACS off between GPUs", topology.check_acs),
    Check("torch.version", "torch", "torch version", torch_checks.check_torch_version),
    Check("torch.debug_env", "torch", "Debug switches left on", torch_checks.check_debug_env,
          needs=(shell_env("none set"),)),
    Check("torch.alloc_conf", "torch", "PYTORCH_CUDA_ALLOC_CONF parses", torch_checks.check_alloc_conf,
          needs=(shell_env("parses"),)),
    Check("torch.cuda_visible_devices", "torch", "CUDA_VISIBLE_DEVICES names real GPUs",
          torch_checks.check_cuda_visible,
          needs=(shell_env(),)),
    Check("torch.onednn", "torch", "torch's CPU kernels use the CPU's ISA", torch_checks.check_onednn,
          needs=(shell_env("no ISA cap below the CPU"),)),  # E1
    Check("torch.venv", "torch", "Training python in a venv/conda", torch_checks.check_venv),
    Check("torch.image_decoder", "torch", "Fast JPEG decoder in the training python",  # IMG
          torch_checks.check_image_decoder),
    Check("hosttune.profile", "hosttune", "Profile present and valid", hosttune_checks.check_profile,
          needs=(local_profiles("present and valid"),)),
    Check("hosttune.profile_fresh", "hosttune", "Profile made for this hardware", hosttune_checks.check_profile_fresh,
          needs=(local_profiles(),)),
)
BY_ID: Dict[str, Check] = {c.id: c for c in CHECKS}
# what --explain and --skip know: the checks above and --deep's measured ones
KNOWN: Dict[str, Check] = {c.id: c for c in CHECKS + DEEP_CHECKS}


def _one(check: Check, ctx: Context) -> Finding:
    for need in check.needs:
        if not need.met(ctx):
            return need.skip(ctx)
    return check.run(ctx)


def run_checks(ctx: Context, checks: Sequence[Check] = CHECKS, only: Optional[str] = None,
               skip: Sequence[str] = ()) -> Report:
    """Run the catalogue (or one group of it) over ctx: a check whose prerequisite is not met is a skip saying
    which; a check that raises (or returns something that is not a Finding) becomes a skip naming the error. A
    check named in `skip` does not run and is reported as a skip, so the table still shows it was left out."""
    out = []
    for check in checks:
        if only and check.group != only:
            continue
        if check.id in skip:
            out.append(Result(check.id, check.group, "skip", check.title, "", SKIPPED, ""))
            continue
        try:
            f = _one(check, ctx)
            if not isinstance(f, Finding):
                raise TypeError(f"returned {type(f).__name__}, not a Finding")
        except Exception as exc:  # noqa: BLE001 - a broken check must not hide the others
            f = Finding(status="skip", actual=f"check crashed: {type(exc).__name__}: {exc}")
        out.append(Result(check.id, check.group, f.status, check.title, f.expected, f.actual, f.fix))
    return Report(tuple(out))


def explain(check_id: str) -> str:
    """What `hosttune doctor --explain ID` prints: the check's title and docstring."""
    check = check_by_id(check_id, "--explain")
    return f"{check.id} ({check.group}): {check.title}\n\n{check.explain}"


def check_by_id(check_id: str, option: str) -> Check:
    """The check named `check_id`; an unknown one is bad usage naming `option`, with the closest ids."""
    check = KNOWN.get(check_id)
    if check is None:
        close = difflib.get_close_matches(check_id, list(KNOWN), n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; ids: {', '.join(KNOWN)}"
        raise UserError(f"{option}: no check {check_id!r}{hint}")
    return check


def diagnose(root: Optional[str] = None, python: Optional[str] = None, data: Sequence[str] = (),
             only: Optional[str] = None, env: Optional[Mapping[str, str]] = None, skip: Sequence[str] = (),
             deep: Optional[DeepOptions] = None) -> Report:
    """Detect the host (or read a captured one) and run the checks: what `hosttune doctor` does. With `deep`,
    the measured checks (hosttune.doctor.deep) run after the others, on this machine only."""
    for check_id in skip:
        check_by_id(check_id, "--skip")
    if only is not None and only not in GROUPS:
        close = difflib.get_close_matches(only, GROUPS, n=1)
        raise UserError(f"--only: no group {only!r}" + (f"; did you mean {close[0]}?" if close else "")
                        + f" (groups: {', '.join(GROUPS)})")
    for path in data:
        if not os.path.exists(path):
            raise UserError(f"--data: {printable(path)}: no such file or directory")
        why = data_path_problem(path)  # a device, FIFO, socket or /proc, /sys file: bad usage, never measured
        if why is not None:
            raise UserError(f"--data: {printable(path)} {why}")
    if root is not None:
        root = trust.host_tree(root)
    if deep is not None and root is not None and os.path.realpath(root) != "/":
        raise UserError("--deep measures this machine; it cannot be combined with --root")
    if python is not None and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise UserError(f"--python: {python}: not an executable file")
    from hosttune.detect import collect

    live_host = root is None or os.path.realpath(root) == "/"
    facts = collect(Path(root or "/"), python, probe_torch=live_host or python is not None, use_nvml=live_host)
    ctx = Context(facts=facts, env=dict(os.environ if env is None else env), data=tuple(data), live=live_host,
                  python=python)
    if deep is None:
        return run_checks(ctx, only=only, skip=skip)
    ctx.deep = DeepRun(ctx, deep)
    try:
        return run_checks(ctx, CHECKS + DEEP_CHECKS, only=only, skip=skip)
    finally:
        ctx.deep.close()
