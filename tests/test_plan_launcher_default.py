"""plan.launcher_default: torchrun sets OMP_NUM_THREADS=1 for its workers only when it is unset AND it starts more
than one worker (torch/distributed/run.py: `if "OMP_NUM_THREADS" not in os.environ and nproc_per_node > 1`). In a
1-worker torchrun an OMP_NUM_THREADS=1 can only be the caller's own choice, so the plan keeps it."""

from typing import Dict

import pytest

from hosttune import plan, profile
from hosttune.facts import Cpu, Facts, Numa, NumaNode

CPUS = tuple(range(8))


def host() -> Facts:
    return Facts(cpu=Cpu(online=CPUS, logical=8, physical=8, cores=tuple((c,) for c in CPUS), allowed_cpus=CPUS),
                 numa=Numa(nodes=(NumaNode(0, CPUS, 16000),), allowed_mems=(0,)))


def worker_env(local_world_size: int) -> Dict[str, str]:
    return {"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "none", "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": str(local_world_size)}


def test_one_worker_torchruns_omp_1_is_the_callers() -> None:
    env = worker_env(1)
    assert plan.launcher_default(env) is None
    rp = plan.resolve(host(), profile.load("throughput"), 0, 1, environ=env)
    assert rp.env["OMP_NUM_THREADS"] == "1" and "OMP_NUM_THREADS" in rp.kept, (rp.env, rp.kept)
    assert rp.kept["OMP_NUM_THREADS"] != "1"  # the plan's own count, which the caller's 1 beat


@pytest.mark.parametrize("size", [2, 4])
def test_multi_worker_torchruns_omp_1_is_torchruns(size: int) -> None:
    env = worker_env(size)
    assert plan.launcher_default(env) == "OMP_NUM_THREADS"
    rp = plan.resolve(host(), profile.load("throughput"), 0, size, environ=env)
    assert rp.env["OMP_NUM_THREADS"] == str(rp.threads) != "1" and "OMP_NUM_THREADS" not in rp.kept


@pytest.mark.parametrize("env", [
    {"OMP_NUM_THREADS": "1", "LOCAL_WORLD_SIZE": "2"},  # not a torchrun worker
    {"OMP_NUM_THREADS": "2", "TORCHELASTIC_RUN_ID": "none", "LOCAL_WORLD_SIZE": "2"},  # torchrun only sets 1
    {"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "none"},  # no size: not provably torchrun's default
    {"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "none", "LOCAL_WORLD_SIZE": "x"},
])
def test_other_omp_values_are_the_callers(env: Dict[str, str]) -> None:
    assert plan.launcher_default(env) is None
