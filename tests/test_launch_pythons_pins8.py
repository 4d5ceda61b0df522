"""Pins for hosttune.launch.pythons.parent_python (issue 21, round-8 practice, HLAU8): a Python parent started by an
absolute path is answered by THAT path, as given, not by the file a link leads to: a venv's bin/python3 is a link to
the base interpreter, and only the venv's own path starts the venv (its site-packages, torch among them)."""

import os
import subprocess
import sys
from pathlib import Path

import hosttune

REPO = str(Path(hosttune.__file__).resolve().parent.parent)
ASK = "from hosttune.launch.pythons import parent_python; print(repr(parent_python()))"


def test_an_absolute_python_parent_is_answered_as_given_not_resolved(tmp_path: Path) -> None:
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    link = venv_bin / "python3"
    link.symlink_to(os.path.realpath(sys.executable))
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_EXEC"}
    env["PYTHONPATH"] = REPO
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {ASK!r}], check=True)"
    done = subprocess.run([str(link), "-c", parent], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{str(link)!r}\n"
    assert str(link) != os.path.realpath(link)
