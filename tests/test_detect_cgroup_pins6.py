"""The cgroup readers one value at a time (issue 21): cpu.max, cfs quota, memory limits and their "unlimited"
spellings, /proc/self/cgroup lines, which version a host is, and how a cgroup path maps into its mount
(hosttune.detect.cgroup)."""

from pathlib import Path
from typing import Optional

import pytest
from conftest import build_tree

from hosttune.detect import cgroup
from hosttune.detect.hostio import HostIO
from hosttune.detect.mounts import MountEntry
from hosttune.facts import Cgroup


@pytest.mark.parametrize("text,cpus", [
    (None, None), ("", None), ("max 100000", None), ("max", None), ("150000 100000", 1.5), ("50000", 0.5),
    ("0 100000", None), ("100000 0", None), ("-1 100000", None), ("abc 100000", None), ("100000 x", None),
    ("200000 50000", 4.0), ("1 100000", 0.00001), ("   ", None),
])
def test_parse_cpu_max(text: Optional[str], cpus: Optional[float]) -> None:
    assert cgroup.parse_cpu_max(text) == cpus


@pytest.mark.parametrize("quota,period,cpus", [
    ("-1", "100000", None), ("50000", "100000", 0.5), ("50000", None, 0.5), ("50000", "", 0.5),
    (None, "100000", None), ("0", "100000", None), ("100000", "0", None), ("150000\n", "100000\n", 1.5),
    ("", "100000", None), ("x", "100000", None), ("100000", "-5", None), ("300000", "100000", 3.0),
])
def test_parse_cfs(quota: Optional[str], period: Optional[str], cpus: Optional[float]) -> None:
    assert cgroup.parse_cfs(quota, period) == cpus


@pytest.mark.parametrize("text,limit", [
    (None, None), ("", None), ("max", None), (" max\n", None), ("1073741824", 1 << 30),
    (str(1 << 62), None), (str((1 << 62) - 1), (1 << 62) - 1), ("9223372036854771712", None), ("abc", None),
    ("4096 extra", 4096), ("0", 0),
])
def test_parse_memory_max(text: Optional[str], limit: Optional[int]) -> None:
    assert cgroup.parse_memory_max(text) == limit


def test_parse_proc_cgroup_v2_hybrid_and_garbage() -> None:
    assert cgroup.parse_proc_cgroup("0::/user.slice/x\n") == ("/user.slice/x", {})
    assert cgroup.parse_proc_cgroup(None) == (None, {})
    hybrid = "12:cpuset:/a\n11:cpu,cpuacct:/b\n1:name=systemd:/c\n0::/d\ngarbage\n5::/e\n 3:memory:/m:x \n"
    assert cgroup.parse_proc_cgroup(hybrid) == ("/d", {"cpuset": "/a", "cpu": "/b", "cpuacct": "/b",
                                                       "name=systemd": "/c", "memory": "/m:x"})


MNT = MountEntry(mount="/sys/fs/cgroup", fstype="cgroup2", source="cgroup2", root="/kubepods/pod1")


@pytest.mark.parametrize("mount,path,host", [
    (MNT, "/kubepods/pod1/c1", "/sys/fs/cgroup/c1"),
    (MNT, "/kubepods/pod1", "/sys/fs/cgroup"),
    (MNT, "/kubepods/pod10", "/sys/fs/cgroup/kubepods/pod10"),
    (MNT, "/other", "/sys/fs/cgroup/other"),
    (MNT._replace(root="/"), "/a/b", "/sys/fs/cgroup/a/b"),
    (MNT._replace(root=""), "/a/b", "/sys/fs/cgroup/a/b"),
    (MNT._replace(root="/kubepods/pod1/"), "/kubepods/pod1/c2", "/sys/fs/cgroup/c2"),
    (MNT._replace(mount="/sys/fs/cgroup/", root="/"), "/", "/sys/fs/cgroup"),
])
def test_a_cgroup_path_inside_its_mount(mount: MountEntry, path: str, host: str) -> None:
    assert cgroup._inside(mount, path) == host


def test_ancestors_leaf_first_up_to_the_mount(tmp_path: Path) -> None:
    io = HostIO(tmp_path)
    m = MNT._replace(root="/")
    assert cgroup._ancestors(io, m, "/a/b") == ["/sys/fs/cgroup/a/b", "/sys/fs/cgroup/a", "/sys/fs/cgroup"]
    assert cgroup._ancestors(io, m, "/") == ["/sys/fs/cgroup"]
    top = MountEntry(mount="/", fstype="cgroup2", source="x")
    assert cgroup._ancestors(io, top, "/x/y") == ["/x/y", "/x", "/"]


@pytest.mark.parametrize("values,least", [
    ([None, 3, 2.5, None], 2.5), ([None], None), ([], None), ([4, 1 << 30], 4), ([0.5, 0.25], 0.25),
])
def test_tightest(values: list, least: object) -> None:
    assert cgroup._tightest(values) == least


CG1 = MountEntry("/sys/fs/cgroup/cpu,cpuacct", "cgroup", "cgroup", options="rw,nosuid,cpu,cpuacct")
CPUSET_FS = MountEntry("/dev/cpuset", "cpuset", "none")
CG2 = MountEntry("/sys/fs/cgroup", "cgroup2", "cgroup2")


def test_v1_mount_by_controller() -> None:
    assert cgroup._v1_mount([CG2, CG1], "cpu") == CG1
    assert cgroup._v1_mount([CG2, CG1], "cpuacct") == CG1
    assert cgroup._v1_mount([CG2, CG1], "cpuset") is None
    assert cgroup._v1_mount([CG2, CG1], "memory") is None
    assert cgroup._v1_mount([CPUSET_FS, CG1], "cpuset") == CPUSET_FS
    assert cgroup._v1_mount([CPUSET_FS], "cpu") is None
    assert cgroup._v1_mount([CG1._replace(options="rw,cpu_x")], "cpu") is None


@pytest.mark.parametrize("v1,v2,cpuset,mounts,version", [
    ({"name=systemd": "/"}, "/x", None, [], 2),
    ({"memory": "/m"}, "/x", None, [], 1),
    ({"cpuacct": "/m"}, None, None, [], 1),
    ({"cpu": "/m"}, None, None, [], 1),
    ({"cpuset": "/m"}, None, None, [], 1),
    ({"name=systemd": "/"}, None, None, [], None),
    ({}, None, "/job", [CPUSET_FS], 1),
    ({}, None, "/job", [CG2], 2),
    ({}, None, None, [CG2], None),
    ({}, "/", "/job", [CPUSET_FS], 2),
])
def test_which_cgroup_version(v1: dict, v2: Optional[str], cpuset: Optional[str], mounts: list,
                              version: Optional[int]) -> None:
    assert cgroup._version(v1, v2, cpuset, mounts) == version


def test_v1_cpu_quota_from_cpuacct_and_cpuset_from_the_legacy_files(tmp_path: Path) -> None:
    mountinfo = ("30 1 0:30 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
                 "31 1 0:31 / /dev/cpuset rw - cpuset none rw\n"
                 "32 1 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")
    files = {
        "/proc/self/cgroup": "4:cpuacct:/job7\n3:cpuset:/job7\n",
        "/proc/self/mountinfo": mountinfo,
        "/sys/fs/cgroup/cpu,cpuacct/job7/cpu.cfs_quota_us": "-1\n",
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "250000\n",
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
        "/dev/cpuset/job7/cpus": "2-3\n",
        "/dev/cpuset/job7/mems": "1\n",
        "/dev/cpuset/cpus": "0-7\n",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes": "1048576\n",
    }
    io = HostIO(build_tree(tmp_path, files))
    # "memory" is not in /proc/self/cgroup: its limit is not this process's
    assert cgroup.probe(io) == Cgroup(version=1, path="/job7", cpuset=(2, 3), mems=(1,), quota_cpus=2.5,
                                      memory_max=None)
    assert io.missing == []


def test_v2_root_path_from_proc_self_cpuset_and_no_limits(tmp_path: Path) -> None:
    files = {"/proc/self/cpuset": "/\n", "/proc/self/mountinfo": "1 0 0:1 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
             "/sys/fs/cgroup/cpu.max": "max 100000\n", "/sys/fs/cgroup/memory.max": "max\n"}
    io = HostIO(build_tree(tmp_path, files))
    assert cgroup.probe(io) == Cgroup(version=2, path="/")
    assert io.missing == []


def test_v1_without_a_cpuset_path_and_nothing_mounted(tmp_path: Path) -> None:
    io = HostIO(build_tree(tmp_path, {"/proc/self/cgroup": "2:memory:/\n", "/proc/mounts": "\n"}))
    assert cgroup.probe(io) == Cgroup(version=1, path=None)
    assert io.missing == []
    io = HostIO(build_tree(tmp_path / "b", {"/proc/self/cgroup": "2:cpuset:/j\n", "/proc/mounts": "\n"}))
    assert cgroup.probe(io) == Cgroup(version=1, path="/j")
    assert io.missing == ["cgroup: cpuset hierarchy not mounted"]
