"""`hosttune profile list | show [NAME|FILE] | generate`: the profiles on the search path, one resolved, a new one."""

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import click

from hosttune import trust
from hosttune.errors import UserError
from hosttune.term import printable


def _say(line: str) -> None:
    """One line of text output: names, summaries, paths and values come from files a user wrote, so control and
    escape characters are shown escaped (term.printable), never sent to the terminal raw."""
    click.echo(printable(line).encode("utf-8", "backslashreplace").decode("utf-8"))


def _facts(root: Optional[str]) -> Any:
    from hosttune.detect import collect

    if root is not None:
        root = trust.host_tree(root)
    return collect(Path(root) if root is not None else Path("/"), probe_torch=False)


def _table(rows: List[Tuple[str, str]]) -> List[str]:
    width = max((len(k) for k, _v in rows), default=0)
    return [f"{k.ljust(width)}  {v}" for k, v in rows]


@click.group("profile")
def cmd() -> None:
    """List, show and generate environment profiles."""


@cmd.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(as_json: bool) -> None:
    """The profiles on the search path (later directories override earlier ones); * marks the one in use."""
    from hosttune import profile

    active = profile.locate_active()
    rows: List[Dict[str, Any]] = []
    for name, path, overridden in profile.available():
        try:
            summary = profile.load(str(path)).summary
        except UserError as exc:
            summary = f"INVALID: {exc}"
        rows.append({"name": name, "summary": summary, "source": str(path), "overrides": [str(p) for p in overridden],
                     "in_use": _is_active(active, name, path)})
    in_use = {"ref": active.ref, "source": active.source, "describe": active.describe()}
    if as_json:
        click.echo(json.dumps({"profiles": rows, "in_use": in_use,
                               "search_path": [str(p) for p in profile.search_path()]}, indent=2))
        return
    width = max((len(r["name"]) for r in rows), default=4)
    for r in rows:
        _say(f"{'*' if r['in_use'] else ' '} {r['name'].ljust(width)}  {r['summary']}")
        _say(f"  {''.ljust(width)}  {r['source']}" + (" (overrides " + ", ".join(r["overrides"]) + ")"
                                                            if r["overrides"] else ""))
    _say("")
    _say(f"in use: {active.describe()}")


def _is_active(active: Any, name: str, path: Path) -> bool:
    """Whether the profile in use (a name or a file) is this listed one."""
    if active.ref is None:
        return False
    if active.ref == name:
        return True
    return os.sep in active.ref and os.path.realpath(active.ref) == os.path.realpath(str(path))


@cmd.command("show")
@click.argument("name", required=False)
@click.option("--root", "root", type=str, default=None, help="A captured host, for the generated default.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_cmd(name: Optional[str], root: Optional[str], as_json: bool) -> None:
    """The resolved profile (default: the one in use) and where each value came from."""
    from hosttune import profile
    from hosttune.profile.settings import shown, value_of

    detected: List[Any] = []

    def facts_now() -> Any:  # detected once, and only when needed: the generated default, --root, a fingerprint
        if not detected:
            detected.append(_facts(root))
        return detected[0]

    if root is not None:
        facts_now()  # a bad --root is said before anything is loaded
    prof = profile.active(name, facts_now)
    facts = facts_now() if prof.fingerprint or detected else None
    note = profile.fingerprint_note(prof, facts) if facts is not None else None
    if note:
        click.echo(printable(note), err=True)
    overlays = _measured(facts_now)
    if as_json:
        out = prof.to_dict()
        if overlays:
            out["measured"] = overlays
        click.echo(json.dumps(out, indent=2))
        return
    rows = [("profile", prof.name), ("summary", prof.summary), ("source", prof.source)]
    if len(prof.chain) > 1:
        rows.append(("inherits", " <- ".join(reversed(prof.chain))))
    if prof.fingerprint and facts is not None:
        now = facts.hardware_fingerprint()
        state = "matches this host" if now == prof.fingerprint else f"STALE: this host is {now}; regenerate"
        rows.append(("fingerprint", f"{prof.fingerprint} ({state})"))
    for line in _table(rows):
        _say(line)
    _say("")
    settings: List[Tuple[str, str, str]] = []
    for s in shown():
        if s.kind == "envmap":
            for k, v in getattr(prof, s.name).items():
                settings.append((f"{s.name}.{k}", repr(v), prof.provenance.get(f"{s.name}.{k}", "")))
        else:
            settings.append((s.name, _val(value_of(prof, s.name)), prof.provenance.get(s.name, "default")))
    w1 = max(len(s[0]) for s in settings)
    w2 = min(40, max(len(s[1]) for s in settings))
    for k, v, src in settings:
        _say(f"{k.ljust(w1)}  {v.ljust(w2)}  {src}")
    for o in overlays:
        _say("")
        _say_overlay(o)


def _measured(facts_now: Any) -> List[Dict[str, Any]]:
    """The measured overlays (autotune's winners) in this user's and the system's directory, with provenance and
    whether each matches this host; a refused one (the trust rule, a bad file) with its reason."""
    from hosttune.profile import measured

    out: List[Dict[str, Any]] = []
    for path, top, err in measured.listing():
        if top is None:
            out.append({"path": str(path), "refused": err})
            continue
        now = facts_now().hardware_fingerprint()
        out.append({"path": str(path), "fingerprint": top.fingerprint, "matches_host": top.fingerprint == now,
                    "host_fingerprint": now, **measured.provenance(top)})
    return out


def _say_overlay(o: Dict[str, Any]) -> None:
    if "refused" in o:
        _say(f"measured overlay {o['path']}: REFUSED: {o['refused']}")
        return
    state = "matches this host" if o["matches_host"] else f"STALE: this host is {o['host_fingerprint']}; not applied"
    rows = [("measured overlay", o["path"]), ("job", o["job"]), ("candidate", o["candidate"]),
            ("changes", o["changes"] or "-"), ("ratio", f"x{o['ratio']} the default (95% CI {o['interval']})"),
            ("rounds", o["rounds"]), ("date", o["date"]), ("fingerprint", f"{o['fingerprint']} ({state})")]
    for line in _table(rows):
        _say(line)


def _val(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


@cmd.command("generate")
@click.option("--base", default="throughput", show_default=True, help="The base profile to make concrete.")
@click.option("-o", "--output", "output", type=str, default=None,
              help="Output file (default: /etc/hosttune/profile.yaml as root, else ~/.config/hosttune/profile.yaml).")
@click.option("--root", "root", type=str, default=None, help="Generate for a captured host (proc/, sys/, etc/).")
@click.option("--force", is_flag=True, help="Replace an existing file.")
@click.option("--json", "as_json", is_flag=True, help="Print the generated profile as JSON too.")
def generate_cmd(base: str, output: Optional[str], root: Optional[str], force: bool, as_json: bool) -> None:
    """Turn this host's facts into a profile file, every value with its reason."""
    from hosttune import profile

    facts = _facts(root)
    prof = profile.generate(facts, base)
    path = profile.write(prof, Path(output) if output else profile.default_generate_path(), force)
    if as_json:
        click.echo(json.dumps({"path": str(path), "profile": prof.to_dict()}, indent=2))
        return
    _say(f"wrote {path} (profile {prof.name}, fingerprint {prof.fingerprint})")
    for key in ("allocator", "threads", "binding", "memory_policy", "cuda_alloc_conf", "dataloader.num_workers",
                "dataloader.pin_memory"):
        if key in prof.reasons:
            _say(f"  {key}: {prof.reasons[key]}")
