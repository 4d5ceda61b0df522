"""One captured host read whole (issue 21): a two-socket GPU server's tree (Rocky 9, SMT, two NUMA nodes, two
NVIDIA GPUs and an NVSwitch on PCI, cgroup v2 limits, tuned, a docker marker, allocators, storage) through
`collect(root)`, every field of the Facts compared with what the files say. A change in any probe module
(hosttune.detect.cpu, .numa, .kernel, .gpu, .nvidia, .cgroup, .container, .storage, .mounts, .allocators, .tuned,
.distro, .limits, .hostio) that changes what a user sees in `hosttune facts --json` of this tree fails here."""

from pathlib import Path
from typing import Any, Dict

from conftest import build_tree

from hosttune.detect import (
    allocators,
    cgroup,
    collect,
    container,
    cpu,
    distro,
    gpu,
    hostio,
    kernel,
    limits,
    mounts,
    numa,
    nvidia,
    storage,
    tuned,
)

MODULES = (allocators, cgroup, container, cpu, distro, gpu, hostio, kernel, limits, mounts, numa, nvidia, storage,
           tuned)
ELF = "\x7fELF\x02\x01\x01\x00"
CPUINFO = "".join(
    f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
    "flags\t\t: fpu lm sse2 sse4_2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni avx512_bf16 "
    "avx512_fp16 amx_tile amx_bf16 amx_int8 ht\n\n" for i in range(8))


def _tree() -> Dict[str, str]:
    files: Dict[str, str] = {
        "/etc/os-release": 'NAME="Rocky Linux"\nVERSION="9.3 (Blue Onyx)"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'
                           'VERSION_ID="9.3"\nPRETTY_NAME="Rocky Linux 9.3 (Blue Onyx)"\n',
        "/etc/hostname": "gpu-node-7\n",
        "/proc/cpuinfo": CPUINFO,
        "/proc/sys/kernel/osrelease": "5.14.0-362.el9.x86_64\n",
        "/proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p2 iommu=pt\n",
        "/proc/modules": "nvidia_uvm 1 0 - Live 0x0\nnvidia 2 1 nvidia_uvm, Live 0x0\nnvme 3 4 - Live 0x0\n"
                         "xfs 4 1 - Live 0x0\n",
        "/proc/sys/kernel/numa_balancing": "1\n",
        "/proc/sys/vm/swappiness": "30\n",
        "/sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
        "/sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never\n",
        "/sys/devices/system/cpu/online": "0-7\n",
        "/sys/devices/system/cpu/smt/control": "on\n",
        "/proc/meminfo": "MemTotal:       1048576 kB\nMemAvailable:    524288 kB\nSwapTotal:             0 kB\n"
                         "HugePages_Total:       0\nHugepagesize:       2048 kB\n",
        "/proc/self/cgroup": "0::/system.slice/docker-ab.scope\n",
        "/proc/self/mountinfo": (
            "20 1 259:2 / / rw,relatime - xfs /dev/nvme0n1p2 rw\n"
            "21 20 0:20 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
            "22 20 0:21 / /dev/shm rw - tmpfs shm rw,size=65536k\n"
            "23 20 0:22 / /data rw - nfs4 store:/data rw,vers=4.2\n"
            "24 20 0:5 / /proc rw - proc proc rw\n"),
        "/sys/fs/cgroup/system.slice/docker-ab.scope/cpu.max": "400000 100000\n",
        "/sys/fs/cgroup/system.slice/docker-ab.scope/cpuset.cpus.effective": "0-5\n",
        "/sys/fs/cgroup/system.slice/docker-ab.scope/cpuset.mems.effective": "0-1\n",
        "/sys/fs/cgroup/system.slice/memory.max": f"{64 << 30}\n",
        "/.dockerenv": "",
        "/dev/nvidia0": "", "/dev/nvidiactl": "",
        "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 2024\n",
        "/proc/driver/nvidia/gpus/0000:1b:00.0/information": "",
        "/proc/driver/nvidia/gpus/0000:9b:00.0/information": "",
        "/usr/local/cuda-12.4/version.json": '{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}',
        "/usr/include/cudnn_version.h": "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n",
        "/usr/lib64/libnccl.so.2.21.5": "", "/usr/bin/nv-fabricmanager": "",
        "/usr/lib64/libjemalloc.so.2": ELF, "/usr/lib64/libgomp.so.1": ELF, "/usr/lib64/libnuma.so.1": ELF,
        "/usr/bin/numactl": "#!/bin/sh\n", "/usr/bin/nvidia-smi": "#!/bin/sh\n",
        "/etc/tuned/active_profile": "throughput-performance\n", "/etc/tuned/profile_mode": "auto\n",
        "/usr/lib/tuned/throughput-performance/tuned.conf": "[cpu]\ngovernor=performance\n[sysctl]\nvm.swappiness=10\n"
                                                            "[vm]\ntransparent_hugepages=always\n",
        "/sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE\n",
    }
    for c in range(8):
        t = f"/sys/devices/system/cpu/cpu{c}"
        files[f"{t}/topology/physical_package_id"] = f"{c // 4}\n"
        files[f"{t}/topology/core_id"] = f"{c // 2}\n"
        files[f"{t}/topology/thread_siblings_list"] = f"{c - c % 2}-{c - c % 2 + 1}\n"
        files[f"{t}/cpufreq/scaling_governor"] = "powersave\n" if c < 4 else "performance\n"
    for n in (0, 1):
        d = f"/sys/devices/system/node/node{n}"
        files[f"{d}/cpulist"] = f"{4 * n}-{4 * n + 3}\n"
        files[f"{d}/meminfo"] = f"Node {n} MemTotal:       {524288} kB\n"
        files[f"{d}/distance"] = "10 21\n" if n == 0 else "21 10\n"
    pci = "/sys/bus/pci/devices"
    for bdf, cls, node, cpus in (("0000:1b:00.0", "0x030200", "0", "0-3"), ("0000:9b:00.0", "0x030200", "1", "4-7"),
                                 ("0000:5a:00.0", "0x068000", "0", "0-3"), ("0000:00:1f.0", "0x060100", "-1", "")):
        files[f"{pci}/{bdf}/vendor"] = "0x10de\n" if bdf != "0000:00:1f.0" else "0x8086\n"
        files[f"{pci}/{bdf}/class"] = f"{cls}\n"
        files[f"{pci}/{bdf}/device"] = "0x2330\n"
        files[f"{pci}/{bdf}/numa_node"] = f"{node}\n"
        files[f"{pci}/{bdf}/local_cpulist"] = f"{cpus}\n"
    return files


def _facts(tmp_path: Path) -> Dict[str, Any]:
    root = build_tree(tmp_path / "host", _tree())
    return collect(root, probe_torch=False, use_nvml=False).to_dict()


EXPECTED: Dict[str, Any] = {'schema': 'hosttune.facts/1',
 'root': 'ROOT',
 'hostname': 'gpu-node-7',
 'distro': {'id': 'rocky',
            'version': '9.3',
            'version_best': '9.3',
            'codename': 'Blue Onyx',
            'like': 'rhel centos fedora',
            'name': 'Rocky Linux',
            'family': 'rhel'},
 'kernel': {'release': '5.14.0-362.el9.x86_64',
            'cmdline': 'BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p2 iommu=pt',
            'thp': 'always',
            'thp_defrag': 'madvise',
            'numa_balancing': 1,
            'swappiness': 30,
            'governors': ['performance', 'powersave'],
            'modules': ['nvidia', 'nvidia_uvm', 'nvme']},
 'cpu': {'model': 'Intel(R) Xeon(R) Platinum 8480+',
         'vendor': 'GenuineIntel',
         'arch': 'x86_64',
         'flags': ['sse4_2', 'avx', 'avx2', 'fma', 'f16c', 'avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni',
                   'avx512_bf16', 'avx512_fp16', 'amx_tile', 'amx_bf16', 'amx_int8'],
         'online': [0, 1, 2, 3, 4, 5, 6, 7],
         'logical': 8,
         'physical': 4,
         'packages': 2,
         'smt': True,
         'smt_control': 'on',
         'cores': [[0, 1], [2, 3], [4, 5], [6, 7]],
         'package_cpus': [[0, 1, 2, 3], [4, 5, 6, 7]],
         'allowed_cpus': [0, 1, 2, 3, 4, 5],
         'quota_cpus': 4.0,
         'cgroup': {'version': 2,
                    'path': '/system.slice/docker-ab.scope',
                    'cpuset': [0, 1, 2, 3, 4, 5],
                    'mems': [0, 1],
                    'quota_cpus': 4.0,
                    'memory_max': 68719476736}},
 'numa': {'nodes': [{'id': 0, 'cpus': [0, 1, 2, 3], 'memory_mb': 512, 'distances': [10, 21]},
                    {'id': 1, 'cpus': [4, 5, 6, 7], 'memory_mb': 512, 'distances': [21, 10]}],
          'allowed_mems': [0, 1]},
 'gpus': [{'index': 0,
           'name': None,
           'uuid': None,
           'pci_bus_id': '0000:1b:00.0',
           'numa_node': 0,
           'local_cpus': [0, 1, 2, 3],
           'memory_mb': None,
           'persistence_mode': None,
           'ecc_enabled': None,
           'ecc_pending': None,
           'pcie_gen': None,
           'pcie_gen_max': None,
           'pcie_width': None,
           'pcie_width_max': None,
           'temperature_c': None,
           'temp_slowdown_c': None,
           'clock_event_reasons': None,
           'ecc_uncorrected_volatile': None,
           'retired_pages_pending': None,
           'remapped_rows_pending': None,
           'remapped_rows_failure': None,
           'vendor_id': '0x10de',
           'device_id': '0x2330',
           'pci_class': '0x030200',
           'source': 'pci'},
          {'index': 1,
           'name': None,
           'uuid': None,
           'pci_bus_id': '0000:9b:00.0',
           'numa_node': 1,
           'local_cpus': [4, 5, 6, 7],
           'memory_mb': None,
           'persistence_mode': None,
           'ecc_enabled': None,
           'ecc_pending': None,
           'pcie_gen': None,
           'pcie_gen_max': None,
           'pcie_width': None,
           'pcie_width_max': None,
           'temperature_c': None,
           'temp_slowdown_c': None,
           'clock_event_reasons': None,
           'ecc_uncorrected_volatile': None,
           'retired_pages_pending': None,
           'remapped_rows_pending': None,
           'remapped_rows_failure': None,
           'vendor_id': '0x10de',
           'device_id': '0x2330',
           'pci_class': '0x030200',
           'source': 'pci'}],
 'nvidia': {'driver': '550.54.15',
            'cuda_driver': None,
            'nvml': 'skipped',
            'nvml_error': None,
            'cuda_toolkit': '12.4.1',
            'cuda_toolkit_path': '/usr/local/cuda-12.4',
            'cudnn': '9.1.0',
            'nccl': '2.21.5',
            'fabric_manager_installed': True,
            'fabric_manager_running': None,
            'nvswitches': 1},
 'torch': None,
 'allocators': {'jemalloc': '/usr/lib64/libjemalloc.so.2',
                'tcmalloc': None,
                'tcmalloc_minimal': None,
                'iomp5': None,
                'gomp': '/usr/lib64/libgomp.so.1'},
 'tools': {'numactl': '/usr/bin/numactl',
           'nvidia_smi': '/usr/bin/nvidia-smi',
           'torchrun': None,
           'libnuma': '/usr/lib64/libnuma.so.1'},
 'storage': [{'mount': '/',
              'fstype': 'xfs',
              'source': '/dev/nvme0n1p2',
              'device': 'nvme0n1p2',
              'kind': 'unknown',
              'size_mb': None,
              'free_mb': None},
             {'mount': '/dev/shm',
              'fstype': 'tmpfs',
              'source': 'shm',
              'device': None,
              'kind': 'tmpfs',
              'size_mb': 64,
              'free_mb': None},
             {'mount': '/data',
              'fstype': 'nfs4',
              'source': 'store:/data',
              'device': 'store:/data',
              'kind': 'network',
              'size_mb': None,
              'free_mb': None}],
 'memory': {'total_mb': 1024,
            'available_mb': 512,
            'swap_total_mb': 0,
            'hugepages_total': 0,
            'hugepage_size_kb': 2048,
            'shm_mb': 64},
 'limits': {'nofile_soft': None, 'nofile_hard': None, 'memlock_soft': None, 'memlock_hard': None, 'rdma_devices': 1},
 'tuned': {'installed': True,
           'running': False,
           'profile': 'throughput-performance',
           'mode': 'auto',
           'settings': [{'id': 'thp',
                         'option': 'vm.transparent_hugepages',
                         'value': 'always',
                         'profile': 'throughput-performance'},
                        {'id': 'swappiness',
                         'option': 'sysctl.vm.swappiness',
                         'value': '10',
                         'profile': 'throughput-performance'},
                        {'id': 'governor',
                         'option': 'cpu.governor',
                         'value': 'performance',
                         'profile': 'throughput-performance'}]},
 'container': {'detected': True,
               'runtime': 'docker',
               'evidence': ['/.dockerenv exists', '/proc/self/cgroup: /system.slice/docker-ab.scope'],
               'proc_sys_readonly': False,
               'sys_readonly': False,
               'nvidia_devices': ['nvidia0', 'nvidiactl'],
               'gpu_nodes': 1,
               'driver_gpus': 2,
               'cgroup_limits': ['cpus 0-5 (cpuset of 8 online)', '4 CPUs (cpu quota)',
                                 '65536 MiB memory (memory limit)'],
               'host_values': ["kernel sysctls, transparent hugepages and cpufreq are the host's",
                               "cpu model, topology and numa nodes are the host's; cpu allowed is the container's",
                               "memory total/available is the host's /proc/meminfo; the container may use 65536 MiB",
                               'the driver has 2 GPUs on the host; 1 passed in as /dev/nvidiaN']},
 'missing': []}


def test_every_field_of_a_gpu_server(tmp_path: Path) -> None:
    got = _facts(tmp_path)
    got["root"] = "ROOT"
    for key in EXPECTED:
        assert got[key] == EXPECTED[key], key
    assert sorted(got) == sorted(EXPECTED)
    assert all(m.__name__.startswith("hosttune.detect.") for m in MODULES)
