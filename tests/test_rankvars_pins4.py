"""Pins for hosttune/launch/rankvars.py and binding.py's pure parts: which launcher variable names a rank, the
exact bounds, and the CPUs/memory nodes a plan really gets inside what is allowed (issue 21)."""

from types import SimpleNamespace

import pytest

from hosttune.errors import UserError
from hosttune.launch import binding
from hosttune.launch.rankvars import RANK_VARIABLES, Place, has_rank, place


@pytest.mark.parametrize("environ, expected", [
    ({"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}, Place(1, 4, "LOCAL_RANK")),
    ({"LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4"}, Place(3, 4, "LOCAL_RANK")),
    # LOCAL_RANK wins over MPI's and Slurm's; MPI's over Slurm's
    ({"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, Place(0, 2, "LOCAL_RANK")),
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "SLURM_LOCALID": "0",
      "SLURM_TASKS_PER_NODE": "1"}, Place(1, 2, "OMPI_COMM_WORLD_LOCAL_RANK")),
    ({"MPI_LOCALRANKID": "2", "MPI_LOCALNRANKS": "3"}, Place(2, 3, "MPI_LOCALRANKID")),
    ({"PMIX_LOCAL_RANK": "0", "PMIX_LOCAL_SIZE": "1"}, Place(0, 1, "PMIX_LOCAL_RANK")),
    ({"PMI_LOCAL_RANK": "1", "PMI_LOCAL_SIZE": "5"}, Place(1, 5, "PMI_LOCAL_RANK")),
    # an empty variable is unset: the next launcher's is read
    ({"LOCAL_RANK": " ", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}, Place(1, 2, "MPI_LOCALRANKID")),
    # no size: WORLD_SIZE when it covers the rank (LOCAL_RANK only), else the rank is taken for the last
    ({"LOCAL_RANK": "1", "WORLD_SIZE": "8"}, Place(1, 8, "LOCAL_RANK")),
    ({"LOCAL_RANK": "1", "WORLD_SIZE": "2"}, Place(1, 2, "LOCAL_RANK")),
    ({"LOCAL_RANK": "2", "WORLD_SIZE": "2"}, Place(2, 3, "LOCAL_RANK")),
    ({"LOCAL_RANK": "2"}, Place(2, 3, "LOCAL_RANK")),
    ({"MPI_LOCALRANKID": "1", "WORLD_SIZE": "8"}, Place(1, 2, "MPI_LOCALRANKID")),
    ({"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "3"}, Place(1, 3, "SLURM_LOCALID")),
    ({"SLURM_LOCALID": ""}, None),
    ({"RANK": "0", "WORLD_SIZE": "2"}, None),
])
def test_place(environ: dict, expected: object) -> None:
    assert place(environ) == expected


@pytest.mark.parametrize("environ, message", [
    ({"LOCAL_RANK": "4", "LOCAL_WORLD_SIZE": "4"}, "LOCAL_RANK=4 is outside the LOCAL_WORLD_SIZE=4 local ranks"),
    ({"LOCAL_RANK": "-1", "LOCAL_WORLD_SIZE": "4"}, "LOCAL_RANK=-1 is outside"),
    ({"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "0"}, "LOCAL_RANK=0 is outside the LOCAL_WORLD_SIZE=0"),
    ({"LOCAL_RANK": "one"}, "LOCAL_RANK='one' is not an integer"),
    ({"PMI_LOCAL_RANK": "0", "PMI_LOCAL_SIZE": "2x"}, "PMI_LOCAL_SIZE='2x' is not an integer"),
    ({"LOCAL_RANK": "0", "WORLD_SIZE": "x"}, "WORLD_SIZE='x' is not an integer"),
])
def test_place_refuses(environ: dict, message: str) -> None:
    with pytest.raises(UserError) as exc:
        place(environ)
    assert message in str(exc.value)


@pytest.mark.parametrize("environ, expected", [
    ({}, False), ({"LOCAL_RANK": ""}, False), ({"LOCAL_RANK": "0"}, True), ({"PMI_LOCAL_RANK": "3"}, True),
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "0"}, True), ({"SLURM_LOCALID": "0"}, True), ({"SLURM_LOCALID": ""}, False),
    ({"LOCAL_WORLD_SIZE": "2"}, False),
])
def test_has_rank(environ: dict, expected: bool) -> None:
    assert has_rank(environ) is expected


def test_the_table_order_is_the_precedence() -> None:
    assert [r for r, _ in RANK_VARIABLES] == ["LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                              "PMIX_LOCAL_RANK", "PMI_LOCAL_RANK"]


@pytest.mark.parametrize("plan, allowed, expected", [
    ((0, 1, 2, 3), (2, 3, 4), (2, 3)), ((5, 1), (0, 1, 5, 9), (1, 5)), ((7,), (3, 1), (1, 3)), ((), (1, 0), (0, 1)),
])
def test_effective_cpus(plan: tuple, allowed: tuple, expected: tuple) -> None:
    assert binding.effective_cpus(plan, allowed) == expected


def _plan(policy: str, mems: tuple) -> SimpleNamespace:
    return SimpleNamespace(mem_policy=policy, mems=mems, cpus=())


@pytest.mark.parametrize("policy, mems, allowed, expected", [
    ("bind", (1, 0), (0, 1, 2), ("bind", (0, 1))),
    ("preferred", (3, 1), (1,), ("preferred", (1,))),
    ("bind", (2,), (0, 1), ("none", ())),
    ("bind", (2, 0), (), ("bind", (0, 2))),  # Mems_allowed unreadable: the plan's nodes
    ("interleave", (0,), (0,), ("none", ())),
    ("none", (0,), (0,), ("none", ())),
    ("bind", (), (0,), ("none", ())),
])
def test_effective_mems(policy: str, mems: tuple, allowed: tuple, expected: tuple) -> None:
    assert binding.effective_mems(_plan(policy, mems), allowed) == expected


def test_effective_mems_defaults_to_this_process_mems_allowed() -> None:
    from hosttune.launch.procfs import self_mems_allowed

    mine = self_mems_allowed()
    if mine:
        assert binding.effective_mems(_plan("bind", (max(mine) + 1,))) == ("none", ())
        assert binding.effective_mems(_plan("bind", (min(mine),))) == ("bind", (min(mine),))
    assert binding.MPOL_PREFERRED == 1 and binding.MPOL_BIND == 2 and binding.MPOL_PREFERRED_MANY == 5


_CHILD = r"""
import json, os, sys
from types import SimpleNamespace
from hosttune.launch import binding, procfs
c = min(os.sched_getaffinity(0))
out = {"c": c}
b = binding.bind_self(SimpleNamespace(cpus=(c, 4096), mems=(0,), mem_policy="bind"))
out["bind"] = [list(b.cpus), b.mem_policy, list(b.mems), list(b.prefix), list(b.notes),
               procfs.proc_status(os.getpid())["Cpus_allowed_list"], procfs.proc_mempolicy(os.getpid())]
out["preferred"] = [binding.set_mempolicy("preferred", (0,)), procfs.proc_mempolicy(os.getpid())]
out["none"] = list(binding.bind_self(SimpleNamespace(cpus=(), mems=(), mem_policy="none")))
out["cpus_after_none"] = procfs.proc_status(os.getpid())["Cpus_allowed_list"]
print(json.dumps(out))
"""


def test_bind_self_in_a_child_pins_its_real_affinity_and_memory_policy() -> None:
    import ctypes.util
    import json
    import subprocess
    import sys

    from conftest import checkout_env

    if ctypes.util.find_library("numa") is None or not binding.effective_mems(_plan("bind", (0,))) == ("bind", (0,)):
        pytest.skip("needs libnuma and node 0 allowed")
    done = subprocess.run([sys.executable, "-c", _CHILD], env=checkout_env(), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    c = out["c"]
    assert out["bind"] == [[c], "bind", [0], [], [f"plan CPUs {c},4096 narrowed to the allowed {c}"], str(c),
                           ["bind", [0]]]
    assert out["preferred"] == [None, ["preferred", [0]]]
    assert out["none"] == [[], "none", [], [], []] and out["cpus_after_none"] == str(c)  # () binds nothing
