"""Pins for hosttune.launch.rankvars (issue 21, round-8 practice, HLAU8): place() and has_rank() as one whole table:
which launcher's variables win (LOCAL_RANK, then Open MPI, Hydra, PMIx, PMI, then Slurm's SLURM_LOCALID), the size
when only LOCAL_RANK is set (WORLD_SIZE when it covers the rank, else rank + 1), blank values as unset, and the
exact one-line errors."""

from typing import Dict, Optional, Tuple, Union

import pytest

from hosttune.errors import UserError
from hosttune.launch.rankvars import has_rank, place

Want = Union[None, Tuple[int, int, str], str]
CASES: Dict[str, Tuple[Dict[str, str], Want, bool]] = {
    "nothing": ({}, None, False),
    "blank_local_rank": ({"LOCAL_RANK": " ", "LOCAL_WORLD_SIZE": "2"}, None, True),
    "torchrun": ({"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}, (1, 4, "LOCAL_RANK"), True),
    "local_rank_beats_ompi": ({"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "3",
                               "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, (0, 2, "LOCAL_RANK"), True),
    "lightning_child": ({"LOCAL_RANK": "1", "WORLD_SIZE": "8"}, (1, 8, "LOCAL_RANK"), True),
    "world_too_small": ({"LOCAL_RANK": "3", "WORLD_SIZE": "3"}, (3, 4, "LOCAL_RANK"), True),
    "no_size_at_all": ({"LOCAL_RANK": "2"}, (2, 3, "LOCAL_RANK"), True),
    "ompi": ({"OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "SLURM_LOCALID": "0",
              "SLURM_TASKS_PER_NODE": "1"}, (3, 4, "OMPI_COMM_WORLD_LOCAL_RANK"), True),
    "ompi_without_size_ignores_world": ({"OMPI_COMM_WORLD_LOCAL_RANK": "1", "WORLD_SIZE": "8"},
                                        (1, 2, "OMPI_COMM_WORLD_LOCAL_RANK"), True),
    "hydra": ({"MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2"}, (0, 2, "MPI_LOCALRANKID"), True),
    "pmix": ({"PMIX_LOCAL_RANK": "1", "PMIX_LOCAL_SIZE": "2"}, (1, 2, "PMIX_LOCAL_RANK"), True),
    "pmi": ({"PMI_LOCAL_RANK": "1", "PMI_LOCAL_SIZE": "3"}, (1, 3, "PMI_LOCAL_RANK"), True),
    "slurm": ({"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "2(x2)"}, (1, 2, "SLURM_LOCALID"), True),
    "slurm_blank": ({"SLURM_LOCALID": ""}, None, False),
    "not_an_integer": ({"LOCAL_RANK": "one"}, "LOCAL_RANK='one' is not an integer", True),
    "size_not_an_integer": ({"MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2x"}, "MPI_LOCALNRANKS='2x' is not an integer",
                            True),
    "outside": ({"LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"},
                "LOCAL_RANK=2 is outside the LOCAL_WORLD_SIZE=2 local ranks its launcher set", True),
    "negative": ({"PMI_LOCAL_RANK": "-1", "PMI_LOCAL_SIZE": "2"},
                 "PMI_LOCAL_RANK=-1 is outside the PMI_LOCAL_SIZE=2 local ranks its launcher set", True),
    "zero_size": ({"OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "0"},
                  "OMPI_COMM_WORLD_LOCAL_RANK=0 is outside the OMPI_COMM_WORLD_LOCAL_SIZE=0 local ranks its launcher "
                  "set", True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_place_and_has_rank_table(name: str) -> None:
    env, want, ranked = CASES[name]
    assert has_rank(env) is ranked
    if isinstance(want, str):
        with pytest.raises(UserError) as exc:
            place(env)
        assert str(exc.value) == want
    else:
        got: Optional[tuple] = place(env)
        assert (None if got is None else tuple(got)) == want
