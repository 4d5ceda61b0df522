"""The torch probe as root (hosttune/detect/torchenv.py, issue 11 item 1): no interpreter started as root sees the
caller's directory or a user's PYTHONPATH; it starts in / without the caller's code variables and imports only
what it needs.

The other user is played by `nobody` (conftest `other_user`); hosttune runs as root in a subprocess
(tests/_detecthelp.py)."""

import ast
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from _detecthelp import facts_json, fake_torch_site, hosttune, planted

from hosttune.detect import HostIO, torchenv
from hosttune.detect.hostio import child_env, trusted_path_dirs


def test_facts_as_root_in_another_users_directory_runs_none_of_their_modules(
        other_user: Any, tmp_path: Path, marker: Path) -> None:
    for name in ("json.py", "re.py", "os.py", "importlib/__init__.py", "importlib/util.py", "sitecustomize.py",
                 "usercustomize.py", "encodings/__init__.py", "torch/__init__.py"):
        other_user.write(name, planted(marker, name))
    other_user.write("torch/version.py", "__version__ = '6.6.6+planted'\ncuda = None\n")
    site = fake_torch_site(tmp_path / "site", "2.4.1+cpu")  # root's own, installed through PYTHONPATH
    env = dict(os.environ, PYTHONPATH=str(site))
    data = facts_json(hosttune("facts", "--json", "--python", sys.executable, cwd=other_user.home, env=env))
    assert not marker.exists(), marker.read_text()
    assert data["torch"] is not None and data["torch"]["error"] is None
    assert data["torch"]["version"] == "2.4.1+cpu"  # still found through (trusted) PYTHONPATH
    # The default interpreter (python3 on PATH) gets the same isolation.
    done = hosttune("facts", "--json", cwd=other_user.home, env=env)
    facts_json(done)
    assert not marker.exists(), marker.read_text()


def test_pythonpath_naming_another_users_directory_is_dropped_as_root(
        other_user: Any, marker: Path) -> None:
    for name in ("json.py", "re.py", "os.py", "sitecustomize.py", "torch/__init__.py"):
        other_user.write(f"site/{name}", planted(marker, name))
    other_user.write("site/torch/version.py", "__version__ = '6.6.6+planted'\ncuda = None\n")
    env = dict(os.environ, PYTHONPATH=str(other_user.home / "site"), PYTHONSTARTUP=str(other_user.home / "site/os.py"))
    data = facts_json(hosttune("facts", "--json", "--python", sys.executable, cwd=Path("/"), env=env))
    assert not marker.exists(), marker.read_text()
    assert data["torch"] is None or data["torch"]["version"] != "6.6.6+planted"
    assert any(m.startswith("torch: PYTHONPATH not searched as root") for m in data["missing"]), data["missing"]


def test_probe_starts_in_root_dir_with_the_callers_code_variables_dropped(
        other_user: Any, tmp_path: Path, marker: Path) -> None:
    """A --python wrapper (root's own, trusted) records where and with what environment it was started."""
    seen = tmp_path / "seen"
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f"#!/bin/bash\npwd > {seen}.cwd\nenv > {seen}.env\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    bash_env = other_user.write("bashrc", f"echo BASH_ENV >> {marker}\n")
    env = dict(os.environ, BASH_ENV=str(bash_env), ENV=str(bash_env), PYTHONINSPECT="1",
               LD_LIBRARY_PATH=str(other_user.home), PYTHONPATH=str(other_user.home))
    data = facts_json(hosttune("facts", "--json", "--python", str(wrapper), cwd=other_user.home, env=env))
    assert not marker.exists(), marker.read_text()
    assert Path(f"{seen}.cwd").read_text().strip() == "/"
    names = {line.split("=", 1)[0] for line in Path(f"{seen}.env").read_text().splitlines()}
    assert not names & {"BASH_ENV", "ENV", "PYTHONINSPECT", "LD_LIBRARY_PATH", "PYTHONPATH"}
    assert data["torch"] is None or data["torch"]["error"] is None


def test_probe_imports_only_what_it_needs() -> None:
    imported = set()
    for node in ast.walk(ast.parse(torchenv.PROBE)):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported == {"json", "os", "re", "sys", "importlib.util"}


def test_pythonpath_for_the_probe_is_the_users_own_as_a_normal_user(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    theirs = "/home/alice/site:/opt/x"
    if os.geteuid() == 0:  # as root a path that fails the trust rule is dropped
        assert torchenv.probe_path({"PYTHONPATH": "/proc/nonexistent-dir"})[1] == ["PYTHONPATH"]
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert torchenv.probe_path({"PYTHONPATH": theirs}) == (["/home/alice/site", "/opt/x"], [])
    env, dropped = child_env({"PATH": "/x:/y", "BASH_ENV": "/home/alice/.bashrc"})
    assert env == {"PATH": "/x:/y", "BASH_ENV": "/home/alice/.bashrc"} and dropped == []
    assert trusted_path_dirs("/x::/y") == (["/x", "/y"], [])


def test_probe_finds_torch_through_a_trusted_pythonpath_in_process(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    site = fake_torch_site(tmp_path / "site", "2.4.1+cpu")
    monkeypatch.setenv("PYTHONPATH", str(site))
    data = torchenv.run_probe(HostIO(), sys.executable)
    assert data["torch"]["__version__"] == "2.4.1+cpu"
