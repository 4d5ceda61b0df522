"""The planner and the launchers as packages: every name callers import from the old flat modules still imports
from the package, each launcher is one module behind identify()'s registry, and no module or function regrows past
the size rules (modules < 600 lines, functions < 60 lines)."""

import ast
import importlib
from pathlib import Path

import pytest

import hosttune

PKG = Path(hosttune.__file__).resolve().parent

PLAN_NAMES = ("ALLOC_CONF", "ALLOC_CONF_NAMES", "CUDA_ALLOC_CONF", "Core", "DEBUG_ENV", "DETERMINISTIC_ENV",
              "INTEL_KMP", "MALLOC_LIBS", "NOT_THE_USERS", "RankPlan", "alloc_conf_names", "common_env", "cpulist",
              "kept_line", "launcher_default", "resolve", "resolve_all", "settle", "users_choice", "_layout",
              "_common", "_topology", "_threads", "_balanced", "_chunks", "_preload_library", "_choose_allocator",
              "_alloc_conf_env", "_dl_followers", "_threads_of", "_visible_gpus", "_Topo", "_Slot", "_node_plan")
LAUNCHER_NAMES = ("KnownLauncher", "identify", "accelerate_default_config", "read_accelerate_config", "mpi_flavour",
                  "DEEPSPEED_HOSTFILE", "ACCELERATE_CONFIG_LIMIT", "_ACCELERATE_FLAGS", "_accelerate_canon",
                  "_DEEPSPEED_OPTIONS", "_scan", "_count", "_last", "_locate")


@pytest.mark.parametrize("module,names", [("hosttune.plan", PLAN_NAMES),
                                          ("hosttune.launch.launchers", LAUNCHER_NAMES)])
def test_the_old_names_still_import(module: str, names: tuple) -> None:
    mod = importlib.import_module(module)
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, missing


def test_each_launcher_is_one_module_behind_the_registry() -> None:
    from hosttune.launch import launchers

    assert set(launchers._REGISTRY) == {"torch.distributed.launch", "accelerate launch", "deepspeed", "mpirun",
                                        "srun"}
    for name in ("torch_launch", "accelerate", "deepspeed", "mpirun", "srun"):
        assert (PKG / "launch" / "launchers" / f"{name}.py").is_file()
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}
    got = launchers.identify(["srun", "-n", "2", "-N", "1", "python3", "t.py"], env)
    assert got is not None and got.name == "srun" and got.local_ranks == 2


@pytest.mark.parametrize("folder", ["plan", "launch/launchers"])
def test_modules_and_functions_stay_small(folder: str) -> None:
    for path in sorted((PKG / folder).glob("*.py")):
        text = path.read_text()
        assert len(text.splitlines()) < 600, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                assert size < 60, f"{path.name}:{node.name} is {size} lines"
