"""launchers.identify on many command-line shapes: rank count, binding, thread setting, notes; bad input is one line.

The option tables are also compared with each launcher's own parser where it is installed (accelerate, deepspeed,
torch.distributed.launch), so a launcher release that adds a flag shows up here, not as a misparsed job.
"""

import json
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from hosttune.errors import UserError
from hosttune.launch.launchers import (
    KnownLauncher,
    accelerate_default_config,
    identify,
    mpi_flavour,
)

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}


def ident(*argv: str, env: Optional[Dict[str, str]] = None, gpus: Optional[int] = 0, numa: Optional[int] = 1,
          mpi: Optional[str] = "openmpi") -> KnownLauncher:
    got = identify(list(argv), env if env is not None else ENV, gpus=gpus, numa_nodes=numa, mpi=mpi)
    assert got is not None, argv
    return got


def bad(*argv: str, env: Optional[Dict[str, str]] = None) -> str:
    with pytest.raises(UserError) as exc:
        identify(list(argv), env if env is not None else ENV, gpus=0, numa_nodes=1, mpi="openmpi")
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


# ---- what is not a known launcher ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    [], ["python", "train.py"], ["python3", "-m", "mypkg.train"], ["torchrun", "--nproc_per_node=2", "t.py"],
    ["python", "-m", "torch.distributed.run", "t.py"], ["accelerate", "config"], ["accelerate", "env"],
    ["python", "-c", "import x"], ["./mpirun-wrapper.sh", "-np", "2"], ["bash", "-c", "mpirun -np 2 x"],
])
def test_not_a_known_launcher(argv: List[str]) -> None:
    assert identify(argv, ENV) is None


# ---- torch.distributed.launch --------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, n", [
    (["python", "-m", "torch.distributed.launch", "--nproc_per_node=2", "--use-env", "train.py"], 2),
    (["python3.11", "-m", "torch.distributed.launch", "--nproc-per-node", "3", "--use_env", "t.py"], 3),
    (["/opt/venv/bin/python", "-u", "-m", "torch.distributed.launch", "--nproc_per_node", "4", "t.py"], 4),
    (["python", "-mtorch.distributed.launch", "--nnodes=1", "--nproc_per_node=2", "t.py", "--nproc_per_node=9"], 2),
    (["python", "-m", "torch.distributed.launch", "t.py"], 1),
    (["python", "-m", "torch.distributed.launch", "--nproc_per", "2", "--use-env", "t.py"], 2),  # argparse prefix
    (["python", "-m", "torch.distributed.launch", "--nproc_per_node=cpu", "--use-env", "t.py"], None),
])
def test_torch_distributed_launch_counts(argv: List[str], n: Optional[int]) -> None:
    import os

    got = ident(*argv)
    assert got.name == "torch.distributed.launch"
    assert got.local_ranks == (n if n is not None else os.cpu_count())
    assert not got.binds and got.threads is None
    assert got.argv == tuple(argv)


def test_torch_distributed_launch_rank_argument_style() -> None:
    legacy = ident("python", "-m", "torch.distributed.launch", "--nproc_per_node=2", "t.py")
    assert legacy.rank_arg == "--local-rank"
    assert any("--local-rank" in n for n in legacy.notes)
    modern = ident("python", "-m", "torch.distributed.launch", "--nproc_per_node=2", "--use_env", "t.py")
    assert modern.rank_arg is None and modern.notes == ()


def test_torch_distributed_launch_env_and_gpu_counts() -> None:
    env = dict(ENV, PET_NPROC_PER_NODE="3")
    assert ident("python", "-m", "torch.distributed.launch", "--use-env", "t.py", env=env).local_ranks == 3
    assert ident("python", "-m", "torch.distributed.launch", "--nproc_per_node=gpu", "t.py", gpus=4).local_ranks == 4
    assert ident("python", "-m", "torch.distributed.launch", "--nproc_per_node=auto", "t.py", gpus=8).local_ranks == 8
    unknown = ident("python", "-m", "torch.distributed.launch", "--nproc_per_node=gpu", "t.py", gpus=None)
    assert unknown.local_ranks is None and unknown.notes


def test_torch_distributed_launch_numa_binding_is_the_launchers() -> None:
    got = ident("python", "-m", "torch.distributed.launch", "--numa-binding=node", "--nproc_per_node=2",
                "--use-env", "t.py")
    assert got.bound_by == "torch.distributed.launch --numa-binding=node"


@pytest.mark.parametrize("argv, words", [
    (["python", "-m", "torch.distributed.launch", "--nproc_per_node=two", "t.py"], "whole number"),
    (["python", "-m", "torch.distributed.launch", "--nproc_per_node=0", "t.py"], "at least 1"),
    (["python", "-m", "torch.distributed.launch", "--nproc_per_node=99999", "t.py"], "1024"),
    (["python", "-m", "torch.distributed.launch", "--bogus", "t.py"], "unknown option --bogus"),
    (["python", "-m", "torch.distributed.launch", "--nproc_per_node"], "needs a value"),
    (["python", "-m", "torch.distributed.launch", "--use-env"], "no training script"),
    (["python", "-m", "torch.distributed.launch", "--nproc_per_node=gpu", "t.py"], "no GPU"),
    (["python", "-m", "torch.distributed.launch", "--no-python", "./a.out"], "needs --use-env"),
])
def test_torch_distributed_launch_bad_input(argv: List[str], words: str) -> None:
    assert words in bad(*argv)


# ---- accelerate launch ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, n", [
    (["accelerate", "launch", "--multi_gpu", "--num_processes", "2", "t.py"], 2),
    (["accelerate", "launch", "--multi-gpu", "--num-processes=4", "t.py", "--num_processes", "9"], 4),
    (["accelerate-launch", "--multi_gpu", "--num_processes=2", "t.py"], 2),
    (["python", "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes=2", "t.py"], 2),
    (["python3", "-m", "accelerate.commands.accelerate_cli", "launch", "--multi_gpu", "--num_processes=2", "t.py"], 2),
    (["/usr/bin/python3", "/usr/local/bin/accelerate", "launch", "--multi_gpu", "--num_processes=2", "t.py"], 2),
    (["accelerate", "launch", "--multi_gpu", "--num_processes=8", "--num_machines=2", "t.py"], 4),
    (["accelerate", "launch", "--use_fsdp", "--num_processes=2", "t.py"], 2),
    (["accelerate", "launch", "--cpu", "--num_processes", "2", "t.py"], 1),  # simple launcher: one process
    (["accelerate", "launch", "--cpu", "--multi_gpu", "--num_processes", "2", "t.py"], 1),
    (["accelerate", "launch", "-m", "mypkg.train", "--num_processes", "5"], 1),  # the module's own argument
    (["accelerate", "launch", "--mixed_precision", "bf16", "t.py"], 1),
])
def test_accelerate_counts(argv: List[str], n: int) -> None:
    got = ident(*argv)
    assert got.name == "accelerate launch"
    assert got.local_ranks == n and not got.binds and got.threads is None


def test_accelerate_single_process_with_many_requested_says_so() -> None:
    got = ident("accelerate", "launch", "--cpu", "--num_processes", "2", "t.py")
    assert got.local_ranks == 1 and any("one process" in n for n in got.notes)


def test_accelerate_num_processes_from_gpus_when_not_given() -> None:
    assert ident("accelerate", "launch", "--multi_gpu", "t.py", gpus=4).local_ranks == 4
    assert ident("accelerate", "launch", "--num_processes=2", "t.py", gpus=2).local_ranks == 2  # multi-GPU by itself
    unknown = ident("accelerate", "launch", "--multi_gpu", "t.py", gpus=None)
    assert unknown.local_ranks is None and unknown.notes


def test_accelerate_threads_and_affinity_are_the_users() -> None:
    got = ident("accelerate", "launch", "--num_cpu_threads_per_process", "3", "--multi_gpu", "--num_processes=2",
                "t.py")
    assert got.threads == 3 and not got.binds
    aff = ident("accelerate", "launch", "--enable_cpu_affinity", "--multi_gpu", "--num_processes=2", "t.py", gpus=2)
    assert aff.bound_by == "accelerate launch --enable_cpu_affinity"
    assert ident("accelerate", "launch", "--enable-cpu-affinity", "t.py", gpus=None).binds
    # accelerate binds only when torch sees CUDA: on a host without GPUs hosttune binds, and says why
    cpu_host = ident("accelerate", "launch", "--enable_cpu_affinity", "--multi_gpu", "--num_processes=2", "t.py")
    assert not cpu_host.binds and any("only on GPU hosts" in n for n in cpu_host.notes)


def _config(home: Path, text: str, name: str = "default_config.yaml") -> Path:
    path = home / ".cache" / "huggingface" / "accelerate" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_accelerate_default_config_file(tmp_path: Path) -> None:
    env = dict(ENV, HOME=str(tmp_path))
    assert accelerate_default_config(env) == str(tmp_path / ".cache/huggingface/accelerate/default_config.yaml")
    assert accelerate_default_config(dict(env, HF_HOME="/hf")) == "/hf/accelerate/default_config.yaml"
    assert accelerate_default_config(dict(env, XDG_CACHE_HOME="/xdg")) == "/xdg/huggingface/accelerate/" \
                                                                         "default_config.yaml"
    _config(tmp_path, "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_processes: 2\n"
                      "num_machines: 1\nuse_cpu: true\nenable_cpu_affinity: true\n")
    got = ident("accelerate", "launch", "t.py", env=env, gpus=1)
    # MULTI_CPU without mpirun_config runs the simple launcher: one process, and accelerate would bind it
    assert got.local_ranks == 1 and got.binds and any("default_config.yaml" in n for n in got.notes)
    _config(tmp_path, "distributed_type: MULTI_GPU\nnum_processes: 3\nnum_machines: 1\n")
    assert ident("accelerate", "launch", "t.py", env=env).local_ranks == 3
    assert ident("accelerate", "launch", "--num_processes", "2", "t.py", env=env).local_ranks == 2  # flag wins
    # --cpu skips the default config (accelerate reads it only without --cpu)
    assert ident("accelerate", "launch", "--cpu", "t.py", env=env).local_ranks == 1
    _config(tmp_path, "distributed_type: MULTI_CPU\nnum_processes: 4\nnum_machines: 2\nuse_cpu: true\n"
                      "mpirun_config:\n  mpirun_hostfile: /etc/hosts.mpi\n")
    mpi = ident("accelerate", "launch", "t.py", env=env)
    assert mpi.local_ranks == 2 and mpi.binds


def test_accelerate_explicit_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "ddp.yaml"
    cfg.write_text("distributed_type: MULTI_GPU\nnum_processes: 2\n")
    assert ident("accelerate", "launch", "--config_file", str(cfg), "t.py").local_ranks == 2
    js = tmp_path / "ddp.json"
    js.write_text(json.dumps({"distributed_type": "MULTI_GPU", "num_processes": 4}))
    assert ident("accelerate", "launch", "--config-file", str(js), "t.py").local_ranks == 4
    cfg.write_text("distributed_type: MULTI_GPU\nnum_processes: -1\n")  # accelerate asks for --num_processes
    assert ident("accelerate", "launch", "--config_file", str(cfg), "t.py", gpus=None).local_ranks is None


def test_accelerate_bad_config_is_one_line(tmp_path: Path) -> None:
    assert "no such file" in bad("accelerate", "launch", "--config_file", str(tmp_path / "nope.yaml"), "t.py")
    broken = tmp_path / "broken.yaml"
    broken.write_text("num_processes: [1,\n")
    assert str(broken) in bad("accelerate", "launch", "--config_file", str(broken), "t.py")
    dup = tmp_path / "dup.yaml"
    dup.write_text("num_processes: 2\nnum_processes: 3\n")
    assert "duplicate key" in bad("accelerate", "launch", "--config_file", str(dup), "t.py")
    huge = tmp_path / "huge.yaml"
    huge.write_bytes(b"# " + b"x" * (2 << 20))
    assert "huge.yaml" in bad("accelerate", "launch", "--config_file", str(huge), "t.py")
    wrong = tmp_path / "list.yaml"
    wrong.write_text("- 1\n- 2\n")
    assert "mapping" in bad("accelerate", "launch", "--config_file", str(wrong), "t.py")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("distributed_type: MULTI_GPU\nnum_processes: lots\n")
    assert "whole number" in bad("accelerate", "launch", "--config_file", str(cfg), "t.py")


@pytest.mark.parametrize("argv, words", [
    (["accelerate", "launch", "--num_processes", "x", "--multi_gpu", "t.py"], "--num_processes"),
    (["accelerate", "launch", "--num_processes", "0", "--multi_gpu", "t.py"], "at least 1"),
    (["accelerate", "launch", "--num_cpu_threads_per_process", "-2", "t.py"], "at least 1"),
    (["accelerate", "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "4", "t.py"], "no rank"),
    (["accelerate", "launch", "--cpu=1", "t.py"], "takes no value"),
    (["accelerate", "launch", "--num_processes"], "needs a value"),
])
def test_accelerate_bad_input(argv: List[str], words: str) -> None:
    assert words in bad(*argv)


# ---- deepspeed -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, gpus, numa, n", [
    (["deepspeed", "--num_gpus", "2", "t.py"], 0, 1, 2),
    (["deepspeed", "--num_accelerators=4", "t.py"], 8, 2, 4),
    (["deepspeed", "t.py"], 8, 2, 8),  # every GPU
    (["deepspeed", "t.py"], 0, 2, 2),  # CPU accelerator: one rank per NUMA node with cores
    (["deepspeed", "t.py"], 0, None, None),
    (["deepspeed", "--include", "localhost:0,2", "t.py"], 4, 1, 2),
    (["deepspeed", "-i", "localhost", "t.py"], 4, 1, 4),
    (["deepspeed", "--exclude", "localhost:1", "t.py"], 4, 1, 3),
    (["deepspeed", "--include", "worker-0:0@worker-1:0", "t.py"], 4, 1, None),
    (["ds", "--num_gpus=2", "t.py", "--num_gpus", "7"], 0, 1, 2),
    (["python", "-m", "deepspeed.launcher.runner", "--num_gpus", "2", "t.py"], 0, 1, 2),
])
def test_deepspeed_counts(argv: List[str], gpus: int, numa: Optional[int], n: Optional[int]) -> None:
    got = ident(*argv, gpus=gpus, numa=numa)
    assert got.name == "deepspeed" and got.local_ranks == n and not got.binds
    assert got.rank_arg == "--local_rank"


def test_deepspeed_local_size_and_no_local_rank() -> None:
    assert ident("deepspeed", "t.py", env=dict(ENV, LOCAL_SIZE="3"), gpus=0).local_ranks == 3
    assert ident("deepspeed", "--no_local_rank", "--num_gpus=2", "t.py").rank_arg is None


def test_deepspeed_hostfile_means_other_nodes(tmp_path: Path) -> None:
    hosts = tmp_path / "hostfile"
    hosts.write_text("worker-0 slots=4\nworker-1 slots=4\n")
    got = ident("deepspeed", "--hostfile", str(hosts), "t.py", gpus=4)
    assert got.local_ranks is None and any("hostfile" in n for n in got.notes)
    assert ident("deepspeed", "-H", str(hosts), "--num_gpus", "2", "t.py").local_ranks == 2


def test_deepspeed_bind_cores_to_rank_is_the_launchers() -> None:
    got = ident("deepspeed", "--bind_cores_to_rank", "--bind_core_list", "0-7", "--num_gpus", "2", "t.py")
    assert got.binds and got.threads == 4
    assert ident("deepspeed", "--bind_cores_to_rank", "--num_gpus", "2", "t.py").threads is None


@pytest.mark.parametrize("argv, words", [
    (["deepspeed", "--num_gpus", "two", "t.py"], "whole number"),
    (["deepspeed", "--num_gpus", "2", "--include", "localhost:0", "t.py"], "cannot be combined"),
    (["deepspeed", "--include", "localhost:a,b", "t.py"], "whole numbers"),
    (["deepspeed", "--exclude", "localhost", "t.py"], "no rank"),
    (["deepspeed", "--bogus", "t.py"], "unknown option"),
])
def test_deepspeed_bad_input(argv: List[str], words: str) -> None:
    assert words in bad(*argv)


# ---- mpirun / mpiexec ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, n", [
    (["mpirun", "-np", "2", "python", "t.py"], 2),
    (["mpiexec", "-n", "4", "python", "t.py", "-np", "9"], 4),
    (["orterun", "--np", "3", "--allow-run-as-root", "--oversubscribe", "python", "t.py"], 3),
    (["prterun", "-c", "2", "python", "t.py"], 2),
    (["mpirun", "-np", "8", "-npernode", "2", "-H", "a,b,c,d", "python", "t.py"], 2),
    (["mpirun", "-np", "8", "--npernode", "4", "--hostfile", "hosts", "python", "t.py"], 4),
    (["mpiexec.hydra", "-n", "8", "-ppn", "2", "-f", "hosts", "python", "t.py"], 2),
    (["mpirun", "-np", "8", "--map-by", "ppr:2:node", "-H", "a,b,c,d", "python", "t.py"], 2),
    (["mpirun", "-np", "8", "-H", "a,b", "python", "t.py"], None),  # spread over two hosts: unknown here
    (["mpirun", "-np", "2", "-H", "localhost:2", "python", "t.py"], 2),
    (["mpirun", "python", "t.py"], None),  # one rank per slot: counted by MPI
    (["mpirun", "-np", "2", "-mca", "btl", "self,tcp", "-x", "FOO", "python", "t.py"], 2),
    (["mpirun", "-np", "1", "python", "a.py", ":", "-np", "1", "python", "b.py"], None),  # MPMD
])
def test_mpirun_counts(argv: List[str], n: Optional[int]) -> None:
    got = ident(*argv)
    assert got.name == "mpirun" and got.local_ranks == n


def test_mpirun_inside_a_multinode_allocation() -> None:
    env = dict(ENV, SLURM_JOB_NUM_NODES="4")
    assert ident("mpirun", "-np", "8", "python", "t.py", env=env).local_ranks is None
    assert ident("mpirun", "-np", "8", "-npernode", "2", "python", "t.py", env=env).local_ranks == 2


def test_open_mpi_default_binding_is_replaced_by_hosttunes() -> None:
    got = ident("mpirun", "-np", "2", "--allow-run-as-root", "python", "t.py", mpi="openmpi")
    assert not got.binds
    assert got.argv == ("mpirun", "--bind-to", "none", "-np", "2", "--allow-run-as-root", "python", "t.py")
    assert any("--bind-to none" in n for n in got.notes)


@pytest.mark.parametrize("opts", [
    ["--bind-to", "core"], ["-bind-to", "socket"], ["--bind-to", "hwthread:overload-allowed"], ["--cpu-set", "0,1"],
    ["-cpu-set", "0-3"], ["--rankfile", "rf"], ["--map-by", "ppr:1:node:PE=2"], ["--cpus-per-proc", "2"],
    ["-binding", "cpu:cores"],
])
def test_mpi_binding_asked_by_the_user_is_mpis(opts: List[str]) -> None:
    for flavour in ("openmpi", "mpich", None):
        got = ident("mpirun", "-np", "2", *opts, "python", "t.py", mpi=flavour)
        assert got.binds, (opts, flavour)
        assert got.argv == ("mpirun", "-np", "2", *opts, "python", "t.py")  # untouched
        assert got.bound_by is not None and got.bound_by.startswith("mpirun -") and opts[1] in got.bound_by


def test_open_mpi_default_binding_stays_for_ranks_that_are_not_python() -> None:
    got = ident("mpirun", "-np", "2", "./a.out", "--threads", "4", mpi="openmpi")
    assert got.binds and "none" not in got.argv and "not Python" in (got.bound_by or "")
    assert not ident("mpirun", "-np", "2", "/opt/venv/bin/python3.11", "-u", "t.py", mpi="openmpi").binds


def test_mpi_bind_to_none_given_means_hosttune_binds() -> None:
    got = ident("mpirun", "--bind-to", "none", "-np", "2", "python", "t.py")
    assert not got.binds and got.argv.count("--bind-to") == 1


def test_other_mpis_defaults() -> None:
    mpich = ident("mpiexec", "-n", "2", "python", "t.py", mpi="mpich")
    assert not mpich.binds and "none" not in mpich.argv  # Hydra binds nothing by default
    assert ident("mpiexec", "-n", "2", "python", "t.py", mpi="mpich", env=dict(ENV, HYDRA_BINDING="core")).binds
    assert ident("mpirun", "-n", "2", "python", "t.py", mpi="intel").binds  # I_MPI_PIN is on by default
    assert not ident("mpirun", "-n", "2", "python", "t.py", mpi="intel", env=dict(ENV, I_MPI_PIN="off")).binds
    unknown = ident("mpirun", "-n", "2", "python", "t.py", mpi=None, env=dict(ENV, PATH="/nonexistent"))
    assert not unknown.binds and any("flavour unknown" in n for n in unknown.notes)


def test_mpi_thread_setting_on_the_command_line() -> None:
    assert ident("mpirun", "-np", "2", "-x", "OMP_NUM_THREADS=3", "python", "t.py").threads == 3
    assert ident("mpiexec", "-n", "2", "-genv", "OMP_NUM_THREADS", "2", "python", "t.py", mpi="mpich").threads == 2
    assert ident("mpirun", "-np", "2", "-x", "OMP_NUM_THREADS", "python", "t.py").threads is None  # the env's own


@pytest.mark.parametrize("argv, words", [
    (["mpirun", "-np", "two", "python", "t.py"], "whole number"),
    (["mpirun", "-np", "0", "python", "t.py"], "at least 1"),
    (["mpirun", "-np", "2", "-npernode", "x", "python", "t.py"], "-npernode"),
    (["mpirun", "-np"], "needs a value"),
    (["mpirun", "-np", "2", "-x", "OMP_NUM_THREADS=many", "python", "t.py"], "OMP_NUM_THREADS"),
])
def test_mpirun_bad_input(argv: List[str], words: str) -> None:
    assert words in bad(*argv)


def test_mpi_flavour_from_the_link(tmp_path: Path) -> None:
    for name in ("orterun", "mpiexec.mpich"):
        (tmp_path / name).write_text("")
        (tmp_path / name).chmod(0o755)
    (tmp_path / "mpirun").symlink_to(tmp_path / "orterun")
    (tmp_path / "mpiexec").symlink_to(tmp_path / "mpiexec.mpich")
    env = {"PATH": str(tmp_path)}
    assert mpi_flavour("mpirun", env) == "openmpi"
    assert mpi_flavour("mpiexec", env) == "mpich"
    assert mpi_flavour("prterun", env) == "openmpi"
    assert mpi_flavour("mpirun", {"PATH": str(tmp_path / "none")}) is None


def test_mpi_flavour_of_this_hosts_mpirun() -> None:
    import shutil
    import subprocess

    if shutil.which("mpirun") is None:
        pytest.skip("no mpirun on this host")
    version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    want = "openmpi" if "Open MPI" in version else "mpich" if "HYDRA" in version.upper() else None
    assert mpi_flavour("mpirun", {"PATH": "/usr/bin:/bin"}) == want


# ---- srun ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, env, n", [
    (["srun", "-n2", "-N", "1", "python", "t.py"], {}, 2),
    (["srun", "--ntasks=4", "--nodes=1", "python", "t.py"], {}, 4),
    (["srun", "-n", "8", "--ntasks-per-node=2", "python", "t.py"], {}, 2),
    (["srun", "-n", "8", "python", "t.py"], {"SLURM_JOB_NUM_NODES": "1"}, 8),
    (["srun", "-n", "8", "-N", "4", "python", "t.py"], {}, None),
    (["srun", "-n", "8", "--mpi=pmix", "-p", "gpu", "python", "t.py", "-n", "3"], {}, None),
])
def test_srun_counts(argv: List[str], env: Dict[str, str], n: Optional[int]) -> None:
    got = ident(*argv, env=dict(ENV, **env))
    assert got.name == "srun" and got.local_ranks == n


def test_srun_cpu_bind() -> None:
    assert ident("srun", "--cpu-bind=cores", "-n2", "python", "t.py").binds
    assert ident("srun", "--cpu_bind", "map_cpu:0,1", "-n2", "python", "t.py").binds
    assert not ident("srun", "--cpu-bind=none", "-n2", "python", "t.py").binds
    assert not ident("srun", "--cpu-bind=verbose", "-n2", "python", "t.py").binds
    assert ident("srun", "-n2", "python", "t.py", env=dict(ENV, SLURM_CPU_BIND="cores")).binds
    assert "whole number" in bad("srun", "-n", "x", "python", "t.py")


def test_to_dict_is_json() -> None:
    got = ident("mpirun", "-np", "2", "python", "t.py")
    assert json.loads(json.dumps(got.to_dict()))["local_ranks"] == 2


# ---- the option tables against each launcher's own parser ----------------------------------------------------

def _parser_flags(parser: "object") -> Dict[str, int]:
    out = {}
    for action in parser._actions:  # type: ignore[attr-defined]
        for name in action.option_strings:
            out[name] = 0 if action.nargs == 0 else 1
    return out


def test_accelerate_flags_match_accelerates_parser() -> None:
    pytest.importorskip("accelerate")
    from accelerate.commands.launch import launch_command_parser

    from hosttune.launch.launchers import _ACCELERATE_FLAGS, _accelerate_canon

    theirs = {_accelerate_canon(n) for n, k in _parser_flags(launch_command_parser()).items() if k == 0}
    assert theirs == set(_ACCELERATE_FLAGS)


def test_deepspeed_options_match_deepspeeds_parser() -> None:
    pytest.importorskip("deepspeed")
    import argparse
    import unittest.mock

    from deepspeed.launcher import runner

    from hosttune.launch.launchers import _DEEPSPEED_OPTIONS

    captured = {}
    real_parse = argparse.ArgumentParser.parse_args

    def grab(self: argparse.ArgumentParser, args: object = None, namespace: object = None) -> object:
        captured.update(_parser_flags(self))
        return real_parse(self, ["t.py"])

    with unittest.mock.patch.object(argparse.ArgumentParser, "parse_args", grab):
        runner.parse_args(["t.py"])
    ours = {name: (0 if spec[1] == 0 else 1) for name, spec in _DEEPSPEED_OPTIONS.items()}
    # ours also keeps the elastic options of deepspeed < 0.19 (--elastic_training, --min/max_elastic_nodes, --comment)
    assert {name: ours.get(name) for name in captured} == captured


def test_torch_distributed_launch_options_match_torchs_parser() -> None:
    pytest.importorskip("torch")
    import argparse
    import unittest.mock

    from torch.distributed import launch

    from hosttune.launch.torchrun import TORCHRUN_OPTIONS

    theirs: Dict[str, int] = {}
    real_parse = argparse.ArgumentParser.parse_args

    def grab(self: argparse.ArgumentParser, args: object = None, namespace: object = None) -> object:
        theirs.update(_parser_flags(self))
        return real_parse(self, ["t.py"])

    with unittest.mock.patch.object(argparse.ArgumentParser, "parse_args", grab):
        launch.parse_args(["t.py"])
    ours = {name: (1 if opt.takes_value else 0) for name, opt in TORCHRUN_OPTIONS.items()}
    ours.update({"--use-env": 0, "--use_env": 0})
    assert theirs == ours


@pytest.mark.parametrize("command", [
    ["mpirun", "-np", "two", "python", "t.py"],
    ["accelerate", "launch", "--config_file", "/nonexistent/accelerate.yaml", "t.py"],
    ["python", "-m", "torch.distributed.launch", "--nproc_per_node=0", "t.py"],
])
def test_exec_refuses_a_bad_launcher_line_in_one_line(command: List[str]) -> None:
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "hosttune", "exec", "--dry-run", "--", *command], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
