"""`hosttune tune apply | verify | revert`: the CLI of hosttune.tune (tables, --json, exit codes 0/1/2)."""

import json
from pathlib import Path
from typing import List, Optional, Sequence

import click

from hosttune import trust
from hosttune.term import printable


def _root(root: Optional[str]) -> Path:
    return Path(root) if root else Path("/")


def _q(value: Optional[str]) -> str:
    return "-" if value is None else printable(value)


@click.group("tune")
def cmd() -> None:
    """Apply, verify and revert the host settings doctor's checks expect for training."""


@cmd.command("apply")
@click.option("--dry-run", is_flag=True, help="Show the changes; change nothing (works as any user).")
@click.option("--only", "only", multiple=True, metavar="ID", help="Only this tunable (repeatable).")
@click.option("--root", type=str, default=None,
              help="Read and write inside DIR (a captured host tree), never the host.")
@click.option("--boot", is_flag=True, hidden=True, help="Re-apply the saved runtime values (hosttune-tune.service).")
@click.option("--json", "as_json", is_flag=True, help="The changes as JSON.")
def apply_cmd(dry_run: bool, only: Sequence[str], root: Optional[str], boot: bool, as_json: bool) -> None:
    """Bring the host to the profile's settings: each change as `before -> after`, with its reason."""
    from hosttune.tune import core

    core.check_ids(only)
    root = None if root is None else trust.host_tree(root, writes=not dry_run)
    core.uid_check(Path(root) if root else None, dry_run, "apply")
    changes, skipped = core.apply_report(_root(root), only=tuple(only), dry_run=dry_run, boot=boot)
    if as_json:
        click.echo(json.dumps({"dry_run": dry_run, "changes": [c.to_dict() for c in changes],
                               "skipped": [{"id": s.id, "reason": s.reason} for s in skipped]}, indent=2))
        return
    # a skipped tunable is not "already right": each one is said, with its reason
    for s in skipped:
        click.echo(f"skipped {s.id}: {printable(s.reason)}")
    if not changes:
        if boot:
            click.echo("nothing to re-apply")
            return
        right = [t for t in (only or core.TUNABLE_IDS) if t not in {s.id for s in skipped}]
        if right:
            which = (", ".join(right) + (" is" if len(right) == 1 else " are")) if only else \
                ("every tunable is" if not skipped else "every other tunable is")
            click.echo(f"nothing to change: {which} already right")
        else:
            click.echo("nothing to change")
        return
    verb = "would change" if dry_run else "changed"
    for c in changes:
        keep = f"  (kept in {', '.join(c.persist)})" if c.persist else ""
        click.echo(f"{verb} {c.id}: {_q(c.before)} -> {printable(c.after)}  # {printable(c.reason)}{keep}")


@cmd.command("verify")
@click.option("--root", type=str, default=None,
              help="Read inside DIR (a captured host tree), never the host.")
@click.option("--json", "as_json", is_flag=True, help="Expected vs actual as JSON.")
@click.pass_context
def verify_cmd(ctx: click.Context, root: Optional[str], as_json: bool) -> None:
    """Expected vs actual for every tunable; exit 1 when one drifted."""
    from hosttune.tune import core

    statuses = core.verify(_root(None if root is None else trust.host_tree(root)))
    drift = any(s.state == "drift" for s in statuses)
    if as_json:
        click.echo(json.dumps({"drift": drift, "tunables": [s.to_dict() for s in statuses]}, indent=2))
    else:
        rows: List[tuple] = [("ID", "STATE", "EXPECTED", "ACTUAL", "WHY")]
        rows += [(s.id, s.state, _q(s.expected), _q(s.actual), printable(s.reason)) for s in statuses]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        for r in rows:
            click.echo("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    ctx.exit(1 if drift else 0)


@cmd.command("revert")
@click.option("--root", type=str, default=None,
              help="Read and write inside DIR (a captured host tree), never the host.")
def revert_cmd(root: Optional[str]) -> None:
    """Restore the values from before the first apply and remove hosttune's files."""
    from hosttune.tune import core

    root = None if root is None else trust.host_tree(root, writes=True)
    core.uid_check(Path(root) if root else None, False, "revert")
    changes = core.revert(_root(root))
    if not changes:
        click.echo("nothing to revert")
    for c in changes:
        click.echo(f"restored {c.id}: {_q(c.before)} -> {printable(c.after)}" if c.id != "files"
                   else f"removed {printable(c.before or '')}")
