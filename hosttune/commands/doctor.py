"""`hosttune doctor`: check the host for PyTorch training and print each finding with the fix for this distro;
the table (and its colours) is this command's, the findings are hosttune.doctor's."""

import json
import os
import sys
from typing import Any, Mapping, Optional, Tuple

import click

from hosttune import doctor
from hosttune.errors import UserError
from hosttune.term import colour, printable

COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "skip": "bright_black"}


def render_table(report: doctor.Report, colour: bool = False) -> str:
    """One line per check (status, id, title, actual vs expected); the fix indented on the lines below.

    Every text that came from the host (a distro name, a path, a driver's answer) goes through `term.printable`, so a
    planted os-release or device name cannot move the cursor, retitle the terminal or hide a line.
    """
    width = max((len(r.id) for r in report.results), default=10)
    lines = []
    for r in report.results:
        tag = f"{r.status.upper():4}"
        if colour:
            tag = click.style(tag, fg=COLOURS[r.status], bold=r.status == "fail")
        vs = f" (expected {printable(r.expected)})" if r.expected and r.status in ("warn", "fail") else ""
        lines.append(f"{tag}  {r.id:{width}}  {printable(r.title)}: {printable(r.actual)}{vs}")
        if r.fix and r.status in ("warn", "fail"):
            pad = " " * (width + 6)
            for n, fix_line in enumerate(r.fix.split("\n")):  # only "\n" ends a fix line; any other control shows
                lines.append(f"{pad}{'fix: ' if n == 0 else '     '}{printable(fix_line)}")
    s = report.summary
    lines.append("")
    lines.append(f"{s['pass']} pass, {s['warn']} warn, {s['fail']} fail, {s['skip']} skip")
    return "\n".join(lines)


def isatty() -> bool:
    """Colour the table? term.colour's policy: a terminal, no NO_COLOR, not TERM=dumb."""
    return colour(sys.stdout)


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print {schema, findings, summary} as JSON.")
@click.option("--python", "python", metavar="PATH", help="The training interpreter to probe for torch.")
@click.option("--deep", is_flag=True,
              help="Also measure: torch/CUDA for real, GPU matmul vs peak, copies, P2P, NCCL/gloo all-reduce, CPU "
                   "matmul, memory bandwidth, bf16 speed, --data reads, /dev/shm, containers (about a minute).")
@click.option("--data", "data", metavar="PATH", multiple=True, help="A dataset/checkpoint path to check (repeat).")
@click.option("--nodes", "nodes", metavar="HOST[,HOST]", multiple=True,
              help="With --deep: the job's other nodes (names or addresses; repeat or comma-separate): check the "
                   "network path to each (interface, MTU, speed, InfiniBand/RoCE ports). Inside a Slurm "
                   "allocation of several nodes, its nodes by default.")
@click.option("--rdzv-port", "rdzv_port", type=click.IntRange(1, 65535), default=29400, show_default=True,
              help="With --nodes: the port of the cross-node all-reduce's rendezvous on the first of --nodes.")
@click.option("--root", "root", metavar="DIR", help="Check a captured host tree (proc/, sys/, etc/) instead.")
@click.option("--only", "only", metavar="GROUP", help=f"Run one group: {', '.join(doctor.GROUPS)}.")
@click.option("--explain", "explain", metavar="ID", help="Print what check ID looks at and why, then exit.")
@click.option("--fail-on", "fail_on", type=click.Choice(doctor.FAIL_ON), default="fail", show_default=True,
              help="Exit 1 when a check fails (fail) or also when one warns (warn).")
@click.option("--skip", "skip", metavar="ID", multiple=True, help="Do not run check ID (repeat).")
@click.option("--slurm", is_flag=True,
              help="Slurm HealthCheckProgram: print one drain reason, drain this node on a problem, resume a node "
                   "hosttune drained once the checks pass.")
@click.option("--npd", is_flag=True,
              help="node-problem-detector custom plugin: one line (<= 80 chars); exit 0 OK, 1 problem, 2 unknown.")
def cmd(as_json: bool, python: Optional[str], deep: bool, data: Tuple[str, ...], root: Optional[str],
        only: Optional[str], explain: Optional[str], fail_on: str, skip: Tuple[str, ...], slurm: bool,
        npd: bool, nodes: Tuple[str, ...], rdzv_port: int) -> None:
    """Check the host for PyTorch training.

    Exit status: 0 nothing at or above --fail-on, 1 a check failed (or warned, with --fail-on warn), 2 bad usage.
    With --npd: 0 OK, 1 problem, 2 unknown (a check crashed)."""
    if explain:
        check = doctor.check_by_id(explain, "--explain")
        if as_json:
            click.echo(json.dumps({"id": check.id, "group": check.group, "title": check.title,
                                   "explain": check.explain}, indent=2))
        else:
            click.echo(doctor.explain(explain))
        return
    peers = parse_nodes(nodes) or (slurm_nodes(os.environ) if deep else ())
    if peers and not deep:
        raise UserError("--nodes: needs --deep (it checks the network path to the other nodes as a measurement)")
    if python is not None:
        # The program gateway, before anything runs: as root another user's interpreter is one line, exit 2.
        from hosttune import programs

        python = programs.resolve(python, "--python:")
    if slurm or npd:
        fleet_mode(slurm, npd, as_json, root, python=python, data=data, only=only, fail_on=fail_on, skip=skip,
                   deep=deep_options(peers, rdzv_port) if deep else None)
        return
    report = doctor.diagnose(root=root, python=python, data=data, only=only, skip=skip,
                             deep=deep_options(peers, rdzv_port) if deep else None)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(render_table(report, colour=isatty()))
    ctx = click.get_current_context()
    ctx.exit(report.exit_code_at(fail_on))


def deep_options(nodes: Tuple[str, ...] = (), rdzv_port: int = 29400) -> Any:
    """What --deep measures with (tests shrink it); progress goes to stderr when that is a terminal."""
    from hosttune.doctor.deep import DeepOptions

    return DeepOptions(nodes=nodes, rdzv_port=rdzv_port)


_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:%")


def slurm_nodes(environ: Mapping[str, str]) -> Tuple[str, ...]:
    """Inside a Slurm allocation of more than one node (SLURM_JOB_NODELIST, SLURM_JOB_NUM_NODES > 1), its nodes as
    `--nodes` would name them: Slurm's own expansion of the host list (`scontrol show hostnames`), said in one line;
    else (). A host list scontrol cannot expand is one line, exit 2."""
    nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST") or ""
    count = environ.get("SLURM_JOB_NUM_NODES") or environ.get("SLURM_NNODES") or ""
    if not nodelist or not count.isdigit() or int(count) < 2:
        return ()
    from hosttune import programs

    done = programs.run(["scontrol", "show", "hostnames", nodelist], "--nodes from the Slurm allocation: scontrol",
                        capture_output=True, text=True, timeout=60)
    if done.returncode != 0 or not done.stdout.split():  # scontrol says "Invalid hostlist" and still exits 0
        why = (done.stderr or "").strip().splitlines()[-1:] or ["no host names"]
        raise UserError(f"--nodes from the Slurm allocation: scontrol show hostnames {printable(nodelist)!r}: "
                        f"{printable(why[0])}; give --nodes")
    peers = parse_nodes(tuple(line for line in done.stdout.split() if line))
    click.echo(f"hosttune: --nodes from the Slurm allocation (SLURM_JOB_NODELIST): {','.join(peers)}", err=True)
    return peers


def parse_nodes(values: Tuple[str, ...]) -> Tuple[str, ...]:
    """--nodes a,b --nodes c -> (a, b, c), each a host name or an address ([v6] brackets dropped); anything else is
    one line, exit 2 (the value is only resolved and routed, never run or opened)."""
    out = []
    for value in values:
        for part in value.split(","):
            host = part.strip()
            if host.startswith("[") and host.endswith("]"):
                host = host[1:-1]
            if not host or len(host) > 253 or not set(host) <= _HOST_CHARS or host.startswith("-"):
                raise UserError(f"--nodes: {printable(part.strip())!r} is not a host name or an address")
            if host not in out:
                out.append(host)
    return tuple(out)


def fleet_mode(slurm: bool, npd: bool, as_json: bool, root: Optional[str], **run: Any) -> None:
    """--slurm / --npd: one line on stdout; for Slurm, drain or resume this node (what slurmd expects of its
    HealthCheckProgram: it ignores the exit status), for node-problem-detector its exit status."""
    from hosttune.doctor import fleet

    if slurm and npd:
        raise UserError("--slurm and --npd: choose one")
    if as_json:
        raise UserError(f"--json and {'--slurm' if slurm else '--npd'}: choose one (both print one line)")
    if slurm and root is not None:
        raise UserError("--slurm and --root: --slurm drains this node, so it checks this node")
    if slurm and run.get("deep") is not None:
        raise UserError("--slurm and --deep: slurmd kills its HealthCheckProgram after 60 s; run --deep as a job")
    fail_on = run.pop("fail_on")
    report = doctor.diagnose(root=root, **run)
    v = fleet.verdict(report, fail_on, limit=fleet.NPD_MAX_OUTPUT if npd else fleet.SLURM_REASON_MAX)
    click.echo(v.line)
    ctx = click.get_current_context()
    if npd:
        ctx.exit(fleet.npd_exit(v))
    name = fleet.node_name(os.environ)
    action, detail = fleet.slurm_sync(v, name)
    if detail:
        click.echo(f"hosttune doctor --slurm: {printable(detail)}", err=True)
    ctx.exit(0 if v.healthy else 1)
