"""Pins of mutation round 4 (issue 21) on hosttune/tune/rules.py: each tunable's expected value from the profile,
each comparison at its edge (equal passes, one past fails), when a tunable does not apply, /dev/shm sizes and their
slack, and the host facts read from a tree."""

from pathlib import Path

import pytest
from conftest import build_tree

from hosttune.profile.settings import Tune
from hosttune.tune import rules
from hosttune.tune.rules import Host


def test_expected_values_of_the_default_profile() -> None:
    t = Tune()
    assert {tid: rules.expected(tid, t) for tid in rules.EXPECTED} == {
        "thp": "madvise", "thp_defrag": "madvise", "numa_balancing": "0", "swappiness": "10",
        "governor": "performance", "epp": "performance", "nofile": "65536", "memlock": "unlimited",
        "shm": "size=50%", "persistence": "enabled, active"}


def test_expected_values_follow_the_profile() -> None:
    t = Tune(swappiness=1, nofile=1048576, numa_balancing=True, thp="never", shm_size="8G")
    assert (rules.expected("swappiness", t), rules.expected("nofile", t), rules.expected("numa_balancing", t),
            rules.expected("thp", t), rules.expected("shm", t)) == ("1", "1048576", "1", "never", "size=8G")


@pytest.mark.parametrize("tid, actual, want, good", [
    ("swappiness", "10", "10", True), ("swappiness", "9", "10", True), ("swappiness", "11", "10", False),
    ("swappiness", "x", "10", False), ("swappiness", "1", "x", False),
    ("nofile", "65536", "65536", True), ("nofile", "65537", "65536", True), ("nofile", "65535", "65536", False),
    ("nofile", "unlimited", "65536", True), ("nofile", "x", "65536", False), ("nofile", "70000", "x", False),
    ("memlock", "unlimited", "unlimited", True), ("memlock", "1024", "unlimited", False),
    ("thp", "never", "madvise", True), ("thp", "madvise", "madvise", True), ("thp", "always", "madvise", False),
    ("thp", "madvise", "never", False), ("thp", "always", "always", True), ("thp", "odd", "odd", True),
    ("thp", "odd", "madvise", False),
    ("governor", "performance", "performance", True), ("governor", "powersave", "performance", False),
    ("thp_defrag", "never", "madvise", False),  # not ordered like thp: exactly
    ("numa_balancing", "0", "0", True), ("numa_balancing", "1", "0", False),
])
def test_ok_at_each_edge(tid: str, actual: str, want: str, good: bool) -> None:
    assert rules.ok(tid, actual, want) is good


def test_not_here() -> None:
    assert rules.not_here("numa_balancing", Host(numa_nodes=1)) == "1 NUMA node: nothing to balance"
    assert rules.not_here("numa_balancing", Host(numa_nodes=0)) == "1 NUMA node: nothing to balance"
    assert rules.not_here("numa_balancing", Host(numa_nodes=2)) is None
    assert rules.not_here("swappiness", Host(swap_mb=0)) == "no swap configured: swappiness has no effect"
    assert rules.not_here("swappiness", Host(swap_mb=1)) is None
    assert rules.not_here("swappiness", Host(swap_mb=None)) is None
    assert rules.not_here("memlock", Host(rdma_devices=0)) == "no RDMA devices: only RDMA pins memory"
    assert rules.not_here("memlock", Host(rdma_devices=1)) is None
    assert rules.not_here("thp", Host()) is None
    assert Host() == Host(numa_nodes=1, swap_mb=None, rdma_devices=0)


def test_size_kib() -> None:
    assert [rules.size_kib(s, 1000) for s in ("size=64k", "64K", "2m", "1g", "1T", "2048", "size=50%", "100%")] == [
        64, 64, 2048, 1 << 20, 1 << 30, 2, 500, 1000]
    assert rules.size_kib("50%", None) is None and rules.size_kib("50%", 0) is None
    assert rules.size_kib(None, 1000) is None and rules.size_kib("", 1000) is None
    assert rules.size_kib("size=", 1000) is None and rules.size_kib("xk", 1000) is None
    assert rules.size_kib("1023", 1000) == 0 and rules.size_kib("33%", 1001) == 330


def test_shm_slack_and_big_enough() -> None:
    assert rules.shm_slack(100) == 4 and rules.shm_slack(4999) == 4 and rules.shm_slack(5000) == 5
    assert rules.shm_slack(1_000_000) == 1000
    assert rules.shm_big_enough(96, 100) and not rules.shm_big_enough(95, 100)
    assert rules.shm_big_enough(999_000, 1_000_000) and not rules.shm_big_enough(998_999, 1_000_000)
    assert rules.shm_big_enough(2_000_000, 1_000_000)


def test_host_of_tree(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "h", {
        "sys/devices/system/node/node0/cpulist": "0\n", "sys/devices/system/node/node2/cpulist": "1\n",
        "sys/devices/system/node/possible": "0-2\n", "sys/devices/system/node/nodeX/x": "\n",
        "proc/meminfo": "MemTotal: 1000 kB\nSwapTotal:  2097152 kB\n",
        "sys/class/infiniband/mlx5_0/node_type": "1\n", "sys/class/infiniband/mlx5_1/node_type": "1\n"})
    assert rules.host_of_tree(root) == Host(numa_nodes=2, swap_mb=2048, rdma_devices=2)
    bare = build_tree(tmp_path / "b", {"proc/meminfo": "MemTotal: 1000 kB\n"})
    assert rules.host_of_tree(bare) == Host(numa_nodes=1, swap_mb=None, rdma_devices=0)


def test_host_of_facts() -> None:
    from types import SimpleNamespace as NS

    facts = NS(numa=NS(nodes=[0, 1, 2]), memory=NS(swap_total_mb=512), limits=NS(rdma_devices=4))
    assert rules.host_of_facts(facts) == Host(numa_nodes=3, swap_mb=512, rdma_devices=4)
    facts = NS(numa=NS(nodes=[]), memory=NS(swap_total_mb=None), limits=NS(rdma_devices=0))
    assert rules.host_of_facts(facts) == Host(numa_nodes=1, swap_mb=None, rdma_devices=0)
