"""`hosttune autotune`: measure COMMAND under candidate plans against the default, keep only a proven winner."""

import os
import shlex
import sys
from typing import Any, List, Optional, Tuple

import click

from hosttune.commands.exec import _ExecCommand
from hosttune.errors import UserError


class _AutotuneCommand(_ExecCommand):
    """COMMAND's options pass through untouched; an unknown option before it is one line, exit 2 (as exec's)."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        try:
            return super().parse_args(ctx, args)
        except UserError as exc:
            text = str(exc).replace("exec: ", "autotune: ", 1).replace("hosttune exec", "hosttune autotune")
            raise UserError(text) from None


@click.command("autotune", cls=_AutotuneCommand,
               context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--budget", default="10m", show_default=True,
              help="Time for all trials: 600, 90s, 10m, 1h (too small for one candidate with its confirmation "
                   "rounds: exit 2).")
@click.option("--metric", "metric_re", default=None,
              help="Regular expression of the job's throughput (its group, or (?P<value>...)); the last match counts.")
@click.option("--engine", is_flag=True, help="The job is hosttune's bundled engine: read its samples/s.")
@click.option("--lower-is-better", is_flag=True, help="The metric is a time (step time, s/it): smaller wins.")
@click.option("--warmup", default=None, type=int,
              help="Metric matches discarded at each trial's start [default: 1; 0 with --engine, whose samples/s "
              "comes once, at the end of a run, over the whole run].")
@click.option("--warmup-seconds", default=0.0, show_default=True, type=float,
              help="Metric matches in a trial's first seconds discarded.")
@click.option("--trial", "trial_s", default=None, type=float,
              help="Seconds a trial may run, at most (default: the budget spread over every candidate's "
                   "planned trials, less 10% to start and stop each).")
@click.option("--min-gain", default=0.01, show_default=True, type=float,
              help="A winner's interval must clear 1 + this (0.01 = 1%).")
@click.option("--output", default=None, help="Write the winner as a whole profile file here, for exec --profile "
              "(default: the job's measured overlay, which the next exec of the same job applies).")
@click.option("--candidates", "only", default=None, help="Only these candidates (comma-separated names, as "
              "--dry-run lists them).")
@click.option("--dry-run", is_flag=True,
              help="Print the candidates in priority order, the order of trials and what fits the budget; run "
                   "nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the result table as JSON.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def cmd(budget: str, metric_re: Optional[str], engine: bool, lower_is_better: bool, warmup: Optional[int],
        warmup_seconds: float, trial_s: Optional[float], min_gain: float, output: Optional[str], only: Optional[str],
        dry_run: bool,
        as_json: bool, command: Tuple[str, ...]) -> None:
    """Run COMMAND under candidate plans, each against the default in adjacent runs; keep a provable winner.

    \b
      hosttune autotune --budget 10m --metric '([0-9.]+) samples/s' -- torchrun --nproc_per_node=2 train.py
      hosttune autotune --engine -- hosttune train --model cnn ...
      hosttune autotune --dry-run --metric 'step ([0-9.]+) s' --lower-is-better -- python train.py

    Exit status: 0 (a winner saved, or no measurable gain: the default stays); 1 when the default plan's own trial
    fails; 2 on bad input.
    """
    from hosttune.autotune import report, session

    spec = _spec(metric_re, engine, lower_is_better, warmup, warmup_seconds)
    seconds = _budget(budget)
    if trial_s is not None and not trial_s > 0:
        raise UserError("--trial: seconds must be more than 0")
    if not 0 <= min_gain < 10:
        raise UserError("--min-gain: a fraction from 0 to 10 (0.01 = 1%)")
    if not command:
        raise UserError("autotune: no COMMAND given (hosttune autotune [OPTIONS] -- COMMAND [ARGS...])")
    names = [n.strip() for n in only.split(",") if n.strip()] if only is not None else None
    if names is not None and not names:
        raise UserError("--candidates: give at least one name")
    job, note = train_job(command)
    s = session.prepare(job, spec, seconds, window_s=trial_s, engine=engine, only=names)
    try:
        if note:
            click.echo(note, err=as_json)
        click.echo(report.plan_text(s), err=as_json)
        if dry_run:
            return
        res = _search(s)
    finally:
        s.close()
    if res is None:
        sys.exit(1)
    w = res.winner(min_gain)
    saved = report.save(s, res, w, output) if w is not None else None
    if as_json:
        click.echo(report.to_json(res, min_gain, saved))
    else:
        click.echo(report.table(res, min_gain))
    if saved is not None:
        how = (f"use it: hosttune exec --profile {saved} -- ..." if output else
               "the next `hosttune exec -- COMMAND` of this job on this kind of host applies it (--no-measured: not)")
        click.echo(f"saved: {saved}\n{how}", err=as_json)


def train_job(command: Tuple[str, ...]) -> Tuple[List[str], Optional[str]]:
    """`hosttune train [--nproc N] [--python P] ENGINE_ARGS` as the line it runs under its own `hosttune exec`
    (PYTHON -m torch.distributed.run ... train_rank.py ENGINE_ARGS), and a line saying so; any other command as
    given. Tried as given, train's own exec would plan its ranks again inside the trial's (a single-process plan
    whose OMP_NUM_THREADS, as the caller's, would win for every rank); tried as its torchrun line, each candidate
    plans the ranks, and the overlay is saved under the key the next `hosttune train` of this job looks up."""
    if len(command) < 2 or os.path.basename(command[0]) != "hosttune" or command[1] != "train":
        return list(command), None
    import importlib

    from hosttune.commands import train

    try:
        params = train.cmd.make_context("train", list(command[2:])).params
    except click.exceptions.Exit:
        raise UserError("autotune: hosttune train --help is not a job") from None
    except click.ClickException as exc:
        raise UserError(f"autotune: hosttune train: {exc.format_message()}") from None
    if params.get("profile") or params.get("dry_run"):
        raise UserError("autotune: leave --profile and --dry-run out of `hosttune train`: each trial runs the job "
                        "under one candidate profile")
    args = list(params.get("engine_args") or ())
    problem = importlib.import_module("hosttune.engine.__main__").check_args(args)
    if problem:
        raise UserError(f"engine: {problem}")
    argv = train.build_argv(int(params.get("nproc") or 1), args, None,
                            train.find_python(params.get("python"), os.environ).path)
    job = argv[argv.index("--", argv.index("exec")) + 1:]
    return job, (f"hosttune train runs under its own hosttune exec: the trials run its ranks' line under each "
                 f"candidate instead: {shlex.join(job)}")


def _spec(metric_re: Optional[str], engine: bool, lower: bool, warmup: Optional[int], warmup_s: float) -> Any:
    from hosttune.autotune import metric

    if engine and metric_re:
        raise UserError("--metric and --engine: give one (--engine reads the engine's samples/s)")
    if not engine and not metric_re:
        raise UserError("give --metric REGEX (the job's throughput in its output) or --engine")
    if warmup is None:  # the engine prints its samples/s once, in its last line: discarding it would drop every trial
        warmup = 0 if engine else 1
    return metric.compile_metric(metric.ENGINE_REGEX if engine else str(metric_re), lower_is_better=lower,
                                 warmup_matches=warmup, warmup_s=warmup_s)


def _budget(text: str) -> float:
    from hosttune.profile.settings import duration_s

    try:
        return duration_s(text)
    except ValueError:
        raise UserError(f"--budget {text!r}: a duration such as 600, 90s, 10m or 1h") from None


def _search(s: Any) -> Any:
    from hosttune.autotune import report, search

    planned = s.trials()
    bar = sys.stderr.isatty()

    def progress(t: Any, res: Any) -> None:
        line = report.trial_line(t, res, planned)
        if bar and t.score is not None:  # a terminal: one line redrawn; a dropped trial stays on screen
            width = 24
            done = min(width, int(width * res.spent / max(s.budget_s, 1e-9)))
            sys.stderr.write("\r\033[K[" + "#" * done + "." * (width - done) + "] " + line)
        else:
            sys.stderr.write(("\r\033[K" if bar else "") + line + "\n")
        sys.stderr.flush()

    try:
        res = s.run(progress=progress)
        if bar:
            sys.stderr.write("\n")
        return res
    except search.DefaultFailed as exc:
        click.echo(f"hosttune: autotune: the job under the default plan gave no metric: {exc}", err=True)
        return None
