"""hosttune.detect.numa, .kernel and .limits pinned on captured trees (issue 21): node meminfo/cpulist/distance,
sparse and CPU-less nodes, the single-node fallback, the allowed mems; THP brackets, governors, modules, sysctls;
rlimits live and absent on a capture (compared with the resource module, the kernel's own answer)."""

import resource
from pathlib import Path
from typing import Dict, Optional

import pytest
from conftest import build_tree

from hosttune.detect import kernel, limits, numa
from hosttune.detect.hostio import HostIO
from hosttune.facts import Kernel, Limits, Numa, NumaNode

N = "sys/devices/system/node"


@pytest.mark.parametrize("text,mb", [("Node 0 MemTotal:       32768000 kB\nNode 0 MemFree: 1 kB\n", 32000),
                                     ("Node 12 MemTotal: 2047 kB", 1), ("Node 0 MemTotal: 1023 kB", 0),
                                     ("Node 0 MemFree: 5 kB", None), ("MemTotal: 5 kB", None), (None, None),
                                     ("Node 0 MemTotal: 5 MB", None)])
def test_node_meminfo(text: Optional[str], mb: Optional[int]) -> None:
    assert numa.parse_node_meminfo(text) == mb


def test_meminfo() -> None:
    got = numa.parse_meminfo("MemTotal:  100 kB\nHugePages_Total:   4\nBad: x kB\nNeg: -1 kB\nEmpty:\nnocolon\n"
                             "SwapTotal: 0 kB\n")
    assert got == {"MemTotal": 100, "HugePages_Total": 4, "SwapTotal": 0}


def test_nodes_sparse_cpuless_offline_and_allowed(tmp_path: Path) -> None:
    files: Dict[str, str] = {
        f"{N}/node0/cpulist": "0-3\n", f"{N}/node0/meminfo": "Node 0 MemTotal: 2097152 kB\n",
        f"{N}/node0/distance": "10 21 31\n",
        f"{N}/node2/cpumap": "00000030\n", f"{N}/node2/meminfo": "Node 2 MemTotal: 1048576 kB\n",
        f"{N}/node2/distance": "21 10 x 31\n",
        f"{N}/node5/cpulist": "\n", f"{N}/node5/distance": "31 31 10\n",  # CPU-less, no meminfo
        f"{N}/nodefoo/cpulist": "9\n", f"{N}/online": "0,2,5\n",
    }
    io = HostIO(build_tree(tmp_path, files))
    got = numa.probe(io, online=[0, 1, 2, 4, 5], cgroup_mems=[2, 5, 7])
    assert got == Numa(nodes=(NumaNode(0, (0, 1, 2), 2048, (10, 21, 31)), NumaNode(2, (4, 5), 1024, (21, 10, 31)),
                              NumaNode(5, (), 0, (31, 31, 10))), allowed_mems=(2, 5))
    assert io.missing == ["numa.node5: no MemTotal in meminfo"]
    assert numa.probe(HostIO(build_tree(tmp_path, {})), online=[0]).allowed_mems == (0, 2, 5)


def test_a_node_without_cpu_files_is_noted(tmp_path: Path) -> None:
    io = HostIO(build_tree(tmp_path, {f"{N}/node1/meminfo": "Node 1 MemTotal: 1024 kB\n"}))
    assert numa.probe(io, online=[0]).nodes == (NumaNode(1, (), 1, ()),)
    assert io.missing == ["numa.node1: no cpulist or cpumap"]


def test_no_node_folder_is_one_node(tmp_path: Path) -> None:
    io = HostIO(build_tree(tmp_path, {"proc/meminfo": "MemTotal: 4194304 kB\n"}))
    assert numa.probe(io, online=[0, 1]) == Numa(nodes=(NumaNode(0, (0, 1), 4096, (10,)),), allowed_mems=(0,))
    assert io.missing == ["numa: /sys/devices/system/node not found; assuming one node"]
    io = HostIO(build_tree(tmp_path / "b", {f"{N}/possible": "0\n"}))
    assert numa.probe(io, online=[3]).nodes == (NumaNode(0, (3,), 0, (10,)),)
    assert io.missing == []  # the folder is there, just without nodeN


@pytest.mark.parametrize("text,mode", [("always [madvise] never", "madvise"), ("[always] madvise never", "always"),
                                       ("never", "never"), ("always madvise", None), ("", None), (None, None),
                                       ("always defer defer+madvise [madvise] never", "madvise")])
def test_bracketed(text: Optional[str], mode: Optional[str]) -> None:
    assert kernel.parse_bracketed(text) == mode


def test_modules_in_the_table_order() -> None:
    text = "nvme 1 0 - Live\nmlx5_core 2 0 - Live\nnvidia_uvm 1 0 - Live\nnvidia 5 1 nvidia_uvm, Live\n\nsnd 1 0\n"
    assert kernel.parse_modules(text) == ["nvidia", "nvidia_uvm", "mlx5_core", "nvme"]
    assert kernel.parse_modules(text, ("snd", "x")) == ["snd"]
    assert kernel.parse_modules(None) == [] and kernel.parse_modules("") == []


def test_kernel_probe_on_a_tree(tmp_path: Path) -> None:
    c = "sys/devices/system/cpu"
    files = {"proc/sys/kernel/osrelease": "6.1.0-18-amd64\n", "proc/cmdline": "root=/dev/sda1 quiet\n",
             "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
             "sys/kernel/mm/transparent_hugepage/defrag": "[always] defer never\n",
             "proc/sys/kernel/numa_balancing": "1\n", "proc/sys/vm/swappiness": "60\n",
             "proc/modules": "nouveau 1 0 - Live\n",
             f"{c}/cpu0/cpufreq/scaling_governor": "powersave\n", f"{c}/cpu1/cpufreq/scaling_governor": "performance\n",
             f"{c}/cpu2/cpufreq/scaling_governor": "powersave\n", f"{c}/cpu3/cpufreq/scaling_governor": "ondemand\n"}
    io = HostIO(build_tree(tmp_path, files))
    assert kernel.probe(io, online=[0, 1, 2]) == Kernel(
        release="6.1.0-18-amd64", cmdline="root=/dev/sda1 quiet", thp="madvise", thp_defrag="always",
        numa_balancing=1, swappiness=60, governors=("performance", "powersave"), modules=("nouveau",))
    assert io.missing == []
    empty = HostIO(build_tree(tmp_path / "e", {"etc/x": ""}))
    assert kernel.probe(empty) == Kernel()
    assert empty.missing == ["kernel.release: /proc/sys/kernel/osrelease not found",
                             "kernel.modules: /proc/modules not found",
                             "kernel.thp: /sys/kernel/mm/transparent_hugepage/enabled not found",
                             "kernel.swappiness: /proc/sys/vm/swappiness not found"]


def test_limits_live_match_the_kernel_and_a_capture_has_none(tmp_path: Path) -> None:
    io = HostIO(build_tree(tmp_path, {"sys/class/infiniband/mlx5_0/x": "", "sys/class/infiniband/mlx5_1/x": ""}))
    assert limits.probe(io) == Limits(rdma_devices=2)
    live = limits.probe(HostIO(Path("/")))

    def norm(v: int) -> int:
        return -1 if v == resource.RLIM_INFINITY else v

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert (live.nofile_soft, live.nofile_hard) == (norm(soft), norm(hard))
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    assert (live.memlock_soft, live.memlock_hard) == (norm(soft), norm(hard))
