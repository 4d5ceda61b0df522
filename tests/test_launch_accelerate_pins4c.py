"""Pins for accelerate's config in hosttune/launch/launchers/accelerate.py (issue 21, mutation round 4's neighbours of
r4a-accelerate-dist-upper): the config's distributed_type picks the launcher accelerate runs, as its own launch
command does (accelerate/commands/launch.py: DEEPSPEED, FSDP, MEGATRON_LM and the MULTI_* types start
--num_processes ranks here, XLA is a TPU launch, NO runs one process), and a flag on the command line wins over it."""
from pathlib import Path
from typing import Optional

import pytest

from hosttune.launch.launchers import identify

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}


def local_ranks(tmp_path: Path, dist: str, *flags: str) -> tuple:
    cfg = tmp_path / "acc.yaml"
    cfg.write_text(f"compute_environment: LOCAL_MACHINE\ndistributed_type: {dist}\nnum_processes: 4\n"
                   "num_machines: 1\n")
    got = identify(["accelerate", "launch", "--config_file", str(cfg), *flags, "t.py"], ENV, gpus=4, numa_nodes=1,
                   mpi="openmpi")
    assert got is not None
    return got.local_ranks, got.notes


@pytest.mark.parametrize("dist,n", [("MULTI_GPU", 4), ("MULTI_XPU", 4), ("DEEPSPEED", 4), ("FSDP", 4),
                                    ("MEGATRON_LM", 4), ("XLA", None), ("NO", 1)])
def test_the_configs_distributed_type_picks_the_launcher(tmp_path: Path, dist: str, n: Optional[int]) -> None:
    got, notes = local_ranks(tmp_path, dist)
    assert got == n, notes
    assert f"(distributed_type {dist})" in " ".join(notes)
    if dist == "XLA":
        assert "TPU launch: hosttune plans the ranks from their own variables" in notes
    if dist == "NO":
        assert any("accelerate runs one process here" in note for note in notes)


def test_a_launcher_flag_wins_over_the_configs_distributed_type(tmp_path: Path) -> None:
    assert local_ranks(tmp_path, "NO", "--multi_gpu")[0] == 4
    assert local_ranks(tmp_path, "XLA", "--use_fsdp")[0] == 4


@pytest.mark.parametrize("dist", ["MULTI_GPU", "DEEPSPEED", "FSDP"])
def test_a_configs_use_cpu_still_starts_every_rank_and_only_the_cpu_flag_makes_one(tmp_path: Path, dist: str) -> None:
    # accelerate 1.16 dispatches on --cpu alone: with `use_cpu: true` in the config and MULTI_GPU it starts
    # --num_processes ranks on the CPU (seen: `accelerate launch --config_file` of such a config prints RANK 0 and 1
    # of WORLD_SIZE 2), so hosttune plans (and binds) that many, not one rank on every core
    cfg = tmp_path / "acc.yaml"
    cfg.write_text(f"compute_environment: LOCAL_MACHINE\ndistributed_type: {dist}\nuse_cpu: true\nnum_processes: 4\n"
                   "num_machines: 1\n")
    argv = ["accelerate", "launch", "--config_file", str(cfg), "t.py"]
    got = identify(argv, ENV, gpus=0, numa_nodes=1, mpi="openmpi")
    assert got is not None and got.local_ranks == 4, got
    flagged = identify(argv[:2] + ["--cpu"] + argv[2:], ENV, gpus=0, numa_nodes=1, mpi="openmpi")
    assert flagged is not None and flagged.local_ranks == 1, flagged
