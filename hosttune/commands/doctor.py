"""`hosttune doctor`: check the host for PyTorch training and print each finding with the fix for this distro."""

import json
from typing import Optional, Tuple

import click

from hosttune import doctor


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
        click.echo(doctor.render_table(report, colour=doctor.isatty()))
    ctx = click.get_current_context()
    ctx.exit(report.exit_code)
