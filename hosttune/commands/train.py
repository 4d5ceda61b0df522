"""`hosttune train --nproc N [engine args]`: the bundled engine on N local ranks, through `hosttune exec -- torchrun`.

The engine arguments are checked here first (the engine's config module needs no torch), so a typo fails in
milliseconds with one line instead of once per rank after torchrun has started.
"""

import importlib
import os
import shlex
import sys
from typing import List, Optional, Tuple

import click

from hosttune.errors import UserError


def build_argv(nproc: int, engine_args: List[str], profile: Optional[str] = None) -> List[str]:
    """`hosttune exec [--profile F] -- torchrun --standalone --nproc_per_node=N -m hosttune.engine ARGS...`,
    with torchrun run as `python -m torch.distributed.run` of this interpreter (the one that has hosttune)."""
    exec_opts = ["--profile", profile] if profile else []
    return [sys.executable, "-m", "hosttune", "exec", *exec_opts, "--",
            sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            "-m", "hosttune.engine", *engine_args]


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True, help="Ranks on this host.")
@click.option("--profile", "profile", type=click.Path(dir_okay=False), default=None,
              help="Profile file for `hosttune exec` (default: its own choice).")
@click.option("--dry-run", is_flag=True, help="Print the command instead of running it.")
@click.argument("engine_args", nargs=-1, type=click.UNPROCESSED)
def cmd(nproc: int, profile: Optional[str], dry_run: bool, engine_args: Tuple[str, ...]) -> None:
    """Train a bundled model (--preset gpt-tiny|resnet-tiny, or --config FILE) on N ranks.

    Everything after the options goes to `python -m hosttune.engine`, e.g.
    `hosttune train --nproc 2 --preset gpt-tiny --set steps=100`.
    """
    # torch-free (only the engine's config module). Imported by name so mypy, which leaves the engine to the
    # user's interpreter and torch version, does not follow it.
    engine_main = importlib.import_module("hosttune.engine.__main__")
    args = list(engine_args)
    problem = engine_main.check_args(args)
    if problem:
        raise UserError(f"engine: {problem}")
    argv = build_argv(nproc, args, profile)
    if dry_run:
        click.echo(shlex.join(argv))  # pasteable: a path with a space or `$` stays one argument
        return
    sys.stdout.flush()
    sys.stderr.flush()
    # Replace this process: signals from the terminal or a scheduler reach exec directly, and its exit code
    # (the job's) becomes ours with nothing in between.
    os.execv(argv[0], argv)
