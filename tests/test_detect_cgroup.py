"""The detector's cgroup limits (hosttune/detect/cgroup.py) on synthetic hosts: systemd's hybrid layout is read as
v1, and in a v2 hierarchy the tightest level's cpu.max and memory.max win (pinned before the issue-17 rebuild)."""

from pathlib import Path
from typing import Dict, List, Tuple

from _synthhost import cpu_files
from conftest import build_tree
from conftest import build_tree as build

from hosttune.detect import collect
from hosttune.detect.cgroup import probe
from hosttune.detect.hostio import HostIO
from hosttune.facts import Cgroup


def test_hybrid_cgroup_host_is_read_as_v1_for_cpu_and_cpuset(tmp_path: Path) -> None:
    """systemd's hybrid layout: v1 controllers plus a cgroup2 tree at /sys/fs/cgroup/unified holding no
    controllers. The limits are the v1 ones; the (planted, tighter) v2 values must be ignored."""
    files = cpu_files(8)
    files.update({
        "/proc/self/cgroup": "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n"
                             "1:name=systemd:/docker/abc\n0::/docker/abc\n",
        "/proc/self/mountinfo": "\n".join([
            "30 1 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate",
            "31 1 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct",
            "32 1 0:28 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset",
            "33 1 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory",
            "34 1 0:30 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd",
        ]) + "\n",
        "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "300000\n",
        "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
        "/sys/fs/cgroup/cpuset/docker/abc/cpuset.cpus": "0-5\n",
        "/sys/fs/cgroup/cpuset/docker/abc/cpuset.mems": "0\n",
        "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": f"{6 << 30}\n",
        # what the v2 tree would say if it were read: tighter everywhere
        "/sys/fs/cgroup/unified/docker/abc/cpu.max": "100000 100000\n",
        "/sys/fs/cgroup/unified/docker/abc/cpuset.cpus.effective": "0\n",
        "/sys/fs/cgroup/unified/docker/abc/memory.max": f"{1 << 30}\n",
    })
    c = collect(build(tmp_path, files), probe_torch=False, use_nvml=False).cpu
    assert c.cgroup.version == 1
    assert c.cgroup.quota_cpus == 3.0 and c.quota_cpus == 3.0
    assert c.cgroup.cpuset == (0, 1, 2, 3, 4, 5) and c.allowed_cpus == (0, 1, 2, 3, 4, 5)
    assert c.cgroup.memory_max == 6 << 30


def v2_nested(tmp_path: Path, leaf_cpu: str, parent_cpu: str, leaf_mem: str, parent_mem: str) -> Path:
    files = cpu_files(8)
    cg = "/sys/fs/cgroup/kubepods.slice/pod1"
    files.update({
        "/proc/self/cgroup": "0::/kubepods.slice/pod1/ctr\n",
        "/proc/self/mountinfo": "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
        f"{cg}/ctr/cpu.max": leaf_cpu, f"{cg}/ctr/memory.max": leaf_mem,
        f"{cg}/cpu.max": parent_cpu, f"{cg}/memory.max": parent_mem,
        "/sys/fs/cgroup/kubepods.slice/cpu.max": "max 100000\n",
        "/sys/fs/cgroup/kubepods.slice/memory.max": "max\n",
    })
    return build(tmp_path, files)


def test_parent_cgroup_tighter_cpu_max_and_memory_max_win_over_the_leaf(tmp_path: Path) -> None:
    root = v2_nested(tmp_path / "a", "400000 100000\n", "150000 100000\n", f"{8 << 30}\n", f"{2 << 30}\n")
    c = collect(root, probe_torch=False, use_nvml=False).cpu
    assert c.cgroup.version == 2
    assert c.quota_cpus == 1.5 and c.cgroup.quota_cpus == 1.5
    assert c.cgroup.memory_max == 2 << 30
    # and the other way round: a tighter leaf still wins (so the rule is "the tightest level", not "the parent")
    root = v2_nested(tmp_path / "b", "150000 100000\n", "400000 100000\n", f"{2 << 30}\n", f"{8 << 30}\n")
    c = collect(root, probe_torch=False, use_nvml=False).cpu
    assert c.quota_cpus == 1.5 and c.cgroup.memory_max == 2 << 30


V2_MOUNT = "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
V1_MOUNTS = "\n".join([
    "31 1 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct",
    "32 1 0:28 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset",
    "33 1 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory",
]) + "\n"


def _probe(tmp_path: Path, files: Dict[str, str]) -> Tuple[Cgroup, List[str]]:
    io = HostIO(build_tree(tmp_path, files))
    got = probe(io)
    return got, [m for m in io.missing if m.startswith("cgroup:")]


def test_no_cgroup_at_all_is_an_empty_cgroup_and_one_gap(tmp_path: Path) -> None:
    assert _probe(tmp_path, {"/proc/self/mountinfo": V2_MOUNT}) == (
        Cgroup(), ["cgroup: no proc/self/cgroup or proc/self/cpuset"])


def test_v2_without_its_filesystem_keeps_the_path_and_names_the_gap(tmp_path: Path) -> None:
    got = _probe(tmp_path, {"/proc/self/cgroup": "0::/user.slice\n", "/proc/self/mountinfo": V1_MOUNTS})
    assert got == (Cgroup(version=2, path="/user.slice"), ["cgroup: cgroup2 filesystem not mounted"])


def test_v2_takes_the_nearest_cpuset_and_the_tightest_limits_up_to_the_mount(tmp_path: Path) -> None:
    cg = "/sys/fs/cgroup/a.slice"
    got = _probe(tmp_path, {
        "/proc/self/cgroup": "0::/a.slice/b/c\n", "/proc/self/mountinfo": V2_MOUNT,
        f"{cg}/b/c/cpu.max": "max 100000\n", f"{cg}/b/cpuset.cpus.effective": "2-5\n",
        f"{cg}/cpuset.cpus.effective": "0-7\n", f"{cg}/cpuset.mems.effective": "0-1\n",
        f"{cg}/b/cpu.max": "300000 100000\n", f"{cg}/cpu.max": "250000\n",
        f"{cg}/b/c/memory.max": f"{4 << 30}\n", f"{cg}/memory.max": "max\n",
        "/sys/fs/cgroup/memory.max": f"{1 << 62}\n",  # "unlimited" as v1 writes it
    })
    assert got == (Cgroup(version=2, path="/a.slice/b/c", cpuset=(2, 3, 4, 5), mems=(0, 1), quota_cpus=2.5,
                          memory_max=4 << 30), [])


def test_v2_in_a_namespace_maps_the_path_through_the_mount_root(tmp_path: Path) -> None:
    got = _probe(tmp_path, {
        "/proc/self/cgroup": "0::/kubepods/pod1/ctr\n",
        "/proc/self/mountinfo": "30 1 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "/sys/fs/cgroup/ctr/cpu.max": "50000 100000\n",
    })
    assert got == (Cgroup(version=2, path="/kubepods/pod1/ctr", quota_cpus=0.5), [])


def test_v2_names_a_cgroup_folder_that_is_not_there(tmp_path: Path) -> None:
    got = _probe(tmp_path, {"/proc/self/cgroup": "0::/gone\n", "/proc/self/mountinfo": V2_MOUNT,
                            "/sys/fs/cgroup/cpu.max": "100000 100000\n"})
    assert got == (Cgroup(version=2, path="/gone", quota_cpus=1.0),
                   ["cgroup: cgroup2 folder /sys/fs/cgroup/gone not found"])


def test_a_named_only_v1_hierarchy_beside_0_is_v2(tmp_path: Path) -> None:
    got = _probe(tmp_path, {"/proc/self/cgroup": "1:name=systemd:/x\n0::/x\n", "/proc/self/mountinfo": V2_MOUNT,
                            "/sys/fs/cgroup/x/cpu.max": "200000 100000\n"})
    assert got == (Cgroup(version=2, path="/x", quota_cpus=2.0), [])


def test_only_proc_self_cpuset_and_a_cgroup2_mount_read_as_v2(tmp_path: Path) -> None:
    got = _probe(tmp_path, {"/proc/self/cpuset": "/job7\n", "/proc/self/mountinfo": V2_MOUNT,
                            "/sys/fs/cgroup/job7/cpuset.cpus.effective": "1,3\n"})
    assert got == (Cgroup(version=2, path="/job7", cpuset=(1, 3)), [])


def test_only_proc_self_cpuset_on_the_legacy_cpuset_filesystem_reads_as_v1(tmp_path: Path) -> None:
    got = _probe(tmp_path, {
        "/proc/self/cpuset": "/job7",
        "/proc/self/mountinfo": "40 1 0:40 / /dev/cpuset rw - cpuset none rw\n",
        "/dev/cpuset/job7/cpus": "4-7\n", "/dev/cpuset/mems": "1\n",
    })
    assert got == (Cgroup(version=1, path="/job7", cpuset=(4, 5, 6, 7), mems=(1,)), [])


def test_v1_reads_cpuset_quota_and_the_tightest_memory_limit(tmp_path: Path) -> None:
    got = _probe(tmp_path, {
        "/proc/self/cgroup": "5:memory:/d/x\n4:cpuacct:/d/x\n3:cpuset:/d/x\n",
        "/proc/self/mountinfo": V1_MOUNTS,
        "/sys/fs/cgroup/cpuset/d/x/cpuset.effective_cpus": "0-3\n", "/sys/fs/cgroup/cpuset/d/cpuset.cpus": "0-1\n",
        "/sys/fs/cgroup/cpuset/d/x/cpuset.mems": "0\n",
        "/sys/fs/cgroup/cpu,cpuacct/d/x/cpu.cfs_quota_us": "-1\n",
        "/sys/fs/cgroup/cpu,cpuacct/d/cpu.cfs_quota_us": "150000\n",
        "/sys/fs/cgroup/cpu,cpuacct/d/cpu.cfs_period_us": "100000\n",
        "/sys/fs/cgroup/memory/d/x/memory.limit_in_bytes": f"{8 << 30}\n",
        "/sys/fs/cgroup/memory/d/memory.limit_in_bytes": f"{3 << 30}\n",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
    })
    # cpuset.cpus, then cpus, then cpuset.effective_cpus, in the nearest folder that has one
    assert got == (Cgroup(version=1, path="/d/x", cpuset=(0, 1, 2, 3), mems=(0,), quota_cpus=1.5,
                          memory_max=3 << 30), [])


def test_v1_names_a_missing_cpuset_folder_and_an_unmounted_cpuset_hierarchy(tmp_path: Path) -> None:
    got = _probe(tmp_path / "a", {"/proc/self/cgroup": "3:cpuset:/gone\n", "/proc/self/mountinfo": V1_MOUNTS})
    assert got == (Cgroup(version=1, path="/gone"), ["cgroup: cpuset folder /sys/fs/cgroup/cpuset/gone not found"])
    cpu_only = "31 1 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
    got = _probe(tmp_path / "b", {"/proc/self/cgroup": "3:cpuset:/job\n4:cpu:/c\n", "/proc/self/mountinfo": cpu_only,
                                  "/sys/fs/cgroup/cpu/c/cpu.cfs_quota_us": "400000\n"})
    assert got == (Cgroup(version=1, path="/job", quota_cpus=4.0), ["cgroup: cpuset hierarchy not mounted"])
    # the root cpuset unmounted is no gap; the path then comes from the cpu controller
    got = _probe(tmp_path / "c", {"/proc/self/cgroup": "4:cpu:/c\n", "/proc/self/mountinfo": cpu_only})
    assert got == (Cgroup(version=1, path="/c"), [])
