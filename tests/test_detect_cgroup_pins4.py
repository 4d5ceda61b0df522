"""hosttune.detect.cgroup on captured trees (issue 21): v2 with limits at several levels (the tightest wins), a
namespaced mount root, v1 and hybrid hosts, the legacy cpuset filesystem, /proc/self/cpuset alone, and what is noted
when a hierarchy or folder is missing. Each answer is the whole Cgroup."""

from pathlib import Path
from typing import Dict

from conftest import build_tree

from hosttune.detect import cgroup
from hosttune.detect.hostio import HostIO
from hosttune.facts import Cgroup

V2_MOUNT = "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
CG = "sys/fs/cgroup"


def probe(tmp_path: Path, files: Dict[str, str]) -> "tuple[Cgroup, list]":
    io = HostIO(build_tree(tmp_path, files))
    return cgroup.probe(io), io.missing


def test_v2_tightest_level_wins(tmp_path: Path) -> None:
    files = {"proc/self/cgroup": "0::/kubepods/pod1/c1\n", "proc/self/mountinfo": V2_MOUNT,
             f"{CG}/kubepods/pod1/c1/cpu.max": "max 100000\n",
             f"{CG}/kubepods/pod1/c1/cpuset.cpus.effective": "2-5\n",
             f"{CG}/kubepods/pod1/c1/memory.max": "max\n",
             f"{CG}/kubepods/pod1/cpu.max": "300000 100000\n", f"{CG}/kubepods/pod1/memory.max": "4294967296\n",
             f"{CG}/kubepods/cpu.max": "800000 100000\n", f"{CG}/kubepods/memory.max": "2147483648\n",
             f"{CG}/kubepods/cpuset.mems.effective": "0\n", f"{CG}/cpuset.cpus.effective": "0-63\n",
             f"{CG}/cpu.max": "100000 100000\n"}  # the mount's top level counts too: 1 CPU is the tightest
    got, missing = probe(tmp_path, files)
    assert got == Cgroup(version=2, path="/kubepods/pod1/c1", cpuset=(2, 3, 4, 5), mems=(0,), quota_cpus=1.0,
                         memory_max=2147483648)
    assert missing == []


def test_v2_namespaced_root_and_missing_folder(tmp_path: Path) -> None:
    mount = "30 1 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    files = {"proc/self/cgroup": "0::/kubepods/pod1/c1\n", "proc/self/mountinfo": mount,
             f"{CG}/c1/cpu.max": "50000 100000\n", f"{CG}/c1/cpuset.cpus.effective": "1\n"}
    got, missing = probe(tmp_path, files)
    assert got == Cgroup(version=2, path="/kubepods/pod1/c1", cpuset=(1,), quota_cpus=0.5)
    files = {"proc/self/cgroup": "0::/gone\n", "proc/self/mountinfo": V2_MOUNT, f"{CG}/cpu.max": "200000\n"}
    got, missing = probe(tmp_path / "b", files)
    assert got == Cgroup(version=2, path="/gone", quota_cpus=2.0)
    assert missing == ["cgroup: cgroup2 folder /sys/fs/cgroup/gone not found"]


def test_v2_without_a_cgroup2_mount(tmp_path: Path) -> None:
    got, missing = probe(tmp_path, {"proc/self/cgroup": "0::/x\n", "proc/self/mountinfo": ""})
    assert got == Cgroup(version=2, path="/x") and missing == ["cgroup: cgroup2 filesystem not mounted"]


def test_v1_and_hybrid(tmp_path: Path) -> None:
    mi = ("31 1 0:27 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
          "32 1 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
          "33 1 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
          "34 1 0:30 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n")
    files = {"proc/self/cgroup": "9:cpuset:/job\n8:cpu,cpuacct:/job/step\n7:memory:/job\n0::/job\n",
             "proc/self/mountinfo": mi,
             f"{CG}/cpuset/job/cpuset.cpus": "0-1,8\n", f"{CG}/cpuset/job/cpuset.mems": "1\n",
             f"{CG}/cpu,cpuacct/job/step/cpu.cfs_quota_us": "-1\n",
             f"{CG}/cpu,cpuacct/job/cpu.cfs_quota_us": "150000\n",
             f"{CG}/cpu,cpuacct/job/cpu.cfs_period_us": "100000\n",
             f"{CG}/memory/job/memory.limit_in_bytes": "9223372036854771712\n",
             f"{CG}/memory/memory.limit_in_bytes": "1073741824\n"}
    got, missing = probe(tmp_path, files)
    assert got == Cgroup(version=1, path="/job", cpuset=(0, 1, 8), mems=(1,), quota_cpus=1.5, memory_max=1 << 30)
    assert missing == []


def test_legacy_cpuset_fs_and_proc_self_cpuset(tmp_path: Path) -> None:
    files = {"proc/self/cpuset": "/batch\n", "proc/self/mountinfo": "40 1 0:31 / /dev/cpuset rw - cpuset none rw\n",
             "dev/cpuset/batch/cpus": "4-7\n", "dev/cpuset/batch/mems": "0-1\n"}
    got, missing = probe(tmp_path, files)
    assert got == Cgroup(version=1, path="/batch", cpuset=(4, 5, 6, 7), mems=(0, 1))
    assert missing == []
    got, missing = probe(tmp_path / "b", {"proc/self/cpuset": "/", "proc/self/mountinfo": V2_MOUNT,
                                          f"{CG}/cpuset.cpus.effective": "0-3\n"})
    assert got == Cgroup(version=2, path="/", cpuset=(0, 1, 2, 3)) and missing == []


def test_v1_without_hierarchies_and_nothing_at_all(tmp_path: Path) -> None:
    got, missing = probe(tmp_path, {"proc/self/cgroup": "3:cpuset:/j\n2:memory:/j\n", "proc/self/mountinfo": ""})
    assert got == Cgroup(version=1, path="/j") and missing == ["cgroup: cpuset hierarchy not mounted"]
    got, missing = probe(tmp_path / "b", {"proc/self/cgroup": "1:name=systemd:/user\n"})
    assert got == Cgroup()
    assert missing == ["mounts: no proc/self/mountinfo or proc/mounts",
                       "cgroup: no proc/self/cgroup or proc/self/cpuset"]
    mi = "31 1 0:27 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
    got, missing = probe(tmp_path / "c", {"proc/self/cgroup": "3:cpuset:/k\n", "proc/self/mountinfo": mi})
    assert got == Cgroup(version=1, path="/k")
    assert missing == ["cgroup: cpuset folder /sys/fs/cgroup/cpuset/k not found"]
