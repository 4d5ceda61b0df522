"""Pin for mutation round 5's survivor in hosttune/plan/layout.py (issue 21): a GPU whose numa_node is -1 is placed
by its local_cpulist, and allowed CPUs that lie on no NUMA node (a node's cpulist missing from the capture, a CPU
onlined later) do not count as a node of their own: local CPUs on node 1 plus a node-less CPU still mean node 1."""

from hosttune import plan
from hosttune.facts import Cpu, Facts, Gpu, Numa, NumaNode
from hosttune.plan import layout
from hosttune.profile.settings import Profile

ALL = tuple(range(9))  # CPU 8 is allowed but on no node's cpulist


def facts() -> Facts:
    nodes = (NumaNode(0, (0, 1, 2, 3), 1000), NumaNode(1, (4, 5, 6, 7), 1000))
    gpu = Gpu(index=0, name="GPU", pci_bus_id="0000:17:00.0", numa_node=-1, local_cpus=(4, 5, 6, 7, 8))
    return Facts(cpu=Cpu(logical=9, physical=9, online=ALL, allowed_cpus=ALL, cores=tuple((c,) for c in ALL)),
                 numa=Numa(nodes=nodes, allowed_mems=(0, 1)), gpus=(gpu,))


def test_the_node_less_cpu_is_its_own_group_in_the_topology() -> None:
    topo = layout._topology(facts())
    assert topo.node_of[(8,)] == -1 and sorted(topo.by_node) == [-1, 0, 1]


def test_a_numa_node_minus_1_gpu_goes_to_the_node_its_local_cpus_lie_on_despite_a_node_less_cpu() -> None:
    p = plan.resolve(facts(), Profile(name="t", summary="", source="<test>"), 0, 1, {})
    assert p.cpus == (4, 5, 6, 7), p.reasons
    assert (p.mem_policy, p.mems) == ("bind", (1,)), p.reasons
    assert "GPU numa_node is -1; its local_cpulist lies on node 1" in p.reasons
    assert not [r for r in p.reasons if "NUMA-balanced share" in r], p.reasons
