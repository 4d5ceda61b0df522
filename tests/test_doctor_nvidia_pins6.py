"""NVIDIA checks at every boundary of their tables (issue 21): each CUDA release's minimum driver exactly and one
step below, the minor-version-compatibility floor of each major, the wheel index each driver can run, and the NVML
states word for word (hosttune.doctor.checks.nvidia)."""

from typing import Tuple

import pytest
from _doctorhelp import R, cpu_host, gpu_host, run_one

from hosttune.doctor.checks import nvidia as nvidia_checks
from hosttune.facts import Distro, Nvidia, TorchInstall

# NVIDIA's CUDA Toolkit Release Notes, Table 3 (GA driver per toolkit), as the check must hold it.
TOOLKIT_DRIVER = {
    "10.2": "440.33", "11.0": "450.51.05", "11.1": "455.23", "11.2": "460.27.03", "11.3": "465.19.01",
    "11.4": "470.42.01", "11.5": "495.29.05", "11.6": "510.39.01", "11.7": "515.43.04", "11.8": "520.61.05",
    "12.0": "525.60.13", "12.1": "530.30.02", "12.2": "535.54.03", "12.3": "545.23.06", "12.4": "550.54.14",
    "12.5": "555.42.02", "12.6": "560.28.03", "12.8": "570.26", "12.9": "575.51.03", "13.0": "580.65.06",
}
MINOR_COMPAT = {"11": "450.80.02", "12": "525.60.13", "13": "580"}


def _below(version: str) -> str:
    """The version just below: the last component one less (550.54.14 -> 550.54.13, 580 -> 579)."""
    parts = [int(p) for p in version.split(".")]
    parts[-1] -= 1
    return ".".join(str(p) for p in parts)


def _host(cuda: str, driver: str) -> object:
    return gpu_host(torch=TorchInstall(python="/opt/v/bin/python", version="2.6.0", cuda=cuda, cuda_available=True,
                                       device_count=2),
                    nvidia=Nvidia(driver=driver, cuda_driver="12.4", nvml="ok"),
                    distro=Distro(id="rocky", version="9", family="rhel"))


@pytest.mark.parametrize("cuda", sorted(TOOLKIT_DRIVER))
def test_each_cuda_release_passes_at_its_driver_and_not_one_below(cuda: str) -> None:
    need = TOOLKIT_DRIVER[cuda]
    major = MINOR_COMPAT.get(cuda.split(".")[0])
    f = run_one("nvidia.driver_cuda", _host(cuda, need))
    assert (f.status, f.actual, f.expected) == ("pass", f"driver {need}, torch built with CUDA {cuda}", f">= {need}")
    low = _below(need)
    f = run_one("nvidia.driver_cuda", _host(cuda, low))
    if major is None:  # CUDA 10: no minor-version compatibility
        assert (f.status, f.expected) == ("fail", f">= {need} (CUDA {cuda})")
    elif tuple(int(p) for p in low.split(".")) < tuple(int(p) for p in major.split(".")):
        assert (f.status, f.expected) == ("fail", f">= {major} (CUDA {cuda.split('.')[0]}.x)")
    else:
        assert (f.status, f.expected) == ("warn", f">= {need} (CUDA {cuda})")
        assert f.actual == f"driver {low}, torch built with CUDA {cuda} (minor-version compatibility only)"
        assert f.fix.endswith("\nor install a torch built for CUDA 12.4")
        assert f.fix.startswith(f"upgrade the NVIDIA driver (to >= {need}):\n")


@pytest.mark.parametrize("major,floor", sorted(MINOR_COMPAT.items()))
def test_each_major_fails_below_its_minor_compat_floor(major: str, floor: str) -> None:
    cuda = {"11": "11.9", "12": "12.7", "13": "13.7"}[major]  # not in the GA table: only the major's floor applies
    f = run_one("nvidia.driver_cuda", _host(cuda, floor))
    assert (f.status, f.expected) == ("pass", f">= {floor}")
    f = run_one("nvidia.driver_cuda", _host(cuda, _below(floor)))
    assert (f.status, f.expected) == ("fail", f">= {floor} (CUDA {major}.x)")
    assert f.fix.startswith(f"upgrade the NVIDIA driver (to >= {floor}):\ndnf config-manager --add-repo ")


def test_driver_cuda_skips() -> None:
    f = run_one("nvidia.driver_cuda", _host("9.2", "400.1"))
    assert (f.status, f.actual) == ("skip", "driver 400.1, torch built with CUDA 9.2: CUDA 9.2 is not in the table")
    f = run_one("nvidia.driver_cuda", _host("", "550.1"))
    assert (f.status, f.actual) == ("skip", "torch is not a CUDA build (see nvidia.torch_build)")
    f = run_one("nvidia.driver_cuda", R(_host("12.4", "550.1"), nvidia=Nvidia(nvml="ok")))  # type: ignore[arg-type]
    assert (f.status, f.actual) == ("skip", "driver version unknown (see nvidia.nvml)")
    f = run_one("nvidia.driver_cuda", R(_host("12.4", "545.1"),  # type: ignore[arg-type]
                                        nvidia=Nvidia(driver="545.1", cuda_driver="12.3;x", nvml="ok")))
    assert f.fix.endswith("\nor install a torch built for CUDA your driver")


@pytest.mark.parametrize("cuda_driver,index", [
    ("13.0", "cu130"), ("13.1", "cu130"), ("12.9", "cu129"), ("12.8", "cu128"), ("12.7", "cu126"),
    ("12.6", "cu126"), ("12.5", "cu124"), ("12.4", "cu124"), ("12.2", "cu121"), ("12.1", "cu121"),
    ("12.0", "cu118"), ("11.8", "cu118"), ("11.7", "cu126"), (None, "cu126"), ("x", "cu126"),
])
def test_cpu_torch_gets_the_newest_index_its_driver_runs(cuda_driver: str, index: str) -> None:
    facts = gpu_host(torch=TorchInstall(python="/opt/v/bin/python", version="2.6.0+cpu"),
                     nvidia=Nvidia(driver="550.54.15", cuda_driver=cuda_driver, nvml="ok"))
    f = run_one("nvidia.torch_build", facts)
    assert (f.status, f.actual, f.expected) == ("fail", "torch 2.6.0+cpu is a CPU-only build on a host with 2 GPU(s)",
                                                "a CUDA build")
    assert f.fix == ("/opt/v/bin/python -m pip install --force-reinstall torch --index-url "
                     f"https://download.pytorch.org/whl/{index}")


def test_torch_build_other_states() -> None:
    t = TorchInstall(python="rel/python", version="2.6.0", cuda="12.4", cuda_available=False)
    f = run_one("nvidia.torch_build", gpu_host(torch=t))
    assert (f.status, f.actual) == ("fail", "torch 2.6.0 (CUDA 12.4) cannot use the GPUs: cuda.is_available() False")
    assert f.fix == ("see nvidia.driver, nvidia.nvml and env.cuda_visible_devices; then running `import torch; "
                     "torch.zeros(1).cuda()` in your training interpreter shows the CUDA error")
    f = run_one("nvidia.torch_build", gpu_host(torch=R(t, python="/v/python")))
    assert f.fix.endswith("then /v/python -c 'import torch; torch.zeros(1).cuda()' shows the CUDA error")
    f = run_one("nvidia.torch_build", gpu_host(torch=R(t, cuda=None, python="rel/py")))
    assert f.fix.endswith("whl/cu124   # with your training interpreter")
    assert f.fix.startswith("python3 -m pip install")
    f = run_one("nvidia.torch_build", gpu_host(torch=R(t, cuda_available=True, device_count=3)))
    assert (f.status, f.actual) == ("pass", "torch 2.6.0, CUDA 12.4, 3 device(s)")
    f = run_one("nvidia.torch_build", gpu_host(torch=TorchInstall(python="/p")))
    assert (f.status, f.actual) == ("skip", "no torch found (see torch.version)")


@pytest.mark.parametrize("nvml,err,status,actual,fix_start", [
    ("version_mismatch", "Driver/library version mismatch", "fail",
     "driver/library version mismatch: Driver/library version mismatch", "reboot (the driver was upgraded"),
    ("driver_not_loaded", None, "fail", "NVIDIA driver not loaded", "modprobe nvidia   # if installed; else:\n"),
    ("no_permission", "denied", "warn", "no permission: denied", "ls -l /dev/nvidia*"),
    ("library_not_found", None, "warn", "NVML library not found", "pip install nvidia-ml-py"),
    ("error", "boom", "warn", "error: boom", "nvidia-smi   # shows what the driver says"),
    ("skipped", None, "skip", "NVML not queried (captured host, --root)", ""),
])
def test_nvml_states(nvml: str, err: object, status: str, actual: str, fix_start: str) -> None:
    f = run_one("nvidia.nvml", gpu_host(nvidia=Nvidia(driver=None, nvml=nvml, nvml_error=err)))  # type: ignore[arg-type]
    assert (f.status, f.actual) == (status, actual)
    assert f.fix.startswith(fix_start) and (status != "skip" or f.fix == "")


def test_nvml_lost_gpu_and_cpu_hosts() -> None:
    facts = gpu_host(missing=("gpu1: GPU is lost (Xid 79)", "gpu: something lost", "gpu0: fine"))
    f = run_one("nvidia.nvml", facts)
    assert (f.status, f.actual, f.expected) == ("fail", "gpu1: GPU is lost (Xid 79)", "every GPU answers")
    assert f.fix.startswith("the GPU fell off the bus (Xid 79)")
    f = run_one("nvidia.nvml", cpu_host(nvidia=Nvidia(nvml="library_not_found")))
    assert (f.status, f.actual) == ("pass", "no NVIDIA GPU (NVML: library_not_found)")
    f = run_one("nvidia.nvml", gpu_host(nvidia=Nvidia(nvml="ok")))
    assert (f.status, f.actual) == ("pass", "ok, driver ?")


def _nomod(facts: object, **kw: object) -> object:
    return R(facts, kernel=R(facts.kernel, modules=()), **kw)  # type: ignore[attr-defined]


def test_driver_loaded_from_any_of_three_signs() -> None:
    base = _nomod(gpu_host(), nvidia=Nvidia(nvml="skipped"))
    f = run_one("nvidia.driver", base)  # type: ignore[arg-type]
    assert (f.status, f.actual) == ("fail", "2 NVIDIA GPU(s) on PCI, nvidia module not loaded")
    for nv, actual in ((Nvidia(nvml="version_mismatch"), "2 GPU(s), driver loaded"),
                       (Nvidia(nvml="ok"), "2 GPU(s), driver loaded"),
                       (Nvidia(driver="550.1", nvml="error"), "2 GPU(s), driver 550.1")):
        f = run_one("nvidia.driver", R(base, nvidia=nv))  # type: ignore[arg-type]
        assert (f.status, f.actual) == ("pass", actual)
    f = run_one("nvidia.driver", R(base, missing=("kernel.modules: /proc/modules not found",)))  # type: ignore
    assert (f.status, f.actual) == ("skip", "2 GPU(s); loaded modules not readable")
    f = run_one("nvidia.driver", R(base, missing=("kernel.modules: x",), nvidia=Nvidia(nvml="error")))  # type: ignore
    assert f.status == "fail"
    f = run_one("nvidia.driver", cpu_host())
    assert (f.status, f.actual) == ("pass", "no NVIDIA GPU on the PCI bus (CPU host)")


@pytest.mark.parametrize("family,rebuild", [
    ("debian", "update-initramfs -u"), ("rhel", "dracut --force"),
    ("unknown", "update-initramfs -u   # or dracut --force"),
])
def test_nouveau_fix_per_family(family: str, rebuild: str) -> None:
    facts = gpu_host(distro=Distro(id="x", version="1", family=family))
    facts = R(facts, kernel=R(facts.kernel, modules=("nouveau",)))
    f = run_one("nvidia.nouveau", facts)
    assert (f.status, f.actual) == ("fail", "nouveau loaded")
    assert f.fix == ("printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > "
                     f"/etc/modprobe.d/blacklist-nouveau.conf && {rebuild} && reboot")


def test_nouveau_unreadable_modules() -> None:
    f = run_one("nvidia.nouveau", _nomod(gpu_host(), missing=("kernel.modules: gone",)))  # type: ignore[arg-type]
    assert (f.status, f.actual) == ("skip", "loaded modules not readable (kernel.modules: gone)")
    f = run_one("nvidia.nouveau", gpu_host(missing=("kernel.modules: gone",)))
    assert (f.status, f.actual) == ("pass", "not loaded")


def _libs(cudnn: Tuple[str, str], nccl: Tuple[str, str], ld: str) -> object:
    t = TorchInstall(python="/p", version="2.6.0", cuda="12.4", cudnn=cudnn[0], nccl=nccl[0])
    return run_one("nvidia.cudnn_nccl", gpu_host(torch=t, nvidia=Nvidia(cudnn=cudnn[1], nccl=nccl[1], nvml="ok")),
                   env={"LD_LIBRARY_PATH": ld})


def test_cudnn_nccl_differ_only_matters_with_cuda_on_ld_library_path() -> None:
    f = _libs(("9.1.0", "8.9.7"), ("2.21.5", "2.21.3"), "/usr/local/CUDA/lib64::/opt/x")
    assert (f.status, f.actual) == ("warn", "cuDNN torch 9.1.0 / system 8.9.7; NCCL torch 2.21.5 / system 2.21.3; "
                                            "LD_LIBRARY_PATH has /usr/local/CUDA/lib64")
    assert f.fix.endswith("or install matching system cuDNN")
    f = _libs(("9.1.0", "8.9.7"), ("2.21.5", "2.18.1"), "/usr/local/cuda/lib64")
    assert f.fix.endswith("or install matching system cuDNN and NCCL")
    f = _libs(("9.1.0", "8.9.7"), ("2.21.5", "2.18.1"), "/opt/lib")
    assert (f.status, f.expected) == ("pass", "torch's own libraries")
    f = _libs(("9.1.0", None), (None, "2.18.1"), "/usr/local/cuda/lib64")  # type: ignore[arg-type]
    assert (f.status, f.actual) == ("pass", "cuDNN torch 9.1.0 / system none; NCCL torch ? / system 2.18.1")


def test_fabric_manager_states() -> None:
    def fm(**kw: object) -> object:
        return run_one("nvidia.fabric_manager", gpu_host(nvidia=Nvidia(nvml="ok", **kw)))  # type: ignore[arg-type]

    assert (fm(nvswitches=4, fabric_manager_running=True).actual) == "running (4 NVSwitches)"
    f = fm(nvswitches=4, fabric_manager_installed=True, fabric_manager_running=None)
    assert (f.status, f.actual) == ("skip", "4 NVSwitches; service state unknown on a captured host")
    f = fm(nvswitches=4, fabric_manager_installed=True, fabric_manager_running=False)
    assert (f.status, f.actual, f.fix) == ("fail", "installed but not running (4 NVSwitches)",
                                           "systemctl enable --now nvidia-fabricmanager")
    f = fm(nvswitches=6, driver="550.54.15", fabric_manager_running=None)
    assert (f.status, f.actual) == ("fail", "not installed (6 NVSwitches)")
    assert f.fix == ("apt-get install -y nvidia-fabricmanager-550   # same version as the driver\n"
                     "systemctl enable --now nvidia-fabricmanager")
    f = fm(nvswitches=6, driver=None)
    assert f.fix.startswith("install nvidia-fabricmanager-<major> (Debian/Ubuntu)")
    f = fm(nvswitches=0, fabric_manager_running=False)
    assert (f.status, f.actual) == ("pass", "no NVSwitch: not needed")
    assert nvidia_checks.CUDA_MINOR_COMPAT_DRIVER == {int(k): v for k, v in MINOR_COMPAT.items()}


def test_one_nvswitch_is_an_nvswitch_host() -> None:
    f = run_one("nvidia.fabric_manager", gpu_host(nvidia=Nvidia(nvml="ok", nvswitches=1, fabric_manager_running=True)))
    assert (f.status, f.actual, f.expected) == ("pass", "running (1 NVSwitches)", "running")
    f = run_one("nvidia.fabric_manager", gpu_host(nvidia=Nvidia(nvml="ok", nvswitches=1, driver="535.1")))
    assert (f.status, f.actual) == ("fail", "not installed (1 NVSwitches)")
