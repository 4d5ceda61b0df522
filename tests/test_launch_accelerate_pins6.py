"""Pins for hosttune/launch/launchers/accelerate.py (issue 21, round 6): how many ranks `accelerate launch` starts on
this node (its options, its config file, the host's GPUs), who binds them, the thread count it was given, where its
default config lives, and the one-line errors for a config or count it would refuse. In-process, through
`hosttune.launch.launchers.identify` and the module's own functions."""

import json
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from hosttune.errors import UserError
from hosttune.launch.launchers import accelerate as acc
from hosttune.launch.launchers import identify

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home-pins6"}


def launch(*args: str, gpus: Optional[int] = 4, environ: Optional[Dict[str, str]] = None) -> Any:
    got = identify(["accelerate", "launch", *args], environ or ENV, gpus=gpus, numa_nodes=2, mpi="openmpi")
    assert got is not None and got.name == "accelerate launch"
    return got


def config(tmp_path: Path, text: str, name: str = "acc.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# ---- the default config file -----------------------------------------------------------------------------------------

def test_default_config_is_under_hf_home_first() -> None:
    env = {"HF_HOME": "/hf", "XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"}
    assert acc.accelerate_default_config(env) == "/hf/accelerate/default_config.yaml"


def test_default_config_falls_back_to_xdg_cache_then_home_cache() -> None:
    assert (acc.accelerate_default_config({"XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"})
            == "/xdg/huggingface/accelerate/default_config.yaml")
    assert (acc.accelerate_default_config({"HOME": "/home/u"})
            == "/home/u/.cache/huggingface/accelerate/default_config.yaml")
    assert (acc.accelerate_default_config({"HF_HOME": "", "XDG_CACHE_HOME": "", "HOME": "/h"})
            == "/h/.cache/huggingface/accelerate/default_config.yaml")


def test_default_config_is_used_unless_cpu(tmp_path: Path) -> None:
    home = tmp_path / "hf"
    (home / "accelerate").mkdir(parents=True)
    (home / "accelerate" / "default_config.yaml").write_text("distributed_type: MULTI_GPU\nnum_processes: 6\n")
    env = dict(ENV, HF_HOME=str(home))
    got = launch("t.py", environ=env)
    assert got.local_ranks == 6
    assert f"accelerate config {home}/accelerate/default_config.yaml (distributed_type MULTI_GPU)" in got.notes
    cpu = launch("--cpu", "t.py", environ=env)
    assert cpu.local_ranks == 1 and not any("accelerate config" in n for n in cpu.notes)


# ---- reading a config ------------------------------------------------------------------------------------------------

def test_read_config_yaml_and_json(tmp_path: Path) -> None:
    assert acc.read_accelerate_config(config(tmp_path, "num_processes: 3\n")) == {"num_processes": 3}
    assert acc.read_accelerate_config(config(tmp_path, "", "empty.yaml")) == {}
    path = config(tmp_path, json.dumps({"num_processes": 5, "distributed_type": "MULTI_GPU"}), "c.json")
    assert acc.read_accelerate_config(path) == {"num_processes": 5, "distributed_type": "MULTI_GPU"}


def test_read_config_errors_name_the_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(UserError) as e:
        acc.read_accelerate_config(missing)
    assert str(e.value) == f"accelerate launch: cannot read its config {missing}: No such file or directory"
    bad = config(tmp_path, "{not json", "bad.json")
    with pytest.raises(UserError) as e:
        acc.read_accelerate_config(bad)
    assert str(e.value).startswith(f"{bad}: not valid JSON: ")
    lst = config(tmp_path, "[1, 2]", "list.json")
    with pytest.raises(UserError) as e:
        acc.read_accelerate_config(lst)
    assert str(e.value) == f"{lst}: an accelerate config must be a mapping of settings"
    y = config(tmp_path, "- 1\n- 2\n", "list.yaml")
    with pytest.raises(UserError) as e:
        acc.read_accelerate_config(y)
    assert str(e.value) == f"{y}:1: an accelerate config must be a YAML mapping of settings, not list"


def test_a_runaway_config_is_refused_not_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * acc.ACCELERATE_CONFIG_LIMIT + "\n")
    with pytest.raises(UserError) as e:
        acc.read_accelerate_config(str(big))
    assert str(e.value).startswith(f"accelerate launch: cannot read its config {big}: ")
    assert acc.ACCELERATE_CONFIG_LIMIT == 1 << 20


def test_a_missing_config_file_option_is_one_line(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.yaml")
    with pytest.raises(UserError) as e:
        launch("--config_file", missing, "t.py")
    assert str(e.value) == f"accelerate launch: --config_file {missing}: no such file"
    with pytest.raises(UserError) as e:
        launch("--config-file", str(tmp_path), "t.py")  # a directory is not a file; the dashed spelling is the same
    assert str(e.value) == f"accelerate launch: --config_file {tmp_path}: no such file"


# ---- ranks, threads, binding -----------------------------------------------------------------------------------------

def test_without_a_config_accelerate_counts_the_gpus() -> None:
    got = launch("t.py", gpus=4)
    assert (got.local_ranks, got.bound_by, got.threads) == (4, None, None)
    assert got.notes == ()
    assert got.argv == ("accelerate", "launch", "t.py")
    one = launch("t.py", gpus=1)
    assert one.local_ranks == 1
    assert launch("t.py", gpus=0).local_ranks == 1


def test_unknown_gpu_count_and_no_num_processes_plans_from_local_rank() -> None:
    got = launch("--multi_gpu", "t.py", gpus=None)
    assert got.local_ranks is None
    assert got.notes == ("--num_processes not given: accelerate counts GPUs when it starts; ranks plan from "
                         "LOCAL_RANK",)


@pytest.mark.parametrize("spelling", ["--num_processes", "--num-processes"])
def test_num_processes_over_machines_is_the_local_count(spelling: str) -> None:
    got = launch("--multi_gpu", spelling, "8", "--num_machines", "2", "t.py")
    assert got.local_ranks == 4
    got = launch("--multi_gpu", f"{spelling}=6", "--num-machines=3", "t.py")
    assert got.local_ranks == 2
    got = launch("--multi_gpu", spelling, "7", "--num_machines", "2", "t.py")
    assert got.local_ranks == 3  # accelerate's own integer split


def test_fewer_processes_than_machines_leaves_no_rank_here() -> None:
    with pytest.raises(UserError) as e:
        launch("--multi_gpu", "--num_processes", "1", "--num_machines", "2", "t.py")
    assert str(e.value) == "accelerate launch: --num_processes 1 over --num_machines 2 leaves no rank here"


def test_num_processes_minus_one_means_count_the_gpus_later() -> None:
    got = launch("--multi_gpu", "--num_processes", "-1", "t.py", gpus=None)
    assert got.local_ranks is None
    got = launch("--num_processes", "-1", "t.py", gpus=3)
    assert got.local_ranks == 3  # still accelerate's default: every GPU


@pytest.mark.parametrize("value,msg", [
    ("x", "accelerate launch: --num_processes must be a whole number, got 'x'"),
    ("0", "accelerate launch: --num_processes must be at least 1, got 0"),
])
def test_bad_num_processes(value: str, msg: str) -> None:
    with pytest.raises(UserError) as e:
        launch("--multi_gpu", "--num_processes", value, "t.py")
    assert str(e.value) == msg


def test_bad_num_machines_and_threads() -> None:
    with pytest.raises(UserError) as e:
        launch("--multi_gpu", "--num_processes", "2", "--num_machines", "0", "t.py")
    assert str(e.value) == "accelerate launch: --num_machines must be at least 1, got 0"
    with pytest.raises(UserError) as e:
        launch("--num_cpu_threads_per_process", "two", "t.py")
    assert str(e.value) == "accelerate launch: --num_cpu_threads_per_process must be a whole number, got 'two'"


def test_a_huge_num_processes_over_many_machines_is_allowed() -> None:
    got = launch("--multi_gpu", "--num_processes", "4096", "--num_machines", "512", "t.py")
    assert got.local_ranks == 8


def test_num_cpu_threads_per_process_is_kept_and_said() -> None:
    got = launch("--multi_gpu", "--num_processes", "2", "--num_cpu_threads_per_process", "3", "t.py")
    assert got.threads == 3 and got.local_ranks == 2
    assert got.notes == ("--num_cpu_threads_per_process 3: each rank keeps OMP_NUM_THREADS=3",)
    dashed = launch("--num-cpu-threads-per-process=5", "t.py", gpus=1)
    assert dashed.threads == 5


def test_two_gpus_and_two_processes_turn_multi_gpu_on_by_themselves() -> None:
    assert launch("--num_processes", "2", "t.py", gpus=2).local_ranks == 2
    # one GPU: accelerate stays single-process, whatever --num_processes says
    one = launch("--num_processes", "2", "t.py", gpus=1)
    assert one.local_ranks == 1
    assert one.notes == ("accelerate runs one process here (--cpu/no multi-process mode); for CPU ranks use "
                         "--multi_gpu --num_processes N",)
    assert launch("--num_processes", "2", "t.py", gpus=None).local_ranks == 1


def test_cpu_flag_runs_one_process_even_with_multi_gpu() -> None:
    got = launch("--cpu", "--multi_gpu", "--num_processes", "4", "t.py")
    assert got.local_ranks == 1
    assert got.notes[-1].startswith("accelerate runs one process here")
    quiet = launch("--cpu", "--multi_gpu", "--num_processes", "1", "t.py")
    assert quiet.local_ranks == 1 and quiet.notes == ()


@pytest.mark.parametrize("flag", ["--use_deepspeed", "--use_fsdp", "--use_megatron_lm", "--multi_gpu",
                                  "--use-megatron-lm"])
@pytest.mark.parametrize("gpus", [8, 1, None])
def test_every_multi_process_mode_starts_num_processes(flag: str, gpus: Optional[int]) -> None:
    # one GPU (or none known): only the mode flag makes accelerate start more than one process
    assert launch(flag, "--num_processes", "3", "t.py", gpus=gpus).local_ranks == 3


def test_tpu_launch_is_planned_from_the_ranks_own_variables() -> None:
    got = launch("--tpu", "--num_processes", "8", "t.py")
    assert got.local_ranks is None
    assert got.notes == ("TPU launch: hosttune plans the ranks from their own variables",)
    assert launch("--tpu", "--cpu", "--num_processes", "8", "t.py").local_ranks == 1


def test_enable_cpu_affinity_on_a_gpu_host_means_accelerate_binds() -> None:
    got = launch("--multi_gpu", "--num_processes", "2", "--enable_cpu_affinity", "t.py", gpus=2)
    assert got.bound_by == "accelerate launch --enable_cpu_affinity" and got.binds
    assert launch("--enable-cpu-affinity", "t.py", gpus=None).bound_by == "accelerate launch --enable_cpu_affinity"


def test_enable_cpu_affinity_without_gpus_leaves_binding_to_hosttune() -> None:
    got = launch("--enable_cpu_affinity", "t.py", gpus=0)
    assert got.bound_by is None and not got.binds
    assert got.notes == ("--enable_cpu_affinity binds only on GPU hosts (accelerate's override_numa_affinity); this "
                         "one has none, so hosttune binds each rank",)


def test_the_configs_enable_cpu_affinity_binds_too(tmp_path: Path) -> None:
    path = config(tmp_path, "distributed_type: MULTI_GPU\nnum_processes: 2\nenable_cpu_affinity: true\n")
    got = launch("--config_file", path, "t.py")
    assert got.bound_by == "accelerate launch --enable_cpu_affinity" and got.local_ranks == 2
    off = config(tmp_path, "distributed_type: MULTI_GPU\nnum_processes: 2\nenable_cpu_affinity: false\n", "off.yaml")
    assert launch("--config_file", off, "t.py").bound_by is None


def test_config_values_apply_and_the_command_line_wins(tmp_path: Path) -> None:
    path = config(tmp_path, "distributed_type: MULTI_GPU\nnum_processes: 8\nnum_machines: 2\n")
    assert launch("--config_file", path, "t.py").local_ranks == 4
    assert launch("--config_file", path, "--num_processes", "4", "t.py").local_ranks == 2
    assert launch("--config_file", path, "--num_machines", "1", "t.py").local_ranks == 8
    lower = config(tmp_path, "distributed_type: multi_gpu\nnum_processes: 3\n", "lower.yaml")
    got = launch("--config_file", lower, "t.py")
    assert got.local_ranks == 3
    assert got.notes == (f"accelerate config {lower} (distributed_type MULTI_GPU)",)


def test_a_config_without_processes_or_with_an_unknown_type(tmp_path: Path) -> None:
    # with a config, the GPU count is not accelerate's default any more: the config's own num_processes is
    path = config(tmp_path, "distributed_type: MULTI_GPU\n")
    got = launch("--config_file", path, "t.py", gpus=4)
    assert got.local_ranks is None
    odd = config(tmp_path, "distributed_type: SOMETHING_NEW\nnum_processes: 4\n", "odd.yaml")
    got = launch("--config_file", odd, "t.py", gpus=4)
    assert got.local_ranks == 1  # not a multi-process type: one process
    none = config(tmp_path, "num_processes: 2\n", "none.yaml")
    got = launch("--config_file", none, "t.py", gpus=4)
    assert got.local_ranks == 1 and got.notes[0] == f"accelerate config {none} (distributed_type NO)"


def test_mpirun_config_with_a_hostfile_binds_through_mpirun(tmp_path: Path) -> None:
    path = config(tmp_path, "distributed_type: NO\nnum_processes: 8\nnum_machines: 2\nmpirun_config:\n"
                            "  mpirun_hostfile: /etc/hosts.txt\n  mpirun_ccl: 1\n")
    got = launch("--config_file", path, "t.py", gpus=0)
    assert got.local_ranks == 4
    assert got.bound_by == "accelerate launch (mpirun_config: mpirun --bind-to socket)"
    few = config(tmp_path, "distributed_type: NO\nnum_processes: 1\nnum_machines: 4\nmpirun_config:\n"
                           "  mpirun_hostfile: h\n", "few.yaml")
    assert launch("--config_file", few, "t.py", gpus=0).local_ranks == 1
    empty = config(tmp_path, "distributed_type: NO\nnum_processes: 2\nmpirun_config:\n  mpirun_hostfile: ''\n",
                   "empty.yaml")
    got = launch("--config_file", empty, "t.py", gpus=0)
    assert got.bound_by is None and got.local_ranks == 1


def test_options_are_scanned_up_to_the_script() -> None:
    # -m/-q are flags, -t takes a value, an unknown option takes one value; the script's own options are its own
    got = launch("-q", "-t", "x", "--unknown_opt", "7", "--multi_gpu", "--num_processes", "2", "t.py",
                 "--num_processes", "9")
    assert got.local_ranks == 2
    got = launch("-m", "pkg.train", "--num_processes", "5", gpus=1)
    assert got.local_ranks == 1 and got.argv[-3:] == ("pkg.train", "--num_processes", "5")


def test_the_multi_types_are_accelerates() -> None:
    assert acc._ACCELERATE_MULTI == ("MULTI_GPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA", "MULTI_XPU",
                                     "MULTI_HPU", "MULTI_NEURON")
    assert acc._accelerate_canon("--num-processes") == "--num_processes"
    assert acc._accelerate_canon("-m") == "-m"
    assert acc._paradigm(set(), {"x": 1}, "MULTI_NPU") == {"multi_gpu"}
    assert acc._paradigm(set(), None, "MULTI_GPU") == set()
    assert acc._paradigm({"cpu", "use_fsdp"}, {}, "DEEPSPEED") == {"use_fsdp"}
    assert acc._paradigm(set(), {}, "XLA") == {"tpu"}
    assert acc._paradigm(set(), {}, "MEGATRON_LM") == {"use_megatron_lm"}


def test_to_dict_carries_what_dry_run_shows() -> None:
    got = launch("--multi_gpu", "--num_processes", "2", "--num_cpu_threads_per_process", "2", "t.py", gpus=2)
    assert got.to_dict() == {
        "name": "accelerate launch", "local_ranks": 2, "bound_by": None, "threads": 2,
        "argv": ["accelerate", "launch", "--multi_gpu", "--num_processes", "2", "--num_cpu_threads_per_process", "2",
                 "t.py"],
        "notes": ["--num_cpu_threads_per_process 2: each rank keeps OMP_NUM_THREADS=2"], "rank_arg": None,
    }
