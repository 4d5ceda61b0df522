"""Pins for hosttune/launch/launchers/mpirun.py (issue 21, round 6): the ranks mpirun starts on this node, who binds
them for each MPI flavour (and the `--bind-to none` hosttune adds for Open MPI's Python ranks), the thread count the
command line exports, where the job's nodes meet (plan.network's Endpoint), the flavour told from where the program
points, and the one-line errors. In-process, on the module's own functions and through `identify`."""

import os
from pathlib import Path
from typing import Dict, Optional

import pytest

from hosttune.errors import UserError
from hosttune.launch.launchers import identify
from hosttune.launch.launchers import mpirun as mp
from hosttune.plan.network import Endpoint

OMPI_NOTE = ("Open MPI binds ranks by default (core for np<=2, socket above): hosttune adds --bind-to none and binds "
             "each rank itself")
UNKNOWN_RANKS = ("ranks per node unknown from the command line: each rank plans from OMPI_COMM_WORLD_LOCAL_SIZE / "
                 "MPI_LOCALNRANKS")


def run(*args: str, flavour: Optional[str] = "openmpi", environ: Optional[Dict[str, str]] = None,
        tool: str = "mpirun") -> mp.KnownLauncher:
    return mp._mpirun([tool, *args], 1, environ or {}, flavour)


# ---- ranks on this node ----------------------------------------------------------------------------------------------

def test_np_on_one_node_is_the_local_count_and_python_ranks_get_bind_to_none() -> None:
    got = run("-np", "4", "python3", "t.py")
    assert got.name == "mpirun" and got.local_ranks == 4 and got.bound_by is None and got.threads is None
    assert got.argv == ("mpirun", "--bind-to", "none", "-np", "4", "python3", "t.py")
    assert got.notes == (OMPI_NOTE,) and got.endpoint is None


@pytest.mark.parametrize("opt", ["-np", "--np", "-n", "-c"])
def test_np_spellings(opt: str) -> None:
    assert run(opt, "3", "python3", "t.py").local_ranks == 3


def test_localhost_hosts_are_still_one_node() -> None:
    assert run("-np", "2", "-H", "localhost:2", "python3", "t.py").local_ranks == 2
    assert run("-np", "2", "--host", "127.0.0.1,localhost", "python3", "t.py").local_ranks == 2


def test_other_hosts_a_hostfile_or_a_slurm_allocation_make_it_unknown(tmp_path: Path) -> None:
    got = run("-np", "4", "-H", "a,b", "python3", "t.py")
    assert got.local_ranks is None and got.notes == (UNKNOWN_RANKS, OMPI_NOTE)
    hf = tmp_path / "hosts"
    hf.write_text("localhost slots=4\n")
    assert run("-np", "4", "--hostfile", str(hf), "python3", "t.py").local_ranks is None
    assert run("-np", "4", "python3", "t.py", environ={"SLURM_JOB_NUM_NODES": "2"}).local_ranks is None
    assert run("-np", "4", "python3", "t.py", environ={"SLURM_NNODES": "3"}).local_ranks is None
    assert run("-np", "4", "python3", "t.py", environ={"SLURM_NNODES": " 1 "}).local_ranks == 4
    assert run("-np", "4", "python3", "t.py", environ={"SLURM_JOB_NUM_NODES": "1", "SLURM_NNODES": "2"}
               ).local_ranks == 4
    none = run("python3", "t.py")
    assert none.local_ranks is None and none.notes == (UNKNOWN_RANKS, OMPI_NOTE)


@pytest.mark.parametrize("opt", ["-npernode", "-N", "-ppn", "--perhost"])
def test_per_node_counts_win_over_np_and_hosts(opt: str) -> None:
    got = run("-np", "8", "-H", "a,b", opt, "4", "python3", "t.py")
    assert got.local_ranks == 4 and UNKNOWN_RANKS not in got.notes


def test_per_node_is_capped_by_np() -> None:
    assert run("-np", "2", "-npernode", "8", "python3", "t.py").local_ranks == 2
    assert run("-npernode", "8", "python3", "t.py").local_ranks == 8


def test_map_by_ppr_per_node() -> None:
    assert run("-np", "12", "-H", "a,b", "--map-by", "ppr:3:node", "python3", "t.py").local_ranks == 3
    assert run("-np", "12", "-H", "a,b", "--map-by", "PPR:2:NODE:PE=2", "python3", "t.py").local_ranks == 2
    assert run("-np", "12", "-H", "a,b", "--map-by", "ppr:2:socket", "python3", "t.py").local_ranks is None
    assert run("-np", "12", "-H", "a,b", "--map-by", "ppr:2", "python3", "t.py").local_ranks is None
    assert run("-np", "4", "--map-by", "core", "python3", "t.py").local_ranks == 4


@pytest.mark.parametrize("args,msg", [
    (("-np", "0", "python3", "t.py"), "mpirun: -np must be at least 1, got 0"),
    (("-np", "x", "python3", "t.py"), "mpirun: -np must be a whole number, got 'x'"),
    (("-npernode", "0", "python3", "t.py"), "mpirun: -npernode must be at least 1, got 0"),
    (("--map-by", "ppr:0:node", "python3", "t.py"), "mpirun: --map-by ppr:N:node must be at least 1, got 0"),
    (("-np", "2000", "python3", "t.py"), "mpirun: -np=2000 is more than the 1024 local ranks hosttune plans for"),
    (("-x", "OMP_NUM_THREADS=0", "python3", "t.py"), "mpirun: OMP_NUM_THREADS must be at least 1, got 0"),
    (("-np",), "mpirun: option -np needs a value"),
    (("--mca", "btl"), "mpirun: option --mca needs 2 values"),
])
def test_errors_are_one_line(args: tuple, msg: str) -> None:
    with pytest.raises(UserError) as e:
        run(*args)
    assert str(e.value) == msg


def test_a_big_np_over_many_hosts_is_fine() -> None:
    got = run("-np", "4096", "-H", "a,b", "python3", "t.py")
    assert got.local_ranks is None


def test_errors_name_the_program_as_typed() -> None:
    with pytest.raises(UserError) as e:
        identify(["mpiexec", "-np", "x", "python3", "t.py"], {}, mpi="mpich")
    assert str(e.value) == "mpiexec: -np must be a whole number, got 'x'"
    with pytest.raises(UserError) as e:
        identify(["python3", "/opt/bin/mpiexec", "-np", "x", "p"], {}, mpi="mpich")
    assert str(e.value) == "mpirun: -np must be a whole number, got 'x'"


def test_two_valued_options_and_unknown_flags_are_skipped_over() -> None:
    got = run("--mca", "btl", "self,tcp", "--oversubscribe", "-np", "2", "python3", "t.py", "-np", "9")
    assert got.local_ranks == 2
    assert got.argv[:3] == ("mpirun", "--bind-to", "none")


def test_mpmd_jobs_plan_from_the_ranks_variables() -> None:
    argv = ("mpirun", "-np", "1", "python3", "a.py", ":", "-np", "1", "python3", "b.py")
    got = mp._mpirun(argv, 1, {}, "openmpi")
    assert got == mp.KnownLauncher("mpirun", None, None, None, argv,
                                   ("MPMD (`:`) job: ranks plan from OMPI_COMM_WORLD_LOCAL_RANK/MPI_LOCALRANKID",))


# ---- who binds -------------------------------------------------------------------------------------------------------

def test_open_mpi_keeps_its_binding_for_ranks_that_are_not_python() -> None:
    for args in (("-np", "2", "./a.out"), ("-np", "2"), ("-np", "2", "bash", "run.sh")):
        got = run(*args)
        assert got.bound_by == "mpirun (Open MPI's default binding; the ranks are not Python, which hosttune binds)"
        assert got.argv == ("mpirun", *args) and OMPI_NOTE not in got.notes
    assert run("-np", "2", "/usr/bin/python3.11", "t.py").bound_by is None
    assert run("-np", "2", "pypy3", "t.py").bound_by is None


@pytest.mark.parametrize("args,bound", [
    (("--bind-to", "core"), "mpirun --bind-to core"),
    (("-bind-to", "socket:overload-allowed"), "mpirun --bind-to socket:overload-allowed"),
    (("--cpu-set", "0-3"), "mpirun --cpu-set 0-3"),
    (("--cpu-list", "0,1"), "mpirun --cpu-set 0,1"),
    (("-rf", "ranks.txt"), "mpirun --rankfile ranks.txt"),
    (("--cpus-per-proc", "2"), "mpirun --cpus-per-proc 2"),
    (("--cpus-per-rank", "4"), "mpirun --cpus-per-proc 4"),
    (("-binding", "cpu:cores"), "mpirun -binding cpu:cores"),
    (("--map-by", "ppr:2:socket:PE=2"), "mpirun --map-by ppr:2:socket:PE=2"),
    (("--cpu-set", "0-3", "--rankfile", "r"), "mpirun --cpu-set 0-3"),
    (("--rankfile", "r", "--cpus-per-proc", "2"), "mpirun --rankfile r"),
])
def test_a_binding_the_user_asks_mpi_for_is_mpis(args: tuple, bound: str) -> None:
    got = run("-np", "2", *args, "python3", "t.py")
    assert got.bound_by == bound and got.binds
    assert got.argv == ("mpirun", "-np", "2", *args, "python3", "t.py")  # nothing added
    assert got.notes == ()


@pytest.mark.parametrize("value", ["none", "NONE", "none:overload-allowed"])
def test_bind_to_none_asks_for_none_and_wins_over_other_binding_options(value: str) -> None:
    got = run("-np", "2", "--bind-to", value, "--cpu-set", "0-3", "--map-by", "slot:PE=2", "python3", "t.py")
    assert got.bound_by is None
    assert got.notes == ("--bind-to none: hosttune binds each rank",)
    assert got.argv == ("mpirun", "-np", "2", "--bind-to", value, "--cpu-set", "0-3", "--map-by", "slot:PE=2",
                        "python3", "t.py")


def test_the_last_bind_to_wins() -> None:
    assert run("--bind-to", "core", "--bind-to", "none", "python3", "t.py").bound_by is None
    assert run("--bind-to", "none", "--bind-to", "core", "python3", "t.py").bound_by == "mpirun --bind-to core"


def test_intel_mpi_pins_by_default_unless_i_mpi_pin_is_off() -> None:
    got = run("-np", "2", "python3", "t.py", flavour="intel", tool="mpiexec")
    assert got.bound_by == "mpiexec (Intel MPI pins ranks by default, I_MPI_PIN)" and got.notes == ()
    assert got.argv == ("mpiexec", "-np", "2", "python3", "t.py")
    for off in ("0", "off", "NO", "disable"):
        got = run("-np", "2", "python3", "t.py", flavour="intel", environ={"I_MPI_PIN": off})
        assert got.bound_by is None and got.notes == ()
    assert run("python3", "t.py", flavour="intel", environ={"I_MPI_PIN": "1"}).bound_by is not None


def test_mpich_binds_only_when_hydra_binding_says_so() -> None:
    got = run("-np", "2", "python3", "t.py", flavour="mpich", environ={"HYDRA_BINDING": "core"}, tool="mpiexec.hydra")
    assert got.bound_by == "mpiexec.hydra (HYDRA_BINDING=core)"
    for env in ({}, {"HYDRA_BINDING": "None"}):
        got = run("-np", "2", "python3", "t.py", flavour="mpich", environ=env)
        assert got.bound_by is None and got.notes == () and "--bind-to" not in got.argv


def test_an_unknown_flavour_is_said() -> None:
    got = run("-np", "2", "python3", "t.py", flavour=None)
    assert got.bound_by is None
    assert got.notes == ("MPI flavour unknown: hosttune binds each rank; if it binds too, add --bind-to none",)
    assert got.argv == ("mpirun", "-np", "2", "python3", "t.py")


# ---- threads ---------------------------------------------------------------------------------------------------------

def test_exported_threads_are_kept_and_said() -> None:
    got = run("-np", "2", "-x", "OMP_NUM_THREADS=4", "python3", "t.py")
    assert got.threads == 4 and got.notes == (OMPI_NOTE, "OMP_NUM_THREADS=4 exported by the command line: each rank "
                                                         "keeps it")
    assert run("-genv", "OMP_NUM_THREADS", "3", "python3", "t.py", flavour="mpich").threads == 3
    assert run("--env", "OMP_NUM_THREADS", "5", "python3", "t.py", flavour="mpich").threads == 5
    assert run("-x", "OMP_NUM_THREADS=2", "-x", "OMP_NUM_THREADS=6", "python3", "t.py").threads == 6
    # Hydra's -env comes after -x in the reading order, whatever the command line's
    assert run("-env", "OMP_NUM_THREADS", "7", "-x", "OMP_NUM_THREADS=2", "python3", "t.py").threads == 7
    assert run("-x", "OMP_NUM_THREADS", "python3", "t.py").threads is None  # exports the caller's own
    assert run("-x", "OMP_NUM_THREADSX=2", "-x", "MY_OMP_NUM_THREADS=3", "python3", "t.py").threads is None


# ---- the endpoint ----------------------------------------------------------------------------------------------------

def test_exported_master_addr_is_the_endpoint() -> None:
    got = run("-H", "n0,n1,n0", "-x", "MASTER_ADDR=m0:29500", "python3", "t.py",
              environ={"MASTER_ADDR": "other", "SLURM_NNODES": "9"})
    assert got.endpoint == Endpoint("m0", "mpirun -x MASTER_ADDR", 2)
    got = run("-genv", "MASTER_ADDR", "m1", "python3", "t.py")
    assert got.endpoint == Endpoint("m1", "mpirun -x MASTER_ADDR", None)
    assert run("-x", "MASTER_ADDR=", "python3", "t.py").endpoint is None


def test_the_callers_master_addr_with_the_command_lines_node_count() -> None:
    got = run("-H", "a,b,c", "python3", "t.py", environ={"MASTER_ADDR": "m", "SLURM_NNODES": "9"})
    assert got.endpoint == Endpoint("m", "MASTER_ADDR", 3)
    got = run("python3", "t.py", environ={"MASTER_ADDR": "m", "SLURM_NNODES": "9"})
    assert got.endpoint == Endpoint("m", "MASTER_ADDR", 9)


def test_the_first_host_is_rank_0s() -> None:
    got = run("-H", "b:2,a:2", "--host", "c", "python3", "t.py")
    assert got.endpoint == Endpoint("b", "mpirun --host (rank 0's host)", 3)
    got = run("-H", "b,,", "python3", "t.py")
    assert got.endpoint == Endpoint("b", "mpirun --host (rank 0's host)", 1)


def test_the_hostfiles_first_host(tmp_path: Path) -> None:
    hf = tmp_path / "hosts"
    hf.write_text("# the job's nodes\n\n  nodeA slots=2 # first\nnodeB:4\nnodeA\n#nodeC\n")
    got = run("--hostfile", str(hf), "python3", "t.py")
    assert got.endpoint == Endpoint("nodeA", "mpirun --hostfile (rank 0's host)", 2)
    assert got.local_ranks is None
    assert mp._hosts(mp._scan("mpirun", ["mpirun", "-f", str(hf)], 1, {"-f": ("hostfile", 1)}, unknown="flag"),
                     []) == (["nodeA", "nodeB", "nodeA"], "mpirun --hostfile")
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n")
    assert run("--machinefile", str(empty), "python3", "t.py").endpoint is None


def test_an_unreadable_hostfile_is_a_note(tmp_path: Path) -> None:
    missing = tmp_path / "nohosts"
    got = run("--hostfile", str(missing), "python3", "t.py")
    assert got.endpoint is None
    assert got.notes[-1] == (f"{missing}: cannot read mpirun hostfile: No such file or directory: no network interface "
                             "chosen from it")


def test_exported_reads_the_last_value() -> None:
    scan = mp._scan("mpirun", ["mpirun", "-x", "A=1", "-x", "B", "-x", "A=2=3", "p"], 1, {"-x": ("export", 1)},
                    unknown="flag")
    assert mp._exported(scan, "A") == "2=3" and mp._exported(scan, "B") is None and mp._exported(scan, "C") is None


# ---- the flavour -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,flavour", [
    ("orterun", "openmpi"), ("prterun", "openmpi"), ("mpirun.openmpi", "openmpi"), ("/x/mpiexec.openmpi", "openmpi"),
    ("mpirun.mpich", "mpich"), ("mpiexec.hydra", "mpich"), ("/opt/mpirun.hydra", "mpich"),
])
def test_flavour_by_name(name: str, flavour: str) -> None:
    assert mp.mpi_flavour(name, {"PATH": "/nonexistent"}) == flavour


def _link(tmp_path: Path, target: str) -> str:
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    link = d / "mpirun"
    if link.is_symlink():
        link.unlink()
    link.symlink_to(target)
    return str(link)


def test_flavour_from_where_the_program_points(tmp_path: Path) -> None:
    assert mp.mpi_flavour(_link(tmp_path, "/usr/lib/x/bin/orterun"), {}) == "openmpi"
    assert mp.mpi_flavour(_link(tmp_path, "/usr/lib/x/bin/prterun"), {}) == "openmpi"
    assert mp.mpi_flavour(_link(tmp_path, "/usr/lib/x86_64-linux-gnu/openmpi/bin/mpirun"), {}) == "openmpi"
    assert mp.mpi_flavour(_link(tmp_path, "/opt/intel/mpi/bin/mpirun"), {}) == "intel"
    assert mp.mpi_flavour(_link(tmp_path, "/opt/oneapi/mpi/bin/mpirun"), {}) == "intel"
    assert mp.mpi_flavour(_link(tmp_path, "/usr/bin/mpirun.mpich"), {}) == "mpich"
    assert mp.mpi_flavour(_link(tmp_path, "/usr/bin/mpiexec.hydra"), {}) == "mpich"
    assert mp.mpi_flavour(_link(tmp_path, "/usr/local/bin/mpirun-real"), {}) is None
    assert mp.mpi_flavour(_link(tmp_path, "/usr/local/bin/mpirun-real"), {"I_MPI_ROOT": "/opt/i"}) == "intel"


def test_flavour_of_a_program_not_on_path() -> None:
    assert mp.mpi_flavour("mpirun", {"PATH": "/nonexistent-pins6"}) is None


def test_identify_passes_the_flavour_it_is_told() -> None:
    got = identify(["mpirun", "-np", "2", "python3", "t.py"], {"PATH": "/nonexistent-pins6"}, mpi="intel")
    assert got is not None and got.bound_by == "mpirun (Intel MPI pins ranks by default, I_MPI_PIN)"
    got = identify(["mpirun", "-np", "2", "python3", "t.py"], {"PATH": "/nonexistent-pins6"})
    assert got is not None and got.notes == ("MPI flavour unknown: hosttune binds each rank; if it binds too, add "
                                             "--bind-to none",)
    assert os.sep == "/"


# ---- the options that take values (Open MPI's orterun/prterun and Hydra's mpiexec man pages) -------------------------

VALUED_ONE = (
    "np n c npernode N ppn perhost npersocket map-by bind-to rank-by cpu-set cpu-list cpus-per-proc cpus-per-rank "
    "binding rf rankfile H host hosts hostfile machinefile default-hostfile f x am wdir wd path prefix "
    "output-filename timeout tune launch-agent stdin personality genvlist envlist iface launcher bootstrap "
    "bootstrap-exec rmk configfile errfile-pattern outfile-pattern preload-files s report-bindings-file display "
    "output runtime-options pmixmca prtemca"
).split()
VALUES = {"np": "2", "n": "2", "c": "2", "npernode": "2", "N": "2", "ppn": "2", "perhost": "2", "map-by": "slot",
          "bind-to": "none", "x": "A=1", "hostfile": "/nonexistent-pins6", "machinefile": "/nonexistent-pins6",
          "default-hostfile": "/nonexistent-pins6", "f": "/nonexistent-pins6"}


@pytest.mark.parametrize("dashes", ["-", "--"])
@pytest.mark.parametrize("opt", VALUED_ONE)
def test_every_valued_option_takes_its_value(opt: str, dashes: str) -> None:
    # the value is the option's, so the program is the Python after it and hosttune binds it
    got = run(f"{dashes}{opt}", VALUES.get(opt, "v"), "python3", "t.py")
    assert got.argv[-2:] == ("python3", "t.py")
    assert "(Open MPI's default binding" not in (got.bound_by or ""), got


def test_the_valued_options_are_these() -> None:
    assert set(mp._MPI_VALUED1) == set(VALUED_ONE)


@pytest.mark.parametrize("opt", ["mca", "gmca", "env", "genv"])
def test_two_valued_options_take_two(opt: str) -> None:
    got = run(f"-{opt}", "k", "v", "python3", "t.py")
    assert got.bound_by is None and got.argv[1:3] == ("--bind-to", "none")
    got = run(f"--{opt}", "k", "v", "python3", "t.py")
    assert got.bound_by is None
    assert mp._MPI_VALUED2 == {"mca": "mca", "gmca": "mca", "env": "env", "genv": "env"}


def test_option_destinations() -> None:
    same = {"np": ("n", "c"), "npernode": ("N", "ppn", "perhost"), "cpu_set": ("cpu-list",),
            "cpus_per_proc": ("cpus-per-rank",), "rankfile": ("rf",), "host": ("H", "hosts"),
            "hostfile": ("machinefile", "default-hostfile", "f"), "export": ("x",), "wdir": ("wd",),
            "launcher": ("bootstrap",)}
    for dest, spellings in same.items():
        assert all(mp._MPI_VALUED1[s] == dest for s in spellings), dest
    assert mp._MPI_VALUED1["map-by"] == "map_by" and mp._MPI_VALUED1["bind-to"] == "bind_to"
    assert mp._MPI_VALUED1["binding"] == "binding"
