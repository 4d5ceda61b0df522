"""Pins for hosttune/shim.py's main (issue 21, round-8 practice, HLAU8): the ways a torchrun rank's shim stops before
its exec, each with its exit status and its whole stderr: no command (usage, 2), rank variables that do not make a
rank (2), a handoff that is not hosttune's (refused, 2). In-process: none of these reaches the exec."""

import os
from pathlib import Path

import pytest

from hosttune import shim

RANK_VARS = ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
             "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI_RANK", "HOSTTUNE_HANDOFF",
             "HOSTTUNE_LOCAL_RANK", "HOSTTUNE_LOCAL_WORLD_SIZE")


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for k in RANK_VARS:
        monkeypatch.setenv(k, "")
        monkeypatch.delenv(k)
    return monkeypatch


@pytest.mark.parametrize("argv", [[], ["--"]])
def test_no_command_is_the_usage_and_status_2(clean: pytest.MonkeyPatch, argv: list,
                                               capfd: pytest.CaptureFixture) -> None:
    assert shim.main(argv) == 2
    assert capfd.readouterr().err == ("hosttune.shim: usage: python -m hosttune.shim COMMAND [ARGS...] (started by "
                                      "`hosttune exec -- torchrun ...`)\n")


def test_rank_variables_outside_their_size_are_status_2(clean: pytest.MonkeyPatch,
                                                        capfd: pytest.CaptureFixture) -> None:
    clean.setenv("LOCAL_RANK", "2")
    clean.setenv("LOCAL_WORLD_SIZE", "2")
    assert shim.main(["--", "true"]) == 2
    assert capfd.readouterr().err == ("hosttune.shim: error: LOCAL_RANK=2 is outside the LOCAL_WORLD_SIZE=2 local "
                                      "ranks its launcher set; rank not started\n")


def test_a_handoff_that_is_not_hosttunes_refuses_the_rank(clean: pytest.MonkeyPatch, tmp_path: Path,
                                                          capfd: pytest.CaptureFixture) -> None:
    bad = tmp_path / "handoff.json"
    bad.write_text("{}")
    clean.setenv("LOCAL_RANK", "1")
    clean.setenv("LOCAL_WORLD_SIZE", "2")
    clean.setenv("HOSTTUNE_HANDOFF", str(bad))
    assert shim.main(["true"]) == 2
    assert capfd.readouterr().err == (f"hosttune.shim: rank 1/2: {bad}: not a hosttune handoff file of version 1; "
                                      "rank not started\n")
    assert os.environ["HOSTTUNE_HANDOFF"] == str(bad)
