"""mpirun's endpoint (hosttune/launch/launchers/mpirun.py): where a torch job under mpirun meets, for plan.network:
the MASTER_ADDR the command line exports, the caller's MASTER_ADDR, else rank 0's host (the first of -H/--hostfile),
with the number of hosts; a hostfile hosttune cannot read is a note."""

from pathlib import Path

from hosttune.launch import launchers
from hosttune.plan.network import Endpoint

ENV = {"PATH": "/usr/bin:/bin"}


def _endpoint(argv: list, env: dict = ENV) -> object:
    known = launchers.identify(argv, env, mpi="openmpi")
    assert known is not None
    return known.endpoint


def test_hostfile_first_host_is_rank_zeros_and_its_hosts_are_the_node_count(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("# the job's nodes\n\nnodeA slots=2\nnodeA slots=2\nnodeB:2  # second\n")
    got = _endpoint(["mpirun", "-np", "4", "--hostfile", str(hosts), "python3", "t.py"])
    assert got == Endpoint("nodeA", "mpirun --hostfile (rank 0's host)", 2)


def test_exported_master_addr_wins_over_the_hosts_and_the_callers() -> None:
    argv = ["mpirun", "-H", "a:2,b:2,c:2", "-x", "MASTER_ADDR=10.0.0.1", "python3", "t.py"]
    assert _endpoint(argv, {**ENV, "MASTER_ADDR": "elsewhere"}) == Endpoint("10.0.0.1", "mpirun -x MASTER_ADDR", 3)


def test_callers_master_addr_keeps_slurms_node_count_when_the_command_line_names_no_host() -> None:
    got = _endpoint(["mpirun", "-np", "8", "python3", "t.py"], {**ENV, "MASTER_ADDR": "h0", "SLURM_NNODES": "2"})
    assert got == Endpoint("h0", "MASTER_ADDR", 2)
    assert _endpoint(["mpirun", "-np", "2", "python3", "t.py"]) is None


def test_an_unreadable_hostfile_names_no_endpoint_and_says_so(tmp_path: Path) -> None:
    known = launchers.identify(["mpirun", "-np", "2", "--hostfile", str(tmp_path / "missing"), "python3", "t.py"],
                               ENV, mpi="openmpi")
    assert known is not None and known.endpoint is None  # mpirun itself refuses it, at run time
    assert any("cannot read mpirun hostfile" in n and "no network interface" in n for n in known.notes)
