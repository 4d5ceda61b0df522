"""hosttune/shim.py starts the rank through the program gateway (hosttune/programs.py): what it runs, as root and
as an ordinary user, and the exit statuses of a rank command that cannot run; as root, what another user can do to it
(issue 11: a plan variable naming their files, modules planted in the working directory or left on PYTHONPATH, a shell
as the parent that {torchrun-python} is read from)."""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import _exechelp
import pytest
from _exechelp import _torchrun_job, hosttune, shim_with_handoff

from hosttune.launch import handoff
from hosttune.launch.job import prepare
from hosttune.launch.torchrun import shim_argv
from hosttune.rankplan import TORCHRUN_PYTHON

fake_torchrun = _exechelp.fake_torchrun  # the fixture, used here by its name

PY = sys.executable
SYSTEM_PY = "/usr/bin/python3"  # what the other user can run (Makefile TEST_APT: python3-click/yaml/psutil/distro)
IS_ROOT = os.geteuid() == 0


def _shim(env: Dict[str, str], *cmd: str, cwd: Any = None) -> "subprocess.CompletedProcess[str]":
    full = dict(os.environ, LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
    full.update(env)
    return subprocess.run([*shim_argv(PY), *cmd], env=full, capture_output=True, text=True, timeout=120,
                          cwd=cwd)


def _touching_script(other_user: Any, rel: str, ran: Path) -> Path:
    return other_user.write(rel, f"#!/bin/sh\ntouch {ran}\n", mode=0o755)


def test_as_root_a_bare_rank_command_is_never_taken_from_another_users_path_dir(
        other_user: Any, handed: str, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    script = _touching_script(other_user, "bin/hosttune-test-rank-cmd", ran)
    path = f"{script.parent}{os.pathsep}{os.environ.get('PATH', os.defpath)}"
    r = _shim({"HOSTTUNE_HANDOFF": handed, "PATH": path}, script.name)
    assert r.returncode == 127, r.stderr
    assert "command not found" in r.stderr and "Traceback" not in r.stderr
    assert not ran.exists()


def test_as_root_python_exec_naming_another_users_file_is_refused(other_user: Any, handed: str,
                                                                  tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    script = _touching_script(other_user, "bin/python3", ran)
    r = _shim({"HOSTTUNE_HANDOFF": handed, "PYTHON_EXEC": str(script)}, TORCHRUN_PYTHON, "-c", "pass")
    assert r.returncode == 2, r.stderr
    assert "$PYTHON_EXEC" in r.stderr and "not started" in r.stderr and "Traceback" not in r.stderr
    assert not ran.exists()


def test_python_exec_that_root_owns_runs_the_rank(handed: str) -> None:
    r = _shim({"HOSTTUNE_HANDOFF": handed, "PYTHON_EXEC": PY}, TORCHRUN_PYTHON, "-c",
              "import sys; print(sys.argv[0])")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "-c"


def test_a_rank_command_that_cannot_run_exits_as_a_shell_would(handed: str, tmp_path: Path) -> None:
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\nexit 0\n")
    os.chmod(plain, 0o644)
    for cmd, status in ((str(plain), 126), (str(tmp_path), 126), (str(tmp_path / "missing"), 127),
                        ("hosttune-no-such-program-xyz", 127)):
        r = _shim({"HOSTTUNE_HANDOFF": handed}, cmd)
        assert r.returncode == status, (cmd, r.stderr)
        assert cmd in r.stderr and "Traceback" not in r.stderr


def test_a_bare_rank_command_is_found_on_the_rank_environments_path(handed: str, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    out = tmp_path / "out"
    (bindir / "hosttune-test-rank-cmd").write_text(f"#!/bin/sh\necho \"$0\" > {out}\n")
    os.chmod(bindir / "hosttune-test-rank-cmd", 0o755)
    path = f"{bindir}{os.pathsep}{os.environ.get('PATH', os.defpath)}"
    r = _shim({"HOSTTUNE_HANDOFF": handed, "PATH": path}, "hosttune-test-rank-cmd")
    assert r.returncode == 0, r.stderr
    assert out.read_text().strip() == str(bindir / "hosttune-test-rank-cmd")


def test_an_ordinary_user_runs_a_rank_command_from_their_own_path_dir(other_user: Any) -> None:
    if not os.access(SYSTEM_PY, os.X_OK):
        pytest.skip(f"needs {SYSTEM_PY}: the other user cannot run a Python under root's home (pyenv, build/py39)")
    out = other_user.home / "out"
    script = other_user.write("bin/hosttune-test-rank-cmd", f"#!/bin/sh\ntouch {out}\n", mode=0o755)
    # the other user's own copy of hosttune: the checkout may sit in a directory they cannot enter (mktemp -d: 0700)
    repo = Path(__file__).resolve().parents[1]
    src = other_user.home / "src"
    shutil.copytree(repo / "hosttune", src / "hosttune", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(repo / "profiles", src / "hosttune" / "profiles")  # where an installed package has them
    argv = [a.replace(str(repo / "hosttune"), str(src / "hosttune")) for a in shim_argv(SYSTEM_PY, root=False)]
    env = {"PATH": f"{script.parent}{os.pathsep}/usr/bin:/bin", "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1",
           "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "HOME": str(other_user.home),
           "XDG_CACHE_HOME": str(other_user.home / ".cache")}
    env = {k: v for k, v in dict(os.environ, **env).items() if not k.startswith("HOSTTUNE_")}
    r = other_user.run([*argv, script.name], env=env, cwd=str(other_user.home), timeout=120)
    assert r.returncode == 0, r.stderr
    assert out.exists()


# ---- as root, another user's plan, modules and shell (issue 11, items 1 and 3, low items) --------------------------


@pytest.mark.parametrize("key", ["PYTHONPATH", "PYTHONSTARTUP", "LD_PRELOAD"])
def test_shim_as_root_refuses_a_plan_env_pointing_at_another_users_files(other_user: Any, tmp_path: Path,
                                                                         key: str) -> None:
    lib = other_user.write("lib/evil.py", "raise SystemExit('ran as root')\n")
    value = str(lib.parent) if key == "PYTHONPATH" else str(lib)
    job = prepare(["torchrun", "--nproc_per_node=1", "t.py"])
    payload = handoff.payload(job, "m")
    for plans in payload["plans"].values():
        plans[0]["env"][key] = value
    path = handoff.write(payload)
    ran = tmp_path / "ran"
    try:
        r = shim_with_handoff(path, ran)
        assert r.returncode == 2, r.stderr
        assert key in r.stderr and "refusing" in r.stderr and not ran.exists()
    finally:
        handoff.remove(path)


PLANTED = ["hosttune.py", "json.py", "os.py", "tempfile.py", "importlib.py", "stat.py", "signal.py"]


def _plant(other_user: Any, tmp_path: Path) -> Path:
    pwned = tmp_path / "pwned"
    pwned.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(pwned, 0o777)  # so the planted code could leave its mark whoever imports it
    for name in PLANTED:
        other_user.write(name, f"open({str(pwned / name)!r}, 'w').close()\n")
    return pwned


def test_shim_does_not_import_modules_planted_in_the_working_directory(other_user: Any, fake_torchrun: Dict[str, str],
                                                                       tmp_path: Path) -> None:
    pwned = _plant(other_user, tmp_path)
    cwd_file = tmp_path / "cwd"
    r = hosttune(*_torchrun_job("sh", "-c", f"pwd > {cwd_file}"), env=fake_torchrun, cwd=str(other_user.home))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(pwned)) == []
    assert cwd_file.read_text().strip() == str(other_user.home)  # the job itself still runs where it was started


def test_shim_as_root_ignores_a_pythonpath_left_behind_by_su(other_user: Any, fake_torchrun: Dict[str, str],
                                                             tmp_path: Path) -> None:
    pwned = _plant(other_user, tmp_path)
    env = dict(fake_torchrun, PYTHONPATH=str(other_user.home))
    r = hosttune(*_torchrun_job("true"), env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(pwned)) == []


def test_shim_never_hands_the_rank_to_a_shell_as_its_python(tmp_path: Path) -> None:
    # {torchrun-python} means "the interpreter torchrun runs on", read from the shim's parent. A shell parent (a
    # wrapper that did not exec, or a user pasting the dry-run argv) must not run the script with bash.
    script = tmp_path / "t.py"
    script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    shim = shlex.join(shim_argv(PY))
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_EXEC"}
    env.update(LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
    r = subprocess.run(["bash", "-c", f"{shim} '{TORCHRUN_PYTHON}' -u {script}; exit $?"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 127, r.stderr
    assert "PYTHON_EXEC" in r.stderr and not (tmp_path / "ran").exists()
    r = subprocess.run(["bash", "-c", f"{shim} '{TORCHRUN_PYTHON}' -u {script}; exit $?"],
                       env=dict(env, PYTHON_EXEC=PY), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "ran").exists()
