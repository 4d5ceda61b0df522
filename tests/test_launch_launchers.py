"""launchers.identify: the command-line details a mutation run showed nothing pinned.

- a hostfile (`--hostfile`, `-machinefile`, Hydra's `-f`, ...) spreads the ranks over the hosts it names, so `-np`
  alone says nothing about this node: counting all of them here would give each local rank a sliver of the cores;
- an option given twice takes its last value, as argparse (torch, accelerate, deepspeed), Open MPI/Hydra and srun
  all do: the first value would plan a different number of ranks than the launcher starts.
"""

from typing import Dict, List, Optional

import pytest

from hosttune.launch.launchers import KnownLauncher, identify

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}


def ident(*argv: str, env: Optional[Dict[str, str]] = None, gpus: Optional[int] = 0) -> KnownLauncher:
    got = identify(list(argv), env if env is not None else ENV, gpus=gpus, numa_nodes=1, mpi="openmpi")
    assert got is not None, argv
    return got


# ---- mpirun with a hostfile ------------------------------------------------------------------------------------

@pytest.mark.parametrize("opt", ["--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f",
                                 "--default-hostfile"])
def test_mpirun_hostfile_is_not_one_node(opt: str) -> None:
    got = ident("mpirun", "-np", "8", opt, "hosts.txt", "python", "t.py")
    assert got.local_ranks is None, got
    assert any("OMPI_COMM_WORLD_LOCAL_SIZE" in n for n in got.notes), got.notes


def test_mpirun_hostfile_with_localhost_is_still_not_one_node() -> None:
    assert ident("mpirun", "-np", "8", "-H", "localhost", "--hostfile", "h", "python", "t.py").local_ranks is None


def test_mpirun_without_a_hostfile_is_this_node() -> None:
    """The control: the same line without the hostfile is 8 ranks here."""
    assert ident("mpirun", "-np", "8", "python", "t.py").local_ranks == 8


# ---- a repeated option: the last value wins ---------------------------------------------------------------------

@pytest.mark.parametrize("argv, n", [
    (["mpirun", "-np", "2", "-np", "4", "python", "t.py"], 4),
    (["mpirun", "-np", "4", "-np", "2", "python", "t.py"], 2),
    (["mpirun", "-np", "8", "-npernode", "2", "-npernode", "4", "-H", "a,b", "python", "t.py"], 4),
    (["python", "-m", "torch.distributed.launch", "--nproc_per_node=2", "--nproc_per_node=3", "--use-env", "t.py"],
     3),
    (["python", "-m", "torch.distributed.launch", "--nproc-per-node", "3", "--nproc_per_node", "2", "--use-env",
      "t.py"], 2),
    (["accelerate", "launch", "--multi_gpu", "--num_processes=2", "--num-processes", "3", "t.py"], 3),
    (["deepspeed", "--num_gpus", "1", "--num_gpus", "2", "t.py"], 2),
    (["srun", "-N", "1", "-n", "2", "-n", "3", "python", "t.py"], 3),
    (["srun", "--ntasks-per-node", "2", "--ntasks-per-node=4", "python", "t.py"], 4),
])
def test_repeated_option_takes_the_last_value(argv: List[str], n: int) -> None:
    assert ident(*argv).local_ranks == n


def test_repeated_binding_option_takes_the_last_value() -> None:
    # --bind-to core, then none: MPI does not bind, hosttune does
    got = ident("mpirun", "-np", "2", "--bind-to", "core", "--bind-to", "none", "python", "t.py")
    assert got.bound_by is None and "--bind-to none: hosttune binds each rank" in got.notes
    got = ident("mpirun", "-np", "2", "--bind-to", "none", "--bind-to", "core", "python", "t.py")
    assert got.bound_by == "mpirun --bind-to core"


def test_repeated_thread_option_takes_the_last_value() -> None:
    got = ident("mpirun", "-np", "2", "-x", "OMP_NUM_THREADS=2", "-x", "OMP_NUM_THREADS=4", "python", "t.py")
    assert got.threads == 4
    got = ident("accelerate", "launch", "--multi_gpu", "--num_processes=2", "--num_cpu_threads_per_process", "2",
                "--num_cpu_threads_per_process", "3", "t.py")
    assert got.threads == 3
