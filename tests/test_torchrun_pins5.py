"""Pins of hosttune/launch/torchrun.py (issue 21, mutation round 5), in-process: where `python -m MOD` starts its
arguments, torchrun's local world size from --nproc-per-node (numbers, cpu, gpu, auto, bounds, PET_ variable), the
Python a script's `#!` line names, and the interpreter torchrun runs a script with."""

import types
from pathlib import Path
from typing import Any, List, Optional, Tuple

import pytest

from hosttune.errors import UserError
from hosttune.launch.launchers.base import MAX_NPROC_PER_NODE
from hosttune.launch.torchrun import _python_module_target, _shebang_python, nproc_per_node, parse_torchrun


@pytest.mark.parametrize("argv,want", [
    (["python3", "-m", "torch.distributed.run", "--x"], (3, "torch.distributed.run")),
    (["python3", "-mtorch.distributed.run", "a"], (2, "torch.distributed.run")),
    (["python3", "-u", "-W", "ignore", "-X", "dev", "-m", "m", "a"], (8, "m")),
    (["python3", "-m"], None),
    (["python3", "-c", "x", "-m", "m"], None),
    (["python3", "-", "-m", "m"], None),
    (["python3", "script.py", "-m", "m"], None),
    (["python3"], None),
])
def test_python_module_target(argv: List[str], want: Optional[Tuple[int, str]]) -> None:
    assert _python_module_target(argv) == want


def _facts(cpus: int = 6, gpus: int = 0) -> Any:
    return types.SimpleNamespace(cpu=types.SimpleNamespace(online=tuple(range(cpus))), gpus=[object()] * gpus)


def _n(value: Optional[str], facts: Any, env: Optional[dict] = None) -> int:
    argv = ["torchrun", *(["--nproc-per-node", value] if value is not None else []), "t.py"]
    env = env or {}
    t = parse_torchrun(argv, env)
    assert t is not None
    return nproc_per_node(t, env, facts)


def test_nproc_per_node_numbers_and_the_default() -> None:
    assert _n(None, _facts()) == 1
    assert _n("3", _facts()) == 3
    assert _n(None, _facts(), {"PET_NPROC_PER_NODE": "5"}) == 5
    assert _n(str(MAX_NPROC_PER_NODE), _facts()) == MAX_NPROC_PER_NODE


@pytest.mark.parametrize("value,cpus,gpus,want", [("cpu", 6, 2, 6), ("gpu", 6, 2, 2), ("auto", 6, 2, 2),
                                                  ("auto", 6, 0, 6), ("cpu", 0, 0, None)])
def test_nproc_per_node_words_count_the_hosts_cpus_or_gpus(value: str, cpus: int, gpus: int,
                                                          want: Optional[int]) -> None:
    import os

    assert _n(value, _facts(cpus, gpus)) == (want if want is not None else (os.cpu_count() or 1))


@pytest.mark.parametrize("value,msg", [
    ("0", "torchrun: --nproc-per-node must be at least 1, got '0'"),
    ("-2", "torchrun: --nproc-per-node must be at least 1, got '-2'"),
    ("many", "torchrun: unsupported --nproc-per-node value 'many'"),
    ("gpu", "torchrun: --nproc-per-node=gpu but this host has no GPU"),
    (str(MAX_NPROC_PER_NODE + 1), f"torchrun: --nproc-per-node={MAX_NPROC_PER_NODE + 1} is more than the "
                                  f"{MAX_NPROC_PER_NODE} local ranks hosttune plans for"),
])
def test_nproc_per_node_refusals(value: str, msg: str) -> None:
    with pytest.raises(UserError) as err:
        _n(value, _facts(4, 0))
    assert str(err.value).startswith(msg)


@pytest.mark.parametrize("line,want", [
    ("#!/usr/bin/python3\n", "/usr/bin/python3"),
    ("#! /opt/py/bin/python3.11 -u\n", "/opt/py/bin/python3.11"),
    ("#!/bin/bash\n", None),
    ("#!\n", None),
    ("import os\n", None),
    ("# python3 is what runs this\n", None),  # a comment, not a #! line
    ("#!/usr/bin/env -S bash\n", None),
])
def test_shebang_python(tmp_path: Path, line: str, want: Optional[str]) -> None:
    p = tmp_path / "s"
    p.write_text(line + "print(1)\n")
    assert _shebang_python(str(p), {"PATH": ""}) == want
    assert _shebang_python(str(tmp_path / "missing"), {}) is None


def test_shebang_env_python_is_looked_up_on_path(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    py = bindir / "python3"
    py.write_text("#!/bin/sh\n")
    py.chmod(0o755)
    p = tmp_path / "s"
    p.write_text("#!/usr/bin/env -S python3 -u\n")
    assert _shebang_python(str(p), {"PATH": str(bindir)}) == str(py)
    assert _shebang_python(str(p), {"PATH": str(tmp_path / "none")}) == "python3"  # not found: the name as given
