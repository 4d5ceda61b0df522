"""Pins (issue 21, round 4) for hosttune/engine/hostcpu.py: the quota readers, the core grouping, the rank split.
Fixture trees in tmp_path (root=), no torch."""

from pathlib import Path
from typing import Dict

import pytest

from hosttune.engine import hostcpu


def tree(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def topo(pu: int, package: int, core: int, siblings: str, name: str = "thread_siblings_list") -> Dict[str, str]:
    base = f"sys/devices/system/cpu/cpu{pu}/topology/"
    return {base + name: siblings + "\n", base + "physical_package_id": f"{package}\n", base + "core_id": f"{core}\n"}


@pytest.mark.parametrize("text, want", [
    ("max 100000\n", None), ("150000 100000\n", 1.5), ("100000 100000", 1.0), ("0 100000", None),
    ("-1 100000", None), ("50000 0", None), ("50000", None), ("50000 100000 7", None), ("", None), (None, None),
    ("x 100000", None),
])
def test_v2_quota(text: str, want: float) -> None:
    assert hostcpu._v2_quota(text) == want


def test_v1_quota(tmp_path: Path) -> None:
    tree(tmp_path, {"cpu.cfs_quota_us": "250000\n", "cpu.cfs_period_us": "100000\n"})
    assert hostcpu._v1_quota(tmp_path) == 2.5
    (tmp_path / "cpu.cfs_quota_us").write_text("-1\n")
    assert hostcpu._v1_quota(tmp_path) is None
    (tmp_path / "cpu.cfs_quota_us").write_text("50000\n")
    (tmp_path / "cpu.cfs_period_us").write_text("0\n")
    assert hostcpu._v1_quota(tmp_path) is None
    assert hostcpu._v1_quota(tmp_path / "absent") is None


def test_ancestors_walk_up_to_the_base_and_never_out_of_it() -> None:
    base = Path("/r")
    assert hostcpu._ancestors(base, "/a/b") == [Path("/r/a/b"), Path("/r/a"), Path("/r")]
    assert hostcpu._ancestors(base, "/") == [Path("/r")]
    assert hostcpu._ancestors(base, "/../../etc/./x") == [Path("/r/etc/x"), Path("/r/etc"), Path("/r")]


def test_int_reads_the_first_word() -> None:
    assert hostcpu._int("12 34\n") == 12
    assert hostcpu._int("") is None and hostcpu._int(None) is None and hostcpu._int("x") is None


def test_the_tightest_v2_quota_of_the_cgroup_and_its_parents(tmp_path: Path) -> None:
    tree(tmp_path, {
        "proc/self/cgroup": "0::/a/b\n",
        "sys/fs/cgroup/cpu.max": "100000 100000\n",  # the root: 1 CPU, the tightest
        "sys/fs/cgroup/a/cpu.max": "max 100000\n",
        "sys/fs/cgroup/a/b/cpu.max": "300000 100000\n",
    })
    assert hostcpu.cgroup_quota(tmp_path) == 1.0
    (tmp_path / "sys/fs/cgroup/cpu.max").write_text("max 100000\n")
    assert hostcpu.cgroup_quota(tmp_path) == 3.0
    (tmp_path / "sys/fs/cgroup/a/b/cpu.max").write_text("max 100000\n")
    assert hostcpu.cgroup_quota(tmp_path) is None


@pytest.mark.parametrize("mount", ["cpu,cpuacct", "cpu", "cpuacct,cpu"])
def test_a_v1_quota_is_found_under_each_usual_mount(tmp_path: Path, mount: str) -> None:
    tree(tmp_path, {
        "proc/self/cgroup": f"4:{mount}:/job\n3:memory:/job\n",
        f"sys/fs/cgroup/{mount}/job/cpu.cfs_quota_us": "150000\n",
        f"sys/fs/cgroup/{mount}/job/cpu.cfs_period_us": "100000\n",
    })
    assert hostcpu.cgroup_quota(tmp_path) == 1.5


def test_v1_lines_without_the_cpu_controller_and_garbled_lines_are_skipped(tmp_path: Path) -> None:
    tree(tmp_path, {
        "proc/self/cgroup": "garbled\n4:cpuacct:/job\n3:memory:/job\n",
        "sys/fs/cgroup/cpuacct/job/cpu.cfs_quota_us": "50000\n",
        "sys/fs/cgroup/cpuacct/job/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/memory/job/cpu.cfs_quota_us": "50000\n",
        "sys/fs/cgroup/memory/job/cpu.cfs_period_us": "100000\n",
    })
    assert hostcpu.cgroup_quota(tmp_path) is None
    # a v2 line needs hierarchy 0 and no controllers
    tree(tmp_path, {"proc/self/cgroup": "1::/j\n", "sys/fs/cgroup/j/cpu.max": "50000 100000\n"})
    assert hostcpu.cgroup_quota(tmp_path) is None
    tree(tmp_path, {"proc/self/cgroup": "0::/j\n"})
    assert hostcpu.cgroup_quota(tmp_path) == 0.5


def test_cores_group_smt_siblings_by_package_and_core(tmp_path: Path) -> None:
    files: Dict[str, str] = {}
    files.update(topo(0, 0, 0, "0,2"))
    files.update(topo(2, 0, 0, "0,2"))
    files.update(topo(1, 0, 1, "1,3"))
    files.update(topo(3, 0, 1, "1,3"))
    files.update(topo(4, 1, 0, "4", name="core_cpus_list"))  # the newer name only
    files.update(topo(5, 1, 0, "5"))  # same package and core id as 4, but other siblings: another core
    files.update(topo(7, 1, 3, "7-8", name="core_cpus_list"))
    files.update(topo(8, 1, 3, "7-8", name="core_cpus_list"))
    tree(tmp_path, files)
    assert hostcpu.cores_of(tmp_path, [0, 1, 2, 3, 4, 5, 6]) == [(0, 2), (1, 3), (4,), (5,), (6,)]
    assert hostcpu.cores_of(tmp_path, [8, 7]) == [(7, 8)]  # siblings from core_cpus_list alone
    assert hostcpu.cores_of(tmp_path, [3, 2]) == [(2,), (3,)]  # only the allowed PUs of each core


def test_same_siblings_in_two_packages_are_two_cores(tmp_path: Path) -> None:
    files: Dict[str, str] = {}
    files.update(topo(0, 0, 0, "0"))
    files.update(topo(1, 1, 0, "0"))  # a garbled sibling list, but another package
    files.update(topo(2, 0, 5, "0"))  # another core id
    tree(tmp_path, files)
    assert hostcpu.cores_of(tmp_path, [0, 1, 2]) == [(0,), (1,), (2,)]


def test_live_cpu_from_a_tree(tmp_path: Path) -> None:
    files: Dict[str, str] = {"sys/devices/system/cpu/online": "0-3\n", "proc/self/cgroup": "0::/\n",
                             "sys/fs/cgroup/cpu.max": "max 100000\n"}
    for pu, core in ((0, 0), (2, 0), (1, 1), (3, 1)):
        files.update(topo(pu, 0, core, f"{core},{core + 2}"))
    tree(tmp_path, files)
    cpu = hostcpu.live_cpu(tmp_path, affinity=[3, 0, 2, 0])
    assert cpu.allowed_cpus == (0, 2, 3) and cpu.online == (0, 1, 2, 3) and cpu.logical == 4
    assert cpu.cores == ((0, 2), (3,)) and cpu.physical == 2 and cpu.smt is True and cpu.quota_cpus is None
    lone = hostcpu.live_cpu(tmp_path, affinity=[0, 1])
    assert lone.smt is False and lone.physical == 2
    (tmp_path / "sys/devices/system/cpu/online").unlink()
    assert hostcpu.live_cpu(tmp_path, affinity=[1, 0]).online == (0, 1)  # no online file: the allowed set


@pytest.mark.parametrize("env, want", [({}, 1), ({"LOCAL_WORLD_SIZE": "4"}, 4), ({"LOCAL_WORLD_SIZE": "0"}, 1),
                                       ({"LOCAL_WORLD_SIZE": "-2"}, 1), ({"LOCAL_WORLD_SIZE": "x"}, 1),
                                       ({"LOCAL_WORLD_SIZE": "1"}, 1)])
def test_local_ranks(env: Dict[str, str], want: int) -> None:
    assert hostcpu.local_ranks(env) == want


def test_rank_workers_split_the_budget_between_ranks() -> None:
    from hosttune.facts import Cpu

    cores = tuple((i,) for i in range(12))
    cpu = Cpu(online=tuple(range(12)), logical=12, physical=12, cores=cores, smt=False,
              allowed_cpus=tuple(range(12)), quota_cpus=None)
    assert hostcpu.rank_workers(cpu, 1) == 4  # 12 cores: half, at most 4
    assert hostcpu.rank_workers(cpu, 2) == 3  # 6 each: 3
    assert hostcpu.rank_workers(cpu, 3) == 2  # 4 each: 2
    assert hostcpu.rank_workers(cpu, 4) == 1  # 3 each: 1
    assert hostcpu.rank_workers(cpu, 6) == 0  # 2 each: none
    assert hostcpu.rank_workers(cpu, 0) == 4  # no ranks reads as one
    assert hostcpu.rank_workers(cpu, 100) == 0
