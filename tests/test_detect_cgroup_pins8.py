"""hosttune.detect.cgroup pins (issue 21, practice round HDET8): v1 hosts whose /proc/self/cgroup names some
controllers and not others, probed whole from a tree."""

from pathlib import Path

from conftest import build_tree

from hosttune.detect import cgroup
from hosttune.detect.hostio import HostIO
from hosttune.detect.mounts import MountEntry
from hosttune.facts import Cgroup

_V1_MOUNTS = ("30 1 0:30 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
              "31 1 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n")


def test_v1_cpuset_mounted_but_not_named_for_this_process_is_no_cpuset(tmp_path: Path) -> None:
    """The cpuset hierarchy is mounted, but /proc/self/cgroup has no cpuset line and there is no /proc/self/cpuset:
    no cpuset path, so no cpuset limit (and nothing to note); the quota still comes from the cpu hierarchy."""
    files = {
        "/proc/self/cgroup": "4:cpu,cpuacct:/job3\n",
        "/proc/self/mountinfo": _V1_MOUNTS,
        "/sys/fs/cgroup/cpu,cpuacct/job3/cpu.cfs_quota_us": "150000\n",
        "/sys/fs/cgroup/cpu,cpuacct/job3/cpu.cfs_period_us": "100000\n",
        "/sys/fs/cgroup/cpuset/cpuset.cpus": "0-7\n",
        "/sys/fs/cgroup/cpuset/cpuset.mems": "0\n",
    }
    io = HostIO(build_tree(tmp_path, files))
    assert cgroup.probe(io) == Cgroup(version=1, path="/job3", cpuset=None, mems=None, quota_cpus=1.5,
                                      memory_max=None)
    assert io.missing == []


def test_v1_controllers_are_matched_as_whole_mount_options(tmp_path: Path) -> None:
    """A hierarchy mounted with only `cpuset` is not the `cpu` controller's (the option is a word, not a prefix):
    the quota files under it are not read."""
    files = {
        "/proc/self/cgroup": "4:cpu:/job4\n3:cpuset:/job4\n",
        "/proc/self/mountinfo": "31 1 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n",
        "/sys/fs/cgroup/cpuset/job4/cpuset.cpus": "2-5\n",
        "/sys/fs/cgroup/cpuset/job4/cpuset.mems": "0\n",
        "/sys/fs/cgroup/cpuset/job4/cpu.cfs_quota_us": "100000\n",
        "/sys/fs/cgroup/cpuset/job4/cpu.cfs_period_us": "100000\n",
    }
    io = HostIO(build_tree(tmp_path, files))
    assert cgroup.probe(io) == Cgroup(version=1, path="/job4", cpuset=(2, 3, 4, 5), mems=(0,), quota_cpus=None,
                                      memory_max=None)
    assert io.missing == []


def test_ancestors_stop_at_a_mount_point_written_with_a_trailing_slash(tmp_path: Path) -> None:
    m = MountEntry(mount="/sys/fs/cgroup/", fstype="cgroup2", source="cgroup2")
    assert cgroup._ancestors(HostIO(tmp_path), m, "/a/b") == ["/sys/fs/cgroup/a/b", "/sys/fs/cgroup/a",
                                                               "/sys/fs/cgroup"]
    assert cgroup._ancestors(HostIO(tmp_path), m._replace(mount="/sys//fs/cgroup"), "/") == ["/sys/fs/cgroup"]
