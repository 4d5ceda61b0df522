"""Pins for hosttune/plan/rank.py (issue 21, mutation round 5 and its coverage): one rank's slice of the plan as the
plan states it. A host whose CPU topology is unknown (no CPU list anywhere in the facts) leaves the rank unpinned and
says "no CPU topology", whatever the profile's binding; it never claims a binding to zero cores or to the CPUs of no
node. Then each step on a hand-built 2-node host: a launcher that binds itself (bound_by), numa and cores binding,
the memory policy (preferred's one node, auto by node count, none), Intel OpenMP's settings, DataLoader workers, the
caller's OMP_NUM_THREADS and the profile's literal env, and a GPU rank's first reason line."""

from typing import List, Optional, Tuple

import pytest

from hosttune import plan
from hosttune.facts import Cpu, Facts, Gpu, Numa, NumaNode
from hosttune.profile.settings import Profile


def prof(**kw: object) -> Profile:
    return Profile(name="t", summary="", source="<test>", **kw)  # type: ignore[arg-type]


def binding_lines(reasons: List[str]) -> List[str]:
    return [r for r in reasons if r.startswith("binding:")]


@pytest.mark.parametrize("binding", ["auto", "cores", "numa"])
def test_no_cpu_topology_leaves_the_rank_unpinned_and_says_so(binding: str) -> None:
    p = plan.resolve(Facts(), prof(binding=binding), 0, 1, {})
    assert p.cpus == () and p.mems == () and p.mem_policy == "none"
    assert binding_lines(list(p.reasons)) == ["binding: no CPU topology"], p.reasons
    assert "threads: left to the program (no CPU topology known)" in p.reasons
    assert "OMP_NUM_THREADS" not in p.env


def test_binding_none_says_not_pinned_even_without_topology() -> None:
    p = plan.resolve(Facts(), prof(binding="none"), 0, 1, {})
    assert p.cpus == () and binding_lines(list(p.reasons)) == ["binding: none - the rank is not pinned"]


# ---- the other steps of one rank's slice, on a hand-built 2-node host (coverage of plan/rank.py) ---------------------
def host(node_cpus: Tuple[Tuple[int, ...], ...] = ((0, 1, 2, 3), (4, 5, 6, 7)),
         allowed: Optional[Tuple[int, ...]] = None, gpus: Tuple[Gpu, ...] = ()) -> Facts:
    every = tuple(sorted(c for n in node_cpus for c in n))
    allowed = every if allowed is None else allowed
    nodes = tuple(NumaNode(i, tuple(cs), 1000) for i, cs in enumerate(node_cpus))
    return Facts(cpu=Cpu(logical=len(every), physical=len(every), online=every, allowed_cpus=tuple(allowed),
                         cores=tuple((c,) for c in every)),
                 numa=Numa(nodes=nodes, allowed_mems=tuple(range(len(node_cpus)))), gpus=tuple(gpus))


def test_a_launcher_that_binds_gets_no_binding_from_us_but_threads_sized_to_its_share() -> None:
    by = "torchrun --numa-binding=node"
    p = plan.resolve(host(), prof(), 1, 2, {}, bound_by=by)
    assert (p.cpus, p.mems, p.mem_policy, p.bound_by) == ((), (), "none", by)
    assert binding_lines(list(p.reasons)) == [f"binding: left to {by}; hosttune does not bind on top (no affinity, "
                                              "memory policy or numactl)"]
    assert not [r for r in p.reasons if r.startswith("memory:")], p.reasons
    assert p.env["OMP_NUM_THREADS"] == "4" and p.threads == 4
    assert (f"threads: 4 (4 physical cores for this rank, its even share of the cores {by} binds it to; SMT "
            "siblings count once)") in p.reasons


def test_numa_binding_gives_the_whole_node_of_the_ranks_cores() -> None:
    p = plan.resolve(host(), prof(binding="numa"), 1, 2, {})
    assert p.cpus == (4, 5, 6, 7) and (p.mem_policy, p.mems) == ("bind", (1,))
    assert binding_lines(list(p.reasons)) == ["binding: numa - all allowed CPUs of node(s) 1: 4-7"]


def test_cores_binding_names_its_cores_node_and_whether_they_are_shared() -> None:
    p = plan.resolve(host(), prof(), 0, 2, {})
    assert binding_lines(list(p.reasons)) == ["binding: 4 core(s) 0-3 on NUMA node(s) 0, disjoint from the other "
                                              "ranks"]
    many = plan.resolve(host(), prof(), 9, 10, {})  # 10 ranks on 8 cores
    assert len(many.cpus) == 1
    assert binding_lines(list(many.reasons))[0].endswith("shared with other ranks (more ranks than cores)")


def test_preferred_memory_takes_the_one_node_holding_most_of_the_ranks_cores() -> None:
    p = plan.resolve(host(allowed=(0, 1, 4, 5, 6)), prof(memory_policy="preferred"), 0, 1, {})
    assert p.cpus == (0, 1, 4, 5, 6) and (p.mem_policy, p.mems) == ("preferred", (1,))
    assert "memory: preferred to node(s) 1" in p.reasons
    tie = plan.resolve(host(), prof(memory_policy="preferred"), 0, 1, {})
    assert (tie.mem_policy, tie.mems) == ("preferred", (0,))  # 4 and 4: the lower node
    both = plan.resolve(host(), prof(memory_policy="bind"), 0, 1, {})
    assert (both.mem_policy, both.mems) == ("bind", (0, 1)) and "memory: bind to node(s) 0-1" in both.reasons


def test_auto_memory_binds_only_on_a_multi_node_host_and_none_says_the_profile_chose_it() -> None:
    one = plan.resolve(host(node_cpus=((0, 1, 2, 3),)), prof(memory_policy="auto"), 0, 1, {})
    assert one.mem_policy == "none" and "memory: no policy (auto: a single NUMA node, nothing to bind)" in one.reasons
    two = plan.resolve(host(), prof(memory_policy="auto"), 1, 2, {})
    assert (two.mem_policy, two.mems) == ("bind", (1,))
    assert "memory: bind to node(s) 1 (auto: 2 NUMA nodes)" in two.reasons
    off = plan.resolve(host(), prof(memory_policy="none"), 0, 2, {})
    assert (off.mem_policy, off.mems) == ("none", ()) and "memory: no policy (profile says none)" in off.reasons


def test_intel_openmp_settings_come_with_an_intel_runtime_only() -> None:
    kmp = {"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}
    gnu = plan.resolve(host(), prof(), 0, 2, {})
    assert not set(kmp) & set(gnu.env)
    preloaded = plan.resolve(host(), prof(), 0, 2, {"LD_PRELOAD": "/opt/intel/lib/libiomp5.so"})
    assert {k: preloaded.env[k] for k in kmp} == kmp
    assert "KMP_AFFINITY/KMP_BLOCKTIME: Intel OpenMP is preloaded" in preloaded.reasons
    said = plan.resolve(host(), prof(openmp="gnu"), 0, 2, {"LD_PRELOAD": "/opt/intel/lib/libiomp5.so"})
    assert not set(kmp) & set(said.env)


def test_dataloader_workers_follow_the_ranks_threads() -> None:
    from hosttune.policy import names

    p = plan.resolve(host(), prof(), 0, 2, {})  # 4 cores
    assert p.env[names.NUM_WORKERS] == "2" and "dataloader: 2 workers (4 cores: half of them, at most 4)" in p.reasons
    small = plan.resolve(host(), prof(), 0, 4, {})  # 2 cores
    assert small.env[names.NUM_WORKERS] == "0" and small.env[names.PERSISTENT_WORKERS] == "0"


def test_your_omp_num_threads_wins_and_mkl_follows_it() -> None:
    p = plan.resolve(host(), prof(), 0, 2, {"OMP_NUM_THREADS": "3"})
    assert p.env["OMP_NUM_THREADS"] == "3" and p.kept == {"OMP_NUM_THREADS": "4"} and p.threads == 3
    assert "MKL_NUM_THREADS" not in p.env
    assert "MKL_NUM_THREADS: not set, so MKL follows your OMP_NUM_THREADS" in p.reasons
    yours_too = plan.resolve(host(), prof(), 0, 2, {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "2"})
    assert yours_too.env["MKL_NUM_THREADS"] == "2"


def test_the_profiles_literal_env_wins_over_what_the_plan_computed() -> None:
    p = plan.resolve(host(), prof(env={"OMP_NUM_THREADS": 2}), 0, 1, {})
    assert p.env["OMP_NUM_THREADS"] == "2"


def test_a_gpu_ranks_first_reason_names_its_gpu_and_node() -> None:
    g = Gpu(index=0, name="NVIDIA H100", pci_bus_id="0000:17:00.0", numa_node=1)
    p = plan.resolve(host(gpus=(g,)), prof(), 0, 1, {})
    assert p.reasons[0] == "gpu: cuda:0 = 0000:17:00.0 (NVIDIA H100), NUMA node 1" and p.cpus == (4, 5, 6, 7)
    lost = Gpu(index=0, pci_bus_id="0000:17:00.0", numa_node=-1)
    q = plan.resolve(host(gpus=(lost,)), prof(), 0, 1, {})
    assert q.reasons[0] == "gpu: cuda:0 = 0000:17:00.0 (GPU), NUMA node unknown"
