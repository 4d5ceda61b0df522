"""hosttune doctor: every check passes on a good host and warns/fails on a bad one; the CLI contract."""

import dataclasses
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import pytest
from conftest import a100

from hosttune import doctor
from hosttune.commands.doctor import render_table
from hosttune.detect import collect
from hosttune.doctor import Check, Context, Finding, run_checks
from hosttune.doctor.checks import cpu as doctor_cpu
from hosttune.errors import UserError
from hosttune.facts import (
    Allocators,
    Cgroup,
    Cpu,
    Distro,
    Facts,
    Gpu,
    Kernel,
    Limits,
    Memory,
    Mount,
    Numa,
    NumaNode,
    Nvidia,
    Tools,
    TorchInstall,
    Tuned,
    TunedSetting,
)
from hosttune.profile import Active

R = dataclasses.replace
NO_PROFILE = Active(None, "built-in default")  # nothing configured: the profile checks have nothing to load


def in_use(path: Path) -> Active:
    """The profile in use is `path`, as if it were the user's generated profile."""
    return Active(str(path), "user profile")


# ---- hand-built facts -----------------------------------------------------------------------------------------
def cpu_host(**over: Any) -> Facts:
    """A healthy 2-socket CPU host: Debian 12, 2 NUMA nodes, 8 CPUs, every setting as doctor wants it."""
    base = Facts(
        distro=Distro(id="debian", version="12", version_best="12.5", name="Debian GNU/Linux", family="debian"),
        kernel=Kernel(release="6.1.0", cmdline="BOOT_IMAGE=/vmlinuz root=/dev/sda1", thp="madvise",
                      numa_balancing=0, swappiness=10, governors=("performance",), modules=("nvme",)),
        cpu=Cpu(model="Xeon", logical=8, physical=8, packages=2, online=tuple(range(8)),
                allowed_cpus=tuple(range(8)), smt_control="off"),
        numa=Numa(nodes=(NumaNode(0, (0, 1, 2, 3), 1000), NumaNode(1, (4, 5, 6, 7), 1000)), allowed_mems=(0, 1)),
        allocators=Allocators(jemalloc="/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"),
        tools=Tools(numactl="/usr/bin/numactl"),
        memory=Memory(total_mb=64000, swap_total_mb=2048, shm_mb=32000),
        limits=Limits(nofile_soft=1048576, nofile_hard=1048576, memlock_soft=-1, memlock_hard=-1),
        torch=TorchInstall(python="/opt/train/bin/python", version="2.6.0", in_venv=True),
        storage=(Mount("/", "ext4", "/dev/nvme0n1p1", "nvme0n1", "nvme"),
                 Mount("/mnt/nfs", "nfs4", "srv:/data", None, "network"),
                 Mount("/mnt/hdd", "xfs", "/dev/sdb1", "sdb", "hdd")),
    )
    return R(base, **over)


def dgpu(index: int, **over: Any) -> Gpu:
    g = Gpu(index=index, name="NVIDIA H100 80GB HBM3", uuid=f"GPU-{index:08x}-aaaa-bbbb-cccc-dddddddddddd",
            pci_bus_id=f"0000:{0x1b + index:02x}:00.0", numa_node=index % 2, memory_mb=81559, persistence_mode=True,
            ecc_enabled=True, ecc_pending=True, pcie_gen=5, pcie_gen_max=5, pcie_width=16, pcie_width_max=16,
            temperature_c=41, clock_event_reasons=0x1, ecc_uncorrected_volatile=0, retired_pages_pending=False,
            remapped_rows_pending=False, remapped_rows_failure=False, pci_class="0x030200", source="nvml")
    return R(g, **over)


def gpu_host(**over: Any) -> Facts:
    base = cpu_host(
        gpus=(dgpu(0), dgpu(1)),
        nvidia=Nvidia(driver="550.54.15", cuda_driver="12.4", nvml="ok", cudnn="9.1.0", nccl="2.21.5"),
        torch=TorchInstall(python="/opt/train/bin/python", version="2.6.0", cuda="12.4", cudnn="9.1.0",
                           nccl="2.21.5", cuda_available=True, device_count=2, in_venv=True),
        kernel=R(cpu_host().kernel, modules=("nvidia", "nvidia_uvm")),
    )
    return R(base, **over)


def run_one(check_id: str, facts: Facts, **ctx: Any) -> Finding:
    ctx.setdefault("env", {})
    ctx.setdefault("profile", NO_PROFILE)
    result = run_checks(Context(facts=facts, **ctx), checks=[doctor.BY_ID[check_id]])
    (r,) = result.results
    return Finding(status=r.status, actual=r.actual, expected=r.expected, fix=r.fix)


def kern(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, kernel=R(f.kernel, **kw))


def gpu0(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, gpus=(R(f.gpus[0], **kw),) + f.gpus[1:])


def nv(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, nvidia=R(f.nvidia, **kw))


def tor(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, torch=R(f.torch, **kw))


def same(f: Facts) -> Facts:
    return f


def tuned(profile: str, *settings: Any) -> Callable[[Facts], Facts]:
    sets = tuple(TunedSetting(*s) for s in settings)
    return lambda f: R(f, tuned=Tuned(installed=True, running=True, profile=profile, mode="manual", settings=sets))


# (check id, host builder, change, context kwargs, expected status, text that must be in actual or fix)
CASES = [
    ("os.distro", cpu_host, same, {}, "pass", "Debian"),
    ("os.distro", cpu_host, lambda f: R(f, distro=Distro(id="centos", version="7", family="rhel")), {}, "warn",
     "end of standard support"),
    ("os.distro", cpu_host, lambda f: R(f, distro=Distro(id="ubuntu", version="23.10", family="debian")), {},
     "warn", "interim"),
    ("os.distro", cpu_host, lambda f: R(f, distro=Distro(id="rocky", version="9", family="rhel")), {}, "pass", ""),
    ("os.numa_balancing", cpu_host, same, {}, "pass", "0"),
    ("os.numa_balancing", cpu_host, kern(numa_balancing=1), {}, "warn", "sysctl -w kernel.numa_balancing=0"),
    ("os.numa_balancing", cpu_host, lambda f: R(kern(numa_balancing=1)(f), numa=Numa(nodes=(NumaNode(0),))), {},
     "pass", "not relevant"),
    ("os.thp", cpu_host, same, {}, "pass", "madvise"),
    ("os.thp", cpu_host, kern(thp="never"), {}, "pass", "never"),
    ("os.thp", cpu_host, kern(thp="always"), {}, "warn", "echo madvise > /sys/kernel/mm/transparent_hugepage"),
    ("os.swappiness", cpu_host, same, {}, "pass", "10"),
    ("os.swappiness", cpu_host, kern(swappiness=60), {}, "warn", "90-hosttune.conf"),
    ("os.swappiness", cpu_host, lambda f: R(kern(swappiness=60)(f), memory=Memory(swap_total_mb=0)), {}, "pass",
     "no swap"),
    ("os.tuned", cpu_host, same, {}, "pass", "tuned not installed"),
    ("os.tuned", cpu_host, tuned("throughput-performance", ("swappiness", "sysctl.vm.swappiness", "10", "t-p"),
                                 ("governor", "cpu.governor", "performance", "t-p")), {}, "pass", "throughput"),
    ("os.tuned", cpu_host, tuned("hpc-compute", ("thp", "vm.transparent_hugepages", "always", "hpc-compute")), {},
     "warn", "vm.transparent_hugepages=always (hpc-compute)"),
    ("os.tuned", cpu_host, tuned("powersave", ("governor", "cpu.governor", "ondemand|powersave", "powersave")), {},
     "warn", "hosttune tune apply"),
    ("os.governor", cpu_host, same, {}, "pass", "performance"),
    ("os.governor", cpu_host, kern(governors=("powersave",)), {}, "warn", "/etc/tmpfiles.d/90-hosttune-governor"),
    ("os.governor", cpu_host, lambda f: R(kern(governors=("powersave", "performance"))(f),
                                          distro=Distro(id="rocky", version="9", family="rhel")), {}, "warn",
     "tuned-adm profile throughput-performance"),
    ("os.governor", cpu_host, kern(governors=()), {}, "skip", "VMs"),
    ("os.smt", cpu_host, same, {}, "pass", "off"),
    ("os.smt", cpu_host, lambda f: R(f, cpu=Cpu()), {}, "skip", "not readable"),
    ("cpu.cgroup_limit", cpu_host, same, {}, "pass", "8 of 8"),
    ("cpu.cgroup_limit", cpu_host, lambda f: R(f, cpu=R(f.cpu, quota_cpus=2.5)), {}, "warn", "effective 2 of 8"),
    ("cpu.cgroup_limit", cpu_host, lambda f: R(f, cpu=R(f.cpu, allowed_cpus=(0, 1), cgroup=Cgroup(cpuset=(0, 1)))),
     {}, "warn", "OMP_NUM_THREADS=2"),
    ("cpu.omp_threads", cpu_host, same, {}, "pass", "unset"),
    ("cpu.omp_threads", cpu_host, same, {"env": {"OMP_NUM_THREADS": "4"}}, "pass", "4"),
    ("cpu.omp_threads", cpu_host, same, {"env": {"OMP_NUM_THREADS": "32"}}, "warn", "32 threads for 8"),
    ("cpu.omp_threads", cpu_host, same, {"env": {"OMP_NUM_THREADS": "four"}}, "warn", "not a positive integer"),
    ("cpu.nofile", cpu_host, same, {}, "pass", "1048576"),
    ("cpu.nofile", cpu_host, lambda f: R(f, limits=R(f.limits, nofile_soft=1024)), {}, "warn", "ulimit -n 65536"),
    ("cpu.nofile", cpu_host, lambda f: R(f, limits=R(f.limits, nofile_soft=1024, nofile_hard=4096)), {}, "warn",
     "hard nofile 1048576"),
    ("cpu.memlock", cpu_host, same, {}, "pass", "not relevant"),
    ("cpu.memlock", cpu_host, lambda f: R(f, limits=R(f.limits, rdma_devices=2)), {}, "pass", "unlimited"),
    ("cpu.memlock", cpu_host, lambda f: R(f, limits=R(f.limits, rdma_devices=2, memlock_soft=65536)), {}, "warn",
     "memlock unlimited"),
    ("storage.shm", cpu_host, same, {}, "pass", "32000"),
    ("storage.shm", cpu_host, lambda f: R(f, memory=R(f.memory, shm_mb=64)), {}, "fail", "--shm-size"),
    ("storage.shm", cpu_host, lambda f: R(f, memory=R(f.memory, shm_mb=512)), {}, "warn", "--shm-size"),
    ("storage.data", cpu_host, same, {}, "skip", "no --data"),
    ("storage.data", cpu_host, same, {"data": ["/"]}, "pass", "nvme"),
    ("storage.data", cpu_host, same, {"data": ["/mnt/nfs/imagenet"]}, "warn", "network"),
    ("storage.data", cpu_host, same, {"data": ["/mnt/hdd"]}, "warn", "hdd"),
    ("tools.allocator", cpu_host, same, {}, "pass", "libjemalloc"),
    ("tools.allocator", cpu_host, lambda f: R(f, allocators=Allocators()), {}, "warn",
     "apt-get install -y libjemalloc2"),
    ("tools.allocator", cpu_host, lambda f: R(f, allocators=Allocators(),
                                              distro=Distro(id="rocky", version="9", family="rhel")), {}, "warn",
     "dnf install -y epel-release && dnf install -y jemalloc"),
    ("tools.numactl", cpu_host, same, {}, "pass", "numactl"),
    ("tools.numactl", cpu_host, lambda f: R(f, tools=Tools()), {}, "warn", "apt-get install -y numactl"),
    ("tools.numactl", cpu_host, lambda f: R(f, tools=Tools(), numa=Numa(nodes=(NumaNode(0),))), {}, "pass",
     "not needed"),
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
    ("torch.version", cpu_host, same, {}, "pass", "2.6.0"),
    ("torch.version", cpu_host, tor(version="2.1.2"), {}, "warn", "torch>=2.6"),
    ("torch.version", cpu_host, lambda f: R(f, torch=None), {}, "warn", "python3 -m venv"),
    ("torch.version", cpu_host, lambda f: R(f, torch=None), {"live": False}, "skip", "captured"),
    ("torch.debug_env", cpu_host, same, {"env": {"NCCL_DEBUG": "WARN"}}, "pass", "none set"),
    ("torch.debug_env", cpu_host, same, {"env": {"CUDA_LAUNCH_BLOCKING": "1", "NCCL_DEBUG": "INFO"}}, "warn",
     "unset CUDA_LAUNCH_BLOCKING NCCL_DEBUG"),
    ("torch.debug_env", cpu_host, same, {"env": {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}}, "warn", "DETAIL"),
    ("torch.debug_env", cpu_host, same, {"env": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}}, "warn", "CACHING"),
    ("torch.alloc_conf", cpu_host, same, {}, "pass", "unset"),
    ("torch.alloc_conf", cpu_host, same,
     {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:128,"
                                        "roundup_power2_divisions:[256:1,512:2,>:8],garbage_collection_threshold:0.6"}},
     "pass", "expandable_segments"),
    ("torch.alloc_conf", cpu_host, same, {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments=True"}}, "fail",
     "not key:value"),
    ("torch.alloc_conf", cpu_host, same, {"env": {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:10"}}, "fail",
     "max_split_size_mb:10"),
    ("torch.alloc_conf", cpu_host, same, {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}}, "warn",
     "unknown key"),
    ("torch.cuda_visible_devices", gpu_host, same, {}, "pass", "unset"),
    ("torch.cuda_visible_devices", gpu_host, same, {"env": {"CUDA_VISIBLE_DEVICES": "1,GPU-00000000"}}, "pass", ""),
    ("torch.cuda_visible_devices", gpu_host, same, {"env": {"CUDA_VISIBLE_DEVICES": "0,1,7"}}, "fail", "no GPU 7"),
    ("torch.cuda_visible_devices", gpu_host, same, {"env": {"CUDA_VISIBLE_DEVICES": "GPU-deadbeef"}}, "fail",
     "GPU-deadbeef"),
    ("torch.cuda_visible_devices", gpu_host, same, {"env": {"CUDA_VISIBLE_DEVICES": ""}}, "warn", "hides every GPU"),
    ("torch.cuda_visible_devices", cpu_host, same, {"env": {"CUDA_VISIBLE_DEVICES": ""}}, "pass", ""),
    ("torch.venv", cpu_host, same, {}, "pass", "venv"),
    ("torch.venv", cpu_host, tor(in_venv=False, python="/usr/bin/python3"), {}, "warn", "python3 -m venv"),
    ("hosttune.profile", cpu_host, same, {}, "warn", "hosttune profile generate"),
    ("hosttune.profile", cpu_host, same, {"live": False}, "skip", "captured"),
    ("hosttune.profile_fresh", cpu_host, same, {}, "skip", "no profile"),
]


@pytest.mark.parametrize("check_id,host,change,ctx,status,text", CASES,
                         ids=[f"{c[0]}-{c[4]}-{i}" for i, c in enumerate(CASES)])
def test_check(check_id: str, host: Callable[..., Facts], change: Callable[[Facts], Facts], ctx: Dict[str, Any],
               status: str, text: str) -> None:
    f = run_one(check_id, change(host()), **ctx)
    assert f.status == status, f
    assert text in f.actual + "\n" + f.fix + "\n" + f.expected, f
    if status in ("warn", "fail"):
        assert f.fix or check_id == "os.distro", f"{check_id} {status} without a fix"


def test_every_check_has_a_pass_and_a_problem_case() -> None:
    seen: Dict[str, set] = {}
    for cid, *_rest, status, _text in CASES:
        seen.setdefault(cid, set()).add(status)
    for cid in doctor.BY_ID:
        if cid in ("nvidia.pcie_link", "storage.free_space", "hosttune.profile", "hosttune.profile_fresh",
                   "nvidia.acs"):
            continue  # live-only checks: their tests below use the fake NVML, real disks and real profiles
        assert "pass" in seen.get(cid, set()), cid
        if cid == "os.smt":
            continue  # the issue asks for the SMT state to be reported; on or off are both valid choices
        assert seen[cid] & {"warn", "fail"}, cid


def test_every_check_has_an_explanation() -> None:
    for check in doctor.CHECKS:
        assert check.group in doctor.GROUPS and check.id.startswith(check.group + ".")
        assert len(check.explain.splitlines()) >= 2, check.id


def test_unknown_family_shows_both_package_managers() -> None:
    f = run_one("tools.allocator", cpu_host(distro=Distro(id="arch", family="unknown"), allocators=Allocators()))
    assert "apt-get install -y libjemalloc2" in f.fix and "dnf install -y jemalloc" in f.fix


def test_rhel_proper_gets_the_epel_url() -> None:
    f = run_one("tools.allocator", cpu_host(distro=Distro(id="rhel", version="9.4", family="rhel"),
                                            allocators=Allocators()))
    assert "epel-release-latest-9.noarch.rpm" in f.fix


def test_omp_threads_compared_with_the_plan(tmp_path: Path) -> None:
    from hosttune import plan, profile

    facts = cpu_host()
    prof = profile.generate(facts)
    path = profile.write(prof, tmp_path / "profile.yaml", force=True)
    want = plan.resolve(facts, profile.load(str(path)), 0, 1, {}).env.get("OMP_NUM_THREADS")
    assert want
    ok = run_one("cpu.omp_threads", facts, env={"OMP_NUM_THREADS": want}, profile=in_use(path))
    assert ok.status == "pass" and "matches the plan" in ok.actual
    other = str(int(want) - 1 or 3)
    bad = run_one("cpu.omp_threads", facts, env={"OMP_NUM_THREADS": other}, profile=in_use(path))
    assert bad.status == "warn" and f"plan from {path} says {want}" in bad.actual


# ---- profile checks on real profile files ----------------------------------------------------------------------
def test_profile_present_valid_and_fresh(tmp_path: Path) -> None:
    from hosttune import profile

    facts = cpu_host()
    path = profile.write(profile.generate(facts), tmp_path / "profile.yaml", force=True)
    assert run_one("hosttune.profile", facts, profile=in_use(path)).status == "pass"
    fresh = run_one("hosttune.profile_fresh", facts, profile=in_use(path))
    assert fresh.status == "pass", fresh
    changed = R(facts, cpu=R(facts.cpu, model="EPYC 9654", logical=16, physical=16))
    stale = run_one("hosttune.profile_fresh", changed, profile=in_use(path))
    assert stale.status == "warn" and "hosttune profile generate" in stale.fix


def test_broken_profile_fails_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "profile.yaml"
    path.write_text("threads: [1, 2\n")
    f = run_one("hosttune.profile", cpu_host(), profile=in_use(path))
    assert f.status == "fail" and str(path) in f.actual
    path.write_text("allocator: jemalloc\nthreadz: 4\n")
    f = run_one("hosttune.profile", cpu_host(), profile=in_use(path))
    assert f.status == "fail" and "threadz" in f.actual


# ---- live-only checks: real disks, the fake NVML ---------------------------------------------------------------
@pytest.mark.parametrize("total,free,status", [(1000 * 1024, 600 * 1024, "pass"), (1000 * 1024, 60 * 1024, "warn"),
                                               (100 * 1024, 40 * 1024, "warn"), (100 * 1024, 4 * 1024, "fail")])
def test_space_thresholds(total: int, free: int, status: str) -> None:
    assert doctor.space_status(total, free) == status


def test_free_space_measures_cwd_and_data(tmp_path: Path) -> None:
    st = os.statvfs(tmp_path)
    total, free = st.f_blocks * st.f_frsize >> 20, st.f_bavail * st.f_frsize >> 20
    f = run_one("storage.free_space", cpu_host(), cwd=str(tmp_path), data=[str(tmp_path), "/"])
    assert f.status in ("pass", "warn", "fail")
    assert f"{tmp_path}: " in f.actual and "/: " in f.actual
    assert doctor.space_status(total, free) in (f.status, "pass")
    assert run_one("storage.free_space", cpu_host(), live=False).status == "skip"


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


# ---- NVML states through the detector and the fake pynvml ------------------------------------------------------
def synthetic_root(tmp: Path, files: Optional[Dict[str, Optional[str]]] = None) -> Path:
    """A small captured host: Debian 12, 2 NUMA nodes x 2 CPUs, two NVIDIA GPUs on PCI, every setting healthy.
    `files` replaces paths (None: leave the file out)."""
    base: Dict[str, Optional[str]] = {
        "etc/os-release": 'ID=debian\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\nPRETTY_NAME="Debian GNU/Linux 12"\n'
                          'NAME="Debian GNU/Linux"\n',
        "etc/debian_version": "12.5\n",
        "proc/cpuinfo": "".join(f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon Gold 6338\n"
                                f"flags\t\t: fpu avx2 avx512f\n\n" for i in range(4)),
        "proc/meminfo": "MemTotal:       65536000 kB\nMemAvailable:   60000000 kB\nSwapTotal:       2097148 kB\n",
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p1 ro quiet\n",
        "proc/modules": "nvidia_uvm 1 0 - Live 0x0\nnvidia 1 0 - Live 0x0\n",
        "proc/sys/kernel/numa_balancing": "0\n",
        "proc/sys/vm/swappiness": "10\n",
        "proc/self/mountinfo": "22 1 259:1 / / rw,relatime - ext4 /dev/nvme0n1p1 rw\n"
                               "25 22 0:23 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw,size=32768000k\n",
        "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
        "sys/devices/system/cpu/online": "0-3\n",
        "sys/devices/system/node/online": "0-1\n",
        "sys/devices/system/node/node0/cpulist": "0-1\n",
        "sys/devices/system/node/node1/cpulist": "2-3\n",
        "sys/devices/system/node/node0/meminfo": "Node 0 MemTotal:       32768000 kB\n",
        "sys/devices/system/node/node1/meminfo": "Node 1 MemTotal:       32768000 kB\n",
        "usr/lib/x86_64-linux-gnu/libjemalloc.so.2": "\x7fELF\x02\x01\x01" + "\0" * 57,  # an ELF header
        "usr/bin/numactl": "",
    }
    for cpu in range(4):
        t = f"sys/devices/system/cpu/cpu{cpu}"
        base[f"{t}/topology/physical_package_id"] = f"{cpu // 2}\n"
        base[f"{t}/topology/core_id"] = f"{cpu % 2}\n"
        base[f"{t}/topology/thread_siblings_list"] = f"{cpu}\n"
        base[f"{t}/topology/core_siblings_list"] = f"{cpu // 2 * 2}-{cpu // 2 * 2 + 1}\n"
        base[f"{t}/cpufreq/scaling_governor"] = "performance\n"
    for i, bus in enumerate(("1b", "1c")):
        d = f"sys/bus/pci/devices/0000:{bus}:00.0"
        base.update({f"{d}/vendor": "0x10de\n", f"{d}/class": "0x030200\n", f"{d}/device": "0x2330\n",
                     f"{d}/numa_node": f"{i}\n", f"{d}/local_cpulist": f"{2 * i}-{2 * i + 1}\n"})
    base.update(files or {})
    for rel, text in base.items():
        if text is None:
            continue
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp


def healthy_scenario() -> Dict[str, Any]:
    return {"driver": "550.54.15", "cuda_driver": 12040,
            "devices": [a100(0, "1B", 0), a100(1, "1C", 1)]}


def gpu_facts_from(tmp: Path, fake: Callable[[Any], Dict[str, str]], scenario: Any) -> Facts:
    import pynvml

    fake(scenario)
    root = synthetic_root(tmp / "host")
    # probe_torch=True keeps the full NVML sample; on a foreign root no interpreter is run anyway
    return collect(root, probe_torch=True, nvml_module=pynvml)


def test_healthy_synthetic_gpu_host_exits_0(tmp_path: Path, fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    from hosttune import profile

    facts = gpu_facts_from(tmp_path, fake_nvml, healthy_scenario())
    assert [g.source for g in facts.gpus] == ["nvml", "nvml"] and facts.nvidia.nvml == "ok"
    facts = R(facts, torch=TorchInstall(python=sys.executable, version="2.6.0+cu124", cuda="12.4", cudnn="90100",
                                        nccl="2.21.5", cuda_available=True, device_count=2, in_venv=True),
              limits=Limits(nofile_soft=65536, nofile_hard=65536, memlock_soft=-1, memlock_hard=-1))
    path = profile.write(profile.generate(facts), tmp_path / "profile.yaml", force=True)
    report = run_checks(Context(facts=facts, env={}, cwd=str(tmp_path), profile=in_use(path)))
    bad = [r for r in report.results if r.status in ("warn", "fail")]
    # the one thing a tmp dir on this shared machine cannot promise is 50 GiB free
    assert [r.id for r in bad if r.id != "storage.free_space"] == [], bad
    assert report.exit_code == 0 or [r.id for r in bad if r.status == "fail"] == ["storage.free_space"]
    status = {r.id: r.status for r in report.results}
    for cid in ("nvidia.driver", "nvidia.nvml", "nvidia.driver_cuda", "nvidia.torch_build", "nvidia.persistence",
                "nvidia.ecc_mode", "nvidia.ecc_errors", "nvidia.pending_retire", "nvidia.remap_failure",
                "nvidia.pcie_link", "nvidia.clock_reasons", "nvidia.temperature", "nvidia.gpu_numa",
                "hosttune.profile", "hosttune.profile_fresh", "os.numa_balancing", "tools.numactl"):
        assert status[cid] == "pass", (cid, report.results)


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


# ---- crash handling --------------------------------------------------------------------------------------------
def test_a_crashing_check_becomes_a_skip() -> None:
    def boom(ctx: Context) -> Finding:
        """Always crashes."""
        return Finding(status="pass", actual=str(1 // 0))

    def odd(ctx: Context) -> Finding:
        """Returns a status that does not exist."""
        return Finding(status="maybe")

    checks = [Check("x.boom", "os", "boom", boom), Check("x.odd", "os", "odd", odd), doctor.BY_ID["os.thp"]]
    report = run_checks(Context(facts=cpu_host(), env={}), checks=checks)
    r = {x.id: x for x in report.results}
    assert r["x.boom"].status == "skip" and "ZeroDivisionError" in r["x.boom"].actual
    assert r["x.odd"].status == "skip" and "'maybe'" in r["x.odd"].actual
    assert r["os.thp"].status == "pass" and report.exit_code == 0


def test_facts_that_break_a_check_give_skip_not_traceback() -> None:
    facts = cpu_host(kernel=Kernel(governors=("performance",), thp="madvise"), torch=TorchInstall(python="py",
                                                                                                   version="x.y"))
    bad = R(facts, cpu=R(facts.cpu, quota_cpus="two"))  # type: ignore[arg-type]
    report = run_checks(Context(facts=bad, env={}, profile=NO_PROFILE))
    assert {r.id: r.status for r in report.results}["cpu.cgroup_limit"] == "skip"


# ---- explain / only / errors -----------------------------------------------------------------------------------
def test_explain_and_unknown_ids() -> None:
    text = doctor.explain("nvidia.driver_cuda")
    assert "CUDA Toolkit and Corresponding Driver Versions" in text and "525.60.13" in text
    with pytest.raises(UserError, match="did you mean nvidia.driver_cuda"):
        doctor.explain("nvidia.driver_cud")


def test_table_has_no_colour_off_a_tty_and_puts_fixes_below() -> None:
    report = run_checks(Context(facts=cpu_host(kernel=R(cpu_host().kernel, thp="always")), env={},
                                profile=NO_PROFILE), only="os")
    text = render_table(report, colour=False)
    assert "\x1b[" not in text
    lines = text.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith("WARN  os.thp"))
    assert "fix: hosttune tune apply --only thp" in lines[i + 1]
    assert "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled" in lines[i + 2]  # by hand, beside it
    assert "\x1b[" in render_table(report, colour=True)
    assert {r.group for r in report.results} == {"os"}


# ---- the command line ------------------------------------------------------------------------------------------
def hosttune(*args: str, env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "hosttune", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_cli_on_this_cpu_host_is_truthful_and_json_complete() -> None:
    done = hosttune("doctor", "--json")
    data = json.loads(done.stdout)
    ids = [f["id"] for f in data["findings"]]
    assert sorted(ids) == sorted(doctor.BY_ID) and len(ids) == len(set(ids))
    assert data["schema"] == doctor.SCHEMA
    assert sum(data["summary"].values()) == len(ids)
    for f in data["findings"]:
        assert set(f) == {"id", "group", "status", "title", "expected", "actual", "fix"}
        assert f["status"] in doctor.STATUSES
    by = {f["id"]: f for f in data["findings"]}
    if not os.path.isdir("/proc/driver/nvidia"):  # this CI machine: no GPU, which is not a failure
        assert by["nvidia.driver"]["status"] == "pass" and "no NVIDIA GPU" in by["nvidia.driver"]["actual"]
        assert by["nvidia.persistence"]["status"] == "skip"
    assert done.returncode == (1 if data["summary"]["fail"] else 0)
    again = json.loads(hosttune("doctor", "--json").stdout)
    assert [f["id"] for f in again["findings"]] == ids  # stable order


def test_cli_bad_host_root(tmp_path: Path) -> None:
    bad: Dict[str, Optional[str]] = {
        "etc/os-release": 'ID=centos\nVERSION_ID="7"\nNAME="CentOS Linux"\nID_LIKE="rhel fedora"\n',
        "etc/debian_version": None,
        "proc/modules": "nouveau 1 0 - Live 0x0\n",
        "proc/sys/kernel/numa_balancing": "1\n",
        "proc/sys/vm/swappiness": "60\n",
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz intel_iommu=on\n",
        "proc/self/mountinfo": "22 1 259:1 / / rw - ext4 /dev/nvme0n1p1 rw\n"
                               "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=65536k\n"
                               "30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "proc/self/cgroup": "0::/docker/abc\n",
        "sys/fs/cgroup/docker/abc/cpu.max": "100000 100000\n",
        "sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
        "sys/bus/pci/devices/0000:1c:00.0/numa_node": "-1\n",
        "sys/bus/pci/devices/0000:1c:00.0/local_cpulist": None,
        "sys/bus/pci/devices/0000:3a:00.0/vendor": "0x10de\n",  # an NVSwitch
        "sys/bus/pci/devices/0000:3a:00.0/class": "0x068000\n",
        "usr/lib/x86_64-linux-gnu/libjemalloc.so.2": None,
        "usr/bin/numactl": None,
    }
    bad.update({f"sys/devices/system/cpu/cpu{i}/cpufreq/scaling_governor": "powersave\n" for i in range(4)})
    root = synthetic_root(tmp_path / "bad", bad)

    done = hosttune("doctor", "--root", str(root), "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    got = {f["id"]: f["status"] for f in data["findings"] if f["status"] in ("warn", "fail")}
    assert got == {
        "os.distro": "warn", "os.numa_balancing": "warn", "os.thp": "warn", "os.swappiness": "warn",
        "os.governor": "warn", "cpu.cgroup_limit": "warn", "storage.shm": "fail", "tools.allocator": "warn",
        "cpu.nofile": "warn",  # no limits file raises it (read from the tree since 835395b, as tune verify does)
        "tools.numactl": "warn", "nvidia.driver": "fail", "nvidia.nouveau": "fail", "nvidia.fabric_manager": "fail",
        "nvidia.gpu_numa": "warn", "nvidia.iommu": "warn",
    }, json.dumps(data["findings"], indent=1)
    fixes = "\n".join(f["fix"] for f in data["findings"])
    assert "dnf install -y epel-release && dnf install -y jemalloc" in fixes  # CentOS: the dnf forms
    assert "grubby --update-kernel=ALL --args='iommu=pt'" in fixes
    assert "apt-get" not in fixes
    skipped = {f["id"]: f["actual"] for f in data["findings"] if f["status"] == "skip"}
    assert "captured" in skipped["torch.debug_env"] and "--root" in skipped["storage.free_space"]
    table = hosttune("doctor", "--root", str(root))
    assert table.returncode == 1 and "FAIL  storage.shm" in table.stdout and "\x1b[" not in table.stdout


def test_cli_fake_gpu_host_with_cpu_torch_fails(fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    env = fake_nvml(healthy_scenario())
    done = hosttune("doctor", "--json", "--only", "nvidia", env=env)
    data = json.loads(done.stdout)
    by = {f["id"]: f for f in data["findings"]}
    assert {f["id"].split(".")[0] for f in data["findings"]} == {"nvidia"}
    assert by["nvidia.nvml"]["status"] == "pass"
    assert by["nvidia.persistence"]["status"] == "pass"
    assert by["nvidia.pcie_link"]["status"] == "pass" and "idle: not judged" in by["nvidia.pcie_link"]["actual"]
    assert by["nvidia.torch_build"]["status"] == "fail", by["nvidia.torch_build"]
    assert "download.pytorch.org/whl/cu124" in by["nvidia.torch_build"]["fix"]
    assert done.returncode == 1


def test_cli_version_mismatch(fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    env = fake_nvml({"init_error": "LIB_RM_VERSION_MISMATCH"})
    done = hosttune("doctor", "--only", "nvidia", env=env)
    assert "nvidia.nvml" in done.stdout and "version_mismatch" not in done.stderr
    data = json.loads(hosttune("doctor", "--json", "--only", "nvidia", env=env).stdout)
    by = {f["id"]: f for f in data["findings"]}
    # this host has no NVIDIA PCI device: a broken NVML library on a CPU host is reported, not failed
    if not by["nvidia.driver"]["actual"].startswith("no NVIDIA GPU"):
        assert by["nvidia.nvml"]["status"] == "fail"
    else:
        assert by["nvidia.nvml"]["status"] == "pass" and "version_mismatch" in by["nvidia.nvml"]["actual"]


@pytest.mark.parametrize("args,message", [
    (["--explain", "os.thpp"], "did you mean os.thp"),
    (["--only", "nvida"], "did you mean nvidia"),
    (["--data", "/no/such/dataset"], "--data: /no/such/dataset: no such file"),
    (["--root", "/no/such/root"], "--root: /no/such/root: not a directory"),
    (["--python", "/no/such/python"], "--python: /no/such/python"),
])
def test_cli_bad_usage_exits_2(args: list, message: str) -> None:
    done = hosttune("doctor", *args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_cli_explain() -> None:
    done = hosttune("doctor", "--explain", "os.thp")
    assert done.returncode == 0 and "khugepaged" in done.stdout


def test_cli_python_option_probes_that_interpreter() -> None:
    pytest.importorskip("torch")  # the test interpreter stands in for a training venv: it needs torch
    data = json.loads(hosttune("doctor", "--json", "--only", "torch", "--python", sys.executable).stdout)
    by = {f["id"]: f for f in data["findings"]}
    assert sys.executable in by["torch.version"]["actual"]
    assert by["torch.venv"]["status"] in ("pass", "warn") and sys.executable in by["torch.venv"]["actual"]


def test_cli_data_path_kind(tmp_path: Path) -> None:
    done = hosttune("doctor", "--json", "--only", "storage", "--data", str(tmp_path))
    by = {f["id"]: f for f in json.loads(done.stdout)["findings"]}
    assert by["storage.data"]["status"] in ("pass", "warn") and str(tmp_path) in by["storage.data"]["actual"]
    assert str(tmp_path) in by["storage.free_space"]["actual"]


# ---- fix commands are built only from validated, quoted values (issue 11, item 12) ------------------------------
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
    done = hosttune("doctor", "--root", str(root), "--json")
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
    done = hosttune("doctor", "--root", str(planted_rhel_root(tmp_path / "host", "9.4")), "--json")
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


def test_table_shows_host_text_without_terminal_escapes(tmp_path: Path) -> None:
    root = synthetic_root(tmp_path / "host", {
        "etc/os-release": 'ID=ubuntu\nVERSION_ID="23.10"\nNAME="\x1b]0;owned\x07Ubuntu\x1b[2J\u202e"\n',
        "etc/debian_version": None,
    })
    table = hosttune("doctor", "--root", str(root), "--only", "os")
    assert "os.distro" in table.stdout and "\x1b" not in table.stdout and "\x07" not in table.stdout
    assert "\u202e" not in table.stdout and "\\x1b]0;owned" in table.stdout


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


# ---- issue 17: one source of truth for each policy (regressions, through the CLI) ----------------------------------
def doctor_json(*args: str, env: Dict[str, str]) -> Dict[str, Dict[str, str]]:
    done = hosttune("doctor", "--json", *args, env=env)
    assert done.returncode in (0, 1), done.stderr
    return {f["id"]: f for f in json.loads(done.stdout)["findings"]}


@pytest.mark.parametrize("value,status,text", [
    ("GPU-0", "fail", "ambiguous UUID prefix"),  # both UUIDs start GPU-0: CUDA rejects it (doctor used to pass it)
    ("0,0", "fail", "names a GPU twice"),  # CUDA stops at the repeat (doctor used to pass it)
    ("gpu-00000001", "pass", "(1 GPUs)"),  # case does not matter to CUDA (doctor used to fail it)
    ("00000001-1111", "pass", "(1 GPUs)"),  # a UUID prefix without "GPU-" (doctor used to fail it)
    ("1, 0", "pass", "(2 GPUs)"),
    ("0,1,7", "fail", "no GPU 7"),
])
def test_cuda_visible_devices_is_read_the_way_cuda_and_the_planner_read_it(
        fake_nvml: Callable[[Any], Dict[str, str]], value: str, status: str, text: str) -> None:
    from hosttune.facts import Gpu as FactGpu
    from hosttune.policy import cuda_visible

    env = fake_nvml(healthy_scenario())
    env["CUDA_VISIBLE_DEVICES"] = value
    f = doctor_json("--only", "torch", env=env)["torch.cuda_visible_devices"]
    assert f["status"] == status and text in f["actual"], f
    # the one parser says the same on the same two UUIDs (what `hosttune exec` plans with)
    gpus = [FactGpu(index=i, uuid=f"GPU-{i:08x}-1111-2222-3333-444444444444", pci_bus_id=f"0000:{b}:00.0")
            for i, b in ((0, "1b"), (1, "1c"))]
    visible = cuda_visible.select(gpus, value)
    assert (visible.stopped_at is None) == (status == "pass")


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


def profile_env(tmp_path: Path) -> Dict[str, str]:
    """This test's environment (scrubbed by conftest) for a `hosttune` child, with a generated user profile that
    plans 2 threads per rank."""
    env = dict(os.environ)
    user = Path(env["XDG_CONFIG_HOME"]) / "hosttune" / "profile.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("threads: 2\n")
    return env


def test_doctor_uses_the_profile_named_by_hosttune_profile(tmp_path: Path) -> None:
    env = profile_env(tmp_path)
    mine = tmp_path / "one-thread.yaml"
    mine.write_text("threads: 1\n")
    env["HOSTTUNE_PROFILE"] = str(mine)
    by = doctor_json("--only", "hosttune", env=env)
    assert by["hosttune.profile"]["status"] == "pass", by["hosttune.profile"]
    assert str(mine) in by["hosttune.profile"]["actual"] and "$HOSTTUNE_PROFILE" in by["hosttune.profile"]["actual"]
    # no generated profile at all, only $HOSTTUNE_PROFILE: still a profile in use (doctor used to warn)
    Path(env["XDG_CONFIG_HOME"], "hosttune", "profile.yaml").unlink()
    assert doctor_json("--only", "hosttune", env=env)["hosttune.profile"]["status"] == "pass"
    broken = tmp_path / "broken.yaml"
    broken.write_text("threads: many\n")
    env["HOSTTUNE_PROFILE"] = str(broken)
    f = doctor_json("--only", "hosttune", env=env)["hosttune.profile"]
    assert f["status"] == "fail" and str(broken) in f["actual"] and "HOSTTUNE_PROFILE" in f["fix"], f


def test_omp_threads_is_compared_with_the_plan_exec_uses(tmp_path: Path) -> None:
    env = profile_env(tmp_path)  # the user's generated profile plans 2 threads
    mine = tmp_path / "one-thread.yaml"
    mine.write_text("threads: 1\n")
    env["HOSTTUNE_PROFILE"] = str(mine)  # ... but $HOSTTUNE_PROFILE wins for exec/env
    planned = json.loads(hosttune("env", "--json", env=env).stdout)["env"]["OMP_NUM_THREADS"]
    assert planned == "1"
    env["OMP_NUM_THREADS"] = planned
    f = doctor_json("--only", "cpu", env=env)["cpu.omp_threads"]
    assert f["status"] == "pass" and "matches the plan" in f["actual"], f
    env["OMP_NUM_THREADS"] = "2"  # what the shadowed generated profile would say
    f = doctor_json("--only", "cpu", env=env)["cpu.omp_threads"]
    assert f["status"] == "warn" and f"plan from {mine} says 1" in f["actual"], f


def test_effective_cpus_are_the_shared_thread_budget() -> None:
    from hosttune.policy import cpu as cpu_policy

    for over in ({"quota_cpus": 2.5}, {"quota_cpus": 0.5}, {"allowed_cpus": (0, 1, 2)}, {}):
        facts = cpu_host(cpu=R(cpu_host().cpu, **over))
        budget = cpu_policy.thread_budget(facts.cpu)
        f = run_one("cpu.cgroup_limit", facts)
        assert f"{budget} of 8" in f.actual, (over, f)


def test_finding_is_built_by_keyword_only() -> None:
    with pytest.raises(TypeError):
        Finding("warn", "actual", "expected")  # type: ignore[misc]
    with pytest.raises(ValueError, match="'maybe'"):
        Finding(status="maybe")


def test_prerequisites_are_data_the_runner_evaluates() -> None:
    """A check that needs a GPU/NVML/the live host never runs without it: the runner's skip says what is missing."""
    ran = []

    def probe(ctx: Context) -> Finding:
        """Records that it ran."""
        ran.append(1)
        return Finding(status="pass")

    needs_gpu = Check("x.gpu", "nvidia", "needs a GPU", probe, needs=doctor.BY_ID["nvidia.temperature"].needs)
    report = run_checks(Context(facts=cpu_host(), env={}, profile=NO_PROFILE), checks=[needs_gpu])
    assert report.results[0].status == "skip" and "no NVIDIA GPU" in report.results[0].actual and not ran
    no_nvml = gpu_host(nvidia=R(gpu_host().nvidia, nvml="no_permission"))
    report = run_checks(Context(facts=no_nvml, env={}, profile=NO_PROFILE), checks=[needs_gpu])
    assert "NVML not available (no_permission)" in report.results[0].actual and not ran
    assert [n.name for n in doctor.BY_ID["nvidia.pcie_link"].needs] == ["gpu", "nvml", "live"]
    run_checks(Context(facts=gpu_host(), env={}, profile=NO_PROFILE), checks=[needs_gpu])
    assert ran == [1]
