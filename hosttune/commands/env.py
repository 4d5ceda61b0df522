"""`hosttune env`: one rank's environment as `export K=V` lines (eval-safe) or JSON, with the reasons.

A value holding control characters (a newline, ESC, a bidi override) is exported as $'...' with those bytes in
octal, so the lines are plain printable text on a terminal and `eval` in bash (zsh, ksh) restores the value exactly.
Output is written as bytes, not through click.echo, which drops ANSI sequences when stdout is a pipe.
"""

import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Optional

import click

from hosttune import trust
from hosttune.errors import UserError
from hosttune.term import printable
from hosttune.yamlio import brief


def _int_env(name: str) -> Optional[int]:
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    if not re.fullmatch(r"\d+", v.strip()):
        raise UserError(f"${name}={brief(v)} is not a number")
    return int(v)


def _comment(text: str) -> str:
    # A comment ends at a newline; no other byte can leave it. Control and escape characters are shown escaped
    # (term.printable) so nothing reaches the terminal raw; bytes that are not UTF-8 (from argv) are shown as \udcXX.
    return "# " + printable(text).encode("utf-8", "backslashreplace").decode("utf-8")


_PLAIN = re.compile(r"[^\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]*")


def shell_quote(value: str) -> str:
    """`value` as one shell word that `eval` in bash turns back into exactly `value`, and that never puts a raw
    control or escape character on a terminal: plain text is quoted as shlex does; a value holding a control
    character (newline, ESC, a bidi override) or bytes that are not UTF-8 is written as $'...' with those bytes in
    octal, which bash reads back byte for byte in any locale."""
    if _PLAIN.fullmatch(value):
        return shlex.quote(value)
    out = []
    for byte in value.encode("utf-8", "surrogateescape"):
        ch = chr(byte)
        if ch in "\\'":
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return "$'" + "".join(out) + "'"


def _write(text: str) -> None:
    """Print exactly `text`: click.echo drops ANSI sequences when stdout is not a terminal, so piped output would
    differ from the plan; this writes the same bytes to a pipe, a file or a terminal."""
    sys.stdout.flush()
    data = (text + "\n").encode("utf-8", "surrogateescape")
    buf = getattr(sys.stdout, "buffer", None)
    if buf is not None:
        buf.write(data)
        buf.flush()
    else:  # pragma: no cover - a text-only stream
        sys.stdout.write(data.decode("utf-8", "replace"))
        sys.stdout.flush()


@click.command("env")
@click.option("--profile", "profile_name", default=None, help="Profile name or file (default: the one in use).")
@click.option("--root", "root", type=str, default=None, help="Plan for a captured host (proc/, sys/, etc/).")
@click.option("--local-rank", type=int, default=None, help="Local rank (default: $LOCAL_RANK or 0).")
@click.option("--local-world-size", type=int, default=None, help="Ranks on this node ($LOCAL_WORLD_SIZE or 1).")
@click.option("--json", "as_json", is_flag=True, help="Print {local_rank, local_world_size, cpus, mems, env} as JSON.")
@click.option("--override", is_flag=True,
              help="The profile's values replace variables you already set (default: yours are kept, and said).")
def cmd(profile_name: Optional[str], root: Optional[str], local_rank: Optional[int],
        local_world_size: Optional[int], as_json: bool, override: bool) -> None:
    """Print one rank's environment: `eval "$(hosttune env)"`."""
    from hosttune import plan, profile
    from hosttune.detect import collect

    if root is not None:
        root = trust.host_tree(root)
    # torchrun exports LOCAL_RANK and LOCAL_WORLD_SIZE, so `eval "$(hosttune env)"` inside a rank just works.
    rank = local_rank if local_rank is not None else (_int_env("LOCAL_RANK") or 0)
    size = local_world_size if local_world_size is not None else (_int_env("LOCAL_WORLD_SIZE") or 1)
    if rank >= size and local_world_size is None:
        raise UserError(f"local rank {rank} needs --local-world-size (how many ranks share this node)")
    facts = collect(Path(root) if root is not None else Path("/"), probe_torch=False)
    where = profile.locate_active(profile_name)
    prof = profile.active(profile_name, facts)
    note = profile.fingerprint_note(prof, facts)
    if note is None and root is not None and where.host_file and not prof.fingerprint:
        # this machine's own generated profile, planned for a captured host: say so even without a fingerprint
        note = (f"hosttune: planning the captured host {root} with this machine's profile {where.ref} "
                f"({where.source}); its auto settings are decided for the captured host")
    if note:
        click.echo(printable(note), err=True)
    rp = plan.resolve(facts, prof, rank, size, override=override)
    if as_json:
        out = rp.to_dict()
        out["profile"] = {"name": prof.name, "source": prof.source}
        _write(json.dumps(out, indent=2))
        return
    lines = [
        _comment(f"hosttune env: profile {prof.name} ({prof.source}), local rank {rank} of {size}"),
        _comment(f"cpus {plan.cpulist(rp.cpus) or 'unbound'}; mems {plan.cpulist(rp.mems) or '-'} ({rp.mem_policy})"),
    ]
    if rp.cpus:  # exports cannot pin a shell; say how (hosttune exec does this itself)
        mem = {"bind": "--membind", "preferred": "--preferred"}.get(rp.mem_policy)
        hint = f"numactl --physcpubind={plan.cpulist(rp.cpus)}" + (f" {mem}={plan.cpulist(rp.mems)}" if mem and
                                                                    rp.mems else "")
        lines.append(_comment(f"pin with: {hint} -- COMMAND   (hosttune exec does this per rank)"))
    lines.extend(_comment(r) for r in rp.reasons)
    for key in sorted(rp.env):
        lines.append(f"export {key}={shell_quote(rp.env[key])}")
    _write("\n".join(lines))
