"""The `hosttune` command line: a click group whose subcommands are imported only when used.

Each subcommand lives in `hosttune/commands/<name>.py` as a click command called `cmd`. Loading them lazily keeps
`hosttune exec` (the launcher path) free of the detector's and doctor's imports.
"""

from __future__ import annotations

import _signal  # signal's C core: the `signal` module imports enum, which costs up to 10 ms before the fast path
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~13 ms to import on Debian 12's python3: not on `hosttune exec`'s fast path
    from typing import Any, Dict, List, Optional


def _interrupted_early(signum: int, frame: Any) -> None:
    # Ctrl-C while the CLI is still importing: nothing has been done yet, so leave quietly with the shell's status
    # for SIGINT instead of a KeyboardInterrupt traceback from inside an import.
    os._exit(130)


def _is_the_program() -> bool:
    """Started as `hosttune` or `python -m hosttune`, not imported by a test run or another program."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == "hosttune.__main__" or os.path.basename(sys.argv[0] or "") == "hosttune"


# Not when started with SIGINT ignored (nohup, `&` in a script): that choice stays.
if _is_the_program() and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _interrupted_early)

# `hosttune exec` of a plain job whose every input is unchanged since the last run: exec'd from the start-up cache
# before click, YAML, the detector and the planner are imported (hosttune/execcache.py). Otherwise this returns and
# the full path below runs, recorded for the next time.
if _is_the_program() and len(sys.argv) > 2 and sys.argv[1] == "exec":
    from hosttune import execcache

    execcache.fast_exec(sys.argv[2:])

import importlib  # noqa: E402 - after the handler and the fast path, like everything below
import signal  # noqa: E402

import click  # noqa: E402 - importing click is most of the CLI's start-up time

from hosttune import __version__  # noqa: E402
from hosttune.errors import UserError  # noqa: E402

# name -> (module, one-line help shown by `hosttune --help` without importing the module)
COMMANDS: Dict[str, tuple] = {
    "facts": ("hosttune.commands.facts", "Detect what this host is (CPU, NUMA, GPUs, drivers, torch, storage)."),
    "doctor": ("hosttune.commands.doctor", "Check the host for PyTorch training; exact fix for each problem."),
    "profile": ("hosttune.commands.profile", "List, show and generate environment profiles."),
    "env": ("hosttune.commands.env", "Print one rank's environment as shell exports or JSON."),
    "exec": ("hosttune.commands.exec", "Run a command (torchrun, srun, python ...) with the profile per rank."),
    "train": ("hosttune.commands.train", "Train a bundled model on N ranks through `hosttune exec -- torchrun`."),
    "monitor": ("hosttune.commands.monitor", "Log GPU/host temperature, memory, power and throttling."),
    "tune": ("hosttune.commands.tune", "Apply, verify and revert the host settings for training (and keep them)."),
    "autotune": ("hosttune.commands.autotune", "Measure your job under candidate plans; keep only a proven winner."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> List[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in COMMANDS:
            return None
        module = importlib.import_module(COMMANDS[name][0])
        return module.cmd  # type: ignore[no-any-return]

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        # Help text without importing every command module.
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        if signal.getsignal(signal.SIGINT) is _interrupted_early:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # commands may clean up on KeyboardInterrupt
        try:
            return super().invoke(ctx)
        except UserError as exc:
            from hosttune.term import printable

            click.echo(f"hosttune: error: {printable(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            ctx.exit(130)  # Ctrl-C: the shell's status for SIGINT, no traceback and no "Aborted!" (exit 1)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hosttune", message="%(prog)s %(version)s")
def cli() -> None:
    """hosttune: make a Linux host ready for PyTorch training and keep it honest."""


def main(argv: Optional[List[str]] = None) -> None:
    cli.main(args=argv, prog_name="hosttune")


if __name__ == "__main__":
    main(sys.argv[1:])
