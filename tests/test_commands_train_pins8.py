"""Pins for hosttune/commands/train.py (issue 21, practice round HTOP8): the whole command `hosttune train` runs,
with and without --profile, on a given and on the default interpreter."""

import sys

from hosttune import programs
from hosttune.commands import train as train_cmd


def _rank() -> list:
    yaml_dir = train_cmd._yaml_dir()
    return [str(train_cmd.RANK_SCRIPT), *(["--yaml-from", yaml_dir] if yaml_dir else [])]


def test_build_argv_whole_with_a_profile() -> None:
    got = train_cmd.build_argv(3, ["--preset", "gpt-tiny", "--set", "steps=5"], profile="/etc/p.yaml",
                               python="/opt/py/bin/python3")
    assert got == [*programs.own_argv("hosttune.cli"), "exec", "--profile", "/etc/p.yaml", "--",
                   "/opt/py/bin/python3", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=3",
                   *_rank(), "--preset", "gpt-tiny", "--set", "steps=5"]


def test_build_argv_whole_without_a_profile_on_this_interpreter() -> None:
    got = train_cmd.build_argv(1, [])
    assert got == [*programs.own_argv("hosttune.cli"), "exec", "--", sys.executable, "-m", "torch.distributed.run",
                   "--standalone", "--nproc_per_node=1", *_rank()]
