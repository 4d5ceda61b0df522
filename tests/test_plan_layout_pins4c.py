"""Pins for where a GPU rank's CPUs come from in hosttune/plan/layout.py (issue 21: mutation round 4's
r4b-plan-gpu-node-cpus and its neighbours), through plan.resolve_all on small hand-built hosts: a GPU on a CPU-less
node gets the nearest node's CPUs and says so (not a crash on the node's missing CPUs); a GPU with no NUMA node whose
local_cpulist spans two of three nodes is not pinned to one of them; more ranks than cores on a GPU's node share
cores and are told so, one thread each."""
from typing import List, Sequence

from hosttune import plan, profile
from hosttune.facts import Cpu, Facts, Gpu, Numa, NumaNode
from hosttune.rankplan import RankPlan

BUS = "0000:1b:00.0"


def host(nodes: Sequence[NumaNode], gpu: Gpu) -> Facts:
    cpus = tuple(sorted(c for n in nodes for c in n.cpus))
    return Facts(cpu=Cpu(online=cpus, logical=len(cpus), physical=len(cpus), cores=tuple((c,) for c in cpus),
                         allowed_cpus=cpus),
                 numa=Numa(nodes=tuple(nodes), allowed_mems=tuple(n.id for n in nodes)), gpus=(gpu,))


def plans(facts: Facts, n: int) -> List[RankPlan]:
    return plan.resolve_all(facts, profile.load("throughput"), n, environ={})


def test_a_gpu_on_a_cpu_less_node_gets_the_nearest_nodes_cpus_and_says_so() -> None:
    facts = host((NumaNode(0, (0, 1), 16000, (10, 20, 30)), NumaNode(1, (2, 3), 16000, (20, 10, 20)),
                  NumaNode(2, (), 16000, (30, 20, 10))), Gpu(index=0, pci_bus_id=BUS, numa_node=2))
    (p,) = plans(facts, 1)
    assert (p.gpu, p.cpus, p.mems) == (BUS, (2, 3), (2,))  # node 1 is nearer node 2 than node 0 is
    assert "GPU node 2 has no allowed CPUs; CPUs from the nearest node 1" in p.reasons, p.reasons


def test_a_local_cpulist_over_two_of_three_nodes_does_not_pick_one_of_them() -> None:
    facts = host((NumaNode(0, (0, 1), 16000, (10, 20, 20)), NumaNode(1, (2, 3), 16000, (20, 10, 20)),
                  NumaNode(2, (4, 5), 16000, (20, 20, 10))),
                 Gpu(index=0, pci_bus_id=BUS, numa_node=-1, local_cpus=(0, 1, 2, 3)))
    (p,) = plans(facts, 1)
    assert p.cpus == (0, 1, 2, 3, 4, 5) and p.threads == 6
    assert "GPU NUMA node unknown (-1): NUMA-balanced share of the CPUs" in p.reasons, p.reasons
    assert not any("local_cpulist lies on node" in r for r in p.reasons), p.reasons


def test_a_local_cpulist_on_one_of_three_nodes_picks_it() -> None:
    facts = host((NumaNode(0, (0, 1), 16000, (10, 20, 20)), NumaNode(1, (2, 3), 16000, (20, 10, 20)),
                  NumaNode(2, (4, 5), 16000, (20, 20, 10))),
                 Gpu(index=0, pci_bus_id=BUS, numa_node=-1, local_cpus=(2, 3)))
    (p,) = plans(facts, 1)
    assert p.cpus == (2, 3) and "GPU numa_node is -1; its local_cpulist lies on node 1" in p.reasons, p.reasons


def test_more_ranks_than_cores_on_a_gpus_node_share_them_one_thread_each() -> None:
    facts = host((NumaNode(0, (0, 1), 16000, (10,)),), Gpu(index=0, pci_bus_id=BUS, numa_node=0))
    got = plans(facts, 3)
    assert [(p.cpus, p.threads) for p in got] == [((0,), 1), ((1,), 1), ((0,), 1)]
    for p in got:
        assert "3 ranks share 1 GPUs" in p.reasons
        assert any(r.endswith("shared with other ranks (more ranks than cores)") for r in p.reasons), p.reasons
