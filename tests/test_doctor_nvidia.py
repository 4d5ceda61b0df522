"""doctor's nvidia checks (hosttune/doctor/checks/nvidia.py, gpu.py and topology.py): the driver, NVML, torch's
CUDA build, GPU health through the fake NVML (persistence, ECC, retirement, PCIe under load, clock events,
temperature), Fabric Manager, NUMA locality, IOMMU and ACS."""

import json
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import pytest
from _doctorhelp import (
    R,
    cpu_host,
    dgpu,
    doctor_json,
    gpu0,
    gpu_facts_from,
    gpu_host,
    kern,
    nv,
    run_one,
    same,
    synthetic_root,
    table_test,
    tor,
)
from conftest import a100, run_cli

from hosttune import doctor
from hosttune.detect import collect
from hosttune.facts import Distro, Facts, Gpu, Kernel, Nvidia, TorchInstall
from hosttune.profile import Active

# (check id, host builder, change, context kwargs, expected status, text that must be in actual or fix)
CASES = [
    ("nvidia.driver", cpu_host, same, {}, "pass", "no NVIDIA GPU"),
    ("nvidia.driver", gpu_host, same, {}, "pass", "550.54.15"),
    ("nvidia.driver", gpu_host, lambda f: R(f, gpus=(Gpu(0, pci_bus_id="0000:3b:00.0", pci_class="0x030200"),),
                                            nvidia=Nvidia(nvml="driver_not_loaded"), kernel=Kernel()), {}, "fail",
     "nvidia-driver"),
    ("nvidia.nouveau", gpu_host, same, {}, "pass", "not loaded"),
    ("nvidia.nouveau", gpu_host, kern(modules=("nouveau",)), {}, "fail", "blacklist nouveau"),
    ("nvidia.nouveau", cpu_host, lambda f: R(kern(modules=("nouveau",))(f), distro=Distro(id="rhel", version="9",
                                                                                             family="rhel")), {},
     "fail", "dracut --force"),
    ("nvidia.nvml", cpu_host, same, {}, "pass", "no NVIDIA GPU"),
    ("nvidia.nvml", gpu_host, same, {}, "pass", "ok"),
    ("nvidia.nvml", gpu_host, nv(nvml="version_mismatch"), {}, "fail", "reboot"),
    ("nvidia.nvml", gpu_host, nv(nvml="no_permission"), {}, "warn", "/dev/nvidia"),
    ("nvidia.nvml", gpu_host, lambda f: R(f, missing=("gpu1: GPU 1: GPU is lost",)), {}, "fail", "fell off"),
    ("nvidia.driver_cuda", gpu_host, same, {}, "pass", "550.54.15"),
    ("nvidia.driver_cuda", gpu_host, nv(driver="535.104.05"), {}, "warn", "minor-version compatibility"),
    ("nvidia.driver_cuda", gpu_host, nv(driver="470.82.01"), {}, "fail", ">= 525.60.13"),
    ("nvidia.driver_cuda", gpu_host, lambda f: tor(cuda="13.0")(nv(driver="575.51.03")(f)), {}, "fail", ">= 580"),
    ("nvidia.driver_cuda", gpu_host, lambda f: tor(cuda="12.8")(nv(driver="570.86.15")(f)), {}, "pass", ""),
    ("nvidia.torch_build", cpu_host, same, {}, "skip", "no NVIDIA GPU"),
    ("nvidia.torch_build", gpu_host, same, {}, "pass", "CUDA 12.4"),
    ("nvidia.torch_build", gpu_host, tor(cuda=None, version="2.6.0+cpu"), {}, "fail",
     "--index-url https://download.pytorch.org/whl/cu124"),
    ("nvidia.torch_build", gpu_host, tor(cuda_available=False), {}, "fail", "cannot use the GPUs"),
    ("nvidia.cudnn_nccl", gpu_host, same, {}, "pass", "cuDNN torch 9.1.0"),
    ("nvidia.cudnn_nccl", gpu_host, nv(cudnn="8.9.7"), {}, "pass", "system 8.9.7"),
    ("nvidia.cudnn_nccl", gpu_host, nv(cudnn="8.9.7"), {"env": {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}},
     "warn", "LD_LIBRARY_PATH"),
    ("nvidia.persistence", gpu_host, same, {}, "pass", "on"),
    ("nvidia.persistence", gpu_host, gpu0(persistence_mode=False), {}, "warn", "nvidia-smi -pm 1"),
    ("nvidia.persistence", gpu_host, lambda f: R(f, gpus=tuple(R(g, persistence_mode=None) for g in f.gpus)), {},
     "skip", "NotSupported"),
    ("nvidia.ecc_mode", gpu_host, same, {}, "pass", "on"),
    ("nvidia.ecc_mode", gpu_host, gpu0(ecc_enabled=False, ecc_pending=False), {}, "warn", "nvidia-smi -i 0 -e 1"),
    ("nvidia.ecc_mode", gpu_host, gpu0(ecc_enabled=False, ecc_pending=True), {}, "warn", "pending"),
    ("nvidia.ecc_mode", gpu_host, lambda f: R(f, gpus=tuple(R(g, name="NVIDIA GeForce RTX 4090", ecc_enabled=False)
                                                            for g in f.gpus)), {}, "skip", "no datacenter GPU"),
    ("nvidia.ecc_errors", gpu_host, same, {}, "pass", "0 on 2"),
    ("nvidia.ecc_errors", gpu_host, gpu0(ecc_uncorrected_volatile=3), {}, "fail", "nvidia-smi -r -i 0"),
    ("nvidia.pending_retire", gpu_host, same, {}, "pass", "nothing pending"),
    ("nvidia.pending_retire", gpu_host, gpu0(remapped_rows_pending=True), {}, "warn", "reset"),
    ("nvidia.pending_retire", gpu_host, gpu0(retired_pages_pending=True), {}, "warn", "GPU0"),
    ("nvidia.remap_failure", gpu_host, same, {}, "pass", "no failure"),
    ("nvidia.remap_failure", gpu_host, gpu0(remapped_rows_failure=True), {}, "fail", "RMA"),
    ("nvidia.clock_reasons", gpu_host, same, {}, "pass", "none"),
    ("nvidia.clock_reasons", gpu_host, gpu0(clock_event_reasons=0x20), {}, "warn", "sw_thermal_slowdown"),
    ("nvidia.clock_reasons", gpu_host, gpu0(clock_event_reasons=0x4 | 0x1), {}, "warn", "sw_power_cap"),
    ("nvidia.clock_reasons", gpu_host, gpu0(clock_event_reasons=0x40), {}, "fail", "hw_thermal_slowdown"),
    ("nvidia.temperature", gpu_host, same, {}, "pass", "41 C"),
    ("nvidia.temperature", gpu_host, gpu0(temperature_c=79), {}, "warn", "79 C"),
    ("nvidia.temperature", gpu_host, gpu0(temperature_c=88), {}, "fail", "88 C"),
    ("nvidia.fabric_manager", gpu_host, same, {}, "pass", "no NVSwitch"),
    ("nvidia.fabric_manager", gpu_host, nv(nvswitches=4, fabric_manager_installed=True, fabric_manager_running=True),
     {}, "pass", "running"),
    ("nvidia.fabric_manager", gpu_host, nv(nvswitches=4, fabric_manager_running=False), {}, "fail",
     "apt-get install -y nvidia-fabricmanager-550"),
    ("nvidia.fabric_manager", gpu_host, nv(nvswitches=4, fabric_manager_installed=True, fabric_manager_running=False),
     {}, "fail", "systemctl enable --now nvidia-fabricmanager"),
    ("nvidia.gpu_numa", gpu_host, same, {}, "pass", "GPU1->node1"),
    ("nvidia.gpu_numa", gpu_host, gpu0(numa_node=-1), {}, "warn", "GPU0"),
    ("nvidia.gpu_numa", gpu_host, gpu0(numa_node=-1, local_cpus=tuple(range(8))), {}, "warn", "GPU0"),
    ("nvidia.gpu_numa", gpu_host, gpu0(numa_node=-1, local_cpus=(0, 1, 2, 3)), {}, "pass", ""),
    ("nvidia.iommu", gpu_host, same, {}, "pass", "no IOMMU"),
    ("nvidia.iommu", gpu_host, kern(cmdline="root=/dev/sda1 intel_iommu=on"), {}, "warn", "iommu=pt"),
    ("nvidia.iommu", gpu_host, kern(cmdline="root=/dev/sda1 intel_iommu=on iommu=pt"), {}, "pass", "iommu=pt"),
    ("nvidia.iommu", gpu_host, lambda f: R(kern(cmdline="amd_iommu=on")(f), distro=Distro(id="rocky", version="9",
                                                                                          family="rhel")), {},
     "warn", "grubby --update-kernel=ALL --args='iommu=pt'"),
    ("nvidia.acs", cpu_host, same, {}, "pass", "no peer-to-peer"),
    ("nvidia.acs", gpu_host, same, {"live": False}, "skip", "not in sysfs"),
    ("nvidia.acs", gpu_host, lambda f: R(f, cpu=R(f.cpu, flags=("hypervisor",))), {}, "skip", "virtual machine"),
]


test_check = table_test(CASES)  # one case per row: status, and the text in actual/fix/expected


# ---- live-only checks: the fake NVML, lspci --------------------------------------------------------------------------
def test_pcie_idle_is_not_judged_and_busy_slow_link_warns(fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    facts = gpu_host(gpus=(dgpu(0, pcie_gen=1), dgpu(1, pcie_gen=1)))  # idle GPUs drop to Gen1
    slow = {"gen": 3, "gen_max": 5, "width": 16, "width_max": 16}
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "1B", utilization=[0, 0], pcie=dict(slow, gen=1)),
                           a100(1, "1C", utilization=[3, 1], pcie=dict(slow, gen=1))]})
    f = run_one("nvidia.pcie_link", facts)
    assert f.status == "pass" and "idle: not judged" in f.actual
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "1B", utilization=[97, 40], pcie=slow),
                           a100(1, "1C", utilization=[95, 40], pcie=dict(slow, gen=5))]})
    facts = gpu_host(gpus=(dgpu(0, pcie_gen_max=5), dgpu(1, pcie_gen_max=5)))
    f = run_one("nvidia.pcie_link", facts)
    assert f.status == "warn" and "GPU0" in f.actual and "Gen3 x16 of Gen5 x16 at 97%" in f.actual
    assert "GPU1" not in f.actual
    assert run_one("nvidia.pcie_link", facts, live=False).status == "skip"


def test_pcie_when_nvml_breaks_between_detect_and_check(fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    fake_nvml({"init_error": "LIB_RM_VERSION_MISMATCH"})
    f = run_one("nvidia.pcie_link", gpu_host())
    assert f.status == "skip" and "live NVML sample failed" in f.actual and "mismatch" in f.actual.lower()


def test_acs_parser() -> None:
    text = ("00:01.0 PCI bridge: Intel Corporation Device 09ab\n"
            "\tCapabilities: [220 v1] Access Control Services\n"
            "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
            "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
            "3b:00.0 PCI bridge: PLX Technology PEX 8747\n"
            "\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-\n"
            "5e:00.0 3D controller: NVIDIA Corporation GH100\n"
            "\tCapabilities: <access denied>\n")
    enabled, denied = doctor.parse_acs(text)
    assert enabled == ["00:01.0"] and denied


def test_acs_live_on_this_machine_is_honest() -> None:
    """No lspci here (or not root): a skip with the reason, never a guess."""
    f = run_one("nvidia.acs", gpu_host())
    if f.status == "skip":
        assert "lspci" in f.actual
    else:
        assert f.status in ("pass", "warn")


def test_doctor_runs_lspci_from_the_root_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: Dict[str, Any] = {}

    def fake_run(argv: Any, **kw: Any) -> "subprocess.CompletedProcess[str]":
        seen.update(kw, argv=argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    from hosttune import programs
    from hosttune.detect import hostio

    # lspci need not be installed: found, and resolved by the program gateway, as /usr/bin/lspci
    monkeypatch.setattr(hostio.HostIO, "which", lambda self, name, extra_dirs=(): "/usr/bin/lspci")
    monkeypatch.setattr(programs, "_resolve_first", lambda argv, what, env, check_trust: "/usr/bin/lspci")
    monkeypatch.setattr(subprocess, "run", fake_run)  # programs imports subprocess where it runs a program
    assert doctor.Live().lspci_vvv() == ""
    assert seen["cwd"] == "/" and seen["argv"] == ["/usr/bin/lspci", "-vvv"] and "shell" not in seen


# ---- NVML states through the detector and the fake pynvml ------------------------------------------------------------
@pytest.mark.parametrize("scenario,check_id,status,text", [
    ({"init_error": "DRIVER_NOT_LOADED"}, "nvidia.nvml", "fail", "modprobe nvidia"),
    ({"init_error": "LIB_RM_VERSION_MISMATCH"}, "nvidia.nvml", "fail", "rmmod nvidia_uvm"),
    ({"init_error": "NO_PERMISSION"}, "nvidia.nvml", "warn", "/dev/nvidia"),
    (None, "nvidia.nvml", "warn", "pip install nvidia-ml-py"),  # LibraryNotFound
    ({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "1B", 0, lost=True), a100(1, "1C", 1)]},
     "nvidia.nvml", "fail", "nvidia-bug-report.sh"),  # GpuIsLost
    ({"driver": "550.54.15", "cuda_driver": 12040,
      "devices": [a100(0, "1B", 0, errors={"nvmlDeviceGetPersistenceMode": "NOT_SUPPORTED"}),
                  a100(1, "1C", 1, errors={"nvmlDeviceGetPersistenceMode": "NO_PERMISSION"})]},
     "nvidia.persistence", "skip", "NotSupported"),
    ({"driver": "550.54.15", "cuda_driver": 12040,
      "devices": [a100(0, "1B", 0, ecc=None, remapped_rows=None), a100(1, "1C", 1, ecc=None, remapped_rows=None)]},
     "nvidia.ecc_mode", "skip", "NotSupported"),
    ({"driver": "550.54.15", "cuda_driver": 12040,
      "devices": [a100(0, "1B", 0, remapped_rows=[0, 2, 1, 0]), a100(1, "1C", 1, persistence_mode=0)]},
     "nvidia.pending_retire", "warn", "GPU0"),
])
def test_nvml_states_through_collect(tmp_path: Path, fake_nvml: Callable[[Any], Dict[str, str]], scenario: Any,
                                     check_id: str, status: str, text: str) -> None:
    facts = gpu_facts_from(tmp_path, fake_nvml, scenario)
    f = run_one(check_id, facts, live=False)
    assert f.status == status, (f, facts.nvidia, facts.missing)
    assert text in f.actual + f.fix


def test_driver_not_loaded_host_fails_the_driver_check(tmp_path: Path,
                                                      fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    import pynvml

    fake_nvml({"init_error": "DRIVER_NOT_LOADED"})
    root = synthetic_root(tmp_path / "host", {"proc/modules": "nvme 1 0 - Live 0x0\n"})
    facts = collect(root, probe_torch=True, nvml_module=pynvml)
    assert len(facts.gpus) == 2 and facts.nvidia.nvml == "driver_not_loaded"
    f = run_one("nvidia.driver", facts, live=False)
    assert f.status == "fail" and "nvidia-driver" in f.fix


# ---- issue 17: one source of truth (through the CLI) -----------------------------------------------------------------
@pytest.mark.parametrize("temp,slowdown,status,line", [
    (74, None, "pass", "below 75 C"),
    (75, None, "warn", "warn from 75 C, fail from 85 C"),  # AT the warning line: warn (doctor used to pass 75)
    (84, None, "warn", "default lines"),
    (85, None, "fail", "fail from 85 C"),
    (79, 90, "pass", "below 80 C"),  # the GPU's own slowdown threshold moves both lines
    (80, 90, "warn", "warn from 80 C, fail from 90 C"),
    (88, 90, "warn", "its slowdown threshold"),  # doctor used to fail everything from 85 C
    (90, 90, "fail", "fail from 90 C"),
])
def test_gpu_temperature_lines_come_from_the_shared_policy_and_the_gpus_threshold(
        fake_nvml: Callable[[Any], Dict[str, str]], temp: int, slowdown: Optional[int], status: str,
        line: str) -> None:
    over: Dict[str, Any] = {"temperature_c": temp}
    if slowdown is not None:
        over["temperature_thresholds"] = {"slowdown": slowdown, "shutdown": slowdown + 5}
    env = fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "1B", 0, **over)]})
    f = doctor_json("--only", "nvidia", env=env)["nvidia.temperature"]
    assert f["status"] == status and line in f["expected"], f
    assert f"{temp} C" in f["actual"]
    if status != "pass":
        assert "nvidia-smi -q -d TEMPERATURE" in f["fix"] and "fail from" in f["fix"]


def test_gpu_temperature_and_clock_events_rate_as_the_monitor_does() -> None:
    """doctor's status is gpu_health's level for the same reading (critical fails, warning/notice warn)."""
    from hosttune.policy import gpu_health

    for temp, slowdown in ((74, None), (75, None), (85, None), (80, 90), (95, 90)):
        facts = gpu_host(gpus=(dgpu(0, temperature_c=temp, temp_slowdown_c=slowdown),))
        want = gpu_health.doctor_status(gpu_health.temperature(temp, slowdown))
        assert run_one("nvidia.temperature", facts).status == want, (temp, slowdown)
    for mask in (0x4, 0x8, 0x20, 0x40, 0x80, 0x1, 0x10):
        facts = gpu_host(gpus=(dgpu(0, clock_event_reasons=mask),))
        events = gpu_health.clock_events(mask)
        want = gpu_health.doctor_status(gpu_health.worst([level for _k, level, _b, _w in events]))
        assert run_one("nvidia.clock_reasons", facts).status == want, hex(mask)


def test_hw_power_brake_is_a_failure_through_the_cli(fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    env = fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
                     "devices": [a100(0, "1B", 0, clock_event_reasons=0x80),
                                 a100(1, "1C", 1, clock_event_reasons=0x4)]})
    f = doctor_json("--only", "nvidia", env=env)["nvidia.clock_reasons"]
    assert f["status"] == "fail" and "hw_power_brake_slowdown" in f["actual"] and "sw_power_cap" in f["actual"], f


# ---- pinned before the issue-17 rebuild ------------------------------------------------------------------------------
def doctor_findings(facts: Any) -> Dict[str, Dict[str, str]]:
    """Run every doctor check over facts built here (the same catalogue `hosttune doctor` runs)."""
    from hosttune import doctor

    ctx = doctor.Context(facts=facts, env={}, live=False, profile=Active(None, "built-in default"))
    return {r.id: r.to_dict() for r in doctor.run_checks(ctx).results}


def gpu_facts(driver: str, cuda: str) -> Any:
    from hosttune.facts import Distro, Gpu, Nvidia

    gpu = Gpu(index=0, name="NVIDIA H100 80GB HBM3", pci_bus_id="0000:1b:00.0", pci_class="0x030200",
              source="nvml")
    return Facts(distro=Distro(id="debian", version="12", family="debian"), gpus=(gpu,),
                 nvidia=Nvidia(driver=driver, nvml="ok"),
                 torch=TorchInstall(python="/opt/train/bin/python", version="2.6.0", cuda=cuda,
                                    cuda_available=True, device_count=1, in_venv=True))


@pytest.mark.parametrize("cuda,minimum,below", [
    ("12.4", "550.54.14", "550.54.13"),  # the CUDA 12.4 toolkit's driver (NVIDIA's release notes, table 3)
    ("13.0", "580.65.06", "580.65.05"),
])
def test_doctor_driver_exactly_at_the_cuda_toolkit_minimum_passes(cuda: str, minimum: str, below: str) -> None:
    at = doctor_findings(gpu_facts(minimum, cuda))["nvidia.driver_cuda"]
    assert at["status"] == "pass", at
    under = doctor_findings(gpu_facts(below, cuda))["nvidia.driver_cuda"]
    assert under["status"] in ("warn", "fail"), under  # one patch level below is not enough


def test_doctor_gpu_at_exactly_85_c_fails(fake_nvml: Any) -> None:
    """85 C is where most datacenter parts start thermal slowdown: without the GPU's own slowdown threshold doctor
    fails from there (>= 85) and warns from 75 (a reading AT a line is at that level, as in the monitor)."""
    statuses = {}
    for temp in (74, 75, 76, 84, 85):
        env = fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
                         "devices": [a100(0, "1B", 0, temperature_c=temp)]})
        done = run_cli(["doctor", "--json", "--only", "nvidia"], env=env)  # in-process: the fake NVML is this one
        by = {f["id"]: f for f in json.loads(done.stdout)["findings"]}
        statuses[temp] = by["nvidia.temperature"]["status"]
    assert statuses == {74: "pass", 75: "warn", 76: "warn", 84: "warn", 85: "fail"}, statuses
