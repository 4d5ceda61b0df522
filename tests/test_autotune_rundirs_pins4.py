"""Pins (issue 21, round 4) for hosttune/autotune/rundirs.py: which commands are the engine's, and the scratch
directories' names, modes and removal, in-process on tmp_path."""

import os
from pathlib import Path

import pytest

from hosttune.autotune import rundirs


@pytest.mark.parametrize("argv", [
    ["hosttune", "train"],
    ["/opt/venv/bin/hosttune", "train", "--preset", "x"],
    ["torchrun", "--nproc_per_node=2", "/srv/hosttune/commands/train_rank.py", "--preset", "x"],
    ["python3", "-m", "hosttune.cli", "train"],
    ["python3", "-m", "hosttune", "train", "--steps", "3"],
    ["mpirun", "-n", "2", "python3", "-m", "hosttune.engine"],
])
def test_engine_commands(argv: list) -> None:
    assert rundirs.engine_command(argv) is True


@pytest.mark.parametrize("argv", [
    [], ["hosttune"], ["hosttune", "exec", "train"], ["myhosttune", "train"], ["hosttune.sh", "train"],
    ["python3", "train_rank.py"],  # not hosttune's own rank script
    ["python3", "hosttune/commands/train_rank.py"],  # relative: no directory in front of it
    ["python3", "-m", "hosttune", "exec"], ["python3", "-m", "hosttune"], ["python3", "-m"],
    ["python3", "-m", "hosttune.engines"], ["python3", "-m", "other", "hosttune.engine"],
    ["python3", "-m", "hosttune.cli", "doctor", "train"],
])
def test_not_engine_commands(argv: list) -> None:
    assert rundirs.engine_command(argv) is False


def test_each_trial_gets_a_fresh_private_numbered_directory(tmp_path: Path) -> None:
    dirs = rundirs.RunDirs(str(tmp_path))
    assert dirs.root.parent == tmp_path and dirs.root.name.startswith("hosttune-autotune-runs-")
    assert (dirs.root.stat().st_mode & 0o777) == 0o700
    a = dirs.new("default")
    b = dirs.new("omp-passive")
    assert (a.name, b.name) == ("001-default", "002-omp-passive") and a.parent == b.parent == dirs.root
    assert (a.stat().st_mode & 0o777) == 0o700
    (a / "ckpt").write_text("x")
    dirs.done(a, keep=False)
    assert not a.exists() and dirs.kept == []
    dirs.done(b, keep=True)
    assert b.exists() and dirs.kept == [b]
    dirs.close()
    assert dirs.root.exists()  # a kept trial's logs stay
    dirs.done(b, keep=False)
    dirs.close()
    assert not dirs.root.exists()


def test_a_name_taken_is_never_reused(tmp_path: Path) -> None:
    dirs = rundirs.RunDirs(str(tmp_path))
    (dirs.root / "001-x").mkdir()
    with pytest.raises(FileExistsError):
        dirs.new("x")  # never handed an existing directory


def test_with_run_dir_appends_so_the_last_wins() -> None:
    assert rundirs.with_run_dir(["hosttune", "train", "--run-dir", "/a"], Path("/b")) == [
        "hosttune", "train", "--run-dir", "/a", "--run-dir", "/b"]
    assert rundirs.RANK_SCRIPT == os.path.join("hosttune", "commands", "train_rank.py")
