"""rankvars.place: which launcher's variables give a rank its place on the node when several launchers are stacked.

The launcher closest to the rank sets LOCAL_RANK (torchrun or accelerate started by mpirun/srun), while every rank
it starts inherits the outer launcher's one-rank view (OMPI_COMM_WORLD_LOCAL_RANK=0 of 1 for each). If the MPI
variables won, every rank would plan itself as local rank 0 and all of them would bind to the same cores.
"""

from typing import Dict, List, Tuple

import pytest

from hosttune.launch import rankvars

# (rank variable, size variable) of every outer launcher that can start torchrun/accelerate as one of its tasks
OUTER: List[Tuple[str, str]] = [pair for pair in rankvars.RANK_VARIABLES if pair[0] != "LOCAL_RANK"]


@pytest.mark.parametrize("rank_key, size_key", OUTER)
def test_local_rank_beats_every_mpi_variable(rank_key: str, size_key: str) -> None:
    """torchrun --nproc-per-node 4 started as one MPI task: its four workers get LOCAL_RANK 0..3 of 4 and all keep
    the MPI task's rank 0 of 1. Each must plan as its own LOCAL_RANK, so the four places are disjoint."""
    places = []
    for local in range(4):
        env: Dict[str, str] = {rank_key: "0", size_key: "1", "LOCAL_RANK": str(local), "LOCAL_WORLD_SIZE": "4"}
        got = rankvars.place(env)
        assert got is not None
        places.append(tuple(got))
    assert places == [(i, 4, "LOCAL_RANK") for i in range(4)]


def test_local_rank_beats_mpi_even_where_mpi_names_a_higher_rank() -> None:
    """accelerate under `mpirun -np 2` on one node: the second MPI task (local rank 1 of 2) starts 2 workers with
    LOCAL_RANK 0 and 1. The worker's own LOCAL_RANK decides, not the task's."""
    env = {"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "LOCAL_RANK": "0",
           "LOCAL_WORLD_SIZE": "2", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2", "SLURM_LOCALID": "1"}
    assert tuple(rankvars.place(env) or ()) == (0, 2, "LOCAL_RANK")


def test_mpi_variables_still_count_when_no_local_rank_is_set() -> None:
    env = {"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "SLURM_LOCALID": "0"}
    assert tuple(rankvars.place(env) or ()) == (1, 2, "OMPI_COMM_WORLD_LOCAL_RANK")
