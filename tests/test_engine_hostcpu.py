"""hosttune/engine/hostcpu.py and the engine's default DataLoader workers (engine/data.py::loader_settings): the
planner's count (policy.cpu: physical cores of the allowed set, capped by the cgroup quota) on SMT, quota and
cpuset hosts, read from a host tree the test builds, never from this machine's."""

from pathlib import Path
from typing import Dict, Iterable, Optional, Tuple

import pytest

pytest.importorskip("torch")

from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.data import loader_settings  # noqa: E402
from hosttune.engine.hostcpu import cgroup_quota, live_cpu, local_ranks, rank_workers  # noqa: E402
from hosttune.facts import Cpu  # noqa: E402
from hosttune.policy import cpu as cpu_policy  # noqa: E402


def smt_host(cores: int, threads: int = 2, allowed: Optional[Iterable[int]] = None,
             quota: Optional[float] = None) -> Cpu:
    """`cores` cores of `threads` PUs each, numbered as Linux does on x86 (siblings are N and N + cores)."""
    core_pus = tuple(tuple(c + t * cores for t in range(threads)) for c in range(cores))
    online = tuple(range(cores * threads))
    return Cpu(online=online, logical=len(online), physical=cores, cores=core_pus, smt=threads > 1,
               allowed_cpus=tuple(sorted(allowed if allowed is not None else online)), quota_cpus=quota)


def workers(cpu: Cpu, env: Optional[Dict[str, str]] = None) -> int:
    return loader_settings(Config(), cuda=False, env=env or {}, cpu=cpu).num_workers


@pytest.mark.parametrize("host, want", [
    (smt_host(4), 2),  # 8 logical CPUs, 4 cores: 2 workers (counting logical CPUs gave 4)
    (smt_host(8, threads=1, quota=2.5), 0),  # 8 cores under a 2.5-CPU quota: 2 threads, no workers (was 4)
    (smt_host(16, threads=1, allowed=range(6)), 3),  # a cpuset of 6 of 16 cores: 3 workers
    (smt_host(8, allowed=[0, 8, 1, 9, 2, 10]), 1),  # a cpuset of 3 cores' both siblings: 3 threads (was 6 CPUs: 3)
])
def test_default_workers_count_physical_cores_under_the_quota(host: Cpu, want: int) -> None:
    assert workers(host) == want
    assert workers(host) == cpu_policy.workers(host)  # the planner's lone-rank answer: one count for both


def test_ranks_sharing_the_host_split_its_cores_as_the_planner_does() -> None:
    host = smt_host(8)  # 8 cores, 16 PUs
    assert workers(host) == 4
    assert workers(host, {"LOCAL_WORLD_SIZE": "2"}) == 2  # 4 cores each
    assert workers(host, {"LOCAL_WORLD_SIZE": "4"}) == 0  # 2 cores each: none
    assert local_ranks({"LOCAL_WORLD_SIZE": "x"}) == 1 and local_ranks({}) == 1


def test_profile_and_config_win_over_the_host_count() -> None:
    host = smt_host(32)
    assert workers(host, {"HOSTTUNE_NUM_WORKERS": "1"}) == 1
    assert loader_settings(Config(num_workers=0), cuda=False, env={}, cpu=host).num_workers == 0


def test_the_rule_itself() -> None:
    seen = [rank_workers(smt_host(n, threads=1)) for n in (1, 2, 3, 4, 5, 8, 16, 64)]
    assert seen == [0, 0, 1, 2, 2, 4, 4, 4]  # none on <= 2 cores, half the cores, at most 4


# ---- reading a host tree ----

def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def topology(root: Path, cores: Iterable[Tuple[int, ...]], package: int = 0) -> None:
    for core_id, pus in enumerate(cores):
        for pu in pus:
            base = f"sys/devices/system/cpu/cpu{pu}/topology"
            write(root, f"{base}/thread_siblings_list", ",".join(map(str, pus)) + "\n")
            write(root, f"{base}/core_id", f"{core_id}\n")
            write(root, f"{base}/physical_package_id", f"{package}\n")


def test_live_cpu_reads_smt_siblings_and_the_tightest_v2_quota(tmp_path: Path) -> None:
    topology(tmp_path, [(0, 4), (1, 5), (2, 6), (3, 7)])
    write(tmp_path, "sys/devices/system/cpu/online", "0-7\n")
    write(tmp_path, "proc/self/cgroup", "0::/user.slice/job\n")
    write(tmp_path, "sys/fs/cgroup/cpu.max", "max 100000\n")
    write(tmp_path, "sys/fs/cgroup/user.slice/cpu.max", "300000 100000\n")
    write(tmp_path, "sys/fs/cgroup/user.slice/job/cpu.max", "max 100000\n")
    cpu = live_cpu(tmp_path, affinity=range(8))
    assert cpu.cores == ((0, 4), (1, 5), (2, 6), (3, 7)) and cpu.smt and cpu.logical == 8
    assert cpu.quota_cpus == pytest.approx(3.0)  # the parent's limit holds the child
    assert cpu_policy.thread_budget(cpu) == 3 and rank_workers(cpu) == 1


def test_live_cpu_reads_a_cpuset_and_a_v1_quota(tmp_path: Path) -> None:
    topology(tmp_path, [(0, 8), (1, 9), (2, 10), (3, 11), (4, 12), (5, 13), (6, 14), (7, 15)])
    write(tmp_path, "proc/self/cgroup", "4:memory:/\n3:cpu,cpuacct:/docker/abc\n0::/\n")
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000\n")
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    cpu = live_cpu(tmp_path, affinity=[0, 8, 1, 9, 2, 10, 3])  # the cpuset: 4 cores, three with both siblings
    assert cpu_policy.allowed_cores(cpu) == [(0, 8), (1, 9), (2, 10), (3,)]
    assert cpu.quota_cpus == pytest.approx(2.5)
    assert cpu_policy.thread_budget(cpu) == 2 and rank_workers(cpu) == 0


def test_live_cpu_without_topology_or_cgroup_counts_each_pu(tmp_path: Path) -> None:
    cpu = live_cpu(tmp_path, affinity=[0, 1, 2, 3, 4, 5])
    assert cpu.cores == ((0,), (1,), (2,), (3,), (4,), (5,)) and cpu.quota_cpus is None
    assert cgroup_quota(tmp_path) is None and rank_workers(cpu) == 3
