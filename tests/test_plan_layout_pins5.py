"""Pins for hosttune/plan/layout.py (issue 21, round 5): where each GPU rank's CPUs come from (its GPU's node, the
node its local_cpulist lies on when numa_node is -1, the nearest node with CPUs, else a NUMA-balanced share of the
nodes no GPU took), how ranks share GPUs and cores and say so, the exact cut points of the CPU-only split and the
thread counts under a profile and a cgroup quota."""

from typing import Dict, List, Optional, Sequence, Tuple

from hosttune.facts import Cpu, Facts, Gpu, Numa, NumaNode
from hosttune.plan import layout
from hosttune.profile.settings import Profile


def cores(*ids: int) -> List[Tuple[int, ...]]:
    return [(i,) for i in ids]


def facts(node_cpus: Sequence[Sequence[int]], gpus: Sequence[Gpu] = (),
          distances: Optional[Sequence[Sequence[int]]] = None, mem: Optional[Sequence[int]] = None,
          allowed_mems: Tuple[int, ...] = (), quota: Optional[float] = None) -> Facts:
    allc = tuple(sorted(c for n in node_cpus for c in n))
    nodes = tuple(NumaNode(i, tuple(cs), (mem[i] if mem is not None else 1000),
                           tuple(distances[i]) if distances else ()) for i, cs in enumerate(node_cpus))
    return Facts(cpu=Cpu(online=allc, logical=len(allc), physical=len(allc), cores=tuple((c,) for c in allc),
                         allowed_cpus=allc, quota_cpus=quota),
                 numa=Numa(nodes=nodes, allowed_mems=allowed_mems), gpus=tuple(gpus))


def gpu(i: int, node: int = -1, local: Tuple[int, ...] = ()) -> Gpu:
    return Gpu(index=i, pci_bus_id=f"0000:{0x10 + i:02x}:00.0", numa_node=node, local_cpus=local)


def prof(device: str = "auto", threads: object = "auto") -> Profile:
    return Profile(name="t", summary="", source="<test>", device=device, threads=threads)  # type: ignore[arg-type]


def lay(f: Facts, n: int, environ: Optional[Dict[str, str]] = None, device: str = "auto") -> List["layout._Slot"]:
    return layout._layout(f, prof(device), n, environ or {}, layout._topology(f))


TWO = [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_each_gpu_rank_gets_its_gpus_node() -> None:
    slots = lay(facts(TWO, [gpu(0, 1), gpu(1, 0)]), 2)
    assert [s.cores for s in slots] == [cores(4, 5, 6, 7), cores(0, 1, 2, 3)]
    assert [s.cpu_node for s in slots] == [1, 0] and [s.cuda_device for s in slots] == [0, 1]
    assert [s.gpu.index for s in slots if s.gpu] == [0, 1]
    assert [s.shared for s in slots] == [False, False] and [s.notes for s in slots] == [[], []]


def test_more_ranks_than_gpus_round_robin_split_the_node_and_say_so() -> None:
    slots = lay(facts(TWO, [gpu(0, 0), gpu(1, 1)]), 4)
    assert [s.cuda_device for s in slots] == [0, 1, 0, 1]
    assert [s.cores for s in slots] == [cores(0, 1), cores(4, 5), cores(2, 3), cores(6, 7)]
    assert all(s.notes == ["4 ranks share 2 GPUs"] for s in slots) and not any(s.shared for s in slots)


def test_as_many_gpu_ranks_as_cores_get_one_each_more_share() -> None:
    f = facts([[0, 1], [2, 3]], [gpu(0, 0)])
    slots = lay(f, 2)
    assert [s.cores for s in slots] == [cores(0), cores(1)] and [s.shared for s in slots] == [False, False]
    slots = lay(f, 3)
    assert [s.cores for s in slots] == [cores(0), cores(1), cores(0)] and all(s.shared for s in slots)


def test_unknown_gpu_node_uses_the_node_its_local_cpulist_lies_on() -> None:
    (s,) = lay(facts(TWO, [gpu(0, -1, (5, 6))]), 1)
    assert s.cpu_node == 1 and s.cores == cores(4, 5, 6, 7)
    assert s.notes == ["GPU numa_node is -1; its local_cpulist lies on node 1"]


def test_local_cpulist_over_two_nodes_or_on_a_one_node_host_is_no_answer() -> None:
    (s,) = lay(facts(TWO, [gpu(0, -1, (3, 4))]), 1)
    assert s.cpu_node is None and s.cores == cores(0, 1, 2, 3, 4, 5, 6, 7)
    assert s.notes == ["GPU NUMA node unknown (-1): NUMA-balanced share of the CPUs"]
    (s,) = lay(facts([[0, 1, 2, 3]], [gpu(0, -1, (1,))]), 1)
    assert s.cpu_node is None and s.cores == cores(0, 1, 2, 3)


def test_unknown_gpu_nodes_share_the_nodes_no_gpu_took() -> None:
    slots = lay(facts([[0, 1], [2, 3], [4, 5]], [gpu(0, 0), gpu(1), gpu(2)]), 3)
    assert [s.cores for s in slots] == [cores(0, 1), cores(2, 3), cores(4, 5)]
    assert [s.cpu_node for s in slots] == [0, None, None]
    assert slots[0].notes == [] and slots[1].notes == ["GPU NUMA node unknown (-1): NUMA-balanced share of the CPUs"]
    # every node taken: the unknown ones share all of them
    slots = lay(facts(TWO, [gpu(0, 0), gpu(1, 1), gpu(2)]), 3)
    assert slots[2].cores == cores(0, 1, 2, 3, 4, 5, 6, 7) and slots[2].shared is False


def test_cpu_less_gpu_node_takes_the_nearest_node_and_says_so() -> None:
    dist = [[10, 21, 30], [21, 10, 12], [30, 12, 10]]
    (s,) = lay(facts([[0, 1], [2, 3], []], [gpu(0, 2)], distances=dist), 1)
    assert s.cpu_node == 1 and s.cores == cores(2, 3)
    assert s.notes == ["GPU node 2 has no allowed CPUs; CPUs from the nearest node 1"]
    # no distances: no nearest node, a balanced share and no "nearest" note
    (s,) = lay(facts([[0, 1], [2, 3], []], [gpu(0, 2)]), 1)
    assert s.cpu_node is None and s.cores == cores(0, 1, 2, 3)
    assert s.notes == ["GPU NUMA node unknown (-1): NUMA-balanced share of the CPUs"]


def test_nearest_node_needs_a_distance_per_node_and_cpus() -> None:
    f = facts([[0, 1], [2, 3], []], distances=[[10, 20, 30], [20, 10, 11], [30, 11, 10]])
    topo = layout._topology(f)
    assert layout._nearest_node_with_cpus(f, 2, topo) == 1  # 11 < 30; node 2 itself (10) has no CPUs
    assert layout._nearest_node_with_cpus(f, 0, topo) == 0
    assert layout._nearest_node_with_cpus(f, 7, topo) is None  # no such node
    short = facts([[0, 1], [2, 3], []], distances=[[10, 20], [20, 10], [30, 11]])
    assert layout._nearest_node_with_cpus(short, 2, layout._topology(short)) is None
    tie = facts([[0, 1], [2, 3], []], distances=[[10, 20, 15], [20, 10, 15], [15, 15, 10]])
    assert layout._nearest_node_with_cpus(tie, 2, layout._topology(tie)) == 0  # equal distance: the lower id


def test_cpu_profile_or_no_gpus_split_the_nodes_and_keep_the_cuda_notes() -> None:
    f = facts(TWO, [gpu(0, 1)])
    slots = lay(f, 2, device="cpu")
    assert [s.gpu for s in slots] == [None, None] and [s.cores for s in slots] == [cores(0, 1, 2, 3), cores(4, 5, 6, 7)]
    slots = lay(f, 2, {"CUDA_VISIBLE_DEVICES": ""})
    assert [s.gpu for s in slots] == [None, None]
    assert all(s.notes and s.notes[0] == "CUDA_VISIBLE_DEVICES=''" for s in slots)


def test_cuda_visible_devices_renumbers_and_notes_go_to_rank_zero_only() -> None:
    slots = lay(facts(TWO, [gpu(0, 0), gpu(1, 1)]), 2, {"CUDA_VISIBLE_DEVICES": "1"})
    assert [s.gpu.index for s in slots if s.gpu] == [1, 1] and [s.cuda_device for s in slots] == [0, 0]
    assert slots[0].notes[0] == "CUDA_VISIBLE_DEVICES='1'" and slots[1].notes == ["2 ranks share 1 GPUs"]
    assert [s.cores for s in slots] == [cores(4, 5), cores(6, 7)]


def test_topology_orders_cores_by_node_and_first_node_wins() -> None:
    f = Facts(cpu=Cpu(online=(0, 1, 2, 3, 4), logical=5, physical=5, cores=((3,), (0,), (2,), (1,), (4,)),
                      allowed_cpus=(0, 1, 2, 3, 4)),
              numa=Numa(nodes=(NumaNode(1, (0, 1, 2), 1000), NumaNode(0, (2, 3), 1000))))
    t = layout._topology(f)
    assert t.node_of == {(3,): 0, (0,): 1, (2,): 0, (1,): 1, (4,): -1}
    assert t.cores == [(4,), (2,), (3,), (0,), (1,)]
    assert t.by_node == {-1: [(4,)], 0: [(2,), (3,)], 1: [(0,), (1,)]}
    assert t.mem_ok == (0, 1) and t.quota is None


def test_memory_nodes_without_a_memory_size_or_allowed_list_are_all_usable() -> None:
    assert layout._topology(facts(TWO, mem=[0, 0])).mem_ok == (0, 1)  # sizes unknown: all
    assert layout._topology(facts(TWO, mem=[0, 500])).mem_ok == (1,)
    assert layout._topology(facts(TWO, allowed_mems=(1,))).mem_ok == (1,)
    assert layout._topology(facts(TWO, quota=2.5)).quota == 2.5


def test_balanced_cuts_nodes_closest_to_an_even_share_lower_cut_on_a_tie() -> None:
    g = [cores(0, 1, 2), cores(3, 4), cores(5, 6, 7)]
    assert layout._balanced(g, 2) == ([cores(0, 1, 2), cores(3, 4, 5, 6, 7)], False)
    assert layout._balanced([cores(0), cores(1), cores(2, 3, 4, 5, 6, 7, 8, 9)], 2) == \
        ([cores(0, 1), cores(2, 3, 4, 5, 6, 7, 8, 9)], False)
    three = [cores(*range(10)), cores(10), cores(11)]
    assert layout._balanced(three, 3)[0] == three
    # an exact even share wins over a cut one core short
    assert layout._balanced([cores(0, 1, 2), cores(3), cores(4, 5, 6, 7)], 2) == \
        ([cores(0, 1, 2, 3), cores(4, 5, 6, 7)], False)
    assert layout._balanced([[], cores(0, 1)], 1) == ([cores(0, 1)], False)
    assert layout._balanced([[], []], 2) == ([[], []], False)


def test_balanced_ranks_per_node_follow_cores() -> None:
    got, shared = layout._balanced([cores(*range(10)), cores(10)], 3)
    assert got == [cores(0, 1, 2, 3, 4), cores(5, 6, 7, 8, 9), cores(10)] and shared is False
    got, _ = layout._balanced([cores(0, 1, 2), cores(3, 4, 5)], 5)  # top up: the lower node first on a tie
    assert got == [cores(0), cores(1), cores(2), cores(3, 4), cores(5)]
    got, _ = layout._balanced([cores(0, 1, 2, 3), cores(4, 5, 6, 7), cores(8), cores(9), cores(10)], 6)
    assert got == [cores(0, 1), cores(2, 3), cores(4, 5, 6, 7), cores(8), cores(9), cores(10)]  # take back: the higher
    got, _ = layout._balanced([cores(0), cores(1), cores(2), cores(3, 4, 5, 6, 7)], 5)
    assert got == [cores(0), cores(1), cores(2), cores(3, 4, 5), cores(6, 7)]


def test_chunks_exact() -> None:
    assert layout._chunks(cores(0, 1, 2, 3, 4, 5, 6), 3) == [cores(0, 1, 2), cores(3, 4), cores(5, 6)]
    assert layout._chunks(cores(0, 1), 2) == [cores(0), cores(1)]
    assert layout._chunks(cores(0, 1, 2), 1) == [cores(0, 1, 2)]


def topo(n_cores: int, quota: Optional[float] = None) -> "layout._Topo":
    cs = cores(*range(n_cores))
    return layout._Topo(cs, {c: 0 for c in cs}, {0: cs}, (0,), quota)


def slots(*sizes: int, shared: bool = False) -> List["layout._Slot"]:
    out, i = [], 0
    for s in sizes:
        out.append(layout._Slot(cores=cores(*range(i, i + s)), shared=shared))
        i += s
    return out


def test_threads_without_binding_divide_the_allowed_cores() -> None:
    assert layout._threads(prof(), slots(1, 1, 1), topo(7), "none") == ([2, 2, 2], [])
    assert layout._threads(prof(), slots(1, 1), topo(1), "none") == ([1, 1], [])
    assert layout._threads(prof(), slots(1, 1), topo(0), "none") == ([1, 1], [])
    assert layout._threads(prof(), [layout._Slot(cores=[])], topo(4), "cores") == ([1], [])


def test_profile_threads_capped_only_when_a_rank_has_fewer_cores() -> None:
    assert layout._threads(prof(threads=3), slots(3, 4), topo(8), "cores") == ([3, 3], [])
    assert layout._threads(prof(threads="3"), slots(3, 3), topo(8), "cores") == ([3, 3], [])
    want, notes = layout._threads(prof(threads=4), slots(3, 5), topo(8), "cores")
    assert want == [3, 4] and notes == ["threads: the profile's 4 capped to the rank's cores (no oversubscription)"]
    assert layout._threads(prof(threads=4), slots(2, 2, shared=True), topo(8), "cores")[0] == [1, 1]


def test_quota_scales_threads_and_tops_up_to_the_limit() -> None:
    assert layout._threads(prof(), slots(3, 3), topo(6, 6.0), "cores") == ([3, 3], [])  # at the limit: untouched
    want, notes = layout._threads(prof(), slots(3, 3), topo(6, 5.0), "cores")
    assert want == [3, 2] and notes == ["threads: cgroup quota 5 CPUs caps the 2 ranks to 5 threads in all"]
    want, _ = layout._threads(prof(), slots(3, 3, 3), topo(9, 8.0), "cores")
    assert want == [3, 3, 2]  # 2 each, then one more each in rank order until the limit
    want, _ = layout._threads(prof(), slots(1, 4, 4), topo(9, 6.0), "cores")
    assert want == [1, 3, 2]  # a rank already at its own want gets no more
    want, _ = layout._threads(prof(), slots(1, 6), topo(7, 3.5), "cores")
    assert want == [1, 2]  # 1*3//7 -> at least 1, 6*3//7 = 2
    want, notes = layout._threads(prof(), slots(2, 2, 2), topo(6, 2.0), "cores")
    assert want == [1, 1, 1] and notes == ["threads: cgroup quota 2 CPUs caps the 3 ranks to 2 threads in all",
                                           "threads: 3 ranks exceed the quota of 2 CPUs even at 1 thread each"]


def test_no_cpu_facts_fall_back_to_the_nodes_cpus() -> None:
    f = Facts(cpu=Cpu(online=(), logical=0, physical=0, cores=(), allowed_cpus=()),
              numa=Numa(nodes=(NumaNode(0, (0, 1), 1000), NumaNode(1, (2, 3), 1000))))
    t = layout._topology(f)
    assert t.cores == cores(0, 1, 2, 3) and t.by_node == {0: cores(0, 1), 1: cores(2, 3)}


def test_a_mig_instance_of_an_unknown_gpu_gets_a_balanced_share() -> None:
    slots = lay(facts(TWO, [gpu(0, 0)]), 2, {"CUDA_VISIBLE_DEVICES": "0,MIG-GPU-ffff/1/0"})
    assert slots[0].gpu is not None and slots[1].gpu is None and slots[1].cuda_device == 1
    assert slots[0].cores == cores(0, 1, 2, 3) and slots[1].cores == cores(4, 5, 6, 7)
    assert slots[1].notes == ["GPU NUMA node unknown (-1): NUMA-balanced share of the CPUs"]
