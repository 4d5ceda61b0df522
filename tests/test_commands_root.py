"""`--root DIR` is checked once, by `trust.host_tree`, for every command that takes it: the same one line and exit 2
for a path that does not exist or is not a directory; the real path (links followed once) is what the command uses;
as root, a tree `tune apply`/`revert` would write into must pass the root trust rule, while a tree that is only read
(facts, doctor, env, profile, tune verify, apply --dry-run) may be anybody's (it is read as hostile)."""

import os
import subprocess
from pathlib import Path
from typing import List

import click
import pytest
from conftest import run_cli
from test_tune import host_tree, snapshot

from hosttune import trust
from hosttune.errors import UserError

# Every command with a --root option, as it is run (tmp: a scratch directory for an output file).
COMMANDS = {
    "doctor": lambda root, tmp: ["doctor", "--root", root],
    "env": lambda root, tmp: ["env", "--root", root],
    "exec": lambda root, tmp: ["exec", "--dry-run", "--root", root, "--", "true"],
    "facts": lambda root, tmp: ["facts", "--root", root],
    "profile show": lambda root, tmp: ["profile", "show", "--root", root],
    "profile generate": lambda root, tmp: ["profile", "generate", "--root", root, "-o", str(tmp / "out.yaml")],
    "tune apply": lambda root, tmp: ["tune", "apply", "--root", root],
    "tune apply --dry-run": lambda root, tmp: ["tune", "apply", "--dry-run", "--root", root],
    "tune verify": lambda root, tmp: ["tune", "verify", "--root", root],
    "tune revert": lambda root, tmp: ["tune", "revert", "--root", root],
}
CASES = sorted(COMMANDS)


def _commands_with_root() -> List[str]:
    from hosttune.cli import cli

    ctx = click.Context(cli)
    found: List[str] = []

    def walk(cmd: click.Command, path: List[str]) -> None:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub, path + [name])
        elif any("--root" in p.opts for p in cmd.params):
            found.append(" ".join(path))

    walk(cli, [])
    return found


def test_the_table_covers_every_command_with_a_root_option() -> None:
    assert {name.split(" --")[0] for name in COMMANDS} == set(_commands_with_root())


def _error(args: List[str]) -> str:
    res = run_cli(args)
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and "Usage:" not in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1, res.stderr
    return res.stderr


@pytest.mark.parametrize("name", CASES)
def test_a_missing_root_is_one_line_and_exit_2(name: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-tree"
    assert _error(COMMANDS[name](str(missing), tmp_path)) == f"hosttune: error: --root {missing}: no such directory\n"
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize("name", [n for n in CASES])
def test_a_root_that_is_a_file_is_one_line_and_exit_2(name: str, tmp_path: Path) -> None:
    file = tmp_path / "tree.tar.gz"
    file.write_text("not a tree\n")
    assert _error(COMMANDS[name](str(file), tmp_path)) == \
        f"hosttune: error: --root {file}: not a directory (it is a regular file)\n"
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize("name", CASES)
def test_an_empty_root_is_not_the_current_directory(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                    ) -> None:
    monkeypatch.chdir(host_tree(tmp_path / "cwd"))  # a tree a command would happily read, were "" taken as "."
    assert _error(COMMANDS[name]("", tmp_path)) == "hosttune: error: --root : no such directory\n"


def test_the_tree_is_resolved_once(tmp_path: Path) -> None:
    tree = host_tree(tmp_path / "tree")
    (tmp_path / "link").symlink_to(tree)
    assert trust.host_tree(str(tmp_path / "link")) == str(tree.resolve())
    assert trust.host_tree(str(tmp_path / "link" / "etc" / "..")) == str(tree.resolve())


def _as_other_user(path: Path, uid: int, gid: int) -> None:
    subprocess.run(["chown", "-R", f"{uid}:{gid}", str(path)], check=True)


@pytest.mark.parametrize("name", ["tune apply", "tune revert"])
def test_as_root_tune_never_writes_into_another_users_tree(name: str, other_user, tmp_path: Path) -> None:
    tree = host_tree(other_user.home / "tree")
    _as_other_user(tree, other_user.uid, other_user.gid)
    (tmp_path / "link").symlink_to(tree)  # a link of root's own to it changes nothing: the tree is what is checked
    before = snapshot(other_user.home)
    for root in (tree, tmp_path / "link"):
        line = _error(COMMANDS[name](str(root), tmp_path))
        assert line.startswith(f"hosttune: error: --root {root}: refusing to write into it as root: {tree} is "
                               f"owned by nobody"), line
    assert snapshot(other_user.home) == before


def test_as_root_tune_never_writes_into_a_tree_below_another_users_directory(other_user, tmp_path: Path) -> None:
    tree = host_tree(other_user.home / "tree")  # root's own tree, but nobody owns the directory it is in
    before = snapshot(other_user.home)
    line = _error(["tune", "apply", "--root", str(tree)])
    assert f"refusing to write into it as root: its directory {other_user.home} is owned by nobody" in line, line
    assert snapshot(other_user.home) == before


@pytest.mark.parametrize("args", [["tune", "apply", "--dry-run"], ["tune", "verify"], ["facts"]])
def test_as_root_another_users_tree_is_read(args: List[str], other_user) -> None:
    tree = host_tree(other_user.home / "tree")
    _as_other_user(tree, other_user.uid, other_user.gid)
    before = snapshot(tree)
    res = run_cli(args + ["--root", str(tree)])
    assert res.returncode in (0, 1) and "error" not in res.stderr, (res.returncode, res.stderr)  # verify: 1 = drift
    assert snapshot(tree) == before


def test_as_an_ordinary_user_only_the_kind_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = host_tree(tmp_path / "tree")
    os.chmod(tree, 0o777)  # they can only hurt themselves
    monkeypatch.setattr(trust, "is_root", lambda: False)
    assert trust.host_tree(str(tree), writes=True) == str(tree.resolve())
    monkeypatch.setattr(trust, "is_root", lambda: True)
    with pytest.raises(UserError, match="is writable by group and others"):
        trust.host_tree(str(tree), writes=True)
