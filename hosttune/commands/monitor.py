"""`hosttune monitor`: run the GPU/host monitor (or one sample with --once); `hosttune monitor report` reads it back."""

import json
import signal
import sys
import time
from typing import Optional

import click

from hosttune.monitor import config as mconfig


@click.group("monitor", invoke_without_command=True)
@click.option("--interval", type=float, default=None, help="Seconds between samples (default 5, or the config's).")
@click.option("--log-dir", default=None, help="Directory for monitor.jsonl and its rotated backups.")
@click.option("--textfile-dir", default=None,
              help="Directory for hosttune.prom (node_exporter's textfile collector); 'auto' (default): "
                   "/var/lib/prometheus/node-exporter if it exists, else /var/lib/hosttune/textfile; '' disables it.")
@click.option("--once", is_flag=True, help="Print one sample as JSON and exit.")
@click.option("--json", "as_json", is_flag=True, help="With --once: JSON output (the only format of --once).")
@click.option("--config", "config_path", default=None, metavar="FILE",
              help=f"Monitor config (default {mconfig.DEFAULT_CONFIG} when it exists).")
@click.pass_context
def cmd(ctx: click.Context, interval: Optional[float], log_dir: Optional[str], textfile_dir: Optional[str],
        once: bool, as_json: bool, config_path: Optional[str]) -> None:
    """Log GPU and host temperature, memory, power and throttling to JSONL, a Prometheus textfile and the journal.

    Runs until SIGTERM/SIGINT (exit 0); SIGHUP reopens the log file. Subcommand `report` summarises the log.
    """
    if ctx.invoked_subcommand is None and not once:
        # First thing, before the slow imports: SIGHUP means "reopen the log", and before the log is open there is
        # nothing to reopen; the default disposition would kill the daemon, and systemd counts a death by SIGHUP as
        # a clean exit (no restart). daemon.run() installs the real handler. The unit's ExecStart ignores SIGHUP
        # from exec on (env --ignore-signal), which also covers the interpreter's own start-up.
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    ctx.ensure_object(dict)
    ctx.obj["config_path"] = config_path
    ctx.obj["log_dir"] = log_dir
    if ctx.invoked_subcommand is not None:
        return
    if as_json and not once:
        from hosttune.errors import UserError

        raise UserError("--json goes with --once (the running monitor writes JSON lines to its log)")
    cfg = mconfig.load(config_path, {"interval": interval, "log_dir": log_dir, "textfile_dir": textfile_dir})
    from hosttune.monitor import daemon

    if once:
        click.echo(daemon.dumps(daemon.once(cfg)))
        return
    sys.exit(daemon.run(cfg))


@cmd.command("setup-textfile")
@click.option("--owner", envvar="USER", default=None, metavar="USER",
              help="The monitor's user (default $USER: systemd sets it to the unit's dynamic user).")
@click.option("--config", "config_path", default=None, metavar="FILE", help="Monitor config (textfile_dir).")
@click.pass_context
def setup_textfile_cmd(ctx: click.Context, owner: Optional[str], config_path: Optional[str]) -> None:
    """Run as root by hosttune-monitor.service (ExecStartPre=+): give the monitor's user the persistent
    /var/lib/hosttune/textfile and link hosttune.prom into node_exporter's textfile directory (textfile_dir).
    A root `hosttune monitor` takes the same route by itself, with root as the owner."""
    import os

    from hosttune.errors import UserError
    from hosttune.monitor import textfile

    parent = ctx.obj or {}
    cfg = mconfig.load(config_path or parent.get("config_path"))
    target = textfile.resolve_textfile_dir(cfg.textfile_dir)
    if not target:
        click.echo("textfile_dir is off; nothing to set up")
        return
    if os.geteuid() != 0:
        raise UserError("monitor setup-textfile must run as root (the unit runs it with ExecStartPre=+)")
    name = owner or "root"
    ids = textfile.service_user(name)
    if ids is None:
        raise UserError(f"--owner: no user {name!r} (neither in the user database nor a running unit's dynamic user)")
    try:
        done, warnings = textfile.publish(target, ids[0], ids[1])
    except OSError as exc:
        raise UserError(f"cannot set up the textfile for {target}: {exc.strerror or exc}"
                        f"{' (' + exc.filename + ')' if exc.filename else ''}") from None
    for warning in warnings:
        click.echo(f"hosttune: warning: {warning}", err=True)
    click.echo(f"{done} (owner {name}, uid {ids[0]})")


@cmd.command("report")
@click.option("--log-dir", default=None, help="Where monitor.jsonl is (default: the config's log_dir).")
@click.option("--since", default=None, metavar="DURATION", help="Only the last DURATION (30m, 2h, 1d, 1h30m).")
@click.option("--until", default=None, metavar="WHEN",
              help="Only up to WHEN: a duration ago (30m, 2h) or a UTC time (2026-12-01T10:00:00Z, 2026-12-01 10:00).")
@click.option("--plot", default=None, metavar="FILE", help="Draw temperature and memory over time (.svg or .png).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--job", default=None, metavar="ID",
              help="Only this job's GPUs (a Slurm job id, a Kubernetes pod UID or a container id): utilisation, "
                   "memory, power, energy, throttle time and XIDs while it had a process on them.")
@click.option("--config", "config_path", default=None, metavar="FILE", help="Monitor config for dirs and thresholds.")
@click.pass_context
def report_cmd(ctx: click.Context, log_dir: Optional[str], since: Optional[str], until: Optional[str],
               plot: Optional[str], as_json: bool, job: Optional[str], config_path: Optional[str]) -> None:
    """Min/mean/p50/p95/p99/max per metric, time above each threshold, and the events, from the monitor's JSONL
    log (bytes in KiB/MiB/GiB); with --job, one job's GPUs."""
    from hosttune.monitor import report

    parent = ctx.obj or {}
    cfg = mconfig.load(config_path or parent.get("config_path"))
    where = log_dir or parent.get("log_dir") or cfg.log_dir
    since_s = report.parse_duration(since) if since else None
    now = time.time()
    until_ts = report.parse_when(until, now) if until else None
    if job is not None and (not job.strip() or plot):
        from hosttune.errors import UserError

        raise UserError("--job: give a job id (Slurm job id, pod UID or container id)" if not job.strip()
                        else "--job and --plot do not go together (the picture is the whole host's)")
    samples, bad = report.read_samples(where, since_s, now=now, until=until_ts)
    if job is not None:
        jsum = report.job_summary(samples, job.strip())
        if as_json:
            click.echo(json.dumps(dict(jsum, log_dir=where, unreadable_lines=bad), indent=2))
        else:
            click.echo(report.render_job_text(jsum, where, bad), nl=False)
        return
    summary = report.summarize(samples, cfg.thresholds)
    if plot:
        report.write_plot(plot, samples, cfg.thresholds, f"hosttune monitor: {where}")
    if as_json:
        click.echo(json.dumps(dict(summary, log_dir=where, unreadable_lines=bad, plot=plot), indent=2))
    else:
        click.echo(report.render_text(summary, where, bad), nl=False)
        if plot:
            click.echo(f"plot written to {plot}")
