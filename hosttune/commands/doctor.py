"""`hosttune doctor`: check the host for PyTorch training and print each finding with the fix for this distro;
the table (and its colours) is this command's, the findings are hosttune.doctor's."""

import json
import sys
from typing import Optional, Tuple

import click

from hosttune import doctor
from hosttune.term import printable

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
    return sys.stdout.isatty()


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print {schema, findings, summary} as JSON.")
@click.option("--python", "python", metavar="PATH", help="The training interpreter to probe for torch.")
@click.option("--data", "data", metavar="PATH", multiple=True, help="A dataset/checkpoint path to check (repeat).")
@click.option("--root", "root", metavar="DIR", help="Check a captured host tree (proc/, sys/, etc/) instead.")
@click.option("--only", "only", metavar="GROUP", help=f"Run one group: {', '.join(doctor.GROUPS)}.")
@click.option("--explain", "explain", metavar="ID", help="Print what check ID looks at and why, then exit.")
def cmd(as_json: bool, python: Optional[str], data: Tuple[str, ...], root: Optional[str], only: Optional[str],
        explain: Optional[str]) -> None:
    """Check the host for PyTorch training; exit 0 when nothing failed, 1 when a check failed."""
    if explain:
        click.echo(doctor.explain(explain))
        return
    report = doctor.diagnose(root=root, python=python, data=data, only=only)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(render_table(report, colour=isatty()))
    ctx = click.get_current_context()
    ctx.exit(report.exit_code)
