"""Pins for hosttune.launch.pythons.parent_python (issue 21, session 9 practice rounds): the interpreter torchrun runs
on, read from the caller's PARENT process, so each case starts a parent of the kind it needs and asks from a child:
a shell parent is no Python (None: the rank command must never be handed to bash or sh); a Python parent started
under another argv[0] is still recognised by its executable; $PYTHON_EXEC wins over both."""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

import hosttune
from hosttune.launch.pythons import is_python

REPO = str(Path(hosttune.__file__).resolve().parent.parent)
ASK = "from hosttune.launch.pythons import parent_python; print(repr(parent_python()))"
SH = shutil.which("sh")


def _env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_EXEC"}
    env["PYTHONPATH"] = REPO
    env.update(extra)
    return env


def _run(argv: List[str], env: Dict[str, str], executable: str) -> str:
    done = subprocess.run(argv, executable=executable, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(SH is None, reason="no sh")
def test_a_shell_parent_is_no_python() -> None:
    assert SH is not None
    assert not is_python(os.path.realpath(SH))
    # `; true` keeps sh alive as the parent (a lone command would be exec'd in its place)
    out = _run(["sh", "-c", '"$0" -c "$1"; true', sys.executable, ASK], _env(), SH)
    assert out == "None"


def test_a_python_parent_under_another_argv0_is_found_by_its_executable() -> None:
    # (such a parent's own sys.executable is empty: it is handed the interpreter's path)
    parent = f"import subprocess; subprocess.run([{sys.executable!r}, '-c', {ASK!r}], check=True)"
    out = _run(["my-trainer", "-c", parent], _env(), sys.executable)
    assert out == repr(os.path.realpath(sys.executable))


def test_python_exec_wins_over_the_parent() -> None:
    # the parent is a shell, which alone would answer None; as root the path passes the program gateway's trust rule
    # (the test's own interpreter, in root's directories) and comes back as it was given
    if SH is None:
        pytest.skip("no sh")
    exe = os.path.realpath(sys.executable)
    out = _run(["sh", "-c", '"$0" -c "$1"; true', sys.executable, ASK], _env(PYTHON_EXEC=exe), SH)
    assert out == repr(exe)
