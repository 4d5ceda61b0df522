"""Measured overlays: what `hosttune autotune` proved on this kind of host for one job, applied by `hosttune exec`.

An overlay is a profile file (written by `profile.write`: fsio, atomic; read by `load.load`: the root trust rule,
validation, `env:` through `trust.check_env_value`) named after the job's key, in a `measured/` directory beside the
generated profiles: `$XDG_CONFIG_HOME/hosttune/measured/` for a user, `$HOSTTUNE_ETC_DIR/measured/`
(/etc/hosttune/measured) for root, looked up in that order (the order of `locate.generated_paths`). Its
`fingerprint:` is the host's hardware fingerprint (Facts.hardware_fingerprint) and its `reasons:` carry the
provenance under `measured.*` keys: candidate, ratio, interval, rounds, date, job, and `measured.changes`, the
settings the winner changed from the default plan: only those are laid over the profile in use.

The job's key is a hash of its command line, normalised: the program's base name (`/usr/bin/torchrun` ==
`torchrun`), long options spelled one way (`--nproc_per_node=2` == `--nproc-per-node 2`), and the options that
name a run rather than shape its work dropped with their values (`VOLATILE`: ports, rendezvous ids and endpoints,
master address, node rank, the engine's run directory). The script and every other argument (rank count, batch
size, model) are kept: they shape the work, so a different one is a different job.

`exec` applies the overlay unless `--no-measured` or `--profile` names the profile explicitly (autotune's own trials
run that way); a changed fingerprint makes it stale: not applied, one line says so. As root, an overlay the trust
rule refuses (another user's file or directory) is refused like a profile: one line, exit 2.
"""

import dataclasses
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune.errors import UserError
from hosttune.profile import locate
from hosttune.profile.settings import SECTIONS, Profile, shown, value_of

SUBDIR = "measured"
VOLATILE = frozenset({
    "--master-port", "--master-addr", "--rdzv-id", "--rdzv-endpoint", "--node-rank", "--main-process-port",
    "--main-process-ip", "--machine-rank", "--run-id", "--run-dir",
})
PROVENANCE = ("candidate", "ratio", "interval", "rounds", "date", "job", "changes")


def normalise(command: Sequence[str]) -> List[str]:
    """The command line as the key sees it (see the module's doc)."""
    if not command:
        return []
    out = [os.path.basename(command[0])]
    rest = list(command[1:])
    i = 0
    while i < len(rest):
        tok = rest[i]
        i += 1
        if not (tok.startswith("--") and len(tok) > 2):
            out.append(tok)
            continue
        name, eq, val = tok.partition("=")
        name = "--" + name[2:].replace("_", "-")
        if name in VOLATILE:
            if not eq and i < len(rest) and not rest[i].startswith("-"):
                i += 1  # its value
            continue
        out.extend([name, val] if eq else [name])
    return out


def job_key(command: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(normalise(command)).encode()).hexdigest()[:16]


def dirs(environ: Optional[Mapping[str, str]] = None) -> List[Path]:
    """Where overlays are looked up, first found wins: the user's, then the system's."""
    return [p.parent / SUBDIR for p in locate.generated_paths(environ)]


def save_path(command: Sequence[str]) -> Path:
    """Where autotune writes the overlay of `command`: beside the profile `profile generate` would write."""
    return locate.default_generate_path().parent / SUBDIR / f"{job_key(command)}.yaml"


def find(command: Sequence[str], environ: Optional[Mapping[str, str]] = None) -> Optional[Path]:
    name = f"{job_key(command)}.yaml"
    for d in dirs(environ):
        p = d / name
        try:
            if p.is_file():
                return p
        except OSError:
            continue
    return None


def changes(default: Profile, winner: Profile) -> List[str]:
    """The settings (dotted: `dataloader.num_workers`, `env.NAME`) whose value differs in `winner`."""
    out: List[str] = []
    for s in shown():
        if s.kind == "envmap":
            a, b = getattr(default, s.name), getattr(winner, s.name)
            out.extend(f"{s.name}.{k}" for k in b if a.get(k) != b[k])
        elif value_of(default, s.name) != value_of(winner, s.name):
            out.append(s.name)
    return out


def overlay(default: Profile, winner: Profile, *, command: Sequence[str], fingerprint: str, candidate: str,
            ratio: float, lo: float, hi: float, rounds: int) -> Profile:
    """The winner as an overlay profile: its fingerprint, and the provenance under `reasons: measured.*`."""
    when = time.strftime("%Y-%m-%d", time.gmtime())
    changed = changes(default, winner)
    prov = {"candidate": candidate, "ratio": f"{ratio:.3f}", "interval": f"{lo:.3f}-{hi:.3f}", "rounds": str(rounds),
            "date": when, "job": " ".join(normalise(command)), "changes": ",".join(changed)}
    reasons = dict(winner.reasons)
    reasons.update({f"measured.{k}": v for k, v in prov.items()})
    summary = (f"measured by hosttune autotune on {when}: {candidate} x{ratio:.3f} the default (95% CI "
               f"{lo:.3f}-{hi:.3f}, {rounds} rounds)")
    return dataclasses.replace(winner, name=f"measured-{job_key(command)}", summary=summary, fingerprint=fingerprint,
                               reasons=reasons)


def provenance(prof: Profile) -> Dict[str, str]:
    return {k: str(prof.reasons.get(f"measured.{k}", "")) for k in PROVENANCE}


def read(path: Path) -> Profile:
    """One overlay, through the profile loader (trust, validation); a refusal is one line naming it."""
    from hosttune.profile.load import load

    try:
        prof = load(str(path))
    except UserError as exc:
        raise UserError(f"measured overlay refused (as a profile would be; --no-measured runs without it): "
                        f"{exc}") from None
    if not prof.reasons.get("measured.changes") and not prof.reasons.get("measured.candidate"):
        raise UserError(f"{path}: not a measured overlay (no measured.* provenance under reasons:)")
    _check_changes(path, prof)
    return prof


def _check_changes(path: Path, prof: Profile) -> None:
    """Every key `measured.changes` names is one `changes` writes: a setting (`allocator`, `dataloader.pin_memory`)
    or one entry of a map (`env.NAME`, `tcmalloc.key`); else the overlay is refused, one line naming the key."""
    settings = shown()
    plain = {s.name for s in settings if s.kind != "envmap"}
    maps = {s.name for s in settings if s.kind == "envmap"}
    for key in str(prof.reasons.get("measured.changes", "")).split(","):
        head, dot, tail = key.partition(".")
        if key and key not in plain and not (dot and head in maps and tail):
            forms = ", ".join(f"{m}.NAME" for m in sorted(maps))
            raise UserError(f"measured overlay {path}: measured.changes names {key!r}, not a profile setting (as "
                            f"`hosttune profile show` lists them) nor {forms}; run hosttune autotune again, or "
                            f"--no-measured")


def _lay(base: Profile, top: Profile, keys: Sequence[str], where: str) -> Profile:
    """`base` with the values of `keys` taken from `top`, each with its provenance."""
    prov, reasons = dict(base.provenance), dict(base.reasons)
    kwargs: Dict[str, Any] = {}
    maps = {"env": dict(base.env), "tcmalloc": dict(base.tcmalloc)}
    for key in keys:
        head, _dot, tail = key.partition(".")
        if head in maps and tail in getattr(top, head):
            maps[head][tail] = getattr(top, head)[tail]
        elif head in SECTIONS and tail:
            sect = kwargs.get(head, getattr(base, head))
            kwargs[head] = dataclasses.replace(sect, **{tail: getattr(getattr(top, head), tail)})
        elif not tail and hasattr(top, head):
            kwargs[head] = getattr(top, head)
        else:
            continue
        prov[key] = where
        if key in top.reasons:
            reasons[key] = top.reasons[key]
    return dataclasses.replace(base, provenance=prov, reasons=reasons, env=maps["env"], tcmalloc=maps["tcmalloc"],
                               **kwargs)


def apply(prof: Profile, command: Sequence[str], fingerprint: str,
          environ: Optional[Mapping[str, str]] = None) -> Tuple[Profile, Optional[str]]:
    """The profile with the job's overlay laid over it when one matches this host, and the one line to say."""
    path = find(command, environ)
    if path is None:
        return prof, None
    top = read(path)
    p = provenance(top)
    if top.fingerprint != fingerprint:
        return prof, (f"measured overlay {path} not applied: stale, measured on other hardware (fingerprint "
                      f"{top.fingerprint}; this host is {fingerprint}); run hosttune autotune again")
    keys = [k for k in p["changes"].split(",") if k]
    where = f"{path}: measured {p['date']}, {p['candidate']} x{p['ratio']} ({p['interval']}, {p['rounds']} rounds)"
    laid = _lay(prof, top, keys, where)
    return laid, (f"measured overlay applied: {p['candidate']} ({', '.join(keys) or 'no changes'}), x{p['ratio']} "
                  f"the default (95% CI {p['interval']}, {p['rounds']} rounds, {p['date']}) from {path}; "
                  f"--no-measured ignores it")


def listing(environ: Optional[Mapping[str, str]] = None) -> List[Tuple[Path, Optional[Profile], str]]:
    """Every overlay in the measured directories: (path, the overlay or None, the error when it is refused)."""
    out: List[Tuple[Path, Optional[Profile], str]] = []
    for d in dirs(environ):
        try:
            entries = sorted(p for p in d.iterdir() if p.suffix == ".yaml") if d.is_dir() else []
        except OSError:
            continue
        for p in entries:
            try:
                out.append((p, read(p), ""))
            except UserError as exc:
                out.append((p, None, str(exc)))
    return out
