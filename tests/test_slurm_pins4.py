"""Pins for hosttune/launch/slurm.py: Slurm's compressed task counts and an srun task's (local rank, node tasks),
with the precedence of its variables and the exact boundaries (issue 21)."""

import pytest

from hosttune.errors import UserError
from hosttune.launch.slurm import parse_tasks_per_node, slurm_rank


@pytest.mark.parametrize("text, expected", [
    ("2(x3),1", [2, 2, 2, 1]), ("4", [4]), ("1(x1)", [1]), (" 3 , 2(x2) ", [3, 2, 2]), ("", []), (",,", []),
    ("8(x2", None), ("x", None),
])
def test_parse_tasks_per_node(text: str, expected: object) -> None:
    if expected is None:
        with pytest.raises(ValueError):
            parse_tasks_per_node(text)
    else:
        assert parse_tasks_per_node(text) == expected


@pytest.mark.parametrize("environ, expected", [
    ({"SLURM_LOCALID": "1", "SLURM_NODEID": "2", "SLURM_TASKS_PER_NODE": "2(x2),3"}, (1, 3)),
    ({"SLURM_LOCALID": "0", "SLURM_NODEID": "0", "SLURM_TASKS_PER_NODE": "2(x2),3"}, (0, 2)),
    # the step's own node id and counts win over the allocation's
    ({"SLURM_LOCALID": "0", "SLURM_STEP_NODEID": "1", "SLURM_NODEID": "0",
      "SLURM_STEP_TASKS_PER_NODE": "1,5", "SLURM_TASKS_PER_NODE": "7(x2)"}, (0, 5)),
    ({"SLURM_LOCALID": "0", "SLURM_STEP_TASKS_PER_NODE": "", "SLURM_TASKS_PER_NODE": "6"}, (0, 6)),
    # a node past the list takes the last count
    ({"SLURM_LOCALID": "0", "SLURM_NODEID": "5", "SLURM_TASKS_PER_NODE": "2,4"}, (0, 4)),
    ({"SLURM_LOCALID": "0", "SLURM_NODEID": "2", "SLURM_TASKS_PER_NODE": "2,4"}, (0, 4)),  # just past it
    ({"SLURM_LOCALID": "0", "SLURM_NODEID": "1", "SLURM_TASKS_PER_NODE": "2,4,6"}, (0, 4)),
    ({"SLURM_LOCALID": "0", "SLURM_NODEID": "", "SLURM_TASKS_PER_NODE": "2,4"}, (0, 2)),
    # per-node counts only when no TASKS_PER_NODE list: NTASKS_PER_NODE before LOCAL_WORLD_SIZE
    ({"SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "3", "SLURM_LOCAL_WORLD_SIZE": "9"}, (1, 3)),
    ({"SLURM_LOCALID": "1", "SLURM_LOCAL_WORLD_SIZE": "9"}, (1, 9)),
    ({"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "2", "SLURM_NTASKS_PER_NODE": "8"}, (1, 2)),
    # no count at all: the task is taken for the node's last
    ({"SLURM_LOCALID": "3"}, (3, 4)),
    ({"SLURM_LOCALID": "0"}, (0, 1)),
    ({"SLURM_LOCALID": "3", "SLURM_TASKS_PER_NODE": "4"}, (3, 4)),  # the last task of 4
    ({"SLURM_PROCID": "3"}, None),
])
def test_slurm_rank(environ: dict, expected: object) -> None:
    assert slurm_rank(environ) == expected


@pytest.mark.parametrize("environ, message", [
    ({"SLURM_LOCALID": "4", "SLURM_TASKS_PER_NODE": "4"}, "SLURM_LOCALID=4 is outside this node's 4 task(s)"),
    ({"SLURM_LOCALID": "-1", "SLURM_TASKS_PER_NODE": "4"}, "SLURM_LOCALID=-1 is outside"),
    ({"SLURM_LOCALID": "x"}, "cannot read this srun task's rank from the SLURM_* environment"),
    ({"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "2(xz)"}, "cannot read this srun task's rank"),
    ({"SLURM_LOCALID": "0", "SLURM_NTASKS_PER_NODE": ","}, "cannot read this srun task's rank"),
])
def test_slurm_rank_refuses_values_that_disagree(environ: dict, message: str) -> None:
    with pytest.raises(UserError) as exc:
        slurm_rank(environ)
    assert message in str(exc.value)
