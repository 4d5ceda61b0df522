"""The program gateway (hosttune/programs.py, issue 22 item 2): every program or interpreter hosttune starts is
resolved there; as root, one another user could have written is refused in one line before it runs, however it was
named (`--python`, `$HOSTTUNE_PYTHON`, PATH), and the resolved path is what runs.

The attack tests play the other user (`other_user`, tests/conftest.py): their planted "interpreter" creates a marker
file when anything runs it; the marker must never appear."""

import os
import sys
from pathlib import Path
from typing import Any, List

import pytest
from _detecthelp import hosttune

from hosttune import programs, trust
from hosttune.detect.hostio import HostIO
from tests.conftest import run_cli

ARGS = ["--dry-run", "--preset", "gpt-tiny", "--set", "steps=3"]


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def plant_interpreter(other_user: Any, rel: str = "bin/python3") -> Path:
    """The other user's "python3": when run, by anyone, it leaves a marker beside itself."""
    marker = other_user.home / "ran-as"
    script = f"#!/bin/sh\nid -u > {marker}\nexec {sys.executable} \"$@\"\n"
    return other_user.write(rel, script, mode=0o755)


def marker_of(other_user: Any) -> Path:
    return other_user.home / "ran-as"


# ---- the gateway itself ----

def test_a_bare_name_is_found_on_path_and_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "bin" / "mytool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o755)
    assert programs.resolve("mytool", "tool", path=str(tool.parent)) == str(tool)
    monkeypatch.chdir(tmp_path)
    assert programs.resolve("./bin/mytool", "tool") == str(tool)  # a child started in "/" runs the same file
    with pytest.raises(programs.NotFound, match="tool no-such-tool-xyz: command not found"):
        programs.resolve("no-such-tool-xyz", "tool", path=str(tool.parent))
    with pytest.raises(programs.NotFound, match="not an executable file"):
        programs.resolve(str(tmp_path / "bin"), "tool")


def test_a_venv_link_is_kept_so_the_venv_still_works(tmp_path: Path) -> None:
    """bin/python3 -> the system interpreter: run by the link's path (pyvenv.cfg is found beside it)."""
    link = tmp_path / "venv" / "bin" / "python3"
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.realpath(sys.executable))
    assert programs.resolve(str(link), "--python") == str(link)


@pytest.mark.parametrize("how", ["file", "link_to_theirs", "link_in_their_dir"])
def test_as_root_a_program_another_user_could_change_is_refused(other_user: Any, tmp_path: Path, how: str) -> None:
    theirs = plant_interpreter(other_user)
    if how == "file":
        named = theirs
    elif how == "link_to_theirs":  # root's link, their file
        named = tmp_path / "python3"
        named.symlink_to(theirs)
    else:  # their link (in their directory) to root's good interpreter: they re-point it when they like
        named = other_user.home / "good"
        done = other_user.run(["ln", "-s", os.path.realpath(sys.executable), str(named)])
        assert done.returncode == 0, done.stderr
    with pytest.raises(trust.Untrusted, match="refusing --python .*another user could change what runs as root"):
        programs.resolve(str(named), "--python")
    io = HostIO(Path("/"))
    assert io.run([str(named), "-c", "pass"], note=False) is None and "refusing program" in str(io.last_error)
    assert not marker_of(other_user).exists()


def test_as_root_path_lookup_skips_another_users_directory(other_user: Any) -> None:
    theirs = plant_interpreter(other_user, "bin/hosttune-test-tool")
    found, skipped = programs.trusted_which("hosttune-test-tool", f"{theirs.parent}{os.pathsep}/usr/bin")
    assert found is None and any(str(theirs.parent) in s for s in skipped)
    with pytest.raises(programs.NotFound, match="command not found in a PATH directory only root can write"):
        programs.resolve("hosttune-test-tool", "tool", path=str(theirs.parent))


# ---- `hosttune train`'s interpreter (issue 22 item 2) ----

@pytest.mark.parametrize("named_by", ["--python", "$HOSTTUNE_PYTHON", "--python bare name"])
def test_train_never_runs_another_users_interpreter_as_root(other_user: Any, named_by: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = plant_interpreter(other_user)
    env = {}
    if named_by == "--python":
        args = ["train", "--python", str(theirs), *ARGS]
    elif named_by == "$HOSTTUNE_PYTHON":  # kept by su / sudo -E, as $HOSTTUNE_PROFILE was
        args = ["train", *ARGS]
        env["HOSTTUNE_PYTHON"] = str(theirs)
    else:
        args = ["train", "--python", "python3", *ARGS]
        monkeypatch.setenv("PATH", f"{theirs.parent}{os.pathsep}{os.environ['PATH']}")
    r = run_cli(args, env=env)
    assert not marker_of(other_user).exists(), "the other user's interpreter ran as root"
    if named_by == "--python bare name":  # their directory is not searched: a trusted python3 is found instead
        assert r.returncode in (0, 2), r.stderr
        assert str(theirs) not in r.stdout
        return
    assert r.returncode == 2
    line = one_line(r.stderr)
    source = "--python" if named_by == "--python" else "$HOSTTUNE_PYTHON"
    assert f"refusing {source} {theirs}" in line and "is owned by" in line and "fix: move it" in line


def test_train_on_path_never_picks_another_users_python3_as_root(other_user: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = plant_interpreter(other_user)
    monkeypatch.setenv("PATH", f"{theirs.parent}{os.pathsep}{os.environ['PATH']}")
    r = run_cli(["train", *ARGS])
    assert not marker_of(other_user).exists()
    assert r.returncode == 0, r.stderr
    argv: List[str] = r.stdout.split()
    ranks_python = argv[argv.index("--") + 1]
    assert ranks_python != str(theirs) and not ranks_python.startswith(str(other_user.home))


def test_train_runs_the_ranks_on_the_path_it_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative --python is made absolute once: the probe (started in "/") and the ranks run the same file."""
    pytest.importorskip("torch")
    link = tmp_path / "py" / "python3"
    link.parent.mkdir()
    link.symlink_to(sys.executable)
    monkeypatch.chdir(tmp_path)
    r = run_cli(["train", "--python", "py/python3", *ARGS])
    assert r.returncode == 0, r.stderr
    argv = r.stdout.split()
    assert argv[argv.index("--") + 1] == str(link)


def test_exec_as_root_never_runs_another_users_program_found_on_path(other_user: Any, tmp_path: Path) -> None:
    """`sudo -E hosttune exec -- NAME` with the user's PATH: their directory comes first, but as root NAME is
    looked up only where root alone can write."""
    import subprocess

    marker = marker_of(other_user)
    other_user.write("bin/hosttune-test-job", f"#!/bin/sh\nid -u > {marker}\n", mode=0o755)
    mine = tmp_path / "bin" / "hosttune-test-job"
    mine.parent.mkdir()
    mine.write_text("#!/bin/sh\necho root-s own job\n")
    mine.chmod(0o755)
    repo = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=repo, PATH=f"{other_user.home / 'bin'}{os.pathsep}{mine.parent}{os.pathsep}"
                                                 f"{os.environ['PATH']}")
    r = subprocess.run([sys.executable, "-m", "hosttune", "exec", "--", "hosttune-test-job"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert not marker.exists(), "the other user's program ran as root"
    assert r.returncode == 0 and "root-s own job" in r.stdout, r.stderr


# ---- issue 22 item 2: --python of facts and doctor goes through the program gateway ----------------------------------
@pytest.mark.parametrize("command", ["facts", "doctor"])
def test_another_users_python_named_by_option_is_refused_before_it_runs(command: str, other_user: Any,
                                                                         marker: Path) -> None:
    """Was: `facts --python` checked only that the file is executable, `doctor --python` not even that as root;
    the torch probe then ran the other user's program as root."""
    fake = other_user.write("venv/bin/python3", f"#!/bin/sh\necho \"$0\" >> {marker}\n", 0o755)
    done = hosttune(command, "--json", "--python", str(fake), cwd=Path("/"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--python" in lines[0] and "owned by nobody" in lines[0], done.stderr
    assert not marker.exists(), marker.read_text()


# ---- own_argv: how hosttune starts its own code (a trial, the planner, a rank's shim, train's exec) -----------------
def _plant(other_user: Any, marker: Path) -> None:
    for rel in ("hosttune/__init__.py", "hosttune/__main__.py", "json.py", "yaml.py"):
        other_user.write(rel, f"open({str(marker)!r}, 'a').write({rel!r})\n")


def test_as_root_own_argv_in_another_users_directory_runs_this_hosttune_only(other_user: Any, marker: Path) -> None:
    """Was `python -m hosttune` (autotune's trials, train's exec): the working directory, first on sys.path, and a
    PYTHONPATH kept by `sudo -E` could supply `hosttune/` (or json.py, yaml.py) to root."""
    import subprocess

    _plant(other_user, marker)
    env = dict(os.environ, PYTHONPATH=str(other_user.home))
    argv = programs.own_argv("hosttune.cli")
    assert "-I" in argv  # as root
    r = subprocess.run([*argv, "facts", "--json"], cwd=other_user.home, env=env, capture_output=True, text=True,
                       timeout=120)
    assert not marker.exists(), f"planted code ran as root: {marker.read_text()}"
    assert r.returncode == 0 and r.stdout.lstrip().startswith("{"), r.stderr


def test_train_starts_exec_through_own_argv_in_another_users_directory(other_user: Any, marker: Path) -> None:
    """`hosttune train` execs `hosttune exec -- PYTHON -m torch.distributed.run ...`: that hosttune is this one,
    whatever the directory it is run from holds (its --dry-run prints the same argv)."""
    import subprocess

    from hosttune.commands.train import build_argv

    _plant(other_user, marker)
    argv = build_argv(1, ["--preset", "gpt-tiny"], python=sys.executable)
    cut = argv.index("--")  # PYTHON ... exec --
    r = subprocess.run([*argv[:cut], "--dry-run", "--", "true"], cwd=other_user.home, capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(other_user.home)))
    assert not marker.exists(), f"planted code ran as root: {marker.read_text()}"
    assert r.returncode == 0, r.stderr
    assert argv[:cut - 1] == programs.own_argv("hosttune.cli")


def test_own_argv_keeps_an_ordinary_users_site_and_drops_the_working_directory(tmp_path: Path) -> None:
    """-I only as root: an ordinary user's `pip install --user` PyYAML must stay importable; the working directory
    is dropped either way, and the arguments after the bootstrap are the module's own."""
    import subprocess

    assert "-I" not in programs.own_argv("hosttune.cli", isolated=False)
    (tmp_path / "hosttune").mkdir()
    (tmp_path / "hosttune" / "__init__.py").write_text("raise SystemExit('planted')\n")
    (tmp_path / "hosttune" / "__main__.py").write_text("raise SystemExit('planted')\n")
    r = subprocess.run([*programs.own_argv("hosttune.cli", isolated=False), "--version"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "planted" not in r.stderr, r.stderr
    assert r.stdout.strip(), r.stdout
