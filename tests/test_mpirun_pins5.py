"""Pins of hosttune/launch/launchers/mpirun.py (issue 21, mutation round 5), in-process on command lines: which MPI
a program is (by its name and where its link points), the ranks on this node (-np, -npernode, ppr:N:node, hosts,
Slurm's node count), who binds (what the user asked MPI for, each flavour's default, `--bind-to none` added for
Open MPI's Python ranks), the exported thread count, MPMD jobs, and the job's endpoint."""

import os
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from hosttune.errors import UserError
from hosttune.launch.launchers.mpirun import _mpirun, mpi_flavour


def _run(args: List[str], flavour: Optional[str] = "openmpi", env: Optional[Dict[str, str]] = None,
         prog: str = "python3"):  # type: ignore[no-untyped-def]
    argv = ["mpirun", *args, prog, "train.py"]
    return _mpirun(argv, 1, env or {}, flavour)


# --- mpi_flavour ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,want", [("orterun", "openmpi"), ("prterun", "openmpi"), ("mpirun.openmpi", "openmpi"),
                                       ("mpirun.mpich", "mpich"), ("mpiexec.hydra", "mpich")])
def test_the_programs_own_name_tells_the_flavour(name: str, want: str) -> None:
    assert mpi_flavour(f"/nonexistent/{name}", {}) == want
    assert mpi_flavour(name, {"PATH": "/nonexistent"}) == want


def _link(tmp_path: Path, target: str) -> str:
    real = tmp_path / target
    real.parent.mkdir(parents=True, exist_ok=True)
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "mpirun").symlink_to(real)
    return str(bindir)


@pytest.mark.parametrize("target,want", [
    ("x/orterun", "openmpi"), ("x/prterun", "openmpi"), ("openmpi-4/bin/launch", "openmpi"),
    ("intel/mpi/bin/launch", "intel"), ("oneapi/bin/launch", "intel"),
    ("mpich-4/bin/launch", "mpich"), ("x/hydra_run", "mpich"),
    ("x/launch", None),
])
def test_a_link_on_path_is_followed_to_tell_the_flavour(tmp_path: Path, target: str, want: Optional[str]) -> None:
    bindir = _link(tmp_path, target)
    assert mpi_flavour("mpirun", {"PATH": bindir}) == want
    assert mpi_flavour(os.path.join(bindir, "mpirun"), {}) == want  # a path is followed as given


def test_i_mpi_root_marks_an_unnamed_mpi_as_intel_and_nothing_found_is_none(tmp_path: Path) -> None:
    bindir = _link(tmp_path, "x/launch")
    assert mpi_flavour("mpirun", {"PATH": bindir, "I_MPI_ROOT": "/opt/intel"}) == "intel"
    assert mpi_flavour("mpirun", {"PATH": str(tmp_path / "empty")}) is None


# --- ranks on this node -----------------------------------------------------------------------------------------------

def test_np_on_a_single_node_job_is_the_local_rank_count() -> None:
    assert _run(["-np", "4"]).local_ranks == 4
    assert _run(["--np", "3", "--host", "localhost:3,127.0.0.1"]).local_ranks == 3


def test_np_on_several_hosts_or_a_hostfile_or_a_multi_node_allocation_tells_nothing(tmp_path: Path) -> None:
    k = _run(["-np", "4", "-H", "a,b"])
    assert k.local_ranks is None
    assert ("ranks per node unknown from the command line: each rank plans from OMPI_COMM_WORLD_LOCAL_SIZE "
            "/ MPI_LOCALNRANKS") in k.notes
    hf = tmp_path / "hosts"
    hf.write_text("localhost\n")
    assert _run(["-np", "4", "--hostfile", str(hf)]).local_ranks is None
    assert _run(["-np", "4"], env={"SLURM_JOB_NUM_NODES": "2"}).local_ranks is None
    assert _run(["-np", "4"], env={"SLURM_NNODES": "3"}).local_ranks is None
    assert _run(["-np", "4"], env={"SLURM_JOB_NUM_NODES": " 1 "}).local_ranks == 4


def test_npernode_and_ppr_name_the_ranks_per_node_capped_by_np() -> None:
    assert _run(["-np", "8", "-H", "a,b", "-npernode", "4"]).local_ranks == 4
    assert _run(["-np", "8", "-H", "a,b", "--map-by", "ppr:2:node"]).local_ranks == 2
    assert _run(["-np", "8", "-H", "a,b", "--map-by", "PPR:3:NODE:PE=2"]).local_ranks == 3
    assert _run(["-np", "8", "-H", "a,b", "--map-by", "ppr:2:socket"]).local_ranks is None  # per socket: not per node
    assert _run(["-np", "2", "-npernode", "4"]).local_ranks == 2  # no more than the job's ranks
    assert _run(["-npernode", "5"]).local_ranks == 5
    assert _run(["-np", "4", "-npernode", "2", "-npernode", "3"]).local_ranks == 3  # the last one wins


def test_bad_counts_are_refused_by_name() -> None:
    with pytest.raises(UserError, match=r"mpirun: -np must be at least 1, got 0"):
        _run(["-np", "0"])
    with pytest.raises(UserError, match=r"mpirun: -npernode must be a whole number, got 'x'"):
        _run(["-npernode", "x"])
    with pytest.raises(UserError, match=r"mpirun: --map-by ppr:N:node must be a whole number"):
        _run(["--map-by", "ppr:two:node"])
    assert _run(["-np", str(1 << 24), "-H", "a,b"]).local_ranks is None  # a big job over many nodes is fine
    with pytest.raises(UserError, match=r"-np=16777217 is more than"):
        _run(["-np", str((1 << 24) + 1), "-H", "a,b"])


# --- who binds --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,bound_by", [
    (["--bind-to", "core"], "mpirun --bind-to core"),
    (["--cpu-set", "0-3"], "mpirun --cpu-set 0-3"),
    (["--rankfile", "rf"], "mpirun --rankfile rf"),
    (["--cpus-per-proc", "2"], "mpirun --cpus-per-proc 2"),
    (["-binding", "cpu:cores"], "mpirun -binding cpu:cores"),
    (["--map-by", "slot:PE=4"], "mpirun --map-by slot:PE=4"),
    (["--bind-to", "core", "--cpu-set", "0-3"], "mpirun --bind-to core"),  # --bind-to speaks first
])
def test_a_binding_asked_of_mpi_is_mpis(args: List[str], bound_by: str) -> None:
    k = _run(["-np", "2", *args])
    assert k.bound_by == bound_by
    assert k.argv == ("mpirun", "-np", "2", *args, "python3", "train.py")  # nothing added


def test_bind_to_none_leaves_binding_to_hosttune_and_overrides_other_asks() -> None:
    k = _run(["-np", "2", "--bind-to", "none:overload-allowed", "--cpu-set", "0-3", "--map-by", "slot:pe=2"])
    assert k.bound_by is None
    assert "--bind-to none: hosttune binds each rank" in k.notes
    assert k.argv == ("mpirun", "-np", "2", "--bind-to", "none:overload-allowed", "--cpu-set", "0-3", "--map-by",
                      "slot:pe=2", "python3", "train.py")


def test_open_mpi_with_python_ranks_gets_bind_to_none_right_after_the_tool() -> None:
    k = _run(["-np", "2"])
    assert k.bound_by is None
    assert k.argv == ("mpirun", "--bind-to", "none", "-np", "2", "python3", "train.py")
    assert any(n.startswith("Open MPI binds ranks by default") for n in k.notes)


def test_open_mpi_with_non_python_ranks_keeps_its_own_binding() -> None:
    k = _run(["-np", "2"], prog="./a.out")
    assert k.bound_by == "mpirun (Open MPI's default binding; the ranks are not Python, which hosttune binds)"
    assert k.argv == ("mpirun", "-np", "2", "./a.out", "train.py")


@pytest.mark.parametrize("env,bound_by", [
    ({}, "mpirun (Intel MPI pins ranks by default, I_MPI_PIN)"),
    ({"I_MPI_PIN": "1"}, "mpirun (Intel MPI pins ranks by default, I_MPI_PIN)"),
    ({"I_MPI_PIN": "0"}, None), ({"I_MPI_PIN": "OFF"}, None), ({"I_MPI_PIN": "no"}, None),
    ({"I_MPI_PIN": "disable"}, None),
])
def test_intel_mpi_pins_unless_i_mpi_pin_says_not(env: Dict[str, str], bound_by: Optional[str]) -> None:
    k = _run(["-np", "2"], flavour="intel", env=env)
    assert k.bound_by == bound_by
    assert k.argv == ("mpirun", "-np", "2", "python3", "train.py")


@pytest.mark.parametrize("env,bound_by", [
    ({}, None), ({"HYDRA_BINDING": "None"}, None), ({"HYDRA_BINDING": "core"}, "mpirun (HYDRA_BINDING=core)"),
])
def test_mpich_binds_only_with_hydra_binding(env: Dict[str, str], bound_by: Optional[str]) -> None:
    assert _run(["-np", "2"], flavour="mpich", env=env).bound_by == bound_by


def test_an_unknown_flavour_is_bound_by_hosttune_and_says_how_to_avoid_a_double_binding() -> None:
    k = _run(["-np", "2"], flavour=None)
    assert k.bound_by is None and k.argv == ("mpirun", "-np", "2", "python3", "train.py")
    assert "MPI flavour unknown: hosttune binds each rank; if it binds too, add --bind-to none" in k.notes
    assert not any("MPI flavour unknown" in n for n in _run(["-np", "2"], flavour="mpich").notes)


def test_the_tool_is_named_by_its_basename_or_mpirun_for_a_python_module() -> None:
    k = _mpirun(["/opt/ompi/bin/mpiexec", "-np", "2", "--bind-to", "core", "python3", "t.py"], 1, {}, "openmpi")
    assert k.bound_by == "mpiexec --bind-to core"
    k = _mpirun(["python3", "-m", "mpi4py.run", "-np", "2", "--bind-to", "core", "python3", "t.py"], 3, {}, "openmpi")
    assert k.bound_by == "mpirun --bind-to core"


# --- threads, MPMD, endpoint ------------------------------------------------------------------------------------------

def test_exported_omp_num_threads_is_kept_and_the_last_export_wins() -> None:
    k = _run(["-np", "2", "-x", "OMP_NUM_THREADS=3", "-x", "OMP_NUM_THREADS=5", "-x", "OTHER=9"])
    assert k.threads == 5
    assert "OMP_NUM_THREADS=5 exported by the command line: each rank keeps it" in k.notes
    assert _run(["-np", "2", "-genv", "OMP_NUM_THREADS", "7"], flavour="mpich").threads == 7
    assert _run(["-np", "2", "-x", "OMP_NUM_THREADS"]).threads is None  # -x K passes the caller's own value on
    assert _run(["-np", "2"]).threads is None


def test_an_mpmd_job_plans_each_rank_from_mpis_variables_and_is_left_as_given() -> None:
    argv = ["mpirun", "-np", "1", "python3", "a.py", ":", "-np", "1", "python3", "b.py"]
    k = _mpirun(argv, 1, {}, "openmpi")
    assert (k.name, k.local_ranks, k.bound_by, k.threads) == ("mpirun", None, None, None)
    assert k.argv == tuple(argv)
    assert k.notes == ("MPMD (`:`) job: ranks plan from OMPI_COMM_WORLD_LOCAL_RANK/MPI_LOCALRANKID",)


def test_endpoint_from_hosts_then_exported_master_addr_then_the_callers(tmp_path: Path) -> None:
    k = _run(["-np", "4", "-H", "nodeA:2,nodeB:2,nodeA"])
    assert (k.endpoint.host, k.endpoint.source, k.endpoint.nodes) == ("nodeA", "mpirun --host (rank 0's host)", 2)
    k = _run(["-np", "4", "-H", "nodeA,nodeB", "-x", "MASTER_ADDR=10.0.0.9"])
    assert (k.endpoint.host, k.endpoint.source, k.endpoint.nodes) == ("10.0.0.9", "mpirun -x MASTER_ADDR", 2)
    k = _run(["-np", "4", "-H", "nodeA,nodeB,nodeC"], env={"MASTER_ADDR": "head"})
    assert (k.endpoint.host, k.endpoint.source, k.endpoint.nodes) == ("head", "MASTER_ADDR", 3)
    k = _run(["-np", "4"], env={"MASTER_ADDR": "head", "SLURM_JOB_NUM_NODES": "2"})
    assert (k.endpoint.host, k.endpoint.nodes) == ("head", 2)
    assert _run(["-np", "4"]).endpoint is None
    hf = tmp_path / "hosts"
    hf.write_text("# the job's nodes\n\n  gpu1:4 slots=4  # first\ngpu2 slots=4\n")
    k = _run(["-np", "8", "--hostfile", str(hf)])
    assert (k.endpoint.host, k.endpoint.source, k.endpoint.nodes) == ("gpu1", "mpirun --hostfile (rank 0's host)", 2)
