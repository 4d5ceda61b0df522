"""Synthetic roots for what the captured hosts lack: cgroup v2 quotas, NVIDIA GPUs on two NUMA nodes, dm/md over
NVMe, network mounts, a half-missing tree, NVML through the fake, and the torch probe against real interpreters."""

import os
import stat
import time
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from conftest import a100, cli_runner
from conftest import build_tree as build

from hosttune.detect import HostIO, collect, gpu, torchenv
from hosttune.detect import hostio as detect_io

# The start of an ELF shared library: detection checks the magic, not the rest.
ELF = "\x7fELF\x02\x01\x01"


def cpus(n: int, per_core: int = 1, nodes: int = 1) -> Dict[str, str]:
    """n online CPUs in one package, `per_core` SMT threads, spread over `nodes` NUMA nodes."""
    files = {"/sys/devices/system/cpu/online": f"0-{n - 1}\n",
             "/proc/cpuinfo": "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test Xeon\n"
                              "flags\t\t: fpu lm sse2 avx2 avx512f avx512_bf16\n"}
    cores = n // per_core
    for c in range(n):
        t = f"/sys/devices/system/cpu/cpu{c}/topology"
        core = c % cores
        sibs = ",".join(str(core + k * cores) for k in range(per_core))
        files.update({f"{t}/physical_package_id": "0\n", f"{t}/core_id": f"{core}\n",
                      f"{t}/thread_siblings_list": f"{sibs}\n"})
    per_node = n // nodes
    for i in range(nodes):
        d = f"/sys/devices/system/node/node{i}"
        files[f"{d}/cpulist"] = f"{i * per_node}-{(i + 1) * per_node - 1}\n"
        files[f"{d}/meminfo"] = f"Node {i} MemTotal:       {16 << 20} kB\n"
        files[f"{d}/distance"] = " ".join("10" if j == i else "21" for j in range(nodes)) + "\n"
    return files


def test_cgroup_v2_quota_cpuset_and_memory(tmp_path: Path) -> None:
    cg = "/sys/fs/cgroup/kubepods.slice/pod1/ctr"
    files = cpus(8)
    files.update({
        "/proc/self/cgroup": "0::/kubepods.slice/pod1/ctr\n",
        "/proc/self/mountinfo": "30 1 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
        f"{cg}/cpu.max": "150000 100000\n",
        f"{cg}/cpuset.cpus.effective": "2-5\n",
        f"{cg}/cpuset.mems.effective": "0\n",
        f"{cg}/memory.max": "max\n",
        "/sys/fs/cgroup/kubepods.slice/pod1/cpu.max": "400000 100000\n",
        "/sys/fs/cgroup/kubepods.slice/pod1/memory.max": f"{4 << 30}\n",
        "/sys/fs/cgroup/kubepods.slice/cpu.max": "max 100000\n",
    })
    facts = collect(build(tmp_path, files), probe_torch=False, use_nvml=False)
    c = facts.cpu
    assert c.cgroup.version == 2 and c.cgroup.path == "/kubepods.slice/pod1/ctr"
    assert c.quota_cpus == 1.5 and c.cgroup.quota_cpus == 1.5  # the tightest level wins
    assert c.allowed_cpus == (2, 3, 4, 5) and c.logical == 8
    assert c.cgroup.memory_max == 4 << 30  # a parent's limit binds the child
    assert c.flags == ("avx2", "avx512f", "avx512_bf16") and c.arch == "x86_64"


def test_cgroup_v1_cfs_quota(tmp_path: Path) -> None:
    files = cpus(4)
    files.update({
        "/proc/self/cgroup": "4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n2:memory:/docker/abc\n",
        "/proc/mounts": "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n"
                        "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n"
                        "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n",
        "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "250000\n",
        "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
        "/sys/fs/cgroup/cpuset/docker/abc/cpuset.cpus": "0,2\n",
        "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "9223372036854771712\n",
    })
    c = collect(build(tmp_path, files), probe_torch=False, use_nvml=False).cpu
    assert (c.cgroup.version, c.quota_cpus, c.allowed_cpus, c.cgroup.memory_max) == (1, 2.5, (0, 2), None)


def gpu_host(root: Path) -> Path:
    """8 CPUs on 2 NUMA nodes; two NVIDIA GPUs (one per node), an NVSwitch, an ASPEED VGA and an Intel NIC."""
    files = cpus(8, nodes=2)
    links = {}
    devices = {
        "0000:3b:00.0": ("0x10de", "0x030200", "0x20b5", "0", "0-3"),
        "0000:af:00.0": ("0x10de", "0x030200", "0x20b5", "1", "4-7"),
        "0000:c1:00.0": ("0x10de", "0x068000", "0x1af1", "1", "4-7"),  # NVSwitch
        "0000:02:00.0": ("0x1a03", "0x030000", "0x2000", "0", "0-3"),  # ASPEED BMC VGA
        "0000:18:00.0": ("0x8086", "0x020000", "0x1593", "0", "0-3"),  # NIC
    }
    for bdf, (vendor, cls, dev, node, local) in devices.items():
        d = f"/sys/devices/pci0000:{bdf[5:7]}/{bdf}"
        files.update({f"{d}/vendor": vendor + "\n", f"{d}/class": cls + "\n", f"{d}/device": dev + "\n",
                      f"{d}/numa_node": node + "\n", f"{d}/local_cpulist": local + "\n"})
        links[f"/sys/bus/pci/devices/{bdf}"] = f"../../../devices/pci0000:{bdf[5:7]}/{bdf}"
    files.update({
        "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 2024\n",
        "/proc/modules": "nvidia_uvm 1 0 - Live 0x0\nnvidia 2 1 nvidia_uvm, Live 0x0\n",
        "/usr/local/cuda-12.4/version.json": '{"cuda": {"name": "CUDA SDK", "version": "12.4.131"}}',
        "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h":
            "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n",
        "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5": "",
        "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2": ELF,
        "/usr/lib64/libtcmalloc_minimal.so.4": ELF,
        "/usr/bin/nv-fabricmanager": "",
        "/usr/bin/numactl": "",
    })
    links["/usr/local/cuda"] = "/usr/local/cuda-12.4"  # absolute, as update-alternatives makes it
    links["/usr/lib/x86_64-linux-gnu/libnccl.so.2"] = "libnccl.so.2.21.5"
    return build(root, files, links)


def test_nvidia_gpus_on_two_numa_nodes_from_pci(tmp_path: Path) -> None:
    facts = collect(gpu_host(tmp_path), probe_torch=False, use_nvml=True)  # foreign root: NVML is not asked
    assert [(g.index, g.pci_bus_id, g.numa_node, g.local_cpus, g.source) for g in facts.gpus] == [
        (0, "0000:3b:00.0", 0, (0, 1, 2, 3), "pci"), (1, "0000:af:00.0", 1, (4, 5, 6, 7), "pci")]
    assert [n.cpus for n in facts.numa.nodes] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert facts.numa.nodes[0].distances == (10, 21)
    nv = facts.nvidia
    assert (nv.nvml, nv.driver, nv.cuda_driver, nv.nvswitches) == ("skipped", "550.54.15", None, 1)
    assert (nv.cuda_toolkit, nv.cuda_toolkit_path) == ("12.4.131", "/usr/local/cuda-12.4")
    assert (nv.cudnn, nv.nccl) == ("9.1.0", "2.21.5")
    assert nv.fabric_manager_installed and nv.fabric_manager_running is None  # not knowable from files
    assert facts.kernel.modules == ("nvidia", "nvidia_uvm")
    assert facts.allocators.jemalloc == "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
    assert facts.allocators.tcmalloc_minimal == "/usr/lib64/libtcmalloc_minimal.so.4"
    assert facts.allocators.tcmalloc is None and facts.tools.numactl == "/usr/bin/numactl"


def test_gpus_through_fake_nvml_with_sysfs_locality(tmp_path: Path, fake_nvml: Any) -> None:
    import pynvml  # the fake

    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "3B", 0), a100(1, "AF", 1, persistence_mode=0)]})
    facts = collect(gpu_host(tmp_path), probe_torch=False, nvml_module=pynvml)
    assert facts.nvidia.nvml == "ok" and facts.nvidia.driver == "550.54.15" and facts.nvidia.cuda_driver == "12.4"
    g0, g1 = facts.gpus
    assert (g0.name, g0.pci_bus_id, g0.numa_node, g0.local_cpus) == (
        "NVIDIA A100-SXM4-80GB", "0000:3b:00.0", 0, (0, 1, 2, 3))
    assert (g1.pci_bus_id, g1.numa_node, g1.persistence_mode, g1.source) == ("0000:af:00.0", 1, False, "nvml")
    assert g0.memory_mb == 81920 and g0.pcie_gen_max == 4 and g0.ecc_enabled is True and g0.uuid.startswith("GPU-")


def test_nvml_driver_not_loaded_falls_back_to_pci(tmp_path: Path, fake_nvml: Any) -> None:
    import pynvml

    fake_nvml({"init_error": "DRIVER_NOT_LOADED"})
    facts = collect(gpu_host(tmp_path), probe_torch=False, nvml_module=pynvml)
    assert facts.nvidia.nvml == "driver_not_loaded" and facts.nvidia.nvml_error
    assert [g.source for g in facts.gpus] == ["pci", "pci"]


def storage_host(root: Path) -> Path:
    """/ on an NVMe partition, /data on LVM (dm-0) over md0 (RAID1 of two NVMe), /scratch on a SATA SSD, /archive on
    a disk, multipath NVMe, nfs4 and cifs mounts, a path with a space, /dev/shm, and pseudo filesystems."""
    pci = "/sys/devices/pci0000:00"
    files = {
        "/proc/self/mountinfo": "\n".join([
            "21 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw",
            "22 21 0:5 / /proc rw shared:2 - proc proc rw",
            "23 21 0:6 / /sys rw shared:3 - sysfs sysfs rw",
            "24 21 0:25 / /dev/shm rw,nosuid shared:4 - tmpfs tmpfs rw,size=8388608k",
            "25 21 253:0 / /data rw,relatime shared:5 - xfs /dev/mapper/vg-data rw",
            "26 21 8:16 / /scratch rw,relatime shared:6 - ext4 /dev/sdb rw",
            "27 21 8:33 / /archive rw,relatime - ext4 /dev/sdc1 rw",
            "28 21 0:50 / /mnt/team\\040data rw,relatime shared:8 master:1 - nfs4 nas:/export/team\\040data rw",
            "29 21 0:51 / /mnt/win rw - cifs //srv/share rw",
            "30 21 259:5 / /fast rw - ext4 /dev/nvme2n1 rw",
            "31 21 0:60 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw",
        ]) + "\n",
        f"{pci}/nvme/nvme0/nvme0n1/queue/rotational": "0\n",
        f"{pci}/nvme/nvme0/nvme0n1/nvme0n1p1/partition": "1\n",
        f"{pci}/nvme/nvme1/nvme1n1/queue/rotational": "0\n",
        f"{pci}/nvme/nvme1/nvme1n1/nvme1n1p1/partition": "1\n",
        "/sys/devices/virtual/nvme-subsystem/nvme-subsys2/nvme2n1/queue/rotational": "0\n",
        f"{pci}/nvme/nvme2/nvme2c2n1/queue/rotational": "0\n",
        f"{pci}/nvme/nvme3/nvme3n1/queue/rotational": "0\n",
        "/sys/devices/virtual/block/md0/queue/rotational": "0\n",
        "/sys/devices/virtual/block/dm-0/queue/rotational": "0\n",
        f"{pci}/ata1/sdb/queue/rotational": "0\n",
        f"{pci}/ata2/sdc/queue/rotational": "1\n",
        f"{pci}/ata2/sdc/sdc1/partition": "1\n",
        "/proc/meminfo": "MemTotal:       65536000 kB\nMemAvailable:   60000000 kB\nSwapTotal:  0 kB\n"
                         "HugePages_Total:       0\nHugepagesize:       2048 kB\n",
    }
    links = {
        "/sys/dev/block/259:1": "../../devices/pci0000:00/nvme/nvme0/nvme0n1/nvme0n1p1",
        "/sys/dev/block/253:0": "../../devices/virtual/block/dm-0",
        "/sys/dev/block/8:16": "../../devices/pci0000:00/ata1/sdb",
        "/sys/dev/block/8:33": "../../devices/pci0000:00/ata2/sdc/sdc1",
        "/sys/dev/block/259:5": "../../devices/virtual/nvme-subsystem/nvme-subsys2/nvme2n1",
        "/sys/devices/virtual/block/dm-0/slaves/md0": "../../md0",
        "/sys/devices/virtual/block/md0/slaves/nvme1n1p1": "../../../../pci0000:00/nvme/nvme1/nvme1n1/nvme1n1p1",
        "/sys/devices/virtual/block/md0/slaves/nvme3n1": "../../../../pci0000:00/nvme/nvme3/nvme3n1",
        "/sys/class/block/nvme0n1": "../../devices/pci0000:00/nvme/nvme0/nvme0n1",
        "/sys/class/block/nvme1n1": "../../devices/pci0000:00/nvme/nvme1/nvme1n1",
        "/sys/class/block/nvme3n1": "../../devices/pci0000:00/nvme/nvme3/nvme3n1",
        "/sys/class/block/nvme2n1": "../../devices/virtual/nvme-subsystem/nvme-subsys2/nvme2n1",
        "/sys/class/block/sdb": "../../devices/pci0000:00/ata1/sdb",
        "/sys/class/block/sdc": "../../devices/pci0000:00/ata2/sdc",
        # The multipath namespace nvme2n1 sits on controller path nvme2c2n1.
        "/sys/devices/virtual/nvme-subsystem/nvme-subsys2/nvme2n1/slaves/nvme2c2n1":
            "../../../../../pci0000:00/nvme/nvme2/nvme2c2n1",
    }
    return build(root, files, links)


def test_storage_kinds_through_partitions_dm_md_and_network(tmp_path: Path) -> None:
    facts = collect(storage_host(tmp_path), probe_torch=False, use_nvml=False)
    got = {m.mount: (m.kind, m.device) for m in facts.storage}
    assert got == {
        "/": ("nvme", "nvme0n1"),
        "/dev/shm": ("tmpfs", None),
        "/data": ("nvme", "nvme1n1,nvme3n1"),  # dm-0 -> md0 -> two NVMe (a partition and a whole disk)
        "/scratch": ("ssd", "sdb"),
        "/archive": ("hdd", "sdc"),
        "/mnt/team data": ("network", "nas:/export/team data"),
        "/mnt/win": ("network", "//srv/share"),
        "/fast": ("nvme", "nvme2n1"),
    }
    assert facts.memory.shm_mb == 8192 and facts.memory.total_mb == 64000 and facts.memory.hugepage_size_kb == 2048


def test_half_missing_tree_is_reported_not_fatal(tmp_path: Path) -> None:
    build(tmp_path, {"/proc/cpuinfo": "processor\t: 0\nmodel name\t: Lonely CPU\n", "/etc/hostname": "half\n"})
    facts = collect(tmp_path, probe_torch=False, use_nvml=False)
    assert facts.cpu.model == "Lonely CPU" and facts.hostname == "half"
    assert facts.cpu.logical == 0 and facts.gpus == ()
    names = {m.split(":")[0] for m in facts.missing}
    assert {"distro", "cpu.online", "kernel.release", "memory", "mounts", "cgroup"} <= names
    assert len(facts.numa.nodes) == 1  # the single-node fallback, with a note
    assert any(m.startswith("numa:") for m in facts.missing)


def test_fast_path_runs_no_subprocess_and_no_py_cpuinfo(monkeypatch: pytest.MonkeyPatch) -> None:
    """`hosttune exec` calls collect(probe_torch=False) once per job: no subprocess, no py-cpuinfo (~1 s), no NVML."""
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"subprocess on the fast path: {args}")

    monkeypatch.setattr(detect_io.subprocess, "run", refuse)
    monkeypatch.setattr("hosttune.detect.cpu.cpuinfo_model_fallback", refuse)
    monkeypatch.setattr("hosttune.detect.gpu.Nvml", refuse)
    facts = collect(probe_torch=False, use_nvml=False)
    assert facts.torch is None and facts.nvidia.nvml == "skipped" and facts.cpu.logical == os.cpu_count()


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def fake_torch_site(site: Path, cuda: Optional[str]) -> Path:
    """A site dir with a `torch` whose __init__ raises: the probe must read it without importing it."""
    build(site, {
        "torch/__init__.py": "raise RuntimeError('the probe imported torch')\n",
        "torch/version.py": "from typing import Optional\n\n__all__ = ['__version__']\n"
                            f"__version__ = '2.4.1+{'cu124' if cuda else 'cpu'}'\n"
                            f"cuda: Optional[str] = {cuda!r}\nhip: Optional[str] = None\n",
        "nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA": "Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\n"
                                                         "Version: 9.1.0.70\n",
        "nvidia_nccl_cu12-2.20.5.dist-info/METADATA": "Metadata-Version: 2.1\nName: nvidia-nccl-cu12\n"
                                                      "Version: 2.20.5\n",
    })
    return site


def test_torch_probe_reads_without_importing(tmp_path: Path, fake_nvml: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import pynvml

    site = fake_torch_site(tmp_path / "site", "12.4")
    python = _script(tmp_path / "python", f'PYTHONPATH={site} exec python3 "$@"')
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "3B"), a100(1, "AF")]})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    t = collect(python=python, nvml_module=pynvml).torch
    assert t is not None and t.error is None
    assert (t.version, t.cuda, t.cudnn, t.nccl) == ("2.4.1+cu124", "12.4", "9.1.0", "2.20.5")
    assert (t.cuda_available, t.device_count) == (True, 1)  # inferred: CUDA build + 1 visible GPU + driver 12.4


def test_torch_cpu_wheel_on_gpu_host(tmp_path: Path, fake_nvml: Any) -> None:
    import pynvml

    site = fake_torch_site(tmp_path / "site", None)
    python = _script(tmp_path / "python", f'PYTHONPATH={site} exec python3 "$@"')
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "3B")]})
    t = collect(python=python, nvml_module=pynvml).torch
    assert t is not None and (t.cuda, t.cuda_available, t.device_count, t.cudnn) == (None, False, 0, None)


def test_torch_missing_broken_and_hanging_interpreters(tmp_path: Path) -> None:
    no_torch = _script(tmp_path / "bare", 'exec python3 -S "$@"')  # no site-packages: no torch
    assert collect(python=no_torch, use_nvml=False).torch is None
    broken = _script(tmp_path / "broken", 'echo "ImportError: libpython3.12.so.1.0: cannot open" >&2; exit 127')
    t = collect(python=broken, use_nvml=False).torch
    assert t is not None and t.python == broken and "libpython3.12.so.1.0" in (t.error or "")
    hanging = _script(tmp_path / "hang", "exec sleep 30")
    data = torchenv.run_probe(HostIO(), hanging, timeout=0.5)
    assert data == {"error": "probe: timed out after 0.5 s"}
    t = torchenv.from_probe(hanging, data, None, [])
    assert t is not None and t.version is None and "timed out" in (t.error or "")


def test_pci_scan_ignores_devices_without_vendor(tmp_path: Path) -> None:
    """nvidiagpunumanodes-style folders (class + local_cpus only) are not identifiable as NVIDIA: no GPU invented."""
    build(tmp_path, {"/sys/bus/pci/devices/0004:04:00.0/class": "0x030200\n",
                     "/sys/bus/pci/devices/0004:04:00.0/local_cpus": "00000000,0000ffff\n"})
    io = HostIO(tmp_path)
    assert gpu.scan_pci(io) == ([], 0)
    assert gpu.device_locality(io, "0004:04:00.0") == (-1, tuple(range(16)))


def test_kernel_settings(tmp_path: Path) -> None:
    files = cpus(4)
    files.update({
        "/proc/sys/kernel/osrelease": "5.15.0-105-generic\n",
        "/sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
        "/sys/kernel/mm/transparent_hugepage/defrag": "[always] defer defer+madvise madvise never\n",
        "/proc/sys/kernel/numa_balancing": "1\n",
        "/proc/sys/vm/swappiness": "10\n",
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
        "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "powersave\n",
        "/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor": "powersave\n",
        "/sys/devices/system/cpu/smt/control": "on\n",
        "/etc/hostname": "node17\n",
    })
    facts = collect(build(tmp_path, files), probe_torch=False, use_nvml=False)
    k = facts.kernel
    assert (k.release, k.thp, k.thp_defrag, k.numa_balancing, k.swappiness) == (
        "5.15.0-105-generic", "never", "always", 1, 10)
    assert k.governors == ("performance", "powersave") and facts.cpu.smt_control == "on"
    assert facts.hostname == "node17"


def test_smt_siblings_make_one_core(tmp_path: Path) -> None:
    c = collect(build(tmp_path, cpus(8, per_core=2)), probe_torch=False, use_nvml=False).cpu
    assert (c.logical, c.physical, c.smt) == (8, 4, True)
    assert c.cores == ((0, 4), (1, 5), (2, 6), (3, 7))


def test_python_by_name_and_bad_python_via_cli(tmp_path: Path) -> None:

    from hosttune.cli import cli

    done = cli_runner().invoke(cli, ["facts", "--python", "no-such-python-xyz"])
    # one line naming it; the reason is the program gateway's (as root: only PATH directories root alone can write)
    assert done.exit_code == 2 and "--python no-such-python-xyz: " in done.stderr, done.stderr
    assert "not an executable file" in done.stderr or "command not found" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_named_systemd_hierarchy_alone_is_cgroup_v2(tmp_path: Path) -> None:
    """Docker-compatible "unified" hosts list name=systemd next to 0::; the controllers are on cgroup2."""
    files = cpus(4)
    files.update({
        "/proc/self/cgroup": "1:name=systemd:/user.slice\n0::/user.slice\n",
        "/proc/self/mountinfo": "30 1 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
        "/sys/fs/cgroup/unified/user.slice/cpu.max": "200000 100000\n",
    })
    c = collect(build(tmp_path, files), probe_torch=False, use_nvml=False).cpu
    assert (c.cgroup.version, c.quota_cpus, c.allowed_cpus) == (2, 2.0, (0, 1, 2, 3))


def test_fast_path_asks_nvml_only_static_queries(tmp_path: Path, fake_nvml: Any) -> None:
    import pynvml

    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "3B", 0, temperature_c=71)]})
    root = gpu_host(tmp_path)
    fast = collect(root, probe_torch=False, nvml_module=pynvml).gpus[0]
    assert (fast.name, fast.numa_node, fast.memory_mb, fast.temperature_c, fast.pcie_gen) == (
        "NVIDIA A100-SXM4-80GB", 0, 81920, None, None)
    full = collect(root, nvml_module=pynvml).gpus[0]
    assert (full.temperature_c, full.pcie_gen) == (71, 4)


def test_statvfs_of_a_hung_network_mount_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hard NFS mount whose server is gone blocks statvfs; the detector gives up on it and says so."""
    import threading

    from hosttune.detect import storage

    release = threading.Event()
    real = os.statvfs

    def statvfs(path: Any) -> Any:
        if str(path) == "/":
            release.wait(10)  # stands in for the kernel waiting on a dead server
        return real(path)

    monkeypatch.setattr(storage.os, "statvfs", statvfs)
    try:
        assert storage._statvfs_bounded("/", 0.2) is None
        assert storage._statvfs_bounded("/proc", 0.2) is not None
    finally:
        release.set()


@pytest.mark.parametrize("garbage", ["zz-9,\x00\n", "", "-1\n", "max max max", "0x\n\n\n"])
def test_garbage_in_every_file_never_crashes(tmp_path: Path, garbage: str) -> None:
    """A corrupt capture (every file replaced) still gives Facts; what could not be parsed is simply absent."""
    root = storage_host(gpu_host(tmp_path))
    files = cpus(8, nodes=2)
    files.update({"/proc/self/cgroup": "0::/a\n", "/sys/fs/cgroup/a/cpu.max": "1 1\n", "/etc/os-release": "ID=x\n",
                  "/etc/redhat-release": "Rocky Linux release 9.4\n", "/etc/debian_version": "12.5\n",
                  "/proc/self/mountinfo": (root / "proc/self/mountinfo").read_text()
                  + "31 21 0:60 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"})
    build(root, files)
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.write_text(garbage)
    facts = collect(root, probe_torch=False, use_nvml=False)
    assert facts.root == str(root)


def test_fabric_manager_running_is_found_by_its_truncated_comm(tmp_path: Path) -> None:
    """A real process named nv-fabricmanager (a copy of sleep): the kernel shows comm as "nv-fabricmanage"."""
    import shutil
    import subprocess

    from hosttune.detect import nvidia

    fm = tmp_path / "nv-fabricmanager"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", fm)
    io = HostIO()
    assert nvidia.fabric_manager_running(io) is False
    proc = subprocess.Popen([str(fm), "30"])
    try:
        comm = Path(f"/proc/{proc.pid}/comm")
        deadline = time.monotonic() + 60  # Popen returns after fork; the exec that renames the process follows
        while time.monotonic() < deadline and comm.read_text().strip() != "nv-fabricmanage":
            time.sleep(0.01)
        assert comm.read_text().strip() == "nv-fabricmanage"
        assert nvidia.fabric_manager_running(HostIO()) is True
    finally:
        proc.kill()
        proc.wait()
    assert nvidia.fabric_manager_running(HostIO(tmp_path)) is None  # a captured host: not knowable
