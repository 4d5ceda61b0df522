"""The detector's cgroup limits (hosttune/detect/cgroup.py) on synthetic hosts: systemd's hybrid layout is read as
v1, and in a v2 hierarchy the tightest level's cpu.max and memory.max win (pinned before the issue-17 rebuild)."""

from pathlib import Path

from _synthhost import cpu_files
from conftest import build_tree as build

from hosttune.detect import collect


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
