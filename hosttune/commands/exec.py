"""`hosttune exec`: run COMMAND (torchrun, an srun task, anything) with the profile applied per rank."""

import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import click

from hosttune.errors import UserError


class _ExecCommand(click.Command):
    """COMMAND's own options pass through untouched (`exec python -u x.py`), but an unknown option before COMMAND
    (`exec --bogus`) is exec's: one line, exit 2, instead of running a program called `--bogus`."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        takes_value: Dict[str, bool] = {}
        for param in self.get_params(ctx):
            if isinstance(param, click.Option):
                for name in [*param.opts, *param.secondary_opts]:
                    takes_value[name] = not param.is_flag
        i = 0
        while i < len(args):
            tok = args[i]
            if tok == "--" or not tok.startswith("-") or tok == "-":
                break  # COMMAND starts here
            name = tok.split("=", 1)[0]
            if name not in takes_value:
                raise UserError(f"exec: no such option: {name} (put COMMAND after --: hosttune exec [OPTIONS] -- "
                                f"COMMAND...)")
            i += 2 if takes_value[name] and "=" not in tok else 1
        return super().parse_args(ctx, args)


@click.command(
    "exec",
    cls=_ExecCommand,
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("--profile", "profile_name", default=None, help="Profile name or file (default: the one in use).")
@click.option("--dry-run", is_flag=True, help="Print the final argv and each local rank's CPUs, memory and env.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: print {argv, ranks:[...]} as JSON.")
@click.option("--root", default=None, help="With --dry-run: plan for a captured host (proc/, sys/, etc/).")
@click.option("--no-bind", is_flag=True, help="Set the environment only; no CPU or memory binding.")
@click.option("--verify", is_flag=True, help="Read each rank's affinity, memory policy and env back from /proc.")
@click.option("--override", is_flag=True,
              help="The profile's values replace variables you already set (default: yours are kept, and said).")
@click.option("--no-measured", is_flag=True,
              help="Ignore the job's measured overlay (what hosttune autotune saved for it on this kind of host).")
@click.option("--hang-timeout", default=None, metavar="DURATION",
              help="No output from the job for this long (600, 90s, 10m, 1h; off): save every rank's Python stacks "
                   "in ./hosttune-hang-ID/, name the odd rank, stop the job, exit 124 (default: the profile's "
                   "hang_timeout).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def cmd(
    profile_name: Optional[str],
    dry_run: bool,
    as_json: bool,
    root: Optional[str],
    no_bind: bool,
    verify: bool,
    override: bool,
    no_measured: bool,
    hang_timeout: Optional[str],
    command: Tuple[str, ...],
) -> None:
    """Run COMMAND with the profile applied per rank.

    \b
      hosttune exec -- torchrun --nproc_per_node=2 train.py
      hosttune exec -- python train.py
      srun -n 4 hosttune exec -- python train.py

    Exit status: the job's own; 128+N when it died of signal N (or failed after hosttune forwarded signal N);
    124 when --hang-timeout stopped it (no output for that long; the stacks are in ./hosttune-hang-ID/);
    2 when COMMAND is missing or not found or an option is wrong.
    """
    from hosttune import trust
    from hosttune.launch.job import prepare

    if root is not None and not dry_run:
        raise UserError("--root describes another host: use it with --dry-run")
    if as_json and not dry_run:
        raise UserError("--json prints the plan: use it with --dry-run")
    if root is not None:
        root = trust.host_tree(root)
    _hang_seconds(hang_timeout, None)  # a bad --hang-timeout is refused before anything is detected
    job = prepare(list(command), profile=profile_name, root=Path(root) if root else None, no_bind=no_bind,
                  override=override, measured=not no_measured)
    if job.measured_note:  # the overlay autotune saved for this job: applied, or stale; one line either way
        from hosttune.term import printable

        click.echo(f"hosttune: {printable(job.measured_note)}", err=True)
    if dry_run:
        from hosttune import profile as profmod
        from hosttune.term import printable

        note = profmod.fingerprint_note(job.profile, job.facts)  # a profile made on other hardware: say so once
        if note:
            click.echo(printable(note), err=True)
        if as_json:
            click.echo(json.dumps(job.to_dict(), indent=2))
        else:
            from hosttune.launch.job import render_text

            click.echo(render_text(job))
        return
    from hosttune.launch.job import notices
    from hosttune.launch.supervise import run

    for line in notices(job):  # once, before the job's own output: whose values it runs with, and who binds
        sys.stderr.write(f"hosttune: {line}\n")
    sys.stderr.flush()
    sys.exit(run(job, verify=verify, hang_timeout=_hang_seconds(hang_timeout, job.profile)))


def _hang_seconds(option: Optional[str], prof: object) -> Optional[float]:
    """--hang-timeout, else the profile's hang_timeout, read by the profile table's one duration reader; None (`off`,
    which also turns a profile's default off): no hang watch."""
    from hosttune.profile.settings import duration_or_off

    value = option if option is not None else getattr(prof, "hang_timeout", None)
    try:
        return duration_or_off(value)
    except ValueError:
        from hosttune.term import printable

        what = "--hang-timeout" if option is not None else "the profile's hang_timeout"
        raise UserError(f"{what} {printable(str(value)[:40])!r}: a duration such as 600, 90s, 10m or 1h "
                        f"(or off)") from None
