"""Pins for hosttune.launch.slurm (issue 21, session 9 practice rounds): slurm_rank's answer for each shape of Slurm's
environment, and its errors word for word (the one line a user gets names the value Python could not read)."""

from typing import Dict, Optional, Tuple

import pytest

from hosttune.errors import UserError
from hosttune.launch.slurm import parse_tasks_per_node, slurm_rank

CASES: Dict[str, Tuple[Dict[str, str], Optional[Tuple[int, int]]]] = {
    "outside srun": ({"SLURM_NTASKS_PER_NODE": "4"}, None),
    "step counts, node 1 of 2(x2),1": ({"SLURM_LOCALID": "1", "SLURM_STEP_NODEID": "1",
                                        "SLURM_STEP_TASKS_PER_NODE": "2(x2),1"}, (1, 2)),
    "step counts, node past the list takes the last": ({"SLURM_LOCALID": "0", "SLURM_STEP_NODEID": "7",
                                                        "SLURM_STEP_TASKS_PER_NODE": "3,1"}, (0, 1)),
    "job counts when the step's are absent": ({"SLURM_LOCALID": "2", "SLURM_NODEID": "0",
                                               "SLURM_TASKS_PER_NODE": "4(x2)"}, (2, 4)),
    "the step's node id wins over the job's": ({"SLURM_LOCALID": "0", "SLURM_STEP_NODEID": "1", "SLURM_NODEID": "0",
                                                "SLURM_TASKS_PER_NODE": "1,5"}, (0, 5)),
    "an empty step list falls to the job's": ({"SLURM_LOCALID": "0", "SLURM_STEP_TASKS_PER_NODE": "",
                                               "SLURM_TASKS_PER_NODE": "6"}, (0, 6)),
    "ntasks per node": ({"SLURM_LOCALID": "3", "SLURM_NTASKS_PER_NODE": "8"}, (3, 8)),
    "local world size": ({"SLURM_LOCALID": "1", "SLURM_LOCAL_WORLD_SIZE": "2"}, (1, 2)),
    "no count: the last task": ({"SLURM_LOCALID": "5"}, (5, 6)),
    "an empty node id is node 0": ({"SLURM_LOCALID": "0", "SLURM_NODEID": "", "SLURM_TASKS_PER_NODE": "2,9"},
                                   (0, 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_slurm_rank(name: str) -> None:
    environ, want = CASES[name]
    assert slurm_rank(environ) == want


ERRORS = {
    "a local id that is no number": (
        {"SLURM_LOCALID": "one"},
        "cannot read this srun task's rank from the SLURM_* environment: invalid literal for int() with base 10: "
        "'one'"),
    "a count that is no number": (
        {"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "2(xtwo)"},
        "cannot read this srun task's rank from the SLURM_* environment: invalid literal for int() with base 10: "
        "'two'"),
    "a local id past the node's tasks": (
        {"SLURM_LOCALID": "4", "SLURM_NTASKS_PER_NODE": "4"}, "SLURM_LOCALID=4 is outside this node's 4 task(s)"),
    "a negative local id": ({"SLURM_LOCALID": "-1"}, "SLURM_LOCALID=-1 is outside this node's 0 task(s)"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_slurm_rank_errors(name: str) -> None:
    environ, message = ERRORS[name]
    with pytest.raises(UserError) as err:
        slurm_rank(environ)
    assert str(err.value) == message
    # no chained ValueError in a traceback: the one line is the whole message
    assert err.value.__cause__ is None and (err.value.__context__ is None or err.value.__suppress_context__)


def test_parse_tasks_per_node() -> None:
    assert parse_tasks_per_node("2(x3), 1,,4") == [2, 2, 2, 1, 4]
    assert parse_tasks_per_node("") == []
