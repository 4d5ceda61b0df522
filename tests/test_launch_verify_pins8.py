"""Pins for hosttune.launch.verify._hooked_place (issue 21, round-8 practice, HLAU8): which processes `exec --verify`
reads as ranks that apply their plan through the per-rank hook, as one table: the hook must be on the process's
PYTHONPATH; a torchrun job counts only when its ranks start through the hook (not through shims); the rank
hosttune itself was started as (srun/rank job, HOSTTUNE_LOCAL_RANK set) is bound before exec, not by the hook; bad
rank variables are no rank. Every answer is compared whole (local rank, local world size, the variable it came from)."""

import os
from types import SimpleNamespace
from typing import Dict, Optional, Tuple

import pytest

from hosttune.launch.hook import HOOK_DIR
from hosttune.launch.verify import _hooked_place

HOOKED = os.pathsep.join(["/opt/lib", HOOK_DIR])
CASES: Dict[str, Tuple[str, bool, Dict[str, str], Optional[Tuple[int, int, str]]]] = {
    "torchrun_hooked": ("torchrun", True, {"PYTHONPATH": HOOKED, "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"},
                        (1, 2, "LOCAL_RANK")),
    "torchrun_shims": ("torchrun", False, {"PYTHONPATH": HOOKED, "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}, None),
    "launcher_ompi": ("launcher", False, {"PYTHONPATH": HOOKED, "OMPI_COMM_WORLD_LOCAL_RANK": "3",
                                          "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
                      (3, 4, "OMPI_COMM_WORLD_LOCAL_RANK")),
    "launcher_no_hook_on_path": ("launcher", False, {"PYTHONPATH": "/opt/lib", "LOCAL_RANK": "0",
                                                     "LOCAL_WORLD_SIZE": "2"}, None),
    "launcher_no_pythonpath": ("launcher", False, {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2"}, None),
    "launcher_hook_dir_inside_a_longer_entry": ("launcher", False, {"PYTHONPATH": HOOK_DIR + "x", "LOCAL_RANK": "0",
                                                                    "LOCAL_WORLD_SIZE": "2"}, None),
    "srun_started_rank": ("srun", False, {"PYTHONPATH": HOOKED, "HOSTTUNE_LOCAL_RANK": "0", "LOCAL_RANK": "0",
                                          "LOCAL_WORLD_SIZE": "2"}, None),
    "rank_started_rank": ("rank", False, {"PYTHONPATH": HOOKED, "HOSTTUNE_LOCAL_RANK": "1", "LOCAL_RANK": "1",
                                          "LOCAL_WORLD_SIZE": "2"}, None),
    "launcher_rank_with_hosttune_local_rank": ("launcher", False, {"PYTHONPATH": HOOKED, "HOSTTUNE_LOCAL_RANK": "1",
                                                                   "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"},
                                               (1, 2, "LOCAL_RANK")),
    "rank_child_with_other_variables": ("rank", False, {"PYTHONPATH": HOOKED, "MPI_LOCALRANKID": "1",
                                                        "MPI_LOCALNRANKS": "2"}, (1, 2, "MPI_LOCALRANKID")),
    "plain_child_with_rank_variables": ("plain", False, {"PYTHONPATH": HOOKED, "LOCAL_RANK": "0",
                                                         "LOCAL_WORLD_SIZE": "1"}, (0, 1, "LOCAL_RANK")),
    "plain_no_rank": ("plain", False, {"PYTHONPATH": HOOKED}, None),
    "bad_rank_variables": ("launcher", False, {"PYTHONPATH": HOOKED, "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"},
                           None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hooked_place_table(name: str) -> None:
    kind, hook, env, want = CASES[name]
    got = _hooked_place(SimpleNamespace(kind=kind, hook=hook), env)  # type: ignore[arg-type]
    assert (None if got is None else tuple(got)) == want
