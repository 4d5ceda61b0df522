"""Checks of the NVIDIA driver stack: driver loaded, nouveau, NVML, driver vs torch CUDA, torch build, cuDNN/NCCL,
Fabric Manager."""

import re

from hosttune.doctor.context import Context, gpus, missing, version_tuple
from hosttune.doctor.fixes import DRIVER_VERSION, driver_install, install, shell_path, valid
from hosttune.doctor.model import Finding


def check_driver_loaded(ctx: Context) -> Finding:
    """NVIDIA GPUs on the PCI bus have the NVIDIA kernel driver loaded.

    A GPU that `lspci` shows but no `nvidia` module drives is invisible to CUDA: torch reports
    cuda.is_available() False. A host with no NVIDIA GPU passes (a CPU host is a valid training host).
    """
    found = gpus(ctx)
    if not found:
        return Finding(status="pass", actual="no NVIDIA GPU on the PCI bus (CPU host)",
                       expected="driver loaded when GPUs are present")
    nv = ctx.facts.nvidia
    loaded = "nvidia" in ctx.facts.kernel.modules or nv.driver is not None or nv.nvml in ("ok", "version_mismatch")
    if loaded:
        return Finding(status="pass", actual=f"{len(found)} GPU(s), driver {nv.driver or 'loaded'}",
                       expected="driver loaded")
    if not ctx.facts.kernel.modules and missing(ctx, "kernel.modules") and nv.nvml == "skipped":
        return Finding(status="skip", actual=f"{len(found)} GPU(s); loaded modules not readable",
                       expected="driver loaded")
    return Finding(status="fail", actual=f"{len(found)} NVIDIA GPU(s) on PCI, nvidia module not loaded",
                   expected="driver loaded", fix=driver_install(ctx))


def check_nouveau(ctx: Context) -> Finding:
    """The open-source nouveau driver is not loaded.

    nouveau claims the GPU first and the NVIDIA driver then cannot bind ("NVRM: The NVIDIA probe routine was not
    called ... nouveau"). It has no CUDA support. Blacklist it and rebuild the initramfs.
    """
    if "nouveau" not in ctx.facts.kernel.modules:
        gone = missing(ctx, "kernel.modules")
        if gone and not ctx.facts.kernel.modules:
            return Finding(status="skip", actual=f"loaded modules not readable ({gone})", expected="not loaded")
        return Finding(status="pass", actual="not loaded", expected="not loaded")
    rebuild = {"debian": "update-initramfs -u", "rhel": "dracut --force"}.get(
        ctx.family, "update-initramfs -u   # or dracut --force")
    fix = ("printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > /etc/modprobe.d/blacklist-nouveau.conf && "
           f"{rebuild} && reboot")
    return Finding(status="fail", actual="nouveau loaded", expected="not loaded", fix=fix)


def check_nvml(ctx: Context) -> Finding:
    """NVML (the NVIDIA management library) answers.

    "Driver/library version mismatch" means the user-space driver libraries were upgraded (often by unattended
    upgrades) while the old kernel module is still loaded: new CUDA processes fail until a reboot or a module
    reload. No permission means /dev/nvidia* is not accessible to this user. A host without NVIDIA GPUs passes.
    """
    nv = ctx.facts.nvidia
    if not gpus(ctx) and nv.nvml != "ok":
        return Finding(status="pass", actual=f"no NVIDIA GPU (NVML: {nv.nvml})", expected="ok on GPU hosts")
    err = f": {nv.nvml_error}" if nv.nvml_error else ""
    lost = [m for m in ctx.facts.missing if re.match(r"gpu\d+: ", m) and "lost" in m.lower()]
    if lost:
        return Finding(status="fail", actual="; ".join(lost), expected="every GPU answers",
                       fix="the GPU fell off the bus (Xid 79): stop its jobs, collect nvidia-bug-report.sh, reboot; "
                       "if it repeats, check seating/power and RMA")
    if nv.nvml == "ok":
        return Finding(status="pass", actual=f"ok, driver {nv.driver or '?'}", expected="ok")
    if nv.nvml == "skipped":
        return Finding(status="skip", actual="NVML not queried (captured host, --root)", expected="ok")
    if nv.nvml == "version_mismatch":
        return Finding(status="fail", actual=f"driver/library version mismatch{err}", expected="ok",
                       fix="reboot (the driver was upgraded under the running kernel module), or stop all GPU "
                       "processes and: rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && modprobe nvidia && "
                       "modprobe nvidia_uvm")
    if nv.nvml == "driver_not_loaded":
        return Finding(status="fail", actual=f"NVIDIA driver not loaded{err}", expected="ok",
                       fix="modprobe nvidia   # if installed; else:\n"
                       + driver_install(ctx))
    if nv.nvml == "no_permission":
        return Finding(status="warn", actual=f"no permission{err}", expected="ok",
                       fix="ls -l /dev/nvidia*   # the device files must be readable by this user (mode 0666 or the "
                       "video group: usermod -aG video $USER)")
    if nv.nvml == "library_not_found":
        return Finding(status="warn", actual=f"NVML library not found{err}", expected="ok",
                       fix="pip install nvidia-ml-py   # and check that libnvidia-ml.so.1 exists: ldconfig -p | grep "
                       "nvidia-ml")
    return Finding(status="warn", actual=f"{nv.nvml}{err}", expected="ok",
                   fix="nvidia-smi   # shows what the driver says")


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
    compatibility, where PTX JIT of newer code and some new APIs fail (warn). CUDA 10.x and older have no
    minor-version compatibility: below the toolkit's driver they fail.
    """
    t, nv = ctx.facts.torch, ctx.facts.nvidia
    if t is None or not t.cuda:
        return Finding(status="skip", actual="torch is not a CUDA build (see nvidia.torch_build)", expected="")
    if not nv.driver:
        return Finding(status="skip", actual="driver version unknown (see nvidia.nvml)", expected="")
    cuda = version_tuple(t.cuda)[:2]
    drv = version_tuple(nv.driver)
    major_min = CUDA_MINOR_COMPAT_DRIVER.get(cuda[0]) if cuda else None
    exact = CUDA_TOOLKIT_DRIVER.get(cuda) if len(cuda) == 2 else None
    actual = f"driver {nv.driver}, torch built with CUDA {t.cuda}"
    if major_min is None and exact is None:
        return Finding(status="skip", actual=f"{actual}: CUDA {t.cuda} is not in the table", expected="")
    upgrade = f"upgrade the NVIDIA driver (to >= {exact or major_min}):\n{driver_install(ctx)}"
    at_toolkit = exact is not None and drv >= version_tuple(exact)  # 11.0's own driver is below the 11.x minimum
    if major_min and drv < version_tuple(major_min) and not at_toolkit:
        return Finding(status="fail", actual=actual, expected=f">= {major_min} (CUDA {cuda[0]}.x)", fix=upgrade)
    if exact and drv < version_tuple(exact):
        fix = f"{upgrade}\nor install a torch built for CUDA {valid(DRIVER_VERSION, nv.cuda_driver) or 'your driver'}"
        if major_min is None:  # no minor-version compatibility before CUDA 11: below its driver CUDA does not start
            return Finding(status="fail", actual=actual, expected=f">= {exact} (CUDA {t.cuda})", fix=fix)
        return Finding(status="warn", actual=actual + " (minor-version compatibility only)",
                       expected=f">= {exact} (CUDA {t.cuda})", fix=fix)
    return Finding(status="pass", actual=actual, expected=f">= {exact or major_min}")


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
    t = ctx.facts.torch
    if t is None or not t.version:
        return Finding(status="skip", actual="no torch found (see torch.version)", expected="a CUDA build")
    py = shell_path(t.python)
    if not t.cuda:
        idx = _torch_index(ctx)
        note = "" if py else "   # with your training interpreter"
        return Finding(status="fail",
                       actual=f"torch {t.version} is a CPU-only build on a host with {len(gpus(ctx))} GPU(s)",
                       expected="a CUDA build",
                       fix=f"{py or 'python3'} -m pip install --force-reinstall torch --index-url "
                       f"https://download.pytorch.org/whl/{idx}{note}")
    if not t.cuda_available:
        run = f"{py} -c 'import torch; torch.zeros(1).cuda()'" if py else \
            "running `import torch; torch.zeros(1).cuda()` in your training interpreter"
        return Finding(status="fail",
                       actual=f"torch {t.version} (CUDA {t.cuda}) cannot use the GPUs: cuda.is_available() False",
                       expected="cuda available",
                       fix="see nvidia.driver, nvidia.nvml and env.cuda_visible_devices; then "
                       f"{run} shows the CUDA error")
    return Finding(status="pass", actual=f"torch {t.version}, CUDA {t.cuda}, {t.device_count} device(s)",
                   expected="a CUDA build")


def check_cudnn_nccl(ctx: Context) -> Finding:
    """The cuDNN/NCCL that torch loaded are its own, not an older system copy picked up through LD_LIBRARY_PATH.

    pip wheels of torch bring their own cuDNN and NCCL (nvidia-cudnn-cu12, nvidia-nccl-cu12). A system
    /usr/local/cuda/lib64 placed first in LD_LIBRARY_PATH can make torch (or an extension) load a different
    version: "undefined symbol" errors or NCCL hangs. Different versions alone are normal; a difference while a
    CUDA library directory is on LD_LIBRARY_PATH is the warning.
    """
    t, nv = ctx.facts.torch, ctx.facts.nvidia
    if t is None or not t.cuda:
        return Finding(status="skip", actual="torch is not a CUDA build", expected="")
    parts, differ = [], []
    for lib, mine, system in (("cuDNN", t.cudnn, nv.cudnn), ("NCCL", t.nccl, nv.nccl)):
        parts.append(f"{lib} torch {mine or '?'} / system {system or 'none'}")
        if mine and system and version_tuple(str(mine))[:2] != version_tuple(str(system))[:2]:
            differ.append(lib)
    ld = [p for p in ctx.env.get("LD_LIBRARY_PATH", "").split(":") if p and "cuda" in p.lower()]
    if differ and ld:
        return Finding(status="warn", actual="; ".join(parts) + f"; LD_LIBRARY_PATH has {':'.join(ld)}",
                       expected="torch's own libraries first",
                       fix="remove the CUDA lib dirs from LD_LIBRARY_PATH for training (torch finds its own), or "
                       "install matching system " + " and ".join(differ))
    return Finding(status="pass", actual="; ".join(parts), expected="torch's own libraries")


def check_fabric_manager(ctx: Context) -> Finding:
    """NVSwitch hosts (HGX/DGX A100/H100/H200/B200) run NVIDIA Fabric Manager.

    Without nvidia-fabricmanager the NVSwitch fabric is not set up and every CUDA program fails with
    "cudaErrorSystemNotReady" (CUDA error 802: system not yet initialized; pytorch/pytorch#35710). Its version
    must match the driver's.
    """
    nv = ctx.facts.nvidia
    if nv.nvswitches == 0:
        return Finding(status="pass", actual="no NVSwitch: not needed", expected="running on NVSwitch hosts")
    if nv.fabric_manager_running:
        return Finding(status="pass", actual=f"running ({nv.nvswitches} NVSwitches)", expected="running")
    if nv.fabric_manager_running is None and nv.fabric_manager_installed:
        return Finding(status="skip", actual=f"{nv.nvswitches} NVSwitches; service state unknown on a captured host",
                       expected="running")
    driver = valid(DRIVER_VERSION, nv.driver)
    start = "systemctl enable --now nvidia-fabricmanager"
    if nv.fabric_manager_installed:
        return Finding(status="fail", actual=f"installed but not running ({nv.nvswitches} NVSwitches)",
                       expected="running", fix=start)
    if driver is None:
        return Finding(status="fail", actual=f"not installed ({nv.nvswitches} NVSwitches)", expected="running",
                       fix="install nvidia-fabricmanager-<major> (Debian/Ubuntu) or nvidia-fabric-manager (RHEL "
                       f"family) for the driver's major version (nvidia-smi shows it)\n{start}")
    major = driver.split(".")[0]
    pkg = install(ctx, f"nvidia-fabricmanager-{major}", f"nvidia-fabric-manager-{major}*")
    return Finding(status="fail", actual=f"not installed ({nv.nvswitches} NVSwitches)", expected="running",
                   fix=f"{pkg}   # same version as the driver\n{start}")

