"""doctor's fix commands (hosttune/doctor/fixes.py): a value that came from the host (os-release, a driver version,
an interpreter path, an lspci device name, a planned thread count) reaches a fix only after it matched a strict
pattern, and shell-quoted; a value that fails gets a fix without it (issue 11, item 12)."""

import json
import shlex
import subprocess
from pathlib import Path
from typing import Callable, Optional

import pytest
from _doctorhelp import cpu_host, gpu_host, run_one, synthetic_root
from conftest import run_cli

from hosttune import doctor
from hosttune.doctor.checks import cpu as doctor_cpu
from hosttune.facts import Allocators, Distro, Facts, Kernel, Nvidia, TorchInstall

INJECTIONS = [
    "12; touch {marker}",
    "$(touch {marker})",
    "`touch {marker}`",
    "9\ntouch {marker}",
    "9 && touch {marker} #",
]


def planted_rhel_root(tmp: Path, version_id: str) -> Path:
    """A captured RHEL host whose os-release VERSION_ID was written by someone else, with enough wrong on it that
    doctor prints its distro-aware fixes: no jemalloc (EPEL), no numactl, nouveau loaded (driver install), an
    NVSwitch without Fabric Manager."""
    release = 'ID=rhel\nVERSION_ID="' + version_id.replace('"', '\\"') + '"\nNAME="Red Hat Enterprise Linux"\n'
    return synthetic_root(tmp, {
        "etc/os-release": release,
        "etc/debian_version": None,
        "proc/modules": "nouveau 1 0 - Live 0x0\n",
        "proc/sys/kernel/numa_balancing": "1\n",
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz intel_iommu=on\n",
        "sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
        "sys/bus/pci/devices/0000:3a:00.0/vendor": "0x10de\n",
        "sys/bus/pci/devices/0000:3a:00.0/class": "0x068000\n",
        "usr/lib/x86_64-linux-gnu/libjemalloc.so.2": None,
        "usr/bin/numactl": None,
    })


@pytest.mark.parametrize("payload", INJECTIONS)
def test_fix_commands_never_carry_an_injected_version_id(tmp_path: Path, payload: str) -> None:
    marker = tmp_path / "pwned"
    root = planted_rhel_root(tmp_path / "host", payload.format(marker=marker))
    done = run_cli(["doctor", "--root", str(root), "--json"])  # a tree on disk: in-process (issue 21)
    data = json.loads(done.stdout)
    fixes = {f["id"]: f["fix"] for f in data["findings"] if f["fix"]}
    # the hosts's distro-aware fixes are there (the EPEL and driver ones are the ones that used VERSION_ID) ...
    assert {"tools.allocator", "nvidia.driver", "nvidia.fabric_manager"} <= set(fixes), fixes
    assert "dnf install -y jemalloc" in fixes["tools.allocator"]
    for cid, fix in fixes.items():
        # ... and no part of the planted value is in any of them
        assert "touch" not in fix and str(marker) not in fix, (cid, fix)
    for cid in ("tools.allocator", "tools.numactl", "nvidia.driver", "nvidia.nouveau", "nvidia.iommu"):
        # the command fixes still parse as shell: nothing planted left a dangling quote or operator
        check = subprocess.run(["bash", "-n", "-c", fixes[cid]], capture_output=True, text=True, cwd=tmp_path)
        assert check.returncode == 0, (cid, fixes[cid], check.stderr)
    assert not marker.exists()


def test_a_good_version_id_still_names_the_release(tmp_path: Path) -> None:
    done = run_cli(["doctor", "--root", str(planted_rhel_root(tmp_path / "host", "9.4")), "--json"])
    fixes = {f["id"]: f["fix"] for f in json.loads(done.stdout)["findings"]}
    assert "codeready-builder-for-rhel-9-$(arch)-rpms" in fixes["tools.allocator"]
    assert "epel-release-latest-9.noarch.rpm" in fixes["tools.allocator"]
    assert "cuda/repos/rhel9/" in fixes["nvidia.driver"]


def test_an_invalid_version_id_gets_a_fix_that_asks_rpm() -> None:
    f = run_one("tools.allocator", cpu_host(allocators=Allocators(), distro=Distro(
        id="rhel", version="9; reboot", family="rhel")))
    assert "reboot" not in f.fix and "epel-release-latest-$(rpm -E %rhel).noarch.rpm" in f.fix
    d = run_one("nvidia.driver", gpu_host(kernel=Kernel(modules=("nvme",)), nvidia=Nvidia(),
                                          distro=Distro(id="rhel", version="9; reboot", family="rhel")))
    assert d.status == "fail" and "; reboot" not in d.fix and "nvidia.com" in d.fix


@pytest.mark.parametrize("python_path", [
    "/nonexistent dir/$(touch {marker})/bin/python",
    "/nonexistent/py; touch {marker}; :",
    "/nonexistent/`touch {marker}`/python",
])
@pytest.mark.parametrize("check_id,facts", [
    ("torch.version", lambda py: cpu_host(torch=TorchInstall(python=py, version="2.4.0", in_venv=True))),
    ("torch.version", lambda py: cpu_host(torch=TorchInstall(python=py, error="ImportError", in_venv=True))),
    ("nvidia.torch_build", lambda py: gpu_host(torch=TorchInstall(python=py, version="2.6.0+cpu", in_venv=True))),
    ("nvidia.torch_build", lambda py: gpu_host(torch=TorchInstall(python=py, version="2.6.0", cuda="12.4",
                                                                  cuda_available=False, in_venv=True))),
])
def test_an_interpreter_path_in_a_fix_is_one_quoted_word(tmp_path: Path, python_path: str, check_id: str,
                                                         facts: Callable[[str], Facts]) -> None:
    """Pasting the fix runs the interpreter at that path (here: one that does not exist), nothing else."""
    marker = tmp_path / "pwned"
    py = python_path.format(marker=marker)
    f = run_one(check_id, facts(py))
    assert f.status in ("warn", "fail")
    line = f.fix.split("then ")[-1].split("\n")[0]
    assert shlex.split(line, comments=True)[0] == py, f.fix
    shell = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path,
                           env={"PATH": "/usr/bin:/bin"}, timeout=30)
    assert shell.returncode == 127 and not marker.exists(), shell.stderr


def test_an_interpreter_path_with_a_newline_is_left_out_of_the_fix() -> None:
    f = run_one("torch.version", cpu_host(torch=TorchInstall(python="/opt/x\nreboot", version="2.4.0")))
    assert "reboot" not in f.fix and f.fix.startswith("python3 -m pip install --upgrade 'torch>=2.6'")


def test_lspci_device_names_reach_setpci_only_when_they_are_addresses() -> None:
    class Lspci(doctor.Live):
        def lspci_vvv(self) -> Optional[str]:
            return ("0000:00:01.0 PCI bridge: Intel\n\tACSCtl:\tSrcValid+ ReqRedir+\n"
                    "$(reboot) PCI bridge: planted\n\tACSCtl:\tSrcValid+ ReqRedir+\n")

    f = run_one("nvidia.acs", gpu_host(), probe=Lspci())
    assert f.status == "warn" and "setpci -s 0000:00:01.0 ECAP_ACS+0x6.w=0000" in f.fix
    assert "reboot" not in f.fix.replace("after reboot", "").replace("at reboot", "")


def test_a_planned_thread_count_reaches_the_fix_only_as_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor_cpu, "_planned_threads", lambda ctx: ("4; reboot", "/etc/hosttune/profile.yaml"))
    f = run_one("cpu.omp_threads", cpu_host(), env={"OMP_NUM_THREADS": "2"})
    assert f.status == "warn" and f.fix == "unset OMP_NUM_THREADS"
    monkeypatch.setattr(doctor_cpu, "_planned_threads", lambda ctx: ("4", "/etc/hosttune/profile.yaml"))
    assert run_one("cpu.omp_threads", cpu_host(), env={"OMP_NUM_THREADS": "2"}).fix.endswith("OMP_NUM_THREADS=4")


def test_unknown_driver_version_gives_a_fabric_manager_fix_without_it() -> None:
    f = run_one("nvidia.fabric_manager", gpu_host(nvidia=Nvidia(driver="550$(reboot)", nvswitches=4,
                                                                fabric_manager_running=False)))
    assert f.status == "fail" and "reboot" not in f.fix and "systemctl enable --now nvidia-fabricmanager" in f.fix
