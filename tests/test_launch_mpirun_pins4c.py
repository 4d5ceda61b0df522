"""Pin for mutation round 4's last mpirun survivor (issue 21): an OMP_NUM_THREADS the command line exports empty
(`-x OMP_NUM_THREADS=`, Hydra `-genv OMP_NUM_THREADS ""`) is exported, the last export wins, and an empty count is
refused in one line naming it, not read as "nothing exported" (every rank would get the empty value, not the plan's
thread count)."""
import pytest

from hosttune.errors import UserError
from hosttune.launch import launchers

ENV = {"PATH": "/usr/bin:/bin"}


@pytest.mark.parametrize("export", [["-x", "OMP_NUM_THREADS="], ["-x", "OMP_NUM_THREADS=4", "-x", "OMP_NUM_THREADS="],
                                    ["-genv", "OMP_NUM_THREADS", ""]],
                         ids=["x-empty", "x-last-empty", "genv-empty"])
def test_an_empty_exported_thread_count_is_refused_naming_it(export: list) -> None:
    with pytest.raises(UserError, match=r"OMP_NUM_THREADS must be a whole number, got ''"):
        launchers.identify(["mpirun", "-np", "2", *export, "python3", "t.py"], ENV, mpi="openmpi")


def test_the_last_exported_thread_count_is_the_ranks() -> None:
    known = launchers.identify(["mpirun", "-np", "2", "-x", "OMP_NUM_THREADS=", "-x", "OMP_NUM_THREADS=3",
                                "python3", "t.py"], ENV, mpi="openmpi")
    assert known is not None and known.threads == 3
    assert "OMP_NUM_THREADS=3 exported by the command line: each rank keeps it" in known.notes


def test_a_bare_exported_name_is_no_empty_value() -> None:
    """`-x OMP_NUM_THREADS` (no `=`) forwards the caller's value: not an empty export, so not refused."""
    known = launchers.identify(["mpirun", "-np", "2", "-x", "OMP_NUM_THREADS", "python3", "t.py"],
                               {**ENV, "OMP_NUM_THREADS": "3"}, mpi="openmpi")
    assert known is not None and known.threads is None
