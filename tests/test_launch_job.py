"""hosttune/launch/job.py's `prepare` on a captured host (8 NUMA nodes of 2 CPUs, 4 GPUs added): the shape it picks
for each kind of command line and what each shape carries (argv, common env and what it touched, each rank's plan,
the plans foreseen for the hook, who binds)."""

import dataclasses
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest

from hosttune import detect
from hosttune.errors import UserError
from hosttune.facts import Facts, Gpu
from hosttune.launch import hook
from hosttune.launch.job import Launch, prepare

HOST = "16amd64-8n2c"
COMMON = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "PYTORCH_ALLOC_CONF": "expandable_segments:True",
          "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "HOSTTUNE_PIN_MEMORY": "1",
          "HOSTTUNE_DETERMINISTIC": "0"}


@pytest.fixture
def facts(hwloc_tree: Callable[[str], Path]) -> Facts:
    found = detect.collect(hwloc_tree(HOST), probe_torch=False, use_nvml=False)
    return dataclasses.replace(found, gpus=tuple(Gpu(index=i, pci_bus_id=f"0000:0{i}:00.0") for i in range(4)))


def _ranks(job: Launch) -> List[Tuple[int, int, str, Tuple[int, ...]]]:
    return [(p.local_rank, p.local_world_size, p.env.get("OMP_NUM_THREADS"), tuple(p.cpus)) for p in job.ranks]


def _foreseen(job: Launch) -> Dict[int, List[int]]:
    out: Dict[int, List[int]] = {}
    for p in job.more_plans:
        out.setdefault(p.local_world_size, []).append(p.local_rank)
    return out


def _halves() -> List[Tuple[int, int, str, Tuple[int, ...]]]:
    return [(0, 2, "8", tuple(range(8))), (1, 2, "8", tuple(range(8, 16)))]


def test_torchrun_ranks_get_one_plan_each_and_the_common_env_takes_rank_0s_threads(facts: Facts) -> None:
    cmd = ["torchrun", "--nproc-per-node=2", "t.py"]
    job = prepare(cmd, facts=facts, environ={})
    assert (job.kind, job.argv, job.hook) == ("torchrun", cmd, bool(hook.job_env({})))
    assert job.torchrun is not None and job.torchrun.script == "t.py" and job.launcher is None
    assert _ranks(job) == _halves() and job.more_plans == []
    assert job.env == dict(COMMON, OMP_NUM_THREADS="8") and job.touched == {k: None for k in job.env}
    assert (job.no_bind, job.bound_by, job.override, job.facts) == (False, None, False, facts)


def test_torchrun_keeps_the_callers_thread_count_out_of_the_common_env(facts: Facts) -> None:
    job = prepare(["torchrun", "--nproc-per-node=2", "t.py"], facts=facts, environ={"OMP_NUM_THREADS": "3"})
    assert job.env == COMMON and [r[2] for r in _ranks(job)] == ["3", "3"]


def test_torchrun_no_python_goes_through_the_shim(facts: Facts) -> None:
    job = prepare(["torchrun", "--no-python", "--nproc-per-node=2", "./a.out"], facts=facts, environ={},
                  shim_python="/opt/py")
    assert job.kind == "torchrun" and not job.hook
    assert job.argv[:4] == ["torchrun", "--nproc-per-node=2", "--no-python", "/opt/py"] and job.argv[-1] == "./a.out"
    assert "hosttune.shim" in job.argv[-2]


def test_torchrun_numa_binding_binds_and_hosttune_does_not(facts: Facts) -> None:
    job = prepare(["torchrun", "--nproc-per-node=2", "--numa-binding=node", "t.py"], facts=facts, environ={})
    assert (job.bound_by, job.no_bind) == ("torchrun --numa-binding=node", True)
    assert _ranks(job) == [(0, 2, "8", ()), (1, 2, "8", ())]


def test_a_launchers_thread_option_is_every_ranks_own_setting(facts: Facts) -> None:
    cmd = ["accelerate", "launch", "--num_processes", "2", "--num_cpu_threads_per_process", "3", "t.py"]
    job = prepare(cmd, facts=facts, environ={})
    assert (job.kind, job.argv, job.launcher.name, job.torchrun) == ("launcher", cmd, "accelerate launch", None)
    assert _ranks(job) == [(0, 2, "3", tuple(range(8))), (1, 2, "3", tuple(range(8, 16)))]
    assert job.env == dict(COMMON, OMP_NUM_THREADS="3") and job.touched == {k: None for k in job.env}
    assert _foreseen(job) == {4: [0, 1, 2, 3], 8: list(range(8))}  # one per GPU, one per NUMA node; not 2 again


def test_a_launcher_runs_as_it_rewrote_itself_and_plans_ahead(facts: Facts) -> None:
    job = prepare(["mpirun", "-np", "4", "python3", "t.py"], facts=facts, environ={})
    assert job.kind == "launcher" and job.argv == ["mpirun", "--bind-to", "none", "-np", "4", "python3", "t.py"]
    assert _ranks(job) == [(r, 4, "4", (4 * r, 4 * r + 1, 4 * r + 2, 4 * r + 3)) for r in range(4)]
    assert job.env["OMP_NUM_THREADS"] == "4" and sorted(_foreseen(job)) == [2, 8]
    assert (job.no_bind, job.bound_by) == (False, None)


def _one_rank(job: Launch, kind: str, rank: Tuple[int, int, str, Tuple[int, ...]], env: Dict[str, str]) -> None:
    assert (job.kind, job.argv, _ranks(job)) == (kind, ["python3", "t.py"], [rank])
    assert job.env == job.ranks[0].env and job.touched == {k: env.get(k) for k in job.env}


def test_an_srun_task_and_another_launchers_rank_are_one_rank_of_theirs(facts: Facts) -> None:
    env = {"SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "2", "SLURM_STEP_ID": "0", "SLURM_JOB_ID": "5"}
    job = prepare(["python3", "t.py"], facts=facts, environ=env)
    _one_rank(job, "srun", (1, 2, "8", tuple(range(8, 16))), env)
    assert sorted(_foreseen(job)) == [4, 8]
    env = {"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}
    job = prepare(["python3", "t.py"], facts=facts, environ=env)
    _one_rank(job, "rank", (1, 4, "4", (4, 5, 6, 7)), env)
    assert sorted(_foreseen(job)) == [2, 8]


def test_a_plain_job_owns_the_allowed_set_and_plans_every_common_size(facts: Facts) -> None:
    env = {"OMP_NUM_THREADS": "3"}
    job = prepare(["python3", "t.py"], facts=facts, environ=env, override=True, no_bind=True)
    _one_rank(job, "plain", (0, 1, "16", tuple(range(16))), env)
    assert job.touched["OMP_NUM_THREADS"] == "3" and (job.override, job.no_bind, job.bound_by) == (True, True, None)
    assert _foreseen(job) == {2: [0, 1], 4: [0, 1, 2, 3], 8: list(range(8))}


def test_no_command_is_a_user_error_and_a_root_is_detected_once(hwloc_tree: Callable[[str], Path]) -> None:
    with pytest.raises(UserError, match=r"exec: no COMMAND given \(hosttune exec"):
        prepare([], environ={})
    job: Any = prepare(["python3", "t.py"], root=hwloc_tree(HOST), environ={})
    assert job.facts.root == str(hwloc_tree(HOST)) and job.facts.torch is None and job.facts.cpu.logical == 16
