"""Every doctor check on ~230 hand-built hosts, each finding pinned whole (issue 21): status, actual, expected and
fix, word for word. The case tables in test_doctor_{os,cpu,nvidia,...}.py assert a status and one phrase; here a
changed threshold, an inverted condition, a dropped clause in a fix or a wrong number in a message shows up as the
exact row that changed. BASE holds every check's finding on the two healthy hosts of _doctorhelp (cpu_host,
gpu_host); CHANGED holds, per host, only the findings that differ from its base, so each row also pins that the
other checks did NOT move. Doctor runs as on a live host (the facts are the host's) with a fixed Probe: no disk,
lspci or NVML of this machine is read. torch.image_decoder runs an interpreter and has its own tests.

To regenerate after a deliberate change of wording: `python3 tests/test_doctor_checks_pins4.py` prints BASE and
CHANGED; review the diff row by row before pasting it back."""

import sys
from typing import Any, Callable, Dict, List, Tuple

import pytest
from _doctorhelp import NO_PROFILE, R, cpu_host, dgpu, gpu0, gpu_host, kern, nv, same, tor, tuned

from hosttune import doctor
from hosttune.doctor import Context, run_checks
from hosttune.doctor.context import Live
from hosttune.facts import Allocators, Container, Distro, Facts, Numa, NumaNode, Tools, Tuned

Row = Tuple[str, str, str, str]  # status, actual, expected, fix


class Probe(Live):
    """The live host as these tests fix it: 1 TiB disk with 600 GiB free, no lspci output, every GPU idle."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    def disk_free_mb(self, path: str) -> Tuple[int, int]:
        return 1024 * 1024, 600 * 1024

    def lspci_vvv(self) -> str:
        return ""

    def gpu_samples(self) -> Dict[int, Dict[str, Any]]:
        return {g.index: {"utilization_gpu_pct": 0} for g in self.facts.gpus}


CHECKS = [c for c in doctor.CHECKS if c.id != "torch.image_decoder"]


def findings(host: Callable[..., Facts], change: Callable[[Facts], Facts], env: Dict[str, str]) -> Dict[str, Row]:
    facts = change(host())
    ctx = Context(facts=facts, env=dict(env), live=True, cwd="/srv/train", profile=NO_PROFILE, python=None,
                  probe=Probe(facts))
    return {r.id: (r.status, r.actual, r.expected, r.fix) for r in run_checks(ctx, checks=CHECKS).results}


# ---- the hosts: (name, base, change, env) ---------------------------------------------------------------------------
def _d(id_: str, version: str, family: str, name: str = "") -> Callable[[Facts], Facts]:
    return lambda f: R(f, distro=Distro(id=id_, version=version, family=family, name=name))


def _cpu(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, cpu=R(f.cpu, **kw))


def _c(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, container=Container(**kw))


def _lim(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, limits=R(f.limits, **kw))


def _mem(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, memory=R(f.memory, **kw))


def _gpus(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, gpus=tuple(R(g, **kw) for g in f.gpus))


def _both(*changes: Callable[[Facts], Facts]) -> Callable[[Facts], Facts]:
    def apply(f: Facts) -> Facts:
        for c in changes:
            f = c(f)
        return f
    return apply


ONE_NODE = lambda f: R(f, numa=Numa(nodes=(NumaNode(0, tuple(range(8)), 2000),), allowed_mems=(0,)))  # noqa: E731
RDMA = _lim(rdma_devices=2)
SWITCHES = nv(nvswitches=4)

HOSTS: List[Tuple[str, Callable[..., Facts], Callable[[Facts], Facts], Dict[str, str]]] = [
    ("cpu", cpu_host, same, {}),
    ("debian10", cpu_host, _d("debian", "10", "debian"), {}),
    ("debian11", cpu_host, _d("debian", "11", "debian", "Debian"), {}),
    ("ubuntu2204", cpu_host, _d("ubuntu", "22.04", "debian"), {}),
    ("ubuntu2004", cpu_host, _d("ubuntu", "20.04", "debian"), {}),
    ("ubuntu2310", cpu_host, _d("ubuntu", "23.10", "debian"), {}),
    ("ubuntu2304", cpu_host, _d("ubuntu", "23.04", "debian"), {}),
    ("ubuntu24", cpu_host, _d("ubuntu", "24", "debian"), {}),
    ("rocky7", cpu_host, _d("rocky", "7", "rhel"), {}),
    ("rocky8", cpu_host, _d("rocky", "8", "rhel"), {}),
    ("centos8", cpu_host, _d("centos", "8", "rhel"), {}),
    ("centos9", cpu_host, _d("centos", "9", "rhel"), {}),
    ("fedora", cpu_host, _d("fedora", "40", "rhel", "Fedora Linux"), {}),
    ("mint", cpu_host, _d("linuxmint", "21", "debian"), {}),
    ("arch", cpu_host, _d("arch", "", "unknown"), {}),
    ("noversion", cpu_host, _d("debian", "", "debian"), {}),
    ("numa_bal_on", cpu_host, kern(numa_balancing=1), {}),
    ("numa_bal_unknown", cpu_host, kern(numa_balancing=None), {}),
    ("numa_bal_one_node", cpu_host, _both(kern(numa_balancing=1), ONE_NODE), {}),
    ("thp_always", cpu_host, kern(thp="always"), {}),
    ("thp_never", cpu_host, kern(thp="never"), {}),
    ("thp_unknown", cpu_host, kern(thp=None), {}),
    ("thp_defrag_madvise", cpu_host, kern(thp_defrag="madvise"), {}),
    ("thp_defrag_always", cpu_host, kern(thp_defrag="always"), {}),
    ("thp_always_defrag_always", cpu_host, kern(thp="always", thp_defrag="always"), {}),
    ("swap11", cpu_host, kern(swappiness=11), {}),
    ("swap9", cpu_host, kern(swappiness=9), {}),
    ("swap_unknown", cpu_host, kern(swappiness=None), {}),
    ("swap60_noswap", cpu_host, _both(kern(swappiness=60), _mem(swap_total_mb=0)), {}),
    ("gov_powersave", cpu_host, kern(governors=("powersave",)), {}),
    ("gov_mixed_rhel", cpu_host, _both(kern(governors=("performance", "schedutil")), _d("rocky", "9", "rhel")), {}),
    ("gov_none", cpu_host, kern(governors=()), {}),
    ("smt_on", cpu_host, _cpu(smt=True, logical=16, smt_control="on"), {}),
    ("smt_unknown", cpu_host, _cpu(physical=0), {}),
    ("tuned_empty", cpu_host, lambda f: R(f, tuned=Tuned(installed=True)), {}),
    ("tuned_ok", cpu_host, tuned("throughput-performance", ("swappiness", "sysctl.vm.swappiness", "10", "t-p"),
                                 ("governor", "cpu.governor", "performance", "t-p")), {}),
    ("tuned_thp", cpu_host, tuned("hpc-compute", ("thp", "vm.transparent_hugepages", "always", "hpc-compute")), {}),
    ("tuned_gov", cpu_host, tuned("powersave", ("governor", "cpu.governor", "ondemand|powersave", "powersave")), {}),
    ("tuned_swap", cpu_host, tuned("virtual-guest", ("swappiness", "sysctl.vm.swappiness", " 30 ", "virtual-guest"),
                                   ("numa_balancing", "sysctl.kernel.numa_balancing", "1", "virtual-guest")), {}),
    ("tuned_modifiers", cpu_host, tuned("x", ("swappiness", "sysctl.vm.swappiness", ">30", "x"),
                                        ("swappiness", "sysctl.vm.swappiness", "${v}", "x"),
                                        ("epp", "cpu.energy_perf_bias", "powersave", "x"),
                                        ("swappiness", "sysctl.vm.swappiness", "lots", "x")), {}),
    ("tuned_stopped", cpu_host, _both(tuned("hpc-compute", ("thp", "vm.transparent_hugepages", "always", "h")),
                                      lambda f: R(f, tuned=R(f.tuned, running=False))), {}),
    ("tuned_one_node", cpu_host, _both(ONE_NODE, tuned("p", ("numa_balancing", "kernel.numa_balancing", "1", "p"))),
     {}),
    ("tuned_no_governors", cpu_host, _both(kern(governors=()), tuned("p", ("governor", "cpu.governor", "powersave",
                                                                           "p"))), {}),
    ("container_ro", cpu_host, _c(detected=True, runtime="docker", evidence=("/.dockerenv exists", "x"),
                                  proc_sys_readonly=True, sys_readonly=True, cgroup_limits=("cpus 0-3", "2 CPUs")), {}),
    ("container_rw_bad", cpu_host, _both(_c(detected=True, evidence=(), proc_sys_readonly=False, sys_readonly=False,
                                            gpu_nodes=2, driver_gpus=8),
                                         kern(swappiness=60, thp="always", numa_balancing=1)), {}),
    ("container_ro_sys_only", cpu_host, _both(_c(detected=True, runtime="podman", proc_sys_readonly=False,
                                                 sys_readonly=True, gpu_nodes=1),
                                              kern(swappiness=60, governors=("powersave",))), {}),
    ("nspawn", cpu_host, _both(_c(detected=True, runtime="systemd-nspawn"), _lim(nofile_soft=1024),
                               _mem(shm_mb=64)), {}),
    ("cgroup_cpuset", cpu_host, _cpu(allowed_cpus=(0, 1, 2, 3)), {}),
    ("cgroup_quota", cpu_host, _cpu(quota_cpus=2.5), {}),
    ("cgroup_both", cpu_host, _cpu(allowed_cpus=(0, 1, 2), quota_cpus=1.5), {}),
    ("cgroup_unknown", cpu_host, _cpu(logical=0), {}),
    ("omp_8", cpu_host, same, {"OMP_NUM_THREADS": "8"}),
    ("omp_9", cpu_host, same, {"OMP_NUM_THREADS": "9"}),
    ("omp_1", cpu_host, same, {"OMP_NUM_THREADS": "1"}),
    ("omp_0", cpu_host, same, {"OMP_NUM_THREADS": "0"}),
    ("omp_list", cpu_host, same, {"OMP_NUM_THREADS": "4,2"}),
    ("omp_text", cpu_host, same, {"OMP_NUM_THREADS": "four"}),
    ("omp_quota", cpu_host, _cpu(quota_cpus=2.0), {"OMP_NUM_THREADS": "3"}),
    ("nofile_low", cpu_host, _lim(nofile_soft=1024, nofile_hard=4096), {}),
    ("nofile_unknown", cpu_host, _lim(nofile_soft=None, nofile_hard=None), {}),
    ("nofile_unlimited", cpu_host, _lim(nofile_soft=-1, nofile_hard=-1), {}),
    ("memlock_rdma_ok", cpu_host, RDMA, {}),
    ("memlock_rdma_low", cpu_host, _both(RDMA, _lim(memlock_soft=65536, memlock_hard=65536)), {}),
    ("memlock_low_no_rdma", cpu_host, _lim(memlock_soft=65536, memlock_hard=65536), {}),
    ("shm_small", cpu_host, _mem(shm_mb=64), {}),
    ("shm_unknown", cpu_host, _mem(shm_mb=None), {}),
    ("shm_small_mem", cpu_host, _mem(shm_mb=1024, total_mb=4000), {}),
    ("no_allocator", cpu_host, lambda f: R(f, allocators=Allocators()), {}),
    ("tcmalloc_only", cpu_host, lambda f: R(f, allocators=Allocators(tcmalloc="/usr/lib/libtcmalloc.so.4")), {}),
    ("no_numactl", cpu_host, lambda f: R(f, tools=Tools()), {}),
    ("no_numactl_one_node", cpu_host, _both(ONE_NODE, lambda f: R(f, tools=Tools())), {}),
    ("torch_none", cpu_host, lambda f: R(f, torch=None), {}),
    ("torch_old", cpu_host, tor(version="1.13.1"), {}),
    ("torch_21", cpu_host, tor(version="2.1.0"), {}),
    ("torch_error", cpu_host, tor(version=None, error="No module named 'torch'"), {}),
    ("no_venv", cpu_host, tor(in_venv=False), {}),
    ("venv_unknown", cpu_host, tor(in_venv=None), {}),
    ("debug_env", cpu_host, same, {"CUDA_LAUNCH_BLOCKING": "1", "TORCH_SHOW_CPP_STACKTRACES": "1"}),
    ("debug_env_off", cpu_host, same, {"CUDA_LAUNCH_BLOCKING": "0", "NCCL_DEBUG": "WARN"}),
    ("alloc_ok", cpu_host, same, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ("alloc_bad", cpu_host, same, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}),
    ("onednn_cap", cpu_host, same, {"ONEDNN_MAX_CPU_ISA": "AVX2"}),
    ("gpu", gpu_host, same, {}),
    ("no_driver", gpu_host, _both(kern(modules=()), nv(driver=None, nvml="driver_not_loaded")), {}),
    ("nouveau", gpu_host, kern(modules=("nouveau",)), {}),
    ("nvml_mismatch", gpu_host, nv(nvml="version_mismatch", nvml_error="Driver/library version mismatch"), {}),
    ("nvml_no_permission", gpu_host, nv(nvml="no_permission"), {}),
    ("nvml_skipped", gpu_host, nv(nvml="skipped"), {}),
    ("cuda_new", gpu_host, tor(cuda="12.6"), {}),
    ("cuda_13", gpu_host, tor(cuda="13.0"), {}),
    ("cuda_118", gpu_host, tor(cuda="11.8"), {}),
    ("driver_old", gpu_host, nv(driver="470.42.01", cuda_driver="11.4"), {}),
    ("driver_unknown", gpu_host, nv(driver=None, cuda_driver=None), {}),
    ("torch_cpu_build", gpu_host, tor(cuda=None, cuda_available=False, device_count=0), {}),
    ("torch_sees_one", gpu_host, tor(device_count=1), {}),
    ("cudnn_differs", gpu_host, tor(cudnn="8.9.2", nccl="2.18.1"), {}),
    ("ld_cuda", gpu_host, same, {"LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64:/opt/x"}),
    ("persistence_off", gpu_host, gpu0(persistence_mode=False), {}),
    ("persistence_unknown", gpu_host, _gpus(persistence_mode=None), {}),
    ("ecc_off", gpu_host, gpu0(ecc_enabled=False), {}),
    ("ecc_pending_off", gpu_host, gpu0(ecc_enabled=True, ecc_pending=False), {}),
    ("ecc_geforce", gpu_host, _gpus(name="NVIDIA GeForce RTX 4090", ecc_enabled=None, ecc_pending=None), {}),
    ("ecc_errors", gpu_host, gpu0(ecc_uncorrected_volatile=1), {}),
    ("ecc_errors_unknown", gpu_host, _gpus(ecc_uncorrected_volatile=None), {}),
    ("retire_pending", gpu_host, gpu0(retired_pages_pending=True), {}),
    ("remap_pending", gpu_host, gpu0(remapped_rows_pending=True), {}),
    ("remap_failure", gpu_host, gpu0(remapped_rows_failure=True), {}),
    ("remap_unknown", gpu_host, _gpus(remapped_rows_failure=None, remapped_rows_pending=None,
                                      retired_pages_pending=None), {}),
    ("clock_sw_power", gpu_host, gpu0(clock_event_reasons=0x4), {}),
    ("clock_hw_slow", gpu_host, gpu0(clock_event_reasons=0x8), {}),
    ("clock_thermal_both", gpu_host, _gpus(clock_event_reasons=0x40 | 0x20), {}),
    ("clock_unknown", gpu_host, _gpus(clock_event_reasons=None), {}),
    ("temp_74", gpu_host, gpu0(temperature_c=74), {}),
    ("temp_75", gpu_host, gpu0(temperature_c=75), {}),
    ("temp_84", gpu_host, gpu0(temperature_c=84), {}),
    ("temp_85", gpu_host, gpu0(temperature_c=85), {}),
    ("temp_79_of_90", gpu_host, gpu0(temperature_c=79, temp_slowdown_c=90), {}),
    ("temp_80_of_90", gpu_host, gpu0(temperature_c=80, temp_slowdown_c=90), {}),
    ("temp_90_of_90", gpu_host, _gpus(temperature_c=90, temp_slowdown_c=90), {}),
    ("temp_unknown", gpu_host, _gpus(temperature_c=None), {}),
    ("fabric_needed", gpu_host, SWITCHES, {}),
    ("fabric_installed", gpu_host, nv(nvswitches=4, fabric_manager_installed=True, fabric_manager_running=False), {}),
    ("fabric_running", gpu_host, nv(nvswitches=4, fabric_manager_installed=True, fabric_manager_running=True), {}),
    ("gpu_numa_unknown", gpu_host, gpu0(numa_node=-1), {}),
    ("gpu_numa_local_cpus", gpu_host, gpu0(numa_node=-1, local_cpus=(0, 1, 2, 3)), {}),
    ("gpu_numa_all_cpus", gpu_host, gpu0(numa_node=-1, local_cpus=tuple(range(8))), {}),
    ("iommu_on", gpu_host, kern(cmdline="root=/dev/sda1 intel_iommu=on"), {}),
    ("iommu_pt", gpu_host, kern(cmdline="root=/dev/sda1 intel_iommu=on iommu=pt"), {}),
    ("amd_iommu", gpu_host, kern(cmdline="amd_iommu=on"), {}),
    ("one_gpu", gpu_host, lambda f: R(f, gpus=f.gpus[:1]), {}),
    ("pci_gpus", gpu_host, _both(_gpus(source="pci"), nv(nvml="driver_not_loaded")), {}),
    ("nvswitch_not_gpu", gpu_host, lambda f: R(f, gpus=f.gpus + (dgpu(2, pci_class="0x068000"),)), {}),
    ("cvd_ok", gpu_host, same, {"CUDA_VISIBLE_DEVICES": "1"}),
    ("cvd_past", gpu_host, same, {"CUDA_VISIBLE_DEVICES": "0,2"}),
    ("cvd_empty", gpu_host, same, {"CUDA_VISIBLE_DEVICES": ""}),
    ("cvd_uuid", gpu_host, same, {"CUDA_VISIBLE_DEVICES": "GPU-00000001"}),
    ("cvd_bad_uuid", gpu_host, same, {"CUDA_VISIBLE_DEVICES": "GPU-ffff"}),
    ("gpu_container", gpu_host, _c(detected=True, runtime="docker", gpu_nodes=1, driver_gpus=2), {}),
]

HOSTS += [(f"debug-{var}-{val or 'empty'}", cpu_host, same, {var: val}) for var, val in [
    ("CUDA_LAUNCH_BLOCKING", "0"), ("CUDA_LAUNCH_BLOCKING", ""), ("NCCL_DEBUG", "info"), ("NCCL_DEBUG", "TRACE"),
    ("NCCL_DEBUG", "VERSION"), ("NCCL_DEBUG_SUBSYS", "ALL"), ("NCCL_DEBUG_SUBSYS", ""),
    ("TORCH_DISTRIBUTED_DEBUG", "detail"), ("TORCH_DISTRIBUTED_DEBUG", "INFO"), ("TORCH_DISTRIBUTED_DEBUG", "OFF"),
    ("PYTORCH_NO_CUDA_MEMORY_CACHING", "1"), ("PYTORCH_NO_CUDA_MEMORY_CACHING", "0"), ("TORCH_COMPILE_DEBUG", "1"),
    ("TORCH_LOGS", "+dynamo"), ("TORCH_LOGS", ""), ("TORCH_SHOW_CPP_STACKTRACES", "0"), ("TORCH_USE_CUDA_DSA", "1"),
    ("CUDA_DEVICE_DEBUG", "1"), ("PYTORCH_DEBUG", "1"), ("PYTORCH_DEBUG", "0")]]
HOSTS += [(f"cpu-build-driver-{cd or 'none'}", gpu_host,
           _both(tor(cuda=None, cuda_available=False), nv(cuda_driver=cd)), {})
          for cd in ("13.0", "12.9", "12.8", "12.7", "12.6", "12.5", "12.4", "12.1", "12.0", "11.8", "11.4", None)]
HOSTS += [(f"driver-{drv}-cuda-{cu}", gpu_host, _both(nv(driver=drv), tor(cuda=cu)), {}) for drv, cu in [
    ("550.54.14", "12.4"), ("550.54.13", "12.4"), ("525.60.13", "12.4"), ("525.60.12", "12.4"),
    ("580.65.06", "13.0"), ("580.1", "13.0"), ("579.99", "13.0"), ("520.61.05", "11.8"), ("450.80.02", "11.8"),
    ("450.80.01", "11.8"), ("570.26", "12.8"), ("535.54.03", "12.2"), ("440.33", "10.2"), ("440.32", "10.2"),
    ("560.28.03", "12.7"), ("560.28.03", "14.0"), ("550.54.15", "12")]]
HOSTS += [
    ("torch-cuda-unavailable", gpu_host, tor(cuda_available=False), {}),
    ("torch-cuda-unavailable-no-python", gpu_host, tor(cuda_available=False, python=""), {}),
    ("torch-cpu-no-python", gpu_host, tor(cuda=None, python=""), {}),
    ("torch-old-no-python", cpu_host, tor(version="2.5.1", python=""), {}),
    ("torch-26", cpu_host, tor(version="2.6"), {}),
    ("alloc-both", cpu_host, same, {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:20",
                                    "PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.6"}),
    ("alloc-split-21", cpu_host, same, {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:21"}),
    ("alloc-gc-1", cpu_host, same, {"PYTORCH_ALLOC_CONF": "garbage_collection_threshold:1.0"}),
    ("alloc-roundup", cpu_host, same, {"PYTORCH_CUDA_ALLOC_CONF": "roundup_power2_divisions:[256:1,>:4]"}),
    ("alloc-threads", cpu_host, same, {"PYTORCH_CUDA_ALLOC_CONF": "pinned_num_register_threads:256"}),
    ("alloc-bool", cpu_host, same, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:yes"}),
    ("cvd-minus-one", gpu_host, same, {"CUDA_VISIBLE_DEVICES": "-1"}),
    ("cvd-no-gpus", cpu_host, same, {"CUDA_VISIBLE_DEVICES": "0"}),
    ("cvd-empty-no-gpus", cpu_host, same, {"CUDA_VISIBLE_DEVICES": ""}),
    ("cvd-twice", gpu_host, same, {"CUDA_VISIBLE_DEVICES": "1,1"}),
    ("onednn-over", cpu_host, _cpu(flags=("avx2",)), {"ATEN_CPU_CAPABILITY": "avx512"}),
    ("onednn-arm", cpu_host, _cpu(arch="aarch64"), {}),
    ("onednn-two-caps", cpu_host, _cpu(flags=("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")),
     {"ONEDNN_MAX_CPU_ISA": "AVX2", "DNNL_MAX_CPU_ISA": "AVX512_CORE"}),
]

# ---- the findings (generated by _regenerate, then reviewed) --------------------------------------------------------
BASE: Dict[str, Dict[str, Row]] = {
    'cpu_host': {'os.distro': ('pass', 'Debian GNU/Linux 12.5', 'Debian 11, 12, 13', ''),
              'os.numa_balancing': ('pass', '0 (2 nodes)', '0', ''),
              'os.thp': ('pass', 'madvise', 'madvise or never', ''),
              'os.swappiness': ('pass', '10', '<= 10', ''),
              'os.governor': ('pass', 'performance', 'performance', ''),
              'os.smt': ('pass', 'off: 8 logical CPUs on 8 cores, control=off', 'reported', ''),
              'os.container': ('pass', 'not a container', 'reported', ''),
              'os.tuned': ('pass',
                           'tuned not installed',
                           'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor',
                           ''),
              'cpu.cgroup_limit': ('pass', '8 of 8 CPUs usable', '8 (no smaller limit)', ''),
              'cpu.omp_threads': ('pass',
                                  'unset (hosttune exec / torchrun decide)',
                                  'unset, or matching the plan',
                                  ''),
              'cpu.nofile': ('pass', '1048576', '>= 65536', ''),
              'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
              'storage.shm': ('pass', '32000 MiB', '>= 50% (32000 MiB)', ''),
              'storage.data': ('skip', 'no --data PATH given', 'local nvme/ssd', ''),
              'storage.free_space': ('pass', '/srv/train: 600 GiB free of 1024 GiB', '>= 50 GiB and >= 10% free', ''),
              'tools.allocator': ('pass', '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', 'jemalloc or tcmalloc', ''),
              'tools.numactl': ('pass', '/usr/bin/numactl', 'numactl', ''),
              'nvidia.driver': ('pass',
                                'no NVIDIA GPU on the PCI bus (CPU host)',
                                'driver loaded when GPUs are present',
                                ''),
              'nvidia.nouveau': ('pass', 'not loaded', 'not loaded', ''),
              'nvidia.nvml': ('pass', 'no NVIDIA GPU (NVML: skipped)', 'ok on GPU hosts', ''),
              'nvidia.driver_cuda': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.torch_build': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.cudnn_nccl': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.persistence': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.ecc_mode': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.ecc_errors': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.pending_retire': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.remap_failure': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.pcie_link': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.clock_reasons': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.temperature': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.fabric_manager': ('pass', 'no NVSwitch: not needed', 'running on NVSwitch hosts', ''),
              'nvidia.gpu_numa': ('skip', 'no NVIDIA GPU on this host', '', ''),
              'nvidia.iommu': ('pass', '0 GPU: no peer-to-peer', 'iommu=pt when the IOMMU is on', ''),
              'nvidia.acs': ('pass', '0 GPU: no peer-to-peer', 'ACS off on GPU bridges', ''),
              'torch.version': ('pass', '2.6.0 (/opt/train/bin/python)', '>= 2.6', ''),
              'torch.debug_env': ('pass', 'none set', 'none set', ''),
              'torch.alloc_conf': ('pass', 'unset', 'unset or valid', ''),
              'torch.cuda_visible_devices': ('pass', 'unset (all GPUs visible)', 'unset or existing GPUs', ''),
              'torch.onednn': ('pass',
                               'onednn=-  isa=-  aten=DEFAULT  bf16=emulated (this CPU has no avx512_bf16/amx_bf16)',
                               'no ISA cap below the CPU',
                               ''),
              'torch.venv': ('pass', '/opt/train/bin/python (venv/conda)', 'a venv or conda env', ''),
              'hosttune.profile': ('warn',
                                   'no generated profile (exec makes throughput for the host each run)',
                                   'present and valid',
                                   'hosttune profile generate'),
              'hosttune.profile_fresh': ('skip', 'no profile that loads (see hosttune.profile)', '', '')},
 'gpu_host': {'os.distro': ('pass', 'Debian GNU/Linux 12.5', 'Debian 11, 12, 13', ''),
              'os.numa_balancing': ('pass', '0 (2 nodes)', '0', ''),
              'os.thp': ('pass', 'madvise', 'madvise or never', ''),
              'os.swappiness': ('pass', '10', '<= 10', ''),
              'os.governor': ('pass', 'performance', 'performance', ''),
              'os.smt': ('pass', 'off: 8 logical CPUs on 8 cores, control=off', 'reported', ''),
              'os.container': ('pass', 'not a container', 'reported', ''),
              'os.tuned': ('pass',
                           'tuned not installed',
                           'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor',
                           ''),
              'cpu.cgroup_limit': ('pass', '8 of 8 CPUs usable', '8 (no smaller limit)', ''),
              'cpu.omp_threads': ('pass',
                                  'unset (hosttune exec / torchrun decide)',
                                  'unset, or matching the plan',
                                  ''),
              'cpu.nofile': ('pass', '1048576', '>= 65536', ''),
              'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
              'storage.shm': ('pass', '32000 MiB', '>= 50% (32000 MiB)', ''),
              'storage.data': ('skip', 'no --data PATH given', 'local nvme/ssd', ''),
              'storage.free_space': ('pass', '/srv/train: 600 GiB free of 1024 GiB', '>= 50 GiB and >= 10% free', ''),
              'tools.allocator': ('pass', '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', 'jemalloc or tcmalloc', ''),
              'tools.numactl': ('pass', '/usr/bin/numactl', 'numactl', ''),
              'nvidia.driver': ('pass', '2 GPU(s), driver 550.54.15', 'driver loaded', ''),
              'nvidia.nouveau': ('pass', 'not loaded', 'not loaded', ''),
              'nvidia.nvml': ('pass', 'ok, driver 550.54.15', 'ok', ''),
              'nvidia.driver_cuda': ('pass', 'driver 550.54.15, torch built with CUDA 12.4', '>= 550.54.14', ''),
              'nvidia.torch_build': ('pass', 'torch 2.6.0, CUDA 12.4, 2 device(s)', 'a CUDA build', ''),
              'nvidia.cudnn_nccl': ('pass',
                                    'cuDNN torch 9.1.0 / system 9.1.0; NCCL torch 2.21.5 / system 2.21.5',
                                    "torch's own libraries",
                                    ''),
              'nvidia.persistence': ('pass', 'on (2 GPUs)', 'on', ''),
              'nvidia.ecc_mode': ('pass', 'on (2 datacenter GPUs)', 'on', ''),
              'nvidia.ecc_errors': ('pass', '0 on 2 GPUs', '0', ''),
              'nvidia.pending_retire': ('pass', 'nothing pending on 2 GPUs', 'nothing pending', ''),
              'nvidia.remap_failure': ('pass', 'no failure on 2 GPUs', 'no failure', ''),
              'nvidia.pcie_link': ('pass',
                                   'idle: not judged (2 GPUs idle; link speed drops at idle by design)',
                                   'max gen/width under load',
                                   ''),
              'nvidia.clock_reasons': ('pass', 'none on 2 GPUs', 'no thermal/power events', ''),
              'nvidia.temperature': ('pass',
                                     'max 41 C (GPU0 (0000:1b:00.0))',
                                     'below 75 C (warn from 75 C, fail from 85 C: default lines: the GPU reports no '
                                     'slowdown threshold)',
                                     ''),
              'nvidia.fabric_manager': ('pass', 'no NVSwitch: not needed', 'running on NVSwitch hosts', ''),
              'nvidia.gpu_numa': ('pass', 'GPU0->node0, GPU1->node1', 'known node per GPU', ''),
              'nvidia.iommu': ('pass', 'no IOMMU arguments', 'iommu=pt when on', ''),
              'nvidia.acs': ('pass', 'no bridge with ACS redirect enabled', 'ACS off', ''),
              'torch.version': ('pass', '2.6.0 (/opt/train/bin/python)', '>= 2.6', ''),
              'torch.debug_env': ('pass', 'none set', 'none set', ''),
              'torch.alloc_conf': ('pass', 'unset', 'unset or valid', ''),
              'torch.cuda_visible_devices': ('pass', 'unset (all GPUs visible)', 'unset or existing GPUs', ''),
              'torch.onednn': ('pass',
                               'onednn=-  isa=-  aten=DEFAULT  bf16=emulated (this CPU has no avx512_bf16/amx_bf16)',
                               'no ISA cap below the CPU',
                               ''),
              'torch.venv': ('pass', '/opt/train/bin/python (venv/conda)', 'a venv or conda env', ''),
              'hosttune.profile': ('warn',
                                   'no generated profile (exec makes throughput for the host each run)',
                                   'present and valid',
                                   'hosttune profile generate'),
              'hosttune.profile_fresh': ('skip', 'no profile that loads (see hosttune.profile)', '', '')}}

CHANGED: Dict[str, Dict[str, Row]] = {'debian10': {'os.distro': ('warn',
                            'debian 10 (end of standard support)',
                            'Debian 11, 12, 13',
                            'upgrade the OS to a supported release; drivers and CUDA repos no longer target it')},
 'debian11': {'os.distro': ('pass', 'Debian 11', 'Debian 11, 12, 13', '')},
 'ubuntu2204': {'os.distro': ('pass', 'ubuntu 22.04', 'Ubuntu 22.04, 24.04, 26.04 LTS', '')},
 'ubuntu2004': {'os.distro': ('warn',
                              'ubuntu 20.04 (end of standard support)',
                              'Ubuntu 22.04, 24.04, 26.04 LTS',
                              'upgrade the OS to a supported release; drivers and CUDA repos no longer target it')},
 'ubuntu2310': {'os.distro': ('warn',
                              'ubuntu 23.10 (interim release, 9 months of support)',
                              'Ubuntu 22.04, 24.04, 26.04 LTS',
                              'use an LTS release (xx.04 in even years)')},
 'ubuntu2304': {'os.distro': ('warn',
                              'ubuntu 23.04 (interim release, 9 months of support)',
                              'Ubuntu 22.04, 24.04, 26.04 LTS',
                              'use an LTS release (xx.04 in even years)')},
 'ubuntu24': {'os.distro': ('warn',
                            'ubuntu 24 (interim release, 9 months of support)',
                            'Ubuntu 22.04, 24.04, 26.04 LTS',
                            'use an LTS release (xx.04 in even years)')},
 'rocky7': {'os.distro': ('warn',
                          'rocky 7 (end of standard support)',
                          'Rocky 8, 9, 10',
                          'upgrade the OS to a supported release; drivers and CUDA repos no longer target it')},
 'rocky8': {'os.distro': ('pass', 'rocky 8', 'Rocky 8, 9, 10', '')},
 'centos8': {'os.distro': ('warn',
                           'centos 8 (end of standard support)',
                           'CentOS Stream 9, 10',
                           'upgrade the OS to a supported release; drivers and CUDA repos no longer target it')},
 'centos9': {'os.distro': ('pass', 'centos 9', 'CentOS Stream 9, 10', '')},
 'fedora': {'os.distro': ('warn',
                          'Fedora Linux 40',
                          'Debian/Ubuntu LTS or RHEL-family',
                          'not a target distro: fixes below use the dnf forms; check them before use')},
 'mint': {'os.distro': ('warn',
                        'linuxmint 21',
                        'Debian/Ubuntu LTS or RHEL-family',
                        'not a target distro: fixes below use the apt forms; check them before use')},
 'arch': {'os.distro': ('warn',
                        'arch',
                        'Debian/Ubuntu LTS or RHEL-family',
                        'unknown distro family: fixes show both apt and dnf forms')},
 'noversion': {'os.distro': ('warn',
                             'debian',
                             'Debian 11, 12, 13',
                             'could not read the distro version (/etc/os-release)')},
 'numa_bal_on': {'os.numa_balancing': ('warn',
                                       '1 (2 nodes)',
                                       '0',
                                       'hosttune tune apply --only numa_balancing   # applies it and keeps it; by '
                                       'hand:\n'
                                       'sysctl -w kernel.numa_balancing=0\n'
                                       "echo 'kernel.numa_balancing = 0' >> /etc/sysctl.d/90-hosttune.conf   # keep "
                                       'it after reboot')},
 'numa_bal_unknown': {'os.numa_balancing': ('skip', 'kernel.numa_balancing not readable', '0', '')},
 'numa_bal_one_node': {'os.numa_balancing': ('pass', '1 NUMA node: not relevant', '0 on multi-node hosts', ''),
                       'tools.numactl': ('pass', 'one NUMA node: not needed', 'numactl on multi-node hosts', '')},
 'thp_always': {'os.thp': ('warn',
                           'always',
                           'madvise or never',
                           'hosttune tune apply --only thp   # applies it and keeps it; by hand:\n'
                           'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled\n'
                           'sed -i \'s/^GRUB_CMDLINE_LINUX_DEFAULT="/&transparent_hugepage=madvise /\' '
                           '/etc/default/grub && update-grub && reboot   # keep it after reboot')},
 'thp_never': {'os.thp': ('pass', 'never', 'madvise or never', '')},
 'thp_unknown': {'os.thp': ('skip', 'transparent_hugepage/enabled not readable', 'madvise or never', '')},
 'thp_defrag_madvise': {'os.thp': ('pass', 'madvise', 'madvise or never, defrag madvise', '')},
 'thp_defrag_always': {'os.thp': ('warn',
                                  'madvise, defrag always',
                                  'madvise or never, defrag madvise',
                                  'hosttune tune apply --only thp   # applies it and keeps it; by hand:\n'
                                  'echo madvise > /sys/kernel/mm/transparent_hugepage/defrag')},
 'thp_always_defrag_always': {'os.thp': ('warn',
                                         'always, defrag always',
                                         'madvise or never, defrag madvise',
                                         'hosttune tune apply --only thp   # applies it and keeps it; by hand:\n'
                                         'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled\n'
                                         'sed -i \'s/^GRUB_CMDLINE_LINUX_DEFAULT="/&transparent_hugepage=madvise /\' '
                                         '/etc/default/grub && update-grub && reboot   # keep it after reboot\n'
                                         'echo madvise > /sys/kernel/mm/transparent_hugepage/defrag')},
 'swap11': {'os.swappiness': ('warn',
                              '11',
                              '<= 10',
                              'hosttune tune apply --only swappiness   # applies it and keeps it; by hand:\n'
                              'sysctl -w vm.swappiness=10\n'
                              "echo 'vm.swappiness = 10' >> /etc/sysctl.d/90-hosttune.conf   # keep it after "
                              'reboot')},
 'swap9': {'os.swappiness': ('pass', '9', '<= 10', '')},
 'swap_unknown': {'os.swappiness': ('skip', 'vm.swappiness not readable', '<= 10', '')},
 'swap60_noswap': {'os.swappiness': ('pass', '60 (no swap configured)', '<= 10 when swap exists', '')},
 'gov_powersave': {'os.governor': ('warn',
                                   'powersave',
                                   'performance',
                                   'hosttune tune apply --only governor   # applies it and keeps it; by hand:\n'
                                   'echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor\n'
                                   "echo 'w /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - "
                                   "performance' > /etc/tmpfiles.d/90-hosttune-governor.conf   # keeps it after "
                                   'reboot')},
 'gov_mixed_rhel': {'os.distro': ('pass', 'rocky 9', 'Rocky 8, 9, 10', ''),
                    'os.governor': ('warn',
                                    'performance,schedutil',
                                    'performance',
                                    'hosttune tune apply --only governor   # applies it and keeps it; by hand:\n'
                                    'echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor\n'
                                    'tuned-adm profile throughput-performance   # keeps it after reboot')},
 'gov_none': {'os.governor': ('skip',
                              'no cpufreq driver (typical of VMs: the hypervisor controls CPU frequency)',
                              'performance',
                              '')},
 'smt_on': {'os.smt': ('pass', 'on: 16 logical CPUs on 8 cores, control=on', 'reported', ''),
            'cpu.cgroup_limit': ('warn',
                                 'effective 8 of 16 CPUs (cpuset 8 CPUs)',
                                 '16 CPUs, or threads sized to 8',
                                 'run training through `hosttune exec` (sizes threads to 8), or export '
                                 'OMP_NUM_THREADS=8; or give the container more CPUs (docker --cpus/--cpuset-cpus, '
                                 'systemd CPUQuota=/AllowedCPUs=)')},
 'smt_unknown': {'os.smt': ('skip', 'CPU topology not readable', 'reported', '')},
 'tuned_empty': {'os.tuned': ('pass',
                              'tuned has no active profile',
                              'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor',
                              '')},
 'tuned_ok': {'os.tuned': ('pass',
                           'profile throughput-performance (running)',
                           'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor',
                           '')},
 'tuned_thp': {'os.tuned': ('warn',
                            'profile hpc-compute (running) sets vm.transparent_hugepages=always (hpc-compute)',
                            'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor',
                            'hosttune tune apply   # writes a hosttune tuned profile on top of hpc-compute with the '
                            'training settings and switches tuned to it')},
 'tuned_gov': {'os.tuned': ('warn',
                            'profile powersave (running) sets cpu.governor=ondemand|powersave (powersave)',
                            'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor',
                            'hosttune tune apply   # writes a hosttune tuned profile on top of powersave with the '
                            'training settings and switches tuned to it')},
 'tuned_swap': {'os.tuned': ('warn',
                             'profile virtual-guest (running) sets sysctl.vm.swappiness=30 (virtual-guest); '
                             'sysctl.kernel.numa_balancing=1 (virtual-guest)',
                             'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor',
                             'hosttune tune apply   # writes a hosttune tuned profile on top of virtual-guest with '
                             'the training settings and switches tuned to it')},
 'tuned_modifiers': {'os.tuned': ('pass',
                                  'profile x (running)',
                                  'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor',
                                  '')},
 'tuned_stopped': {'os.tuned': ('warn',
                                'profile hpc-compute (not running now, applies it when started) sets '
                                'vm.transparent_hugepages=always (h)',
                                'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor',
                                'hosttune tune apply   # writes a hosttune tuned profile on top of hpc-compute with '
                                'the training settings and switches tuned to it')},
 'tuned_one_node': {'os.numa_balancing': ('pass', '1 NUMA node: not relevant', '0 on multi-node hosts', ''),
                    'os.tuned': ('pass',
                                 'profile p (running)',
                                 'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor',
                                 ''),
                    'tools.numactl': ('pass', 'one NUMA node: not needed', 'numactl on multi-node hosts', '')},
 'tuned_no_governors': {'os.governor': ('skip',
                                        'no cpufreq driver (typical of VMs: the hypervisor controls CPU frequency)',
                                        'performance',
                                        ''),
                        'os.tuned': ('pass',
                                     'profile p (running)',
                                     'no setting that contradicts os.thp, os.swappiness, os.numa_balancing, '
                                     'os.governor',
                                     '')},
 'container_ro': {'os.container': ('pass',
                                   'docker (/.dockerenv exists); /proc/sys and /sys read-only: host settings are the '
                                   "host's to change; limits from its cgroup: cpus 0-3, 2 CPUs",
                                   'reported',
                                   '')},
 'container_rw_bad': {'os.numa_balancing': ('warn',
                                            '1 (2 nodes)',
                                            '0',
                                            "inside a container (unknown runtime) /proc/sys is the host's: a change "
                                            'here changes it for every container on the host and is lost at its '
                                            "reboot; set it on the host (a pod's securityContext.sysctls cannot: "
                                            'kernel.numa_balancing is not a namespaced sysctl)\n'
                                            'on the host:\n'
                                            'hosttune tune apply --only numa_balancing   # applies it and keeps it; '
                                            'by hand:\n'
                                            'sysctl -w kernel.numa_balancing=0\n'
                                            "echo 'kernel.numa_balancing = 0' >> /etc/sysctl.d/90-hosttune.conf   # "
                                            'keep it after reboot'),
                      'os.thp': ('warn',
                                 'always',
                                 'madvise or never',
                                 "inside a container (unknown runtime) /sys is the host's: a change here changes it "
                                 'for every container on the host and is lost at its reboot; set it on the host '
                                 "(/sys is the host's kernel, no pod setting reaches it)\n"
                                 'on the host:\n'
                                 'hosttune tune apply --only thp   # applies it and keeps it; by hand:\n'
                                 'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled\n'
                                 'sed -i \'s/^GRUB_CMDLINE_LINUX_DEFAULT="/&transparent_hugepage=madvise /\' '
                                 '/etc/default/grub && update-grub && reboot   # keep it after reboot'),
                      'os.swappiness': ('warn',
                                        '60',
                                        '<= 10',
                                        "inside a container (unknown runtime) /proc/sys is the host's: a change here "
                                        'changes it for every container on the host and is lost at its reboot; set '
                                        "it on the host (a pod's securityContext.sysctls cannot: vm.swappiness is "
                                        'not a namespaced sysctl)\n'
                                        'on the host:\n'
                                        'hosttune tune apply --only swappiness   # applies it and keeps it; by '
                                        'hand:\n'
                                        'sysctl -w vm.swappiness=10\n'
                                        "echo 'vm.swappiness = 10' >> /etc/sysctl.d/90-hosttune.conf   # keep it "
                                        'after reboot'),
                      'os.container': ('pass',
                                       'unknown runtime (?); /proc/sys and /sys writable (privileged): a change '
                                       'there changes the host; limits from its cgroup: none; 2 GPU device nodes '
                                       "passed in of the driver's 8",
                                       'reported',
                                       '')},
 'container_ro_sys_only': {'os.swappiness': ('warn',
                                             '60',
                                             '<= 10',
                                             "inside a container (podman) /proc/sys is the host's: a change here "
                                             'changes it for every container on the host and is lost at its reboot; '
                                             "set it on the host (a pod's securityContext.sysctls cannot: "
                                             'vm.swappiness is not a namespaced sysctl)\n'
                                             'on the host:\n'
                                             'hosttune tune apply --only swappiness   # applies it and keeps it; by '
                                             'hand:\n'
                                             'sysctl -w vm.swappiness=10\n'
                                             "echo 'vm.swappiness = 10' >> /etc/sysctl.d/90-hosttune.conf   # keep "
                                             'it after reboot'),
                           'os.governor': ('warn',
                                           'powersave',
                                           'performance',
                                           'read-only inside a container (podman): set it on the host (/sys is the '
                                           "host's kernel, no pod setting reaches it)\n"
                                           'on the host:\n'
                                           'hosttune tune apply --only governor   # applies it and keeps it; by '
                                           'hand:\n'
                                           'echo performance | tee '
                                           '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor\n'
                                           "echo 'w /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - "
                                           "performance' > /etc/tmpfiles.d/90-hosttune-governor.conf   # keeps it "
                                           'after reboot'),
                           'os.container': ('pass',
                                            "podman (?); /sys read-only: host settings are the host's to change; "
                                            'limits from its cgroup: none; 1 GPU device nodes passed in',
                                            'reported',
                                            '')},
 'nspawn': {'os.container': ('pass',
                             'systemd-nspawn (?); /proc/sys and /sys writable (privileged): a change there changes '
                             'the host; limits from its cgroup: none',
                             'reported',
                             ''),
            'cpu.nofile': ('warn',
                           '1024',
                           '>= 65536',
                           'ulimit -n 65536   # this shell\n'
                           'in a container the runtime sets it: systemd-nspawn --rlimit=RLIMIT_NOFILE=65536:1048576; '
                           "Kubernetes: the node's container runtime (LimitNOFILE of containerd's or cri-o's unit)"),
            'storage.shm': ('fail',
                            '64 MiB',
                            '>= 50% (32000 MiB)',
                            'hosttune tune apply --only shm   # applies it and keeps it; by hand:\n'
                            'docker run --shm-size=16g ... (or --ipc=host); Kubernetes: an emptyDir with medium: '
                            'Memory on /dev/shm\n'
                            "host: mount -o remount,size=50% /dev/shm && echo 'tmpfs /dev/shm tmpfs "
                            "defaults,size=50% 0 0' >> /etc/fstab")},
 'cgroup_cpuset': {'cpu.cgroup_limit': ('warn',
                                        'effective 4 of 8 CPUs (cpuset 4 CPUs)',
                                        '8 CPUs, or threads sized to 4',
                                        'run training through `hosttune exec` (sizes threads to 4), or export '
                                        'OMP_NUM_THREADS=4; or give the container more CPUs (docker '
                                        '--cpus/--cpuset-cpus, systemd CPUQuota=/AllowedCPUs=)')},
 'cgroup_quota': {'cpu.cgroup_limit': ('warn',
                                       'effective 2 of 8 CPUs (cpu.max quota 2.5 CPUs)',
                                       '8 CPUs, or threads sized to 2',
                                       'run training through `hosttune exec` (sizes threads to 2), or export '
                                       'OMP_NUM_THREADS=2; or give the container more CPUs (docker '
                                       '--cpus/--cpuset-cpus, systemd CPUQuota=/AllowedCPUs=)')},
 'cgroup_both': {'cpu.cgroup_limit': ('warn',
                                      'effective 1 of 8 CPUs (cpuset 3 CPUs, cpu.max quota 1.5 CPUs)',
                                      '8 CPUs, or threads sized to 1',
                                      'run training through `hosttune exec` (sizes threads to 1), or export '
                                      'OMP_NUM_THREADS=1; or give the container more CPUs (docker '
                                      '--cpus/--cpuset-cpus, systemd CPUQuota=/AllowedCPUs=)')},
 'cgroup_unknown': {'os.smt': ('skip', 'CPU topology not readable', 'reported', ''),
                    'cpu.cgroup_limit': ('skip', 'CPU count not readable', '', '')},
 'omp_8': {'cpu.omp_threads': ('pass', '8 (<= 8 usable cores; no profile to compare with)', '<= 8', '')},
 'omp_9': {'cpu.omp_threads': ('warn',
                               '9 threads for 8 usable cores',
                               '<= 8',
                               'export OMP_NUM_THREADS=8   # or unset it and launch with `hosttune exec`')},
 'omp_1': {'cpu.omp_threads': ('pass', '1 (<= 8 usable cores; no profile to compare with)', '<= 8', '')},
 'omp_0': {'cpu.omp_threads': ('warn',
                               "OMP_NUM_THREADS='0' is not a positive integer",
                               'a positive integer',
                               'unset OMP_NUM_THREADS (and remove it from ~/.bashrc or /etc/environment)')},
 'omp_list': {'cpu.omp_threads': ('pass', '4 (<= 8 usable cores; no profile to compare with)', '<= 8', '')},
 'omp_text': {'cpu.omp_threads': ('warn',
                                  "OMP_NUM_THREADS='four' is not a positive integer",
                                  'a positive integer',
                                  'unset OMP_NUM_THREADS (and remove it from ~/.bashrc or /etc/environment)')},
 'omp_quota': {'cpu.cgroup_limit': ('warn',
                                    'effective 2 of 8 CPUs (cpu.max quota 2 CPUs)',
                                    '8 CPUs, or threads sized to 2',
                                    'run training through `hosttune exec` (sizes threads to 2), or export '
                                    'OMP_NUM_THREADS=2; or give the container more CPUs (docker '
                                    '--cpus/--cpuset-cpus, systemd CPUQuota=/AllowedCPUs=)'),
               'cpu.omp_threads': ('warn',
                                   '3 threads for 2 usable cores',
                                   '<= 2',
                                   'export OMP_NUM_THREADS=2   # or unset it and launch with `hosttune exec`')},
 'nofile_low': {'cpu.nofile': ('warn',
                               '1024',
                               '>= 65536',
                               'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                               "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                               '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                               'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576\n'
                               "# this shell's hard limit is 4096: only a new login (or root) gets more")},
 'nofile_unknown': {'cpu.nofile': ('skip', 'RLIMIT_NOFILE not readable (captured host?)', '>= 65536', '')},
 'nofile_unlimited': {'cpu.nofile': ('pass', 'unlimited', '>= 65536', '')},
 'memlock_rdma_ok': {'cpu.memlock': ('pass', 'unlimited (2 RDMA devices)', 'unlimited', '')},
 'memlock_rdma_low': {'cpu.memlock': ('warn',
                                      '64 KiB with 2 RDMA devices',
                                      'unlimited',
                                      'hosttune tune apply --only memlock   # applies it and keeps it; by hand:\n'
                                      "printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' > "
                                      '/etc/security/limits.d/90-hosttune.conf   # then log in again; systemd '
                                      'services: LimitMEMLOCK=infinity; docker: --ulimit memlock=-1')},
 'shm_small': {'storage.shm': ('fail',
                               '64 MiB',
                               '>= 50% (32000 MiB)',
                               'hosttune tune apply --only shm   # applies it and keeps it; by hand:\n'
                               'docker run --shm-size=16g ... (or --ipc=host); Kubernetes: an emptyDir with medium: '
                               'Memory on /dev/shm\n'
                               "host: mount -o remount,size=50% /dev/shm && echo 'tmpfs /dev/shm tmpfs "
                               "defaults,size=50% 0 0' >> /etc/fstab")},
 'shm_unknown': {'storage.shm': ('skip', '/dev/shm size not readable', '>= 50% (32000 MiB)', '')},
 'shm_small_mem': {'storage.shm': ('warn',
                                   '1024 MiB',
                                   '>= 50% (2000 MiB)',
                                   'hosttune tune apply --only shm   # applies it and keeps it; by hand:\n'
                                   'docker run --shm-size=16g ... (or --ipc=host); Kubernetes: an emptyDir with '
                                   'medium: Memory on /dev/shm\n'
                                   "host: mount -o remount,size=50% /dev/shm && echo 'tmpfs /dev/shm tmpfs "
                                   "defaults,size=50% 0 0' >> /etc/fstab")},
 'no_allocator': {'tools.allocator': ('warn',
                                      'neither jemalloc nor tcmalloc found',
                                      'jemalloc or tcmalloc',
                                      'apt-get install -y libjemalloc2')},
 'tcmalloc_only': {'tools.allocator': ('pass', '/usr/lib/libtcmalloc.so.4', 'jemalloc or tcmalloc', '')},
 'no_numactl': {'tools.numactl': ('warn', 'not found (2 NUMA nodes)', 'numactl', 'apt-get install -y numactl')},
 'no_numactl_one_node': {'os.numa_balancing': ('pass', '1 NUMA node: not relevant', '0 on multi-node hosts', ''),
                         'tools.numactl': ('pass', 'one NUMA node: not needed', 'numactl on multi-node hosts', '')},
 'torch_none': {'torch.version': ('warn',
                                  'no torch in the first python3 on PATH',
                                  '>= 2.6',
                                  'python3 -m venv ~/venv && ~/venv/bin/pip install torch   # then: hosttune doctor '
                                  '--python ~/venv/bin/python'),
                'torch.onednn': ('skip', 'no torch probed', 'no ISA cap below the CPU', ''),
                'torch.venv': ('skip', 'no torch interpreter probed', 'a venv or conda env', '')},
 'torch_old': {'torch.version': ('warn',
                                 '1.13.1 (/opt/train/bin/python)',
                                 '>= 2.6',
                                 "/opt/train/bin/python -m pip install --upgrade 'torch>=2.6'")},
 'torch_21': {'torch.version': ('warn',
                                '2.1.0 (/opt/train/bin/python)',
                                '>= 2.6',
                                "/opt/train/bin/python -m pip install --upgrade 'torch>=2.6'")},
 'torch_error': {'torch.version': ('warn',
                                   "/opt/train/bin/python: torch probe failed: No module named 'torch'",
                                   '>= 2.6',
                                   "/opt/train/bin/python -c 'import torch'   # shows the error"),
                 'torch.onednn': ('skip', 'no torch probed', 'no ISA cap below the CPU', '')},
 'no_venv': {'torch.venv': ('warn',
                            '/opt/train/bin/python is not in a venv or conda env',
                            'a venv or conda env',
                            'python3 -m venv /opt/train && /opt/train/bin/pip install torch   # then train with '
                            '/opt/train/bin/python')},
 'venv_unknown': {'torch.venv': ('skip', 'no torch interpreter probed', 'a venv or conda env', '')},
 'debug_env': {'torch.debug_env': ('warn',
                                   'CUDA_LAUNCH_BLOCKING=1 TORCH_SHOW_CPP_STACKTRACES=1',
                                   'none set',
                                   'unset CUDA_LAUNCH_BLOCKING TORCH_SHOW_CPP_STACKTRACES   # and remove them from '
                                   '~/.bashrc, /etc/environment, job scripts')},
 'alloc_ok': {'torch.alloc_conf': ('pass', 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True', 'valid', '')},
 'alloc_bad': {'torch.alloc_conf': ('warn',
                                    'PYTORCH_CUDA_ALLOC_CONF=expandable_segment:True -> unknown key '
                                    'PYTORCH_CUDA_ALLOC_CONF: expandable_segment',
                                    'known keys',
                                    'check the spelling against https://pytorch.org/docs/stable/notes/cuda.html '
                                    '(optimizing-memory-usage-with-pytorch-cuda-alloc-conf)')},
 'no_driver': {'nvidia.driver': ('fail',
                                 '2 NVIDIA GPU(s) on PCI, nvidia module not loaded',
                                 'driver loaded',
                                 'apt-get install -y nvidia-driver firmware-misc-nonfree && reboot   # needs contrib '
                                 'non-free'),
               'nvidia.nvml': ('fail',
                               'NVIDIA driver not loaded',
                               'ok',
                               'modprobe nvidia   # if installed; else:\n'
                               'apt-get install -y nvidia-driver firmware-misc-nonfree && reboot   # needs contrib '
                               'non-free'),
               'nvidia.driver_cuda': ('skip', 'driver version unknown (see nvidia.nvml)', '', ''),
               'nvidia.persistence': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
               'nvidia.ecc_mode': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
               'nvidia.ecc_errors': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
               'nvidia.pending_retire': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
               'nvidia.remap_failure': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
               'nvidia.pcie_link': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
               'nvidia.clock_reasons': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
               'nvidia.temperature': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', '')},
 'nouveau': {'nvidia.nouveau': ('fail',
                                'nouveau loaded',
                                'not loaded',
                                "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > "
                                '/etc/modprobe.d/blacklist-nouveau.conf && update-initramfs -u && reboot')},
 'nvml_mismatch': {'nvidia.nvml': ('fail',
                                   'driver/library version mismatch: Driver/library version mismatch',
                                   'ok',
                                   'reboot (the driver was upgraded under the running kernel module), or stop all '
                                   'GPU processes and: rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && modprobe '
                                   'nvidia && modprobe nvidia_uvm'),
                   'nvidia.persistence': ('skip', 'NVML not available (version_mismatch): see nvidia.nvml', '', ''),
                   'nvidia.ecc_mode': ('skip', 'NVML not available (version_mismatch): see nvidia.nvml', '', ''),
                   'nvidia.ecc_errors': ('skip', 'NVML not available (version_mismatch): see nvidia.nvml', '', ''),
                   'nvidia.pending_retire': ('skip',
                                             'NVML not available (version_mismatch): see nvidia.nvml',
                                             '',
                                             ''),
                   'nvidia.remap_failure': ('skip', 'NVML not available (version_mismatch): see nvidia.nvml', '', ''),
                   'nvidia.pcie_link': ('skip', 'NVML not available (version_mismatch): see nvidia.nvml', '', ''),
                   'nvidia.clock_reasons': ('skip', 'NVML not available (version_mismatch): see nvidia.nvml', '', ''),
                   'nvidia.temperature': ('skip', 'NVML not available (version_mismatch): see nvidia.nvml', '', '')},
 'nvml_no_permission': {'nvidia.nvml': ('warn',
                                        'no permission',
                                        'ok',
                                        'ls -l /dev/nvidia*   # the device files must be readable by this user (mode '
                                        '0666 or the video group: usermod -aG video $USER)'),
                        'nvidia.persistence': ('skip', 'NVML not available (no_permission): see nvidia.nvml', '', ''),
                        'nvidia.ecc_mode': ('skip', 'NVML not available (no_permission): see nvidia.nvml', '', ''),
                        'nvidia.ecc_errors': ('skip', 'NVML not available (no_permission): see nvidia.nvml', '', ''),
                        'nvidia.pending_retire': ('skip',
                                                  'NVML not available (no_permission): see nvidia.nvml',
                                                  '',
                                                  ''),
                        'nvidia.remap_failure': ('skip',
                                                 'NVML not available (no_permission): see nvidia.nvml',
                                                 '',
                                                 ''),
                        'nvidia.pcie_link': ('skip', 'NVML not available (no_permission): see nvidia.nvml', '', ''),
                        'nvidia.clock_reasons': ('skip',
                                                 'NVML not available (no_permission): see nvidia.nvml',
                                                 '',
                                                 ''),
                        'nvidia.temperature': ('skip',
                                               'NVML not available (no_permission): see nvidia.nvml',
                                               '',
                                               '')},
 'nvml_skipped': {'nvidia.nvml': ('skip', 'NVML not queried (captured host, --root)', 'ok', ''),
                  'nvidia.persistence': ('skip', 'NVML not available (skipped): see nvidia.nvml', '', ''),
                  'nvidia.ecc_mode': ('skip', 'NVML not available (skipped): see nvidia.nvml', '', ''),
                  'nvidia.ecc_errors': ('skip', 'NVML not available (skipped): see nvidia.nvml', '', ''),
                  'nvidia.pending_retire': ('skip', 'NVML not available (skipped): see nvidia.nvml', '', ''),
                  'nvidia.remap_failure': ('skip', 'NVML not available (skipped): see nvidia.nvml', '', ''),
                  'nvidia.pcie_link': ('skip', 'NVML not available (skipped): see nvidia.nvml', '', ''),
                  'nvidia.clock_reasons': ('skip', 'NVML not available (skipped): see nvidia.nvml', '', ''),
                  'nvidia.temperature': ('skip', 'NVML not available (skipped): see nvidia.nvml', '', '')},
 'cuda_new': {'nvidia.driver_cuda': ('warn',
                                     'driver 550.54.15, torch built with CUDA 12.6 (minor-version compatibility '
                                     'only)',
                                     '>= 560.28.03 (CUDA 12.6)',
                                     'upgrade the NVIDIA driver (to >= 560.28.03):\n'
                                     'apt-get install -y nvidia-driver firmware-misc-nonfree && reboot   # needs '
                                     'contrib non-free\n'
                                     'or install a torch built for CUDA 12.4'),
              'nvidia.torch_build': ('pass', 'torch 2.6.0, CUDA 12.6, 2 device(s)', 'a CUDA build', '')},
 'cuda_13': {'nvidia.driver_cuda': ('fail',
                                    'driver 550.54.15, torch built with CUDA 13.0',
                                    '>= 580 (CUDA 13.x)',
                                    'upgrade the NVIDIA driver (to >= 580.65.06):\n'
                                    'apt-get install -y nvidia-driver firmware-misc-nonfree && reboot   # needs '
                                    'contrib non-free'),
             'nvidia.torch_build': ('pass', 'torch 2.6.0, CUDA 13.0, 2 device(s)', 'a CUDA build', '')},
 'cuda_118': {'nvidia.driver_cuda': ('pass', 'driver 550.54.15, torch built with CUDA 11.8', '>= 520.61.05', ''),
              'nvidia.torch_build': ('pass', 'torch 2.6.0, CUDA 11.8, 2 device(s)', 'a CUDA build', '')},
 'driver_old': {'nvidia.driver': ('pass', '2 GPU(s), driver 470.42.01', 'driver loaded', ''),
                'nvidia.nvml': ('pass', 'ok, driver 470.42.01', 'ok', ''),
                'nvidia.driver_cuda': ('fail',
                                       'driver 470.42.01, torch built with CUDA 12.4',
                                       '>= 525.60.13 (CUDA 12.x)',
                                       'upgrade the NVIDIA driver (to >= 550.54.14):\n'
                                       'apt-get install -y nvidia-driver firmware-misc-nonfree && reboot   # needs '
                                       'contrib non-free')},
 'driver_unknown': {'nvidia.driver': ('pass', '2 GPU(s), driver loaded', 'driver loaded', ''),
                    'nvidia.nvml': ('pass', 'ok, driver ?', 'ok', ''),
                    'nvidia.driver_cuda': ('skip', 'driver version unknown (see nvidia.nvml)', '', '')},
 'torch_cpu_build': {'nvidia.driver_cuda': ('skip', 'torch is not a CUDA build (see nvidia.torch_build)', '', ''),
                     'nvidia.torch_build': ('fail',
                                            'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                            'a CUDA build',
                                            '/opt/train/bin/python -m pip install --force-reinstall torch '
                                            '--index-url https://download.pytorch.org/whl/cu124'),
                     'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'torch_sees_one': {'nvidia.torch_build': ('pass', 'torch 2.6.0, CUDA 12.4, 1 device(s)', 'a CUDA build', '')},
 'cudnn_differs': {'nvidia.cudnn_nccl': ('pass',
                                         'cuDNN torch 8.9.2 / system 9.1.0; NCCL torch 2.18.1 / system 2.21.5',
                                         "torch's own libraries",
                                         '')},
 'persistence_off': {'nvidia.persistence': ('warn',
                                            'off on GPU0 (0000:1b:00.0)',
                                            'on',
                                            'hosttune tune apply --only persistence   # applies it and keeps it; by '
                                            'hand:\n'
                                            'nvidia-smi -pm 1\n'
                                            'systemctl enable --now nvidia-persistenced   # keep it after reboot')},
 'persistence_unknown': {'nvidia.persistence': ('skip', 'persistence mode not reported (NotSupported)', 'on', '')},
 'ecc_off': {'nvidia.ecc_mode': ('warn',
                                 'ECC off on GPU0 (0000:1b:00.0)',
                                 'on',
                                 'reboot (ECC change already pending)')},
 'ecc_pending_off': {'nvidia.ecc_mode': ('warn',
                                         'ECC mode change pending on GPU0 (0000:1b:00.0)',
                                         'on, nothing pending',
                                         'reboot')},
 'ecc_geforce': {'nvidia.ecc_mode': ('skip', 'no datacenter GPU (ECC optional)', 'on', '')},
 'ecc_errors': {'nvidia.ecc_errors': ('fail',
                                      'GPU0 (0000:1b:00.0): 1',
                                      '0',
                                      'stop jobs on GPU 0, then nvidia-smi -r -i 0 (reset) or reboot; if errors come '
                                      'back: nvidia-bug-report.sh and contact the vendor (RMA)')},
 'ecc_errors_unknown': {'nvidia.ecc_errors': ('skip',
                                              'ECC counters not reported (ECC off or NotSupported)',
                                              '0',
                                              '')},
 'retire_pending': {'nvidia.pending_retire': ('warn',
                                              'pending on GPU0 (0000:1b:00.0)',
                                              'nothing pending',
                                              'stop jobs on GPU 0, then nvidia-smi -r -i 0 (reset) or reboot')},
 'remap_pending': {'nvidia.pending_retire': ('warn',
                                             'pending on GPU0 (0000:1b:00.0)',
                                             'nothing pending',
                                             'stop jobs on GPU 0, then nvidia-smi -r -i 0 (reset) or reboot')},
 'remap_failure': {'nvidia.remap_failure': ('fail',
                                            'row remapping failed on GPU0 (0000:1b:00.0)',
                                            'no failure',
                                            'take the GPU out of service: nvidia-bug-report.sh, then RMA with the '
                                            'vendor')},
 'remap_unknown': {'nvidia.pending_retire': ('skip',
                                             'retired pages / remapped rows not reported (NotSupported)',
                                             'nothing pending',
                                             ''),
                   'nvidia.remap_failure': ('skip',
                                            'row remapping not reported (pre-Ampere or NotSupported)',
                                            'no failure',
                                            '')},
 'clock_sw_power': {'nvidia.clock_reasons': ('warn',
                                             'GPU0 (0000:1b:00.0): sw_power_cap',
                                             'no thermal/power events',
                                             'nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER; check airflow/fans and '
                                             'PSU; nvidia-smi -pl shows/sets the power limit')},
 'clock_hw_slow': {'nvidia.clock_reasons': ('fail',
                                            'GPU0 (0000:1b:00.0): hw_slowdown',
                                            'no thermal/power events',
                                            'nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER; check airflow/fans and '
                                            'PSU; nvidia-smi -pl shows/sets the power limit')},
 'clock_thermal_both': {'nvidia.clock_reasons': ('fail',
                                                 'GPU0 (0000:1b:00.0): sw_thermal_slowdown,hw_thermal_slowdown; GPU1 '
                                                 '(0000:1c:00.0): sw_thermal_slowdown,hw_thermal_slowdown',
                                                 'no thermal/power events',
                                                 'nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER; check airflow/fans '
                                                 'and PSU; nvidia-smi -pl shows/sets the power limit')},
 'clock_unknown': {'nvidia.clock_reasons': ('skip', 'clock-event reasons not reported (NotSupported)', 'none', '')},
 'temp_74': {'nvidia.temperature': ('pass',
                                    'max 74 C (GPU0 (0000:1b:00.0))',
                                    'below 75 C (warn from 75 C, fail from 85 C: default lines: the GPU reports no '
                                    'slowdown threshold)',
                                    '')},
 'temp_75': {'nvidia.temperature': ('warn',
                                    'GPU0 (0000:1b:00.0): 75 C',
                                    'below 75 C (warn from 75 C, fail from 85 C: default lines: the GPU reports no '
                                    'slowdown threshold)',
                                    'check airflow, fans and inlet temperature: nvidia-smi -q -d TEMPERATURE   # '
                                    'warn from 75 C, fail from 85 C (default lines)')},
 'temp_84': {'nvidia.temperature': ('warn',
                                    'GPU0 (0000:1b:00.0): 84 C',
                                    'below 75 C (warn from 75 C, fail from 85 C: default lines: the GPU reports no '
                                    'slowdown threshold)',
                                    'check airflow, fans and inlet temperature: nvidia-smi -q -d TEMPERATURE   # '
                                    'warn from 75 C, fail from 85 C (default lines)')},
 'temp_85': {'nvidia.temperature': ('fail',
                                    'GPU0 (0000:1b:00.0): 85 C',
                                    'below 75 C (warn from 75 C, fail from 85 C: default lines: the GPU reports no '
                                    'slowdown threshold)',
                                    'check airflow, fans and inlet temperature: nvidia-smi -q -d TEMPERATURE   # '
                                    'warn from 75 C, fail from 85 C (default lines)')},
 'temp_79_of_90': {'nvidia.temperature': ('pass',
                                          'max 79 C (GPU0 (0000:1b:00.0))',
                                          'below 80 C (warn from 80 C, fail from 90 C: its slowdown threshold)',
                                          '')},
 'temp_80_of_90': {'nvidia.temperature': ('warn',
                                          'GPU0 (0000:1b:00.0): 80 C',
                                          'below 80 C (warn from 80 C, fail from 90 C: its slowdown threshold)',
                                          'check airflow, fans and inlet temperature: nvidia-smi -q -d TEMPERATURE   '
                                          '# warn from 80 C, fail from 90 C (the GPU slowdown threshold)')},
 'temp_90_of_90': {'nvidia.temperature': ('fail',
                                          'GPU0 (0000:1b:00.0): 90 C; GPU1 (0000:1c:00.0): 90 C',
                                          'below 80 C (warn from 80 C, fail from 90 C: its slowdown threshold)',
                                          'check airflow, fans and inlet temperature: nvidia-smi -q -d TEMPERATURE   '
                                          '# warn from 80 C, fail from 90 C (the GPU slowdown threshold)')},
 'temp_unknown': {'nvidia.temperature': ('skip',
                                         'temperature not reported',
                                         'below 75 C (warn from 75 C, fail from 85 C: default lines: the GPU reports '
                                         'no slowdown threshold)',
                                         '')},
 'fabric_needed': {'nvidia.fabric_manager': ('fail',
                                             'not installed (4 NVSwitches)',
                                             'running',
                                             'apt-get install -y nvidia-fabricmanager-550   # same version as the '
                                             'driver\n'
                                             'systemctl enable --now nvidia-fabricmanager')},
 'fabric_installed': {'nvidia.fabric_manager': ('fail',
                                                'installed but not running (4 NVSwitches)',
                                                'running',
                                                'systemctl enable --now nvidia-fabricmanager')},
 'fabric_running': {'nvidia.fabric_manager': ('pass', 'running (4 NVSwitches)', 'running', '')},
 'gpu_numa_unknown': {'nvidia.gpu_numa': ('warn',
                                          'no NUMA node for GPU0 (0000:1b:00.0)',
                                          'known node per GPU',
                                          "enable ACPI SRAT / 'NUMA nodes per socket' in the BIOS; meanwhile set the "
                                          'binding in a profile (hosttune profile show)')},
 'gpu_numa_local_cpus': {'nvidia.gpu_numa': ('pass', 'GPU0->local CPUs only, GPU1->node1', 'known node per GPU', '')},
 'gpu_numa_all_cpus': {'nvidia.gpu_numa': ('warn',
                                           'no NUMA node for GPU0 (0000:1b:00.0)',
                                           'known node per GPU',
                                           "enable ACPI SRAT / 'NUMA nodes per socket' in the BIOS; meanwhile set "
                                           'the binding in a profile (hosttune profile show)')},
 'iommu_on': {'nvidia.iommu': ('warn',
                               'intel_iommu=on without iommu=pt',
                               'iommu=pt',
                               'sed -i \'s/^GRUB_CMDLINE_LINUX_DEFAULT="/&iommu=pt /\' /etc/default/grub && '
                               'update-grub && reboot')},
 'iommu_pt': {'nvidia.iommu': ('pass', 'intel_iommu=on iommu=pt', 'iommu=pt when on', '')},
 'amd_iommu': {'nvidia.iommu': ('warn',
                                'amd_iommu=on without iommu=pt',
                                'iommu=pt',
                                'sed -i \'s/^GRUB_CMDLINE_LINUX_DEFAULT="/&iommu=pt /\' /etc/default/grub && '
                                'update-grub && reboot')},
 'one_gpu': {'nvidia.driver': ('pass', '1 GPU(s), driver 550.54.15', 'driver loaded', ''),
             'nvidia.persistence': ('pass', 'on (1 GPUs)', 'on', ''),
             'nvidia.ecc_mode': ('pass', 'on (1 datacenter GPUs)', 'on', ''),
             'nvidia.ecc_errors': ('pass', '0 on 1 GPUs', '0', ''),
             'nvidia.pending_retire': ('pass', 'nothing pending on 1 GPUs', 'nothing pending', ''),
             'nvidia.remap_failure': ('pass', 'no failure on 1 GPUs', 'no failure', ''),
             'nvidia.pcie_link': ('pass',
                                  'idle: not judged (1 GPUs idle; link speed drops at idle by design)',
                                  'max gen/width under load',
                                  ''),
             'nvidia.clock_reasons': ('pass', 'none on 1 GPUs', 'no thermal/power events', ''),
             'nvidia.gpu_numa': ('pass', 'GPU0->node0', 'known node per GPU', ''),
             'nvidia.iommu': ('pass', '1 GPU: no peer-to-peer', 'iommu=pt when the IOMMU is on', ''),
             'nvidia.acs': ('pass', '1 GPU: no peer-to-peer', 'ACS off on GPU bridges', '')},
 'pci_gpus': {'nvidia.nvml': ('fail',
                              'NVIDIA driver not loaded',
                              'ok',
                              'modprobe nvidia   # if installed; else:\n'
                              'apt-get install -y nvidia-driver firmware-misc-nonfree && reboot   # needs contrib '
                              'non-free'),
              'nvidia.persistence': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
              'nvidia.ecc_mode': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
              'nvidia.ecc_errors': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
              'nvidia.pending_retire': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
              'nvidia.remap_failure': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
              'nvidia.pcie_link': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
              'nvidia.clock_reasons': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', ''),
              'nvidia.temperature': ('skip', 'NVML not available (driver_not_loaded): see nvidia.nvml', '', '')},
 'cvd_ok': {'torch.cuda_visible_devices': ('pass', 'CUDA_VISIBLE_DEVICES=1 (1 GPUs)', 'existing GPUs', '')},
 'cvd_past': {'torch.cuda_visible_devices': ('fail',
                                             'CUDA_VISIBLE_DEVICES=0,2: no GPU 2 (index 2 is past the 2 GPU(s); CUDA '
                                             'stops there and sees 1 of 2 GPUs)',
                                             'entries among 0,1 or unique GPU UUID prefixes',
                                             'export CUDA_VISIBLE_DEVICES=0,1')},
 'cvd_empty': {'torch.cuda_visible_devices': ('warn',
                                              "CUDA_VISIBLE_DEVICES='' hides every GPU",
                                              'existing GPUs',
                                              'unset CUDA_VISIBLE_DEVICES')},
 'cvd_uuid': {'torch.cuda_visible_devices': ('pass',
                                             'CUDA_VISIBLE_DEVICES=GPU-00000001 (1 GPUs)',
                                             'existing GPUs',
                                             '')},
 'cvd_bad_uuid': {'torch.cuda_visible_devices': ('fail',
                                                 'CUDA_VISIBLE_DEVICES=GPU-ffff: no GPU GPU-ffff (matches no GPU; '
                                                 'CUDA stops there and sees 0 of 2 GPUs)',
                                                 'entries among 0,1 or unique GPU UUID prefixes',
                                                 'export CUDA_VISIBLE_DEVICES=0,1')},
 'gpu_container': {'os.container': ('pass',
                                    'docker (?); /proc/sys and /sys writable (privileged): a change there changes '
                                    'the host; limits from its cgroup: none; 1 GPU device nodes passed in of the '
                                    "driver's 2",
                                    'reported',
                                    '')},
 'debug-NCCL_DEBUG-info': {'torch.debug_env': ('warn',
                                               'NCCL_DEBUG=info',
                                               'none set',
                                               'unset NCCL_DEBUG   # and remove them from ~/.bashrc, '
                                               '/etc/environment, job scripts')},
 'debug-NCCL_DEBUG-TRACE': {'torch.debug_env': ('warn',
                                                'NCCL_DEBUG=TRACE',
                                                'none set',
                                                'unset NCCL_DEBUG   # and remove them from ~/.bashrc, '
                                                '/etc/environment, job scripts')},
 'debug-NCCL_DEBUG_SUBSYS-ALL': {'torch.debug_env': ('warn',
                                                     'NCCL_DEBUG_SUBSYS=ALL',
                                                     'none set',
                                                     'unset NCCL_DEBUG_SUBSYS   # and remove them from ~/.bashrc, '
                                                     '/etc/environment, job scripts')},
 'debug-TORCH_DISTRIBUTED_DEBUG-detail': {'torch.debug_env': ('warn',
                                                              'TORCH_DISTRIBUTED_DEBUG=detail',
                                                              'none set',
                                                              'unset TORCH_DISTRIBUTED_DEBUG   # and remove them '
                                                              'from ~/.bashrc, /etc/environment, job scripts')},
 'debug-TORCH_DISTRIBUTED_DEBUG-INFO': {'torch.debug_env': ('warn',
                                                            'TORCH_DISTRIBUTED_DEBUG=INFO',
                                                            'none set',
                                                            'unset TORCH_DISTRIBUTED_DEBUG   # and remove them from '
                                                            '~/.bashrc, /etc/environment, job scripts')},
 'debug-PYTORCH_NO_CUDA_MEMORY_CACHING-1': {'torch.debug_env': ('warn',
                                                                'PYTORCH_NO_CUDA_MEMORY_CACHING=1',
                                                                'none set',
                                                                'unset PYTORCH_NO_CUDA_MEMORY_CACHING   # and remove '
                                                                'them from ~/.bashrc, /etc/environment, job '
                                                                'scripts')},
 'debug-TORCH_COMPILE_DEBUG-1': {'torch.debug_env': ('warn',
                                                     'TORCH_COMPILE_DEBUG=1',
                                                     'none set',
                                                     'unset TORCH_COMPILE_DEBUG   # and remove them from ~/.bashrc, '
                                                     '/etc/environment, job scripts')},
 'debug-TORCH_LOGS-+dynamo': {'torch.debug_env': ('warn',
                                                  'TORCH_LOGS=+dynamo',
                                                  'none set',
                                                  'unset TORCH_LOGS   # and remove them from ~/.bashrc, '
                                                  '/etc/environment, job scripts')},
 'debug-TORCH_USE_CUDA_DSA-1': {'torch.debug_env': ('warn',
                                                    'TORCH_USE_CUDA_DSA=1',
                                                    'none set',
                                                    'unset TORCH_USE_CUDA_DSA   # and remove them from ~/.bashrc, '
                                                    '/etc/environment, job scripts')},
 'debug-CUDA_DEVICE_DEBUG-1': {'torch.debug_env': ('warn',
                                                   'CUDA_DEVICE_DEBUG=1',
                                                   'none set',
                                                   'unset CUDA_DEVICE_DEBUG   # and remove them from ~/.bashrc, '
                                                   '/etc/environment, job scripts')},
 'debug-PYTORCH_DEBUG-1': {'torch.debug_env': ('warn',
                                               'PYTORCH_DEBUG=1',
                                               'none set',
                                               'unset PYTORCH_DEBUG   # and remove them from ~/.bashrc, '
                                               '/etc/environment, job scripts')},
 'cpu-build-driver-13.0': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu130'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-12.9': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu129'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-12.8': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu128'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-12.7': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu126'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-12.6': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu126'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-12.5': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu124'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-12.4': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu124'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-12.1': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu121'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-12.0': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu118'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-11.8': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu118'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-11.4': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu126'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'cpu-build-driver-none': {'nvidia.driver_cuda': ('skip',
                                                  'torch is not a CUDA build (see nvidia.torch_build)',
                                                  '',
                                                  ''),
                           'nvidia.torch_build': ('fail',
                                                  'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                  'a CUDA build',
                                                  '/opt/train/bin/python -m pip install --force-reinstall torch '
                                                  '--index-url https://download.pytorch.org/whl/cu126'),
                           'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', '')},
 'driver-550.54.14-cuda-12.4': {'nvidia.driver': ('pass', '2 GPU(s), driver 550.54.14', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 550.54.14', 'ok', ''),
                                'nvidia.driver_cuda': ('pass',
                                                       'driver 550.54.14, torch built with CUDA 12.4',
                                                       '>= 550.54.14',
                                                       '')},
 'driver-550.54.13-cuda-12.4': {'nvidia.driver': ('pass', '2 GPU(s), driver 550.54.13', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 550.54.13', 'ok', ''),
                                'nvidia.driver_cuda': ('warn',
                                                       'driver 550.54.13, torch built with CUDA 12.4 (minor-version '
                                                       'compatibility only)',
                                                       '>= 550.54.14 (CUDA 12.4)',
                                                       'upgrade the NVIDIA driver (to >= 550.54.14):\n'
                                                       'apt-get install -y nvidia-driver firmware-misc-nonfree && '
                                                       'reboot   # needs contrib non-free\n'
                                                       'or install a torch built for CUDA 12.4')},
 'driver-525.60.13-cuda-12.4': {'nvidia.driver': ('pass', '2 GPU(s), driver 525.60.13', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 525.60.13', 'ok', ''),
                                'nvidia.driver_cuda': ('warn',
                                                       'driver 525.60.13, torch built with CUDA 12.4 (minor-version '
                                                       'compatibility only)',
                                                       '>= 550.54.14 (CUDA 12.4)',
                                                       'upgrade the NVIDIA driver (to >= 550.54.14):\n'
                                                       'apt-get install -y nvidia-driver firmware-misc-nonfree && '
                                                       'reboot   # needs contrib non-free\n'
                                                       'or install a torch built for CUDA 12.4')},
 'driver-525.60.12-cuda-12.4': {'nvidia.driver': ('pass', '2 GPU(s), driver 525.60.12', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 525.60.12', 'ok', ''),
                                'nvidia.driver_cuda': ('fail',
                                                       'driver 525.60.12, torch built with CUDA 12.4',
                                                       '>= 525.60.13 (CUDA 12.x)',
                                                       'upgrade the NVIDIA driver (to >= 550.54.14):\n'
                                                       'apt-get install -y nvidia-driver firmware-misc-nonfree && '
                                                       'reboot   # needs contrib non-free')},
 'driver-580.65.06-cuda-13.0': {'nvidia.driver': ('pass', '2 GPU(s), driver 580.65.06', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 580.65.06', 'ok', ''),
                                'nvidia.driver_cuda': ('pass',
                                                       'driver 580.65.06, torch built with CUDA 13.0',
                                                       '>= 580.65.06',
                                                       ''),
                                'nvidia.torch_build': ('pass',
                                                       'torch 2.6.0, CUDA 13.0, 2 device(s)',
                                                       'a CUDA build',
                                                       '')},
 'driver-580.1-cuda-13.0': {'nvidia.driver': ('pass', '2 GPU(s), driver 580.1', 'driver loaded', ''),
                            'nvidia.nvml': ('pass', 'ok, driver 580.1', 'ok', ''),
                            'nvidia.driver_cuda': ('warn',
                                                   'driver 580.1, torch built with CUDA 13.0 (minor-version '
                                                   'compatibility only)',
                                                   '>= 580.65.06 (CUDA 13.0)',
                                                   'upgrade the NVIDIA driver (to >= 580.65.06):\n'
                                                   'apt-get install -y nvidia-driver firmware-misc-nonfree && '
                                                   'reboot   # needs contrib non-free\n'
                                                   'or install a torch built for CUDA 12.4'),
                            'nvidia.torch_build': ('pass',
                                                   'torch 2.6.0, CUDA 13.0, 2 device(s)',
                                                   'a CUDA build',
                                                   '')},
 'driver-579.99-cuda-13.0': {'nvidia.driver': ('pass', '2 GPU(s), driver 579.99', 'driver loaded', ''),
                             'nvidia.nvml': ('pass', 'ok, driver 579.99', 'ok', ''),
                             'nvidia.driver_cuda': ('fail',
                                                    'driver 579.99, torch built with CUDA 13.0',
                                                    '>= 580 (CUDA 13.x)',
                                                    'upgrade the NVIDIA driver (to >= 580.65.06):\n'
                                                    'apt-get install -y nvidia-driver firmware-misc-nonfree && '
                                                    'reboot   # needs contrib non-free'),
                             'nvidia.torch_build': ('pass',
                                                    'torch 2.6.0, CUDA 13.0, 2 device(s)',
                                                    'a CUDA build',
                                                    '')},
 'driver-520.61.05-cuda-11.8': {'nvidia.driver': ('pass', '2 GPU(s), driver 520.61.05', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 520.61.05', 'ok', ''),
                                'nvidia.driver_cuda': ('pass',
                                                       'driver 520.61.05, torch built with CUDA 11.8',
                                                       '>= 520.61.05',
                                                       ''),
                                'nvidia.torch_build': ('pass',
                                                       'torch 2.6.0, CUDA 11.8, 2 device(s)',
                                                       'a CUDA build',
                                                       '')},
 'driver-450.80.02-cuda-11.8': {'nvidia.driver': ('pass', '2 GPU(s), driver 450.80.02', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 450.80.02', 'ok', ''),
                                'nvidia.driver_cuda': ('warn',
                                                       'driver 450.80.02, torch built with CUDA 11.8 (minor-version '
                                                       'compatibility only)',
                                                       '>= 520.61.05 (CUDA 11.8)',
                                                       'upgrade the NVIDIA driver (to >= 520.61.05):\n'
                                                       'apt-get install -y nvidia-driver firmware-misc-nonfree && '
                                                       'reboot   # needs contrib non-free\n'
                                                       'or install a torch built for CUDA 12.4'),
                                'nvidia.torch_build': ('pass',
                                                       'torch 2.6.0, CUDA 11.8, 2 device(s)',
                                                       'a CUDA build',
                                                       '')},
 'driver-450.80.01-cuda-11.8': {'nvidia.driver': ('pass', '2 GPU(s), driver 450.80.01', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 450.80.01', 'ok', ''),
                                'nvidia.driver_cuda': ('fail',
                                                       'driver 450.80.01, torch built with CUDA 11.8',
                                                       '>= 450.80.02 (CUDA 11.x)',
                                                       'upgrade the NVIDIA driver (to >= 520.61.05):\n'
                                                       'apt-get install -y nvidia-driver firmware-misc-nonfree && '
                                                       'reboot   # needs contrib non-free'),
                                'nvidia.torch_build': ('pass',
                                                       'torch 2.6.0, CUDA 11.8, 2 device(s)',
                                                       'a CUDA build',
                                                       '')},
 'driver-570.26-cuda-12.8': {'nvidia.driver': ('pass', '2 GPU(s), driver 570.26', 'driver loaded', ''),
                             'nvidia.nvml': ('pass', 'ok, driver 570.26', 'ok', ''),
                             'nvidia.driver_cuda': ('pass',
                                                    'driver 570.26, torch built with CUDA 12.8',
                                                    '>= 570.26',
                                                    ''),
                             'nvidia.torch_build': ('pass',
                                                    'torch 2.6.0, CUDA 12.8, 2 device(s)',
                                                    'a CUDA build',
                                                    '')},
 'driver-535.54.03-cuda-12.2': {'nvidia.driver': ('pass', '2 GPU(s), driver 535.54.03', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 535.54.03', 'ok', ''),
                                'nvidia.driver_cuda': ('pass',
                                                       'driver 535.54.03, torch built with CUDA 12.2',
                                                       '>= 535.54.03',
                                                       ''),
                                'nvidia.torch_build': ('pass',
                                                       'torch 2.6.0, CUDA 12.2, 2 device(s)',
                                                       'a CUDA build',
                                                       '')},
 'driver-440.33-cuda-10.2': {'nvidia.driver': ('pass', '2 GPU(s), driver 440.33', 'driver loaded', ''),
                             'nvidia.nvml': ('pass', 'ok, driver 440.33', 'ok', ''),
                             'nvidia.driver_cuda': ('pass',
                                                    'driver 440.33, torch built with CUDA 10.2',
                                                    '>= 440.33',
                                                    ''),
                             'nvidia.torch_build': ('pass',
                                                    'torch 2.6.0, CUDA 10.2, 2 device(s)',
                                                    'a CUDA build',
                                                    '')},
 'driver-440.32-cuda-10.2': {'nvidia.driver': ('pass', '2 GPU(s), driver 440.32', 'driver loaded', ''),
                             'nvidia.nvml': ('pass', 'ok, driver 440.32', 'ok', ''),
                             'nvidia.driver_cuda': ('fail',
                                                    'driver 440.32, torch built with CUDA 10.2',
                                                    '>= 440.33 (CUDA 10.2)',
                                                    'upgrade the NVIDIA driver (to >= 440.33):\n'
                                                    'apt-get install -y nvidia-driver firmware-misc-nonfree && '
                                                    'reboot   # needs contrib non-free\n'
                                                    'or install a torch built for CUDA 12.4'),
                             'nvidia.torch_build': ('pass',
                                                    'torch 2.6.0, CUDA 10.2, 2 device(s)',
                                                    'a CUDA build',
                                                    '')},
 'driver-560.28.03-cuda-12.7': {'nvidia.driver': ('pass', '2 GPU(s), driver 560.28.03', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 560.28.03', 'ok', ''),
                                'nvidia.driver_cuda': ('pass',
                                                       'driver 560.28.03, torch built with CUDA 12.7',
                                                       '>= 525.60.13',
                                                       ''),
                                'nvidia.torch_build': ('pass',
                                                       'torch 2.6.0, CUDA 12.7, 2 device(s)',
                                                       'a CUDA build',
                                                       '')},
 'driver-560.28.03-cuda-14.0': {'nvidia.driver': ('pass', '2 GPU(s), driver 560.28.03', 'driver loaded', ''),
                                'nvidia.nvml': ('pass', 'ok, driver 560.28.03', 'ok', ''),
                                'nvidia.driver_cuda': ('skip',
                                                       'driver 560.28.03, torch built with CUDA 14.0: CUDA 14.0 is '
                                                       'not in the table',
                                                       '',
                                                       ''),
                                'nvidia.torch_build': ('pass',
                                                       'torch 2.6.0, CUDA 14.0, 2 device(s)',
                                                       'a CUDA build',
                                                       '')},
 'driver-550.54.15-cuda-12': {'nvidia.driver_cuda': ('pass',
                                                     'driver 550.54.15, torch built with CUDA 12',
                                                     '>= 525.60.13',
                                                     ''),
                              'nvidia.torch_build': ('pass',
                                                     'torch 2.6.0, CUDA 12, 2 device(s)',
                                                     'a CUDA build',
                                                     '')},
 'torch-cuda-unavailable': {'nvidia.torch_build': ('fail',
                                                   'torch 2.6.0 (CUDA 12.4) cannot use the GPUs: cuda.is_available() '
                                                   'False',
                                                   'cuda available',
                                                   'see nvidia.driver, nvidia.nvml and env.cuda_visible_devices; '
                                                   "then /opt/train/bin/python -c 'import torch; "
                                                   "torch.zeros(1).cuda()' shows the CUDA error")},
 'torch-cuda-unavailable-no-python': {'nvidia.torch_build': ('fail',
                                                             'torch 2.6.0 (CUDA 12.4) cannot use the GPUs: '
                                                             'cuda.is_available() False',
                                                             'cuda available',
                                                             'see nvidia.driver, nvidia.nvml and '
                                                             'env.cuda_visible_devices; then running `import torch; '
                                                             'torch.zeros(1).cuda()` in your training interpreter '
                                                             'shows the CUDA error'),
                                      'torch.version': ('pass', '2.6.0 ()', '>= 2.6', ''),
                                      'torch.venv': ('pass', ' (venv/conda)', 'a venv or conda env', '')},
 'torch-cpu-no-python': {'nvidia.driver_cuda': ('skip', 'torch is not a CUDA build (see nvidia.torch_build)', '', ''),
                         'nvidia.torch_build': ('fail',
                                                'torch 2.6.0 is a CPU-only build on a host with 2 GPU(s)',
                                                'a CUDA build',
                                                'python3 -m pip install --force-reinstall torch --index-url '
                                                'https://download.pytorch.org/whl/cu124   # with your training '
                                                'interpreter'),
                         'nvidia.cudnn_nccl': ('skip', 'torch is not a CUDA build', '', ''),
                         'torch.version': ('pass', '2.6.0 ()', '>= 2.6', ''),
                         'torch.venv': ('pass', ' (venv/conda)', 'a venv or conda env', '')},
 'torch-old-no-python': {'torch.version': ('warn',
                                           '2.5.1 ()',
                                           '>= 2.6',
                                           "python3 -m pip install --upgrade 'torch>=2.6'   # with your training "
                                           'interpreter'),
                         'torch.venv': ('pass', ' (venv/conda)', 'a venv or conda env', '')},
 'torch-26': {'torch.version': ('pass', '2.6 (/opt/train/bin/python)', '>= 2.6', '')},
 'alloc-both': {'torch.alloc_conf': ('fail',
                                     'PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20; '
                                     'PYTORCH_ALLOC_CONF=garbage_collection_threshold:0.6 -> '
                                     'PYTORCH_CUDA_ALLOC_CONF: max_split_size_mb:20 (int>20)',
                                     'key:value,... with known keys',
                                     'fix or unset it, e.g. export '
                                     'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True')},
 'alloc-split-21': {'torch.alloc_conf': ('pass', 'PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:21', 'valid', '')},
 'alloc-gc-1': {'torch.alloc_conf': ('fail',
                                     'PYTORCH_ALLOC_CONF=garbage_collection_threshold:1.0 -> PYTORCH_ALLOC_CONF: '
                                     'garbage_collection_threshold:1.0 (fraction)',
                                     'key:value,... with known keys',
                                     'fix or unset it, e.g. export '
                                     'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True')},
 'alloc-roundup': {'torch.alloc_conf': ('pass',
                                        'PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions:[256:1,>:4]',
                                        'valid',
                                        '')},
 'alloc-threads': {'torch.alloc_conf': ('fail',
                                        'PYTORCH_CUDA_ALLOC_CONF=pinned_num_register_threads:256 -> '
                                        'PYTORCH_CUDA_ALLOC_CONF: pinned_num_register_threads:256 (pow2<=128)',
                                        'key:value,... with known keys',
                                        'fix or unset it, e.g. export '
                                        'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True')},
 'alloc-bool': {'torch.alloc_conf': ('fail',
                                     'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:yes -> PYTORCH_CUDA_ALLOC_CONF: '
                                     'expandable_segments:yes (bool)',
                                     'key:value,... with known keys',
                                     'fix or unset it, e.g. export '
                                     'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True')},
 'cvd-minus-one': {'torch.cuda_visible_devices': ('warn',
                                                  "CUDA_VISIBLE_DEVICES='-1' hides every GPU",
                                                  'existing GPUs',
                                                  'unset CUDA_VISIBLE_DEVICES')},
 'cvd-no-gpus': {'torch.cuda_visible_devices': ('warn',
                                                'CUDA_VISIBLE_DEVICES=0 on a host without NVIDIA GPUs',
                                                'unset',
                                                'unset CUDA_VISIBLE_DEVICES')},
 'cvd-empty-no-gpus': {'torch.cuda_visible_devices': ('pass',
                                                      "CUDA_VISIBLE_DEVICES='' hides every GPU",
                                                      'existing GPUs',
                                                      '')},
 'cvd-twice': {'torch.cuda_visible_devices': ('fail',
                                              'CUDA_VISIBLE_DEVICES=1,1: no GPU 1 (names a GPU twice; CUDA stops '
                                              'there and sees 1 of 2 GPUs)',
                                              'entries among 0,1 or unique GPU UUID prefixes',
                                              'export CUDA_VISIBLE_DEVICES=0,1')},
 'onednn-over': {'torch.onednn': ('fail',
                                  'onednn=-  isa=AVX2  aten=AVX512  bf16=emulated (this CPU has no '
                                  "avx512_bf16/amx_bf16); ATEN_CPU_CAPABILITY=AVX512 above this CPU's DEFAULT",
                                  'no ISA cap above the CPU',
                                  'unset ATEN_CPU_CAPABILITY   # and remove it from ~/.bashrc, /etc/environment and '
                                  'job scripts')},
 'onednn-arm': {'torch.onednn': ('skip',
                                 'oneDNN ISA caps are x86 ones; this CPU is aarch64',
                                 'no ISA cap below the CPU',
                                 '')},
 'onednn-two-caps': {'torch.onednn': ('pass',
                                      'onednn=-  isa=AVX2  aten=DEFAULT  bf16=emulated (ONEDNN_MAX_CPU_ISA=AVX2 caps '
                                      'oneDNN below AVX10_1_512_AMX (this CPU has amx_bf16))',
                                      'no ISA cap below the CPU',
                                      '')}}


def _expected(name: str, host: Callable[..., Facts]) -> Dict[str, Row]:
    want = dict(BASE[host.__name__])
    want.update(CHANGED.get(name, {}))
    return want


@pytest.mark.parametrize("name,host,change,env", HOSTS, ids=[h[0] for h in HOSTS])
def test_every_finding_on_this_host(name: str, host: Callable[..., Facts], change: Callable[[Facts], Facts],
                                    env: Dict[str, str]) -> None:
    got = findings(host, change, env)
    want = _expected(name, host)
    assert sorted(got) == sorted(want)
    for check_id in want:
        assert got[check_id] == want[check_id], check_id


def test_the_tables_cover_the_catalogue_and_name_real_hosts() -> None:
    assert set(BASE["cpu_host"]) == set(BASE["gpu_host"]) == {c.id for c in CHECKS}
    assert set(CHANGED) <= {h[0] for h in HOSTS}
    statuses = {row[0] for rows in CHANGED.values() for row in rows.values()}
    assert statuses == {"pass", "warn", "fail", "skip"}


def _regenerate() -> None:
    import pprint

    base = {h.__name__: findings(h, same, {}) for h in (cpu_host, gpu_host)}
    changed = {}
    for name, host, change, env in HOSTS:
        got = findings(host, change, env)
        diff = {k: v for k, v in got.items() if base[host.__name__].get(k) != v}
        if diff:
            changed[name] = diff
    print("BASE: Dict[str, Dict[str, Row]] = " + pprint.pformat(base, width=118, sort_dicts=False))
    print()
    print("CHANGED: Dict[str, Dict[str, Row]] = " + pprint.pformat(changed, width=118, sort_dicts=False))


if __name__ == "__main__":
    sys.path[:0] = [__file__.rsplit("/", 1)[0]]
    _regenerate()
