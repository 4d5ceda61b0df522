"""What the launcher tests (tests/test_handoff.py, test_shim.py, test_launch_guardian.py, test_exec.py) share: a fake
`torchrun` (a small Python script) that stands in for the real one where only the launcher -> shim path matters (it
records the handoff it was given and starts one rank exactly as torchrun's --no-python mode does), `hosttune` run
isolated (-I) in a child process, the shim run on a given handoff, and waiting for a condition (never for a time)."""

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from hosttune.launch.torchrun import shim_argv

PY = sys.executable

FAKE_TORCHRUN = """#!{py} -I
import json, os, subprocess, sys
args = sys.argv[1:]
rank = args[args.index("--no-python") + 1:]
info = {{"handoff": os.environ.get("HOSTTUNE_HANDOFF")}}
if info["handoff"]:
    d, f = os.stat(os.path.dirname(info["handoff"])), os.lstat(info["handoff"])
    info.update(dir_uid=d.st_uid, dir_mode=d.st_mode & 0o7777, file_uid=f.st_uid, file_mode=f.st_mode & 0o7777)
with open(os.path.join(os.environ["FAKE_OUT"], "torchrun.json"), "w") as fh:
    json.dump(info, fh)
env = dict(os.environ, LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", RANK="0", WORLD_SIZE="1")
sys.exit(subprocess.call(rank, env=env))
"""


@pytest.fixture
def fake_torchrun(tmp_path: Path) -> Dict[str, str]:
    """The environment for a job through the fake torchrun: it is first on PATH, and writes into $FAKE_OUT."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tr = bin_dir / "torchrun"
    tr.write_text(FAKE_TORCHRUN.format(py=PY))
    tr.chmod(0o755)
    out = tmp_path / "fake-out"
    out.mkdir()
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}:{env.get('PATH', os.defpath)}"
    env["FAKE_OUT"] = str(out)
    return env


def hosttune(*args: str, env: Dict[str, str], cwd: Any = None,
             timeout: float = 120) -> "subprocess.CompletedProcess[str]":
    # -I: the launcher itself must not pick anything up from a hostile working directory either
    return subprocess.run([PY, "-I", "-m", "hosttune", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def _torchrun_job(*rank: str) -> List[str]:
    return ["exec", "--", "torchrun", "--nproc_per_node=1", "--no-python", *rank]


def shim_with_handoff(path: str, ran: Path, cwd: Any = None) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, HOSTTUNE_HANDOFF=path, LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
    return subprocess.run([*shim_argv(PY), "touch", str(ran)], env=env, capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def _wait_for(predicate: Any, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return bool(predicate())
