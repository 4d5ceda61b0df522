"""Pins for hosttune/plan/layout.py from issue 21's mutation run: how cores are cut among ranks (sizes differing by
at most one, larger first; whole nodes while ranks <= nodes; at least one rank per node otherwise; shared cores
marked shared) and how threads follow (one per shared rank, cores // n without binding, a profile's count capped,
the quota's total)."""

from typing import List, Optional

import pytest

from hosttune.plan import layout
from hosttune.profile.settings import Profile


def cores(*ids: int) -> List[tuple]:
    return [(i,) for i in ids]


def test_chunks_differ_by_at_most_one_larger_first() -> None:
    got = layout._chunks(cores(0, 1, 2, 3, 4), 3)
    assert [len(c) for c in got] == [2, 2, 1] and [c for chunk in got for c in chunk] == cores(0, 1, 2, 3, 4)


def test_more_ranks_than_cores_share_round_robin_and_say_so() -> None:
    got, shared = layout._balanced([cores(0, 1)], 3)
    assert got == [cores(0), cores(1), cores(0)] and shared is True
    got, shared = layout._balanced([cores(0, 1)], 2)
    assert got == [cores(0), cores(1)] and shared is False


def test_as_many_ranks_as_nodes_get_a_whole_node_each() -> None:
    got, shared = layout._balanced([cores(0, 1, 2, 3), cores(4, 5)], 2)
    assert got == [cores(0, 1, 2, 3), cores(4, 5)] and shared is False


def test_more_ranks_than_nodes_give_every_node_a_rank() -> None:
    got, _ = layout._balanced([cores(*range(10)), cores(10)], 3)
    assert got[-1] == cores(10) and sum(len(g) for g in got) == 11 and len(got) == 3


def topo(n_cores: int, quota: Optional[float] = None) -> "layout._Topo":
    cs = cores(*range(n_cores))
    return layout._Topo(cs, {c: 0 for c in cs}, {0: cs}, (0,), quota)


def prof(threads: object = "auto") -> Profile:
    return Profile(name="t", summary="", source="<test>", threads=threads)  # type: ignore[arg-type]


def test_threads_follow_the_slots() -> None:
    slots = [layout._Slot(cores=cores(0, 1, 2)), layout._Slot(cores=cores(3), shared=True)]
    assert layout._threads(prof(), slots, topo(8), "cores")[0] == [3, 1]
    assert layout._threads(prof(), slots, topo(8), "none")[0] == [4, 4]  # cores // ranks, no binding
    want, notes = layout._threads(prof(2), slots, topo(8), "cores")
    assert want == [2, 1] and any("capped" in n for n in notes)


@pytest.mark.parametrize("quota, total", [(4.0, 4), (5.0, 5), (2.5, 2)])
def test_threads_in_all_never_exceed_the_quota(quota: float, total: int) -> None:
    slots = [layout._Slot(cores=cores(0, 1, 2)), layout._Slot(cores=cores(3, 4, 5))]
    want, _ = layout._threads(prof(), slots, topo(6, quota), "cores")
    assert sum(want) == total


def numa_facts() -> "layout.Facts":
    from hosttune.facts import Cpu, Facts, Numa, NumaNode

    cpus = (0, 1, 2, 3)
    nodes = (NumaNode(0, (0, 1), 16000, (10, 20, 30)), NumaNode(1, (2, 3), 16000, (20, 10, 20)),
             NumaNode(2, (), 0, (20, 30, 10)))  # node 2: memory-less and CPU-less (a GPU's node)
    return Facts(cpu=Cpu(online=cpus, logical=4, physical=4, cores=tuple((c,) for c in cpus), allowed_cpus=cpus),
                 numa=Numa(nodes=nodes, allowed_mems=(1, 2)))


def test_memory_goes_only_to_allowed_nodes_that_have_memory() -> None:
    assert layout._topology(numa_facts()).mem_ok == (1,)


def test_a_cpu_less_node_borrows_the_nearest_node_with_cpus() -> None:
    facts = numa_facts()
    assert layout._nearest_node_with_cpus(facts, 2, layout._topology(facts)) == 0
