"""Pins for the plan's rank steps (plan/rank.py, reached as `hosttune.plan._rank`, the name `resolve` composes them
under; issue 21, round 6): each step of one rank's plan on a hand-made node (its CPU binding, memory policy, threads,
DataLoader workers, the caller's own settings and the GPU line), with the exact reason lines `exec --dry-run` prints
and the exact variables each step sets."""

from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from hosttune import plan
from hosttune.facts import Gpu
from hosttune.plan.layout import _Slot, _Topo
from hosttune.plan.model import INTEL_KMP
from hosttune.policy import names
from hosttune.profile.settings import DataLoader, Profile

# node 0: cores (0,4) (1,5) (2,6); node 1: cores (3,7) (8,9)
N0 = [(0, 4), (1, 5), (2, 6)]
N1 = [(3, 7), (8, 9)]
rank = plan._rank


def topo(mem_ok: Tuple[int, ...] = (0, 1), by_node: Optional[Dict[int, List[Tuple[int, ...]]]] = None) -> _Topo:
    by = by_node if by_node is not None else {0: list(N0), 1: list(N1)}
    cores = [c for n in sorted(by) for c in by[n]]
    return _Topo(cores, {c: n for n in by for c in by[n]}, by, mem_ok, None)


def prof(**kw: object) -> Profile:
    return Profile(name="t", summary="", source="<test>", **kw)  # type: ignore[arg-type]


def gpu(node: int = 1, name: Optional[str] = "H100") -> Gpu:
    return Gpu(index=0, name=name, pci_bus_id="0000:3b:00.0", numa_node=node)


def slot(cores: Sequence[Tuple[int, ...]], **kw: object) -> _Slot:
    return _Slot(cores=list(cores), **kw)  # type: ignore[arg-type]


# ---- binding ---------------------------------------------------------------------------------------------------------

def test_cores_binding_is_the_ranks_cores_and_their_nodes() -> None:
    why: List[str] = []
    assert rank.binding(slot(N0[:2]), topo(), "cores", None, why) == (0, 1, 4, 5)
    assert why == ["binding: 2 core(s) 0-1,4-5 on NUMA node(s) 0, disjoint from the other ranks"]


def test_cores_binding_over_two_nodes_and_shared() -> None:
    why: List[str] = []
    assert rank.binding(slot([N0[2], N1[0]], shared=True), topo(), "cores", None, why) == (2, 3, 6, 7)
    assert why == ["binding: 2 core(s) 2-3,6-7 on NUMA node(s) 0-1, shared with other ranks (more ranks than cores)"]


def test_cores_binding_without_a_known_node_names_none() -> None:
    t = topo(by_node={-1: [(0,), (1,)]})
    why: List[str] = []
    assert rank.binding(slot([(1,)]), t, "cores", None, why) == (1,)
    assert why == ["binding: 1 core(s) 1, disjoint from the other ranks"]


def test_numa_binding_takes_every_allowed_cpu_of_the_ranks_nodes() -> None:
    why: List[str] = []
    assert rank.binding(slot([N1[1]]), topo(), "numa", None, why) == (3, 7, 8, 9)
    assert why == ["binding: numa - all allowed CPUs of node(s) 1: 3,7-9"]
    why = []
    assert rank.binding(slot([N0[0], N1[0]]), topo(), "numa", None, why) == (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    assert why == ["binding: numa - all allowed CPUs of node(s) 0-1: 0-9"]


def test_no_binding() -> None:
    why: List[str] = []
    assert rank.binding(slot(N0), topo(), "none", None, why) == ()
    assert why == ["binding: none - the rank is not pinned"]
    why = []
    assert rank.binding(slot([]), topo(), "auto", None, why) == ()
    assert why == ["binding: no CPU topology"]
    why = []
    assert rank.binding(slot([]), topo(), "none", None, why) == ()
    assert why == ["binding: none - the rank is not pinned"]


def test_a_launcher_that_binds_gets_no_binding_from_us() -> None:
    why: List[str] = []
    assert rank.binding(slot(N0), topo(), "cores", "mpirun --bind-to core", why) == ()
    assert why == ["binding: left to mpirun --bind-to core; hosttune does not bind on top (no affinity, memory "
                   "policy or numactl)"]


# ---- memory ----------------------------------------------------------------------------------------------------------

def test_auto_binds_to_the_gpus_node_on_a_two_node_host() -> None:
    why: List[str] = []
    got = rank.memory(prof(memory_policy="auto"), slot(N0[:1], gpu=gpu(1)), topo(), (0, 4), None, why)
    assert got == ("bind", (1,))
    assert why == ["memory: bind to node(s) 1 (auto: 2 NUMA nodes)"]


def test_auto_on_one_memory_node_binds_nothing() -> None:
    why: List[str] = []
    assert rank.memory(prof(memory_policy="auto"), slot(N0[:1]), topo(mem_ok=(0,)), (0, 4), None, why) == ("none", ())
    assert why == ["memory: no policy (auto: a single NUMA node, nothing to bind)"]


def test_profile_none_and_a_binding_launcher() -> None:
    why: List[str] = []
    assert rank.memory(prof(memory_policy="none"), slot(N0[:1]), topo(), (0, 4), None, why) == ("none", ())
    assert why == ["memory: no policy (profile says none)"]
    why = []
    assert rank.memory(prof(memory_policy="bind"), slot(N0[:1], gpu=gpu(1)), topo(), (0, 4), "srun", why) == (
        "none", ())
    assert why == []


def test_the_cpus_nodes_without_a_gpu() -> None:
    why: List[str] = []
    got = rank.memory(prof(memory_policy="bind"), slot([N0[2], N1[0], N1[1]]), topo(), (2, 3, 6, 7, 8, 9), None, why)
    assert got == ("bind", (0, 1))
    assert why == ["memory: bind to node(s) 0-1"]


def test_preferred_takes_the_node_with_most_of_the_ranks_cores() -> None:
    why: List[str] = []
    got = rank.memory(prof(memory_policy="preferred"), slot([N0[2], N1[0], N1[1]]), topo(), (2, 3), None, why)
    assert got == ("preferred", (1,))
    assert why == ["memory: preferred to node(s) 1"]
    why = []
    tie = rank.memory(prof(memory_policy="preferred"), slot([N0[2], N1[0]]), topo(), (2, 3), None, why)
    assert tie == ("preferred", (0,))  # a tie: the lower node
    more0 = rank.memory(prof(memory_policy="preferred"), slot([N0[0], N0[1], N1[0]]), topo(), (0, 1, 3), None, [])
    assert more0 == ("preferred", (0,))


def test_gpu_node_not_allowed_falls_back_to_the_cpus_nodes() -> None:
    why: List[str] = []
    got = rank.memory(prof(memory_policy="auto"), slot(N0[:1], gpu=gpu(1)), topo(mem_ok=(0, 2)), (0, 4), None,
                      why)
    assert got == ("bind", (0,))
    assert why == ["memory: bind to node(s) 0 (auto: 2 NUMA nodes)"]


def test_gpu_with_unknown_node_uses_the_node_its_cpus_were_chosen_on() -> None:
    got = rank.memory(prof(memory_policy="bind"), slot(N0[:1], gpu=gpu(-1), cpu_node=1), topo(), (0, 4), None, [])
    assert got == ("bind", (1,))
    got = rank.memory(prof(memory_policy="bind"), slot(N0[:1], gpu=gpu(-1)), topo(), (0, 4), None, [])
    assert got == ("bind", (0,))
    got = rank.memory(prof(memory_policy="bind"), slot(N1[:1], cpu_node=0), topo(), (3, 7), None, [])
    assert got == ("bind", (1,))  # no GPU: cpu_node means nothing, the CPUs' node counts


def test_no_cpus_and_no_gpu_is_no_policy() -> None:
    why: List[str] = []
    assert rank.memory(prof(memory_policy="bind"), slot(N0[:1]), topo(), (), None, why) == ("none", ())
    assert why == ["memory: no policy (no allowed memory node for this rank's CPUs)"]
    why = []
    assert rank.memory(prof(memory_policy="bind"), slot(N1[:1]), topo(mem_ok=(0,)), (3, 7), None, why) == (
        "none", ())
    assert why == ["memory: no policy (no allowed memory node for this rank's CPUs)"]


# ---- threads ---------------------------------------------------------------------------------------------------------

def test_threads_are_the_ranks_physical_cores() -> None:
    env: Dict[str, str] = {}
    why: List[str] = []
    assert rank.threads(prof(), slot(N0), topo(), 3, None, env, {}, why) == 3
    assert env == {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}
    assert why == ["threads: 3 (3 physical cores for this rank; SMT siblings count once)"]


def test_one_thread_and_a_binding_launcher() -> None:
    env: Dict[str, str] = {}
    why: List[str] = []
    assert rank.threads(prof(), slot(N0[:1]), topo(), 1, "deepspeed --bind_cores_to_rank", env, {}, why) == 1
    assert why == ["threads: 1 (1 physical core for this rank, its even share of the cores deepspeed "
                   "--bind_cores_to_rank binds it to; SMT siblings count once)"]


def test_no_topology_leaves_threads_to_the_program() -> None:
    env: Dict[str, str] = {}
    why: List[str] = []
    assert rank.threads(prof(), slot([]), topo(), 4, None, env, {}, why) == 0
    assert env == {} and why == ["threads: left to the program (no CPU topology known)"]
    empty = topo(by_node={})
    assert rank.threads(prof(binding="none"), slot([]), empty, 4, None, env, {}, []) == 0 and env == {}


def test_binding_none_still_sizes_threads_from_the_node() -> None:
    env: Dict[str, str] = {}
    assert rank.threads(prof(binding="none"), slot([]), topo(), 5, None, env, {}, []) == 5
    assert env["OMP_NUM_THREADS"] == "5"


@pytest.mark.parametrize("openmp,env_preload,caller_preload,intel", [
    ("intel", "", "", True),
    ("auto", "/opt/libjemalloc.so:/opt/libiomp5.so", "", True),
    ("auto", "", "/opt/libiomp5.so", True),
    ("auto", "/opt/libjemalloc.so", "/opt/libiomp5.so", False),  # the plan's own LD_PRELOAD is what runs
    ("auto", "", "", False),
    ("gnu", "/opt/libiomp5.so", "", False),
])
def test_intel_openmp_affinity(openmp: str, env_preload: str, caller_preload: str, intel: bool) -> None:
    env: Dict[str, str] = {"LD_PRELOAD": env_preload} if env_preload else {}
    environ = {"LD_PRELOAD": caller_preload} if caller_preload else {}
    why: List[str] = []
    rank.threads(prof(openmp=openmp), slot(N0), topo(), 3, None, env, environ, why)
    assert all(env.get(k) == v for k, v in INTEL_KMP.items()) is intel
    assert ("KMP_AFFINITY/KMP_BLOCKTIME: Intel OpenMP is preloaded" in why) is intel
    if not intel:
        assert not set(INTEL_KMP) & set(env)


# ---- DataLoader workers ----------------------------------------------------------------------------------------------

def test_auto_workers_from_the_ranks_threads() -> None:
    env: Dict[str, str] = {}
    why: List[str] = []
    rank.workers(prof(), slot(N0), 8, env, why)
    assert env == {names.NUM_WORKERS: "4", names.PERSISTENT_WORKERS: "1", names.PREFETCH_FACTOR: "2"}
    assert why == ["dataloader: 4 workers (8 cores: half of them, at most 4)"]
    env, why = {}, []
    rank.workers(prof(), slot(N0), 6, env, why)
    assert env[names.NUM_WORKERS] == "3" and why == ["dataloader: 3 workers (6 cores: half of them, at most 4)"]


def test_auto_workers_without_threads_count_the_ranks_cores() -> None:
    env: Dict[str, str] = {names.PREFETCH_FACTOR: "9"}
    why: List[str] = []
    rank.workers(prof(), slot(N0[:2]), 0, env, why)
    assert env == {names.NUM_WORKERS: "0", names.PERSISTENT_WORKERS: "0"}
    assert why == ["dataloader: 0 workers (<= 2 cores: workers would take cores from compute)"]
    env = {}
    rank.workers(prof(), slot(N0 + N1), 0, env, [])
    assert env[names.NUM_WORKERS] == "2"


def test_fixed_workers_are_the_profiles() -> None:
    env: Dict[str, str] = {}
    why: List[str] = []
    rank.workers(prof(dataloader=DataLoader(num_workers=2)), slot(N0), 8, env, why)
    assert env == {} and why == []


def test_auto_workers_follow_the_profiles_prefetch_and_persistence() -> None:
    env: Dict[str, str] = {}
    dl = DataLoader(prefetch_factor=6, persistent_workers=False)
    rank.workers(prof(dataloader=dl), slot(N0), 4, env, [])
    assert env == {names.NUM_WORKERS: "2", names.PERSISTENT_WORKERS: "0", names.PREFETCH_FACTOR: "6"}


# ---- the caller's own settings ---------------------------------------------------------------------------------------

def test_the_profiles_literal_env_wins_over_anything_computed() -> None:
    env = {"OMP_NUM_THREADS": "3", "A": "x"}
    got = rank.users_win(prof(env={"OMP_NUM_THREADS": 2, "B": "y"}), env, {}, False, 3, [])
    assert got == ({"OMP_NUM_THREADS": "2", "A": "x", "B": "y"}, {}, {}, 3)


def test_the_callers_threads_are_kept_and_mkl_follows_them() -> None:
    why: List[str] = []
    env, kept, overridden, t = rank.users_win(prof(), {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"},
                                              {"OMP_NUM_THREADS": "6,2"}, False, 3, why)
    assert env == {"OMP_NUM_THREADS": "6,2"} and kept == {"OMP_NUM_THREADS": "3"} and overridden == {} and t == 6
    assert why == ["OMP_NUM_THREADS=6,2 kept: set by you (profile: 3; --override to use the profile)",
                   "MKL_NUM_THREADS: not set, so MKL follows your OMP_NUM_THREADS"]


def test_the_callers_mkl_threads_stay_too() -> None:
    why: List[str] = []
    env, kept, _, t = rank.users_win(prof(), {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"},
                                     {"OMP_NUM_THREADS": "5", "MKL_NUM_THREADS": "1"}, False, 3, why)
    assert env == {"OMP_NUM_THREADS": "5", "MKL_NUM_THREADS": "1"} and t == 5
    assert kept == {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"} and len(why) == 2


def test_a_callers_thread_value_that_is_no_count_is_zero_threads() -> None:
    _, _, _, t = rank.users_win(prof(), {"OMP_NUM_THREADS": "3"}, {"OMP_NUM_THREADS": "many"}, False, 3, [])
    assert t == 0


def test_the_same_value_or_override_keeps_our_threads() -> None:
    got = rank.users_win(prof(), {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}, {"OMP_NUM_THREADS": "3"},
                         False, 3, [])
    assert got == ({"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}, {}, {}, 3)
    why: List[str] = []
    got = rank.users_win(prof(), {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}, {"OMP_NUM_THREADS": "8"},
                         True, 3, why)
    assert got == ({"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}, {}, {"OMP_NUM_THREADS": "8"}, 3)
    assert why == ["OMP_NUM_THREADS=3 replaces yours (8): --override"]


def test_a_kept_thread_count_without_mkl_in_the_plan() -> None:
    why: List[str] = []
    env, _, _, t = rank.users_win(prof(), {"OMP_NUM_THREADS": "3"}, {"OMP_NUM_THREADS": "2"}, False, 3, why)
    assert env == {"OMP_NUM_THREADS": "2"} and t == 2 and len(why) == 1


# ---- the GPU line ----------------------------------------------------------------------------------------------------

def test_gpu_line() -> None:
    assert rank.gpu_line(slot(N0)) is None
    assert rank.gpu_line(slot(N0, gpu=gpu(1), cuda_device=2)) == "gpu: cuda:2 = 0000:3b:00.0 (H100), NUMA node 1"
    assert rank.gpu_line(slot(N0, gpu=gpu(0, None), cuda_device=0)) == "gpu: cuda:0 = 0000:3b:00.0 (GPU), NUMA node 0"
    assert (rank.gpu_line(slot(N0, gpu=gpu(-1, ""), cuda_device=1))
            == "gpu: cuda:1 = 0000:3b:00.0 (GPU), NUMA node unknown")
