"""Pins for hosttune/plan/__init__.py's `resolve` (issue 21, round 6): whole rank plans on a hand-made two-node host,
field by field and reason line by reason line: the split between ranks, the caller's own threads, torchrun's
OMP_NUM_THREADS=1, a launcher that binds, GPU ranks, the argument checks, and the node layout cache returning only
the layout of the same inputs."""

from typing import Dict, Optional, Tuple

import pytest

from hosttune import plan
from hosttune.errors import UserError
from hosttune.facts import Cpu, Facts, Gpu, Numa, NumaNode
from hosttune.plan import Endpoint, resolve, resolve_all
from hosttune.policy import names
from hosttune.profile.settings import Profile

CPUS = tuple(range(8))


def facts(gpus: Tuple[Gpu, ...] = (), quota: Optional[float] = None) -> Facts:
    return Facts(cpu=Cpu(online=CPUS, logical=8, physical=8, cores=tuple((c,) for c in CPUS), allowed_cpus=CPUS,
                         quota_cpus=quota),
                 numa=Numa(nodes=(NumaNode(0, (0, 1, 2, 3), 1000), NumaNode(1, (4, 5, 6, 7), 1000))), gpus=gpus)


def prof(**kw: object) -> Profile:
    return Profile(name="t", summary="", source="<test>", allocator="system", **kw)  # type: ignore[arg-type]


F = facts()
P = prof()
COMMON = {names.PIN_MEMORY: "0", names.DETERMINISTIC: "0"}


def rank_env(t: int, workers: int) -> Dict[str, str]:
    out = {**COMMON, "OMP_NUM_THREADS": str(t), "MKL_NUM_THREADS": str(t), names.NUM_WORKERS: str(workers)}
    if workers:
        out.update({names.PERSISTENT_WORKERS: "1", names.PREFETCH_FACTOR: "2"})
    else:
        out[names.PERSISTENT_WORKERS] = "0"
    return out


def test_two_ranks_get_a_node_each() -> None:
    r0, r1 = resolve_all(F, P, 2, {})
    assert (r0.local_rank, r0.local_world_size, r1.local_rank) == (0, 2, 1)
    assert r0.cpus == (0, 1, 2, 3) and r1.cpus == (4, 5, 6, 7)
    assert (r0.mem_policy, r0.mems, r1.mems) == ("bind", (0,), (1,))
    assert r0.threads == 4 and r0.gpu is None and r0.cuda_device is None and r0.bound_by is None
    assert dict(r0.env) == rank_env(4, 2) and dict(r0.common) == COMMON
    assert r0.kept == {} and r0.overridden == {}
    assert r0.reasons == (
        "allocator: glibc malloc",
        "binding: 4 core(s) 0-3 on NUMA node(s) 0, disjoint from the other ranks",
        "memory: bind to node(s) 0",
        "threads: 4 (4 physical cores for this rank; SMT siblings count once)",
        "dataloader: 2 workers (4 cores: half of them, at most 4)",
    )
    assert r1.reasons[1] == "binding: 4 core(s) 4-7 on NUMA node(s) 1, disjoint from the other ranks"


def test_three_ranks_on_two_nodes() -> None:
    plans = resolve_all(F, P, 3, {})
    assert [p.cpus for p in plans] == [(0, 1), (2, 3), (4, 5, 6, 7)]
    assert [p.threads for p in plans] == [2, 2, 4]
    assert [p.env[names.NUM_WORKERS] for p in plans] == ["0", "0", "2"]
    assert [p.mems for p in plans] == [(0,), (0,), (1,)]


def test_one_rank_keeps_the_whole_host() -> None:
    (p,) = resolve_all(F, P, 1, {})
    assert p.cpus == CPUS and p.mems == (0, 1) and p.threads == 8 and p.env[names.NUM_WORKERS] == "4"
    assert p.reasons[1:3] == ("binding: 8 core(s) 0-7 on NUMA node(s) 0-1, disjoint from the other ranks",
                              "memory: bind to node(s) 0-1")


def test_the_arguments_are_checked() -> None:
    with pytest.raises(UserError) as e:
        resolve(F, P, 0, 0, {})
    assert str(e.value) == "local world size must be at least 1, not 0"
    with pytest.raises(UserError) as e:
        resolve(F, P, 2, 2, {})
    assert str(e.value) == "local rank 2 is outside 0..1"
    with pytest.raises(UserError) as e:
        resolve(F, P, -1, 2, {})
    assert str(e.value) == "local rank -1 is outside 0..1"
    assert resolve(F, P, 0, 1, {}).local_rank == 0 and resolve(F, P, 1, 2, {}).local_rank == 1


def test_the_callers_threads_win_and_are_said() -> None:
    p = resolve(F, P, 0, 2, {"OMP_NUM_THREADS": "2"})
    assert p.threads == 2 and p.env["OMP_NUM_THREADS"] == "2" and "MKL_NUM_THREADS" not in p.env
    assert p.kept == {"OMP_NUM_THREADS": "4"} and p.common == COMMON
    assert p.reasons[-2:] == ("OMP_NUM_THREADS=2 kept: set by you (profile: 4; --override to use the profile)",
                              "MKL_NUM_THREADS: not set, so MKL follows your OMP_NUM_THREADS")
    o = resolve(F, P, 0, 2, {"OMP_NUM_THREADS": "2"}, override=True)
    assert o.threads == 4 and o.env["OMP_NUM_THREADS"] == "4" and o.overridden == {"OMP_NUM_THREADS": "2"}
    assert o.kept == {}


def test_a_callers_thread_value_that_is_not_a_count_means_none_planned() -> None:
    p = resolve(F, P, 0, 2, {"OMP_NUM_THREADS": "x"})
    assert p.threads is None and p.env["OMP_NUM_THREADS"] == "x"


def test_torchruns_own_one_thread_is_not_the_callers() -> None:
    env = {"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "r", "LOCAL_WORLD_SIZE": "2"}
    p = resolve(F, P, 1, 2, env)
    assert p.threads == 4 and p.env["OMP_NUM_THREADS"] == "4" and p.kept == {}
    assert p.reasons[:2] == ("allocator: glibc malloc",
                             "OMP_NUM_THREADS=1 was torchrun's default for its workers, not yours: the plan sets it")
    mine = resolve(F, P, 1, 2, dict(env, LOCAL_WORLD_SIZE="1"))
    assert mine.threads == 1 and mine.kept == {"OMP_NUM_THREADS": "4"}


def test_a_binding_launcher_gets_threads_but_no_binding() -> None:
    p = resolve(F, P, 1, 2, {}, bound_by="srun --cpu-bind=cores")
    assert p.cpus == () and p.mems == () and p.mem_policy == "none" and p.bound_by == "srun --cpu-bind=cores"
    assert p.threads == 4
    assert p.reasons[1:4] == (
        "binding: left to srun --cpu-bind=cores; hosttune does not bind on top (no affinity, memory policy or "
        "numactl)",
        "threads: 4 (4 physical cores for this rank, its even share of the cores srun --cpu-bind=cores binds it "
        "to; SMT siblings count once)",
        "dataloader: 2 workers (4 cores: half of them, at most 4)",
    )


def test_binding_none_and_numa_profiles() -> None:
    n = resolve(F, prof(binding="none"), 0, 2, {})
    assert n.cpus == () and n.threads == 4 and n.mem_policy == "none" and n.mems == ()
    assert "binding: none - the rank is not pinned" in n.reasons
    assert "memory: no policy (no allowed memory node for this rank's CPUs)" in n.reasons
    numa = resolve_all(F, prof(binding="numa"), 3, {})
    assert [p.cpus for p in numa] == [(0, 1, 2, 3), (0, 1, 2, 3), (4, 5, 6, 7)]
    assert [p.threads for p in numa] == [2, 2, 4]


def test_a_quota_caps_threads_over_all_ranks() -> None:
    plans = resolve_all(facts(quota=3.5), P, 2, {})
    assert [p.threads for p in plans] == [2, 1]
    assert "threads: cgroup quota 3.5 CPUs caps the 2 ranks to 3 threads in all" in plans[0].reasons


def test_gpu_ranks_bind_near_their_gpu_and_say_which_first() -> None:
    g = (Gpu(index=0, name="A100", pci_bus_id="0000:10:00.0", numa_node=1),
         Gpu(index=1, name="A100", pci_bus_id="0000:20:00.0", numa_node=0))
    r0, r1 = resolve_all(facts(g), P, 2, {})
    assert (r0.gpu, r0.cuda_device, r0.cpus, r0.mems) == ("0000:10:00.0", 0, (4, 5, 6, 7), (1,))
    assert (r1.gpu, r1.cuda_device, r1.cpus, r1.mems) == ("0000:20:00.0", 1, (0, 1, 2, 3), (0,))
    assert r0.reasons[0] == "gpu: cuda:0 = 0000:10:00.0 (A100), NUMA node 1"
    assert r0.common == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", names.PIN_MEMORY: "1", names.DETERMINISTIC: "0"}
    assert r0.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_common_is_the_part_every_rank_shares_after_the_callers_settings() -> None:
    p = resolve(F, prof(debug=True), 0, 2, {"NCCL_DEBUG": "WARN", names.PIN_MEMORY: "1"})
    assert p.common["NCCL_DEBUG"] == "WARN" and p.env["NCCL_DEBUG"] == "WARN"
    assert p.kept == {"NCCL_DEBUG": "INFO"}
    assert p.common[names.PIN_MEMORY] == "0"  # hosttune's own switches stay hosttune's
    assert "OMP_NUM_THREADS" not in p.common and p.env["OMP_NUM_THREADS"] == "4"


def test_the_layout_cache_answers_only_the_same_inputs() -> None:
    a = resolve(F, P, 0, 2, {})
    assert resolve(F, P, 0, 1, {}).cpus == CPUS  # another world size
    assert resolve(F, P, 0, 2, {}).cpus == a.cpus == (0, 1, 2, 3)
    assert resolve(F, P, 0, 2, {}, bound_by="x").cpus == ()
    assert resolve(F, P, 0, 2, {}).threads == 4
    assert resolve(F, prof(binding="none"), 0, 2, {}).cpus == ()  # another profile object
    assert resolve(facts(), P, 0, 1, {}).cpus == CPUS  # other facts
    assert resolve(F, P, 0, 2, {"OMP_NUM_THREADS": "3"}).threads == 3
    assert resolve(F, P, 0, 2, {"OMP_NUM_THREADS": "3"}, override=True).threads == 4
    ep = Endpoint("10.0.0.1", "MASTER_ADDR", 2)
    captured = resolve(Facts(root="/capture", cpu=F.cpu, numa=F.numa), P, 0, 2, {}, endpoint=ep)
    assert captured.reasons[1] == ("network: MASTER_ADDR 10.0.0.1: no interface named for a captured host (its routes "
                                   "are not in the capture)")
    assert "network:" not in " ".join(resolve(Facts(root="/capture", cpu=F.cpu, numa=F.numa), P, 0, 2, {}).reasons)


def test_the_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    p = resolve(F, P, 0, 2)
    assert p.threads == 3 and p.kept == {"OMP_NUM_THREADS": "4"}
    assert [q.threads for q in plan.resolve_all(F, P, 2)] == [3, 3]
