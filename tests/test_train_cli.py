"""`hosttune train` finds a torch (issue 16): --python, $HOSTTUNE_PYTHON, python3 on PATH, hosttune's own; one line
naming what to install when none has it; the rank script in an interpreter without hosttune; a progress line per
log interval when stderr is not a terminal; `--dry-run` prints a command a shell reads back exactly (issue 11).

Interpreters are real venvs of this machine's Python (made once per module, `--without-pip`: about a second each);
the "torch" of the version cases is a torch/version.py in such a venv, which is all the facts probe reads.
"""

import os
import shlex
import subprocess
import sys
import venv
from pathlib import Path
from typing import Dict, List

import pytest

from hosttune.commands import train
from tests.conftest import OtherUser, cli_runner, run_cli

ARGS = ["--dry-run", "--preset", "gpt-tiny", "--set", "steps=3"]


def make_venv(path: Path, system_site: bool = False) -> Path:
    venv.EnvBuilder(system_site_packages=system_site, with_pip=False, symlinks=True).create(str(path))
    return path / "bin" / "python3"


def site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


def fake_torch(python: Path, version: str) -> None:
    """A torch whose version.py says `version` (what the probe reads; it never imports torch)."""
    pkg = site_packages(python) / "torch"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("raise ImportError('a stand-in: the probe never imports torch')\n")
    (pkg / "version.py").write_text(f"__version__ = '{version}'\ncuda = None\n")


@pytest.fixture(scope="module")
def pythons(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    pytest.importorskip("torch")  # hosttune's own interpreter has torch: the fallback cases need it
    base = tmp_path_factory.mktemp("pythons")
    out = {"bare": make_venv(base / "bare"), "old": make_venv(base / "old"), "nonumpy": make_venv(base / "nonumpy"),
           "torch": make_venv(base / "torch", system_site=True)}
    fake_torch(out["old"], "1.13.1")
    fake_torch(out["nonumpy"], "2.5.1+cpu")
    return out


def path_of(pythons: Dict[str, Path], name: str) -> str:
    """A PATH whose python3 is that venv's (its bin/: a link elsewhere would lose the venv's pyvenv.cfg)."""
    return str(pythons[name].parent)


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def python_in(argv: List[str]) -> str:
    """The training interpreter of a dry-run's command: the one after `exec --`."""
    return argv[argv.index("--") + 1]


def test_explicit_python_without_torch_is_one_line_naming_the_install(pythons: Dict[str, Path]) -> None:
    bare = str(pythons["bare"])
    r = run_cli(["train", "--python", bare, *ARGS])
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert f"--python {bare} has no torch" in line and f"{bare} -m pip install 'torch>=2.1' numpy" in line

    r = run_cli(["train", *ARGS], env={"HOSTTUNE_PYTHON": bare})
    assert r.returncode == 2 and f"$HOSTTUNE_PYTHON {bare} has no torch" in one_line(r.stderr)

    r = run_cli(["train", "--python", str(pythons["bare"].parent / "nope"), *ARGS])
    assert r.returncode == 2 and "not an executable file" in one_line(r.stderr)


def test_python_option_beats_the_environment_which_beats_path(pythons: Dict[str, Path]) -> None:
    torch_py = str(pythons["torch"])
    r = run_cli(["train", "--python", torch_py, *ARGS], env={"HOSTTUNE_PYTHON": str(pythons["bare"])})
    assert r.returncode == 0, r.stderr
    argv = r.stdout.split()
    assert python_in(argv) == torch_py and argv[0] == sys.executable  # exec on hosttune's own, ranks on the venv
    assert str(train.RANK_SCRIPT) in argv

    r = run_cli(["train", *ARGS], env={"HOSTTUNE_PYTHON": torch_py, "PATH": path_of(pythons, "bare")})
    assert r.returncode == 0, r.stderr
    assert python_in(r.stdout.split()) == torch_py


def test_default_is_path_python3_with_torch_then_hosttunes_own(pythons: Dict[str, Path],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", path_of(pythons, "torch") + os.pathsep + os.environ["PATH"])
    r = run_cli(["train", *ARGS])
    assert r.returncode == 0, r.stderr
    assert python_in(r.stdout.split()) == os.path.join(path_of(pythons, "torch"), "python3")

    # python3 on PATH has no torch: hosttune's own interpreter (this one, which has torch) trains
    monkeypatch.setenv("PATH", path_of(pythons, "bare"))
    r = run_cli(["train", *ARGS])
    assert r.returncode == 0, r.stderr
    assert python_in(r.stdout.split()) == sys.executable


def test_no_interpreter_with_torch_names_what_to_install(pythons: Dict[str, Path],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", path_of(pythons, "bare"))
    monkeypatch.setattr(sys, "executable", str(pythons["bare"]))  # hosttune itself on a torch-less interpreter
    r = run_cli(["train", *ARGS])
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert line.startswith("hosttune: error: no interpreter with torch to train with (")
    assert "(python3 on PATH): no torch" in line
    assert "--python ~/venv/bin/python" in line and "HOSTTUNE_PYTHON" in line and "apt install python3-torch" in line


def test_too_old_torch_and_missing_numpy_are_one_line_each(pythons: Dict[str, Path]) -> None:
    old = str(pythons["old"])
    r = run_cli(["train", "--python", old, *ARGS])
    assert r.returncode == 2
    assert f"{old} (--python) has torch 1.13.1; the engine needs torch >= 2.1" in one_line(r.stderr)
    nonumpy = str(pythons["nonumpy"])
    r = run_cli(["train", "--python", nonumpy, *ARGS])
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "has torch 2.5.1+cpu but not numpy" in line and f"{nonumpy} -m pip install numpy" in line


def test_a_bad_engine_argument_fails_before_any_interpreter_is_probed(pythons: Dict[str, Path]) -> None:
    r = run_cli(["train", "--python", str(pythons["bare"]), "--preset", "gpt-tiny", "--set", "lrr=1"])
    assert r.returncode == 2 and "unknown key 'lrr'" in one_line(r.stderr)


def test_rank_script_runs_this_hosttunes_engine_in_an_interpreter_without_hosttune_or_yaml(
        pythons: Dict[str, Path]) -> None:
    bare = str(pythons["bare"])
    yaml_dir = train._yaml_dir()
    assert yaml_dir
    # The engine's own argument check runs (hosttune and PyYAML loaded, torch not needed yet): its exit 2 and line.
    r = subprocess.run([bare, str(train.RANK_SCRIPT), "--yaml-from", yaml_dir, "--preset", "gpt-tiny", "--set",
                        "lrr=1"], capture_output=True, text=True, cwd="/")
    assert r.returncode == 2, r.stderr
    assert one_line(r.stderr).startswith("hosttune.engine: error: --set: unknown key 'lrr'")
    # Without the fallback this interpreter has no PyYAML: the fallback is what made it work.
    r = subprocess.run([bare, str(train.RANK_SCRIPT), "--preset", "gpt-tiny", "--set", "lrr=1"],
                       capture_output=True, text=True, cwd="/")
    assert r.returncode != 0 and "No module named 'yaml'" in r.stderr


def test_progress_lines_without_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("torch")
    from hosttune.engine.metrics import Metrics

    m = Metrics(tmp_path, True, 6, 0)  # pytest's captured stderr is not a terminal: no bar
    assert m.bar is None
    for _ in range(3):
        m.progress(2, 1.25)
    m.close()
    assert capsys.readouterr().err.splitlines() == [
        "hosttune.engine: step 2/6 loss 1.2500", "hosttune.engine: step 4/6 loss 1.2500",
        "hosttune.engine: step 6/6 loss 1.2500"]
    other = Metrics(tmp_path, False, 6, 0)  # ranks other than 0 print nothing
    other.progress(2, 1.0)
    assert capsys.readouterr().err == ""


def test_yaml_fallback_dir_owned_by_another_user_is_not_handed_to_root_ranks(
        other_user: OtherUser, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ranks append PyYAML's directory to their sys.path: as root, one another user can write is never given."""
    import importlib.machinery
    import importlib.util

    home = Path(other_user.home)
    planted = home / "site"
    (planted / "yaml").mkdir(parents=True)
    (planted / "yaml" / "__init__.py").write_text("")
    for p in (planted, planted / "yaml", planted / "yaml" / "__init__.py"):
        os.chown(p, 65534, 65534)
    spec = importlib.machinery.ModuleSpec("yaml", None, is_package=True)
    spec.submodule_search_locations = [str(planted / "yaml")]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: spec if name == "yaml" else None)
    assert train._yaml_dir() is None
    os.chown(planted, 0, 0)
    os.chown(home, 0, 0)
    assert train._yaml_dir() == str(planted)  # the same directory, root's alone: handed on


def test_train_dry_run_prints_a_command_a_shell_reads_back_exactly(tmp_path: Path) -> None:
    pytest.importorskip("torch")  # --python is this interpreter: train's probe needs torch in it (not on the 3.9 pass)
    from hosttune.cli import cli
    from hosttune.commands.train import build_argv

    odd = tmp_path / "my runs $HOME"
    odd.mkdir()
    config = odd / "c.yaml"
    config.write_text("preset: gpt-tiny\nsteps: 3\n")
    args = ["--config", str(config), "--run-dir", str(odd / "run; rm -rf x")]
    r = cli_runner().invoke(cli, ["train", "--nproc", "2", "--dry-run", "--python", sys.executable, *args])
    assert r.exit_code == 0, r.output
    assert shlex.split(r.stdout) == build_argv(2, args, python=sys.executable)
    assert shlex.quote(str(config)) in r.stdout
