"""Pins for hosttune/launch/launchers/__init__.py (where a launcher sits in argv) and the launchers it registers
(its deepspeed, srun and torch_launch modules; issue 21, round 6): the ranks each starts on this node, who binds them,
the per-rank argument, the notes and the one-line errors, exactly. In-process through `identify` and the modules' own
functions."""

import os
from pathlib import Path
from typing import Dict, Optional

import pytest

from hosttune.errors import UserError
from hosttune.launch import launchers
from hosttune.launch.launchers import identify

ds, sr, tl = launchers.deepspeed, launchers.srun, launchers.torch_launch

ENV: Dict[str, str] = {"PATH": "/nonexistent-pins6", "HOME": "/nonexistent-pins6"}


def who(*argv: str, environ: Optional[Dict[str, str]] = None, gpus: Optional[int] = 4,
        numa: Optional[int] = 2) -> launchers.KnownLauncher:
    got = identify(list(argv), environ if environ is not None else ENV, gpus=gpus, numa_nodes=numa, mpi="openmpi")
    assert got is not None
    return got


def fails(*argv: str, environ: Optional[Dict[str, str]] = None, gpus: Optional[int] = 4) -> str:
    with pytest.raises(UserError) as e:
        identify(list(argv), environ if environ is not None else ENV, gpus=gpus, numa_nodes=2, mpi="openmpi")
    return str(e.value)


# ---- where the launcher sits -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,found", [
    (["deepspeed", "t.py"], ("deepspeed", 1)),
    (["/usr/local/bin/ds", "t.py"], ("deepspeed", 1)),
    (["python3", "-W", "ignore", "-u", "/usr/bin/deepspeed", "t.py"], ("deepspeed", 5)),
    (["python3.11", "-X", "dev", "/usr/local/bin/accelerate", "launch", "t.py"], ("accelerate launch", 5)),
    (["accelerate", "launch", "t.py"], ("accelerate launch", 2)),
    (["accelerate-launch", "t.py"], ("accelerate launch", 1)),
    (["python3", "-m", "accelerate.commands.launch", "t.py"], ("accelerate launch", 3)),
    (["python3", "-m", "accelerate.commands.accelerate_cli", "launch", "t.py"], ("accelerate launch", 4)),
    (["python3", "-m", "deepspeed.launcher.runner", "t.py"], ("deepspeed", 3)),
    (["python3", "-mtorch.distributed.launch", "t.py"], ("torch.distributed.launch", 2)),
    (["python3", "-X", "dev", "-m", "torch.distributed.launch", "t.py"], ("torch.distributed.launch", 5)),
    (["/usr/bin/mpiexec.hydra", "-n", "2", "x"], ("mpirun", 1)),
    (["orterun", "x"], ("mpirun", 1)),
    (["prterun", "x"], ("mpirun", 1)),
    (["mpirun.openmpi", "x"], ("mpirun", 1)),
    (["srun", "x"], ("srun", 1)),
])
def test_locate(argv: list, found: tuple) -> None:
    assert launchers._locate(argv) == found


@pytest.mark.parametrize("argv", [
    [], ["torchrun", "t.py"], ["python3", "t.py"], ["python3", "-c", "print(1)"], ["python3", "-"],
    ["python3"], ["python3", "-u"], ["accelerate", "config"], ["accelerate"], ["python3", "-m", "pkg.train"],
    ["python3", "-m", "accelerate.commands.accelerate_cli", "env"], ["bash", "run.sh"], ["python3", "-cx"],
])
def test_not_a_launcher(argv: list) -> None:
    assert launchers._locate(argv) is None
    assert identify(argv, ENV) is None


def test_script_index() -> None:
    assert launchers._script_index(["python3", "-W", "x", "-X", "y", "-B", "s.py", "a"]) == 6
    assert launchers._script_index(["python3", "-Q", "new", "s.py"]) == 3
    assert launchers._script_index(["python3", "-m", "x"]) is None
    assert launchers._script_index(["python3", "-mx"]) is None
    assert launchers._script_index(["python3", "-u"]) is None
    assert launchers._script_index(["python3"]) is None
    # -cCODE and -mMOD end the interpreter's options: what follows is the code's or the module's argument
    assert launchers._script_index(["python3", "-cimport x", "/usr/bin/deepspeed", "t.py"]) is None
    assert launchers._locate(["python3", "-cimport x", "/usr/bin/deepspeed", "t.py"]) is None
    assert launchers._script_index(["python3", "-mpkg", "/usr/bin/deepspeed"]) is None


# ---- deepspeed -------------------------------------------------------------------------------------------------------

def test_deepspeed_takes_every_gpu_and_passes_local_rank() -> None:
    got = who("deepspeed", "t.py", gpus=4)
    assert (got.name, got.local_ranks, got.bound_by, got.threads, got.rank_arg, got.notes) == (
        "deepspeed", 4, None, None, "--local_rank", ())
    assert who("deepspeed", "--no_local_rank", "t.py").rank_arg is None


@pytest.mark.parametrize("environ,gpus,numa,want", [
    ({}, 0, 2, 2), ({"LOCAL_SIZE": "3"}, 0, 2, 3), ({"LOCAL_SIZE": "3"}, 2, 4, 2), ({"LOCAL_SIZE": "0"}, 0, 2, 2),
    ({"LOCAL_SIZE": "x"}, None, 3, 3), ({"LOCAL_SIZE": " 5 "}, None, 1, 5), ({}, None, None, None),
])
def test_deepspeed_devices(environ: Dict[str, str], gpus: Optional[int], numa: Optional[int],
                           want: Optional[int]) -> None:
    assert ds._devices(environ, gpus, numa) == want
    assert who("deepspeed", "t.py", environ=dict(ENV, **environ), gpus=gpus, numa=numa).local_ranks == want


def test_deepspeed_num_gpus() -> None:
    assert who("deepspeed", "--num_gpus", "2", "t.py").local_ranks == 2
    assert who("deepspeed", "--num_accelerators=3", "t.py").local_ranks == 3
    assert who("deepspeed", "--num_gpus", "-1", "t.py", gpus=4).local_ranks == 4
    assert who("deepspeed", "--num_g", "2", "t.py").local_ranks == 2  # argparse prefixes
    assert fails("deepspeed", "--num_gpus", "0", "t.py") == "deepspeed: --num_gpus must be at least 1, got 0"
    assert (fails("deepspeed", "--num_gpus", "2000", "t.py")
            == "deepspeed: --num_gpus=2000 is more than the 1024 local ranks hosttune plans for")
    assert fails("deepspeed", "--num_nodes", "0", "t.py") == "deepspeed: --num_nodes must be at least 1, got 0"
    assert who("deepspeed", "--num_nodes", "4000", "t.py").local_ranks == 4


def test_deepspeed_option_errors() -> None:
    assert fails("deepspeed", "--nope", "t.py") == "deepspeed: unknown option --nope"
    assert fails("deepspeed", "--num", "2", "t.py") == "deepspeed: ambiguous option --num"
    assert fails("deepspeed", "--num_gpus") == "deepspeed: option --num_gpus needs a value"
    msg = "deepspeed: --num_gpus/--num_nodes cannot be combined with --include/--exclude (deepspeed refuses it too)"
    assert fails("deepspeed", "--num_gpus", "2", "-i", "localhost:0", "t.py") == msg
    assert fails("deepspeed", "--num_nodes", "2", "-e", "localhost:0", "t.py") == msg
    assert who("deepspeed", "--num_nodes", "-1", "--num_gpus", "-1", "-i", "localhost:0", "t.py").local_ranks == 1


@pytest.mark.parametrize("args,want", [
    (("-i", "localhost:0,2"), 2), (("--include", "localhost"), 4), (("--include", "localhost:"), 4),
    (("-e", "localhost:1"), 3), (("-e", "localhost:1,3", "-i", "localhost:0,1,3"), 1),
    (("-i", "localhost@other"), None), (("-i", "other:0"), None), (("-e", "other:0"), 4),
])
def test_deepspeed_include_exclude(args: tuple, want: Optional[int]) -> None:
    assert who("deepspeed", *args, "t.py", gpus=4).local_ranks == want


def test_deepspeed_include_without_known_devices() -> None:
    assert who("deepspeed", "-i", "localhost:0,1", "t.py", gpus=None, numa=None).local_ranks == 2
    assert who("deepspeed", "-e", "localhost:0", "t.py", gpus=None, numa=None).local_ranks is None
    assert ds._filtered("deepspeed", "", "", None) is None
    assert ds._filtered("deepspeed", "", "", 3) == 3


def test_deepspeed_include_exclude_errors() -> None:
    no_rank = "deepspeed: --include/--exclude leave no rank on this node"
    assert fails("deepspeed", "-e", "localhost", "t.py") == no_rank
    assert fails("deepspeed", "-i", "localhost:1", "-e", "localhost:1", "t.py") == no_rank
    assert fails("deepspeed", "-i", "@localhost", "t.py") == "deepspeed: bad --include/--exclude entry ''"
    assert fails("deepspeed", "-i", "localhost:a", "t.py") == "deepspeed: slots in 'localhost:a' must be whole numbers"
    assert ds._slots("d", " a:1, 2 @b@c:") == {"a": [1, 2], "b": None, "c": []}


def test_deepspeed_hostfile(tmp_path: Path) -> None:
    hf = tmp_path / "hostfile"
    hf.write_text("worker-1 slots=4\n")
    got = who("deepspeed", "-H", str(hf), "t.py")
    assert got.local_ranks is None
    assert got.notes == (f"hostfile {hf}: ranks per node come from it; each rank plans from LOCAL_RANK/LOCAL_SIZE",)
    assert who("deepspeed", "--hostfile", str(tmp_path / "none"), "t.py").local_ranks == 4
    assert who("deepspeed", "-H", str(hf), "--num_gpus", "2", "t.py").local_ranks == 2
    assert ds.DEEPSPEED_HOSTFILE == "/job/hostfile"


def test_deepspeed_bind_cores_to_rank() -> None:
    note = "--bind_cores_to_rank: deepspeed also sets each rank's OMP_NUM_THREADS to its cores"
    got = who("deepspeed", "--bind_cores_to_rank", "t.py", gpus=4)
    assert (got.bound_by, got.threads, got.notes) == ("deepspeed --bind_cores_to_rank", None, (note,))
    assert who("deepspeed", "--bind_cores_to_rank", "--bind_core_list", "0-7", "t.py", gpus=4).threads == 2
    assert who("deepspeed", "--bind_cores_to_rank", "--bind_core_list", "0-8", "t.py", gpus=4).threads == 2
    assert who("deepspeed", "--bind_cores_to_rank", "--bind_core_list", "0-2", "t.py", gpus=4).threads == 1
    assert who("deepspeed", "--bind_core_list", "0-7", "t.py", gpus=4).threads is None
    assert who("deepspeed", "--bind_cores_to_rank", "--bind_core_list", "0-7", "t.py", gpus=None,
               numa=None).threads is None


# ---- srun ------------------------------------------------------------------------------------------------------------

SRUN_NOTE = ("srun tasks may run on other nodes: run `srun hosttune exec -- ...` so each node plans from its own "
             "hardware; here each task plans from SLURM_LOCALID")


@pytest.mark.parametrize("args,environ,want", [
    (("-n", "4"), {}, None),
    (("-N", "1", "-n", "4"), {}, 4),
    (("-N1", "-n4"), {}, 4),
    (("--nodes=1", "--ntasks=3"), {}, 3),
    (("-N", "2", "-n", "4"), {}, None),
    (("-n", "3"), {"SLURM_JOB_NUM_NODES": "1"}, 3),
    (("-n", "3"), {"SLURM_NNODES": "1"}, 3),
    (("-n", "3"), {"SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "1"}, None),
    (("-N", "1", "-n", "3"), {"SLURM_JOB_NUM_NODES": "2"}, 3),
    (("--ntasks-per-node", "2", "-N", "4", "-n", "8"), {}, 2),
    (("-N", "1"), {}, None),
    (("-N", "1-1", "-n", "4"), {}, 4),  # a range of one node
    (("-N", "1-2", "-n", "4"), {}, None),  # srun(1): as many nodes as it can within the range, so maybe two
    (("-l", "-o", "out.txt", "-J", "job", "-N", "1", "-n", "2"), {}, 2),
])
def test_srun_counts(args: tuple, environ: Dict[str, str], want: Optional[int]) -> None:
    got = who("srun", *args, "python3", "t.py", environ=dict(ENV, **environ))
    assert got.local_ranks == want
    assert got.notes == (SRUN_NOTE,) and got.threads is None and got.rank_arg is None
    assert got.argv == ("srun", *args, "python3", "t.py")


def test_srun_count_errors() -> None:
    assert fails("srun", "-N", "2", "-n", "x", "p") == "srun: --ntasks must be a whole number, got 'x'"
    assert fails("srun", "-N", "1", "-n", "0", "p") == "srun: --ntasks must be at least 1, got 0"
    assert fails("srun", "--ntasks-per-node", "0", "p") == "srun: --ntasks-per-node must be at least 1, got 0"
    assert who("srun", "-N", "8", "-n", "8000", "p").local_ranks is None  # many tasks over many nodes


@pytest.mark.parametrize("bind,bound", [
    ("cores", "srun --cpu-bind=cores"), ("none", None), ("no", None), ("verbose,none", None),
    ("verbose,cores", "srun --cpu-bind=verbose,cores"), ("q", None), ("v", None), ("quiet", None),
    ("map_cpu:0,1", "srun --cpu-bind=map_cpu:0,1"), ("NONE", None), ("", None), ("Rank", "srun --cpu-bind=Rank"),
])
def test_srun_cpu_bind(bind: str, bound: Optional[str]) -> None:
    assert who("srun", f"--cpu-bind={bind}", "p").bound_by == bound
    assert who("srun", "--cpu_bind", bind or "none", "p").bound_by == (bound if bind else None)
    assert who("srun", "p", environ=dict(ENV, SLURM_CPU_BIND=bind)).bound_by == bound


def test_srun_command_line_binding_wins_over_the_environment() -> None:
    assert who("srun", "--cpu-bind=none", "p", environ=dict(ENV, SLURM_CPU_BIND="cores")).bound_by is None
    assert sr._SRUN_VALUED_SHORT.startswith("AbB") and "--exclusive" in sr._SRUN_FLAGS


# ---- torch.distributed.launch ----------------------------------------------------------------------------------------

TDL = ("python3", "-m", "torch.distributed.launch")
RANK_NOTE = "without --use-env each rank also gets --local-rank=N as an argument (LOCAL_RANK is set too)"


def test_torch_launch_defaults() -> None:
    got = who(*TDL, "t.py")
    assert (got.name, got.local_ranks, got.bound_by, got.threads, got.rank_arg, got.notes) == (
        "torch.distributed.launch", 1, None, None, "--local-rank", (RANK_NOTE,))
    env = who(*TDL, "--use-env", "--nproc-per-node", "2", "t.py")
    assert (env.local_ranks, env.rank_arg, env.notes) == (2, None, ())
    assert who(*TDL, "--use_env", "t.py").rank_arg is None


@pytest.mark.parametrize("raw,gpus,want", [
    ("3", 4, 3), ("gpu", 3, 3), ("auto", 2, 2), ("auto", 0, os.cpu_count() or 1), ("cpu", 4, os.cpu_count() or 1),
])
def test_torch_launch_nproc(raw: str, gpus: int, want: int) -> None:
    assert who(*TDL, f"--nproc-per-node={raw}", "t.py", gpus=gpus).local_ranks == want
    assert who(*TDL, "t.py", environ=dict(ENV, PET_NPROC_PER_NODE=raw), gpus=gpus).local_ranks == want


@pytest.mark.parametrize("raw", ["gpu", "auto"])
def test_torch_launch_counted_later(raw: str) -> None:
    got = who(*TDL, "--nproc_per_node", raw, "t.py", gpus=None)
    assert got.local_ranks is None
    assert got.notes == (f"--nproc-per-node={raw}: counted when the launcher starts; each rank plans from LOCAL_RANK",
                         RANK_NOTE)


def test_torch_launch_errors() -> None:
    tool = "torch.distributed.launch"
    assert fails(*TDL) == f"{tool}: no training script given ({tool} [OPTIONS] SCRIPT [ARGS...])"
    assert (fails(*TDL, "--nproc-per-node=gpu", "t.py", gpus=0)
            == f"{tool}: --nproc-per-node=gpu but this host has no GPU")
    assert (fails(*TDL, "--no-python", "prog")
            == f"{tool}: --no-python needs --use-env (a program cannot take --local-rank; torch refuses it too)")
    assert who(*TDL, "--no-python", "--use-env", "prog").rank_arg is None
    assert fails(*TDL, "--nproc-per-node=0", "t.py") == f"{tool}: --nproc-per-node must be at least 1, got 0"
    assert fails(*TDL, "--bogus", "t.py") == f"{tool}: unknown option --bogus"
    assert who(*TDL, "--help").local_ranks == 1


def test_torch_launch_numa_binding_is_the_launchers() -> None:
    got = who(*TDL, "--numa-binding=node", "t.py")
    assert got.bound_by == "torch.distributed.launch --numa-binding=node" and got.binds
    env = who(*TDL, "t.py", environ=dict(ENV, PET_NUMA_BINDING="socket"))
    assert env.bound_by == "torch.distributed.launch --numa-binding=socket"
    assert who(*TDL, "--numa_binding", "exclusive", "t.py", environ=dict(ENV, PET_NUMA_BINDING="socket")).bound_by \
        == "torch.distributed.launch --numa-binding=exclusive"


def test_torch_launch_option_forms() -> None:
    assert who(*TDL, "--nproc", "2", "t.py").local_ranks == 2  # a prefix of both spellings of one option
    assert who(*TDL, "-r3", "--nproc-per-node", "2", "t.py").local_ranks == 2
    assert who(*TDL, "--nproc-per-node", "2", "--", "t.py", "--nproc-per-node", "5").local_ranks == 2
    assert tl._torch_launch(["python3", "-m", "torch.distributed.launch", "t.py"], 3, {}, None).local_ranks == 1
