"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/hostcpu.py's cgroup v1 quota: the cpu
controller's directory is found where the usual mounts put it (cpu,cpuacct, or cpu), whatever order
/proc/self/cgroup lists the controllers in, and the tightest quota of the cgroup and its parents wins."""

from pathlib import Path

import pytest

pytest.importorskip("torch")

from hosttune.engine.hostcpu import cgroup_quota  # noqa: E402


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def quota(root: Path, mount: str, rel: str, q: int, period: int = 100000) -> None:
    write(root, f"sys/fs/cgroup/{mount}/{rel}/cpu.cfs_quota_us".replace("//", "/"), f"{q}\n")
    write(root, f"sys/fs/cgroup/{mount}/{rel}/cpu.cfs_period_us".replace("//", "/"), f"{period}\n")


@pytest.mark.parametrize("mount", ["cpu,cpuacct", "cpu"])
def test_v1_listed_as_cpuacct_cpu_is_read_from_the_usual_mount(tmp_path: Path, mount: str) -> None:
    write(tmp_path, "proc/self/cgroup", "5:memory:/job\n4:cpuacct,cpu:/job\n")
    quota(tmp_path, mount, "job", 150000)
    assert cgroup_quota(tmp_path) == 1.5


def test_v1_the_tightest_of_the_cgroup_and_its_parents_across_mounts(tmp_path: Path) -> None:
    write(tmp_path, "proc/self/cgroup", "3:cpu,cpuacct:/a/b\n")
    quota(tmp_path, "cpu,cpuacct", "a/b", 400000)
    quota(tmp_path, "cpu", "a", 50000, 20000)  # 2.5 CPUs on the parent, seen through the plain cpu mount
    quota(tmp_path, "cpu,cpuacct", "", -1)
    assert cgroup_quota(tmp_path) == 2.5


def test_v1_without_the_cpu_controller_and_v2_without_a_limit_is_none(tmp_path: Path) -> None:
    write(tmp_path, "proc/self/cgroup", "4:cpuacct:/x\n2:cpuset:/x\n0::/x\n")
    quota(tmp_path, "cpuacct", "x", 100000)
    write(tmp_path, "sys/fs/cgroup/x/cpu.max", "max 100000\n")
    assert cgroup_quota(tmp_path) is None
    write(tmp_path, "sys/fs/cgroup/cpu.max", "300000 100000\n")
    assert cgroup_quota(tmp_path) == 3.0
