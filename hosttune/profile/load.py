"""Reading profiles: one file parsed and validated with trust, a `base:` chain resolved and merged, `active()`.

As root, every file of a profile's chain (bases too, found by name or by path) and every directory above it must
pass the root trust rule (`hosttune.trust`: owned by root, not writable by group or others, symlinks resolved), and
the file is then read by its resolved name, so what was checked is what is read. A profile's `env:` entries go
through `trust.check_env_value` as root, an allow-list: variables whose value is code are refused, library
variables (CUDA_INJECTION64_PATH, OMP_TOOL_LIBRARIES, ...) must name root's ELF files, path-valued ones (PYTHONPATH,
LD_LIBRARY_PATH, PATH, BASH_ENV, TMPDIR ...) must name only root's files, and any other value naming a path is
refused. Text is parsed by `hosttune.yamlio` (no expanding
aliases, no duplicate keys) and every value quoted in a message is bounded with `yamlio.brief`.
A profile whose `base:` is its own name extends the next one *earlier* on the search path, so a user can override
`throughput` by writing ~/.config/hosttune/profiles/throughput.yaml with `base: throughput`.
"""

import difflib
import os
import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from hosttune import fsio, trust
from hosttune.errors import UserError
from hosttune.facts import Facts
from hosttune.profile import locate
from hosttune.profile.settings import PROFILE_FIELDS, SECTIONS, DataLoader, Profile, Tune, validate
from hosttune.yamlio import brief, key_lines, load_mapping, sub_lines

MAX_PROFILE_BYTES = 1 << 20


class _Raw:
    """One parsed profile file: its data and the line of each key."""

    def __init__(self, path: Path, data: Dict[str, Any], lines: Dict[str, int], sub: Dict[str, Dict[str, int]]):
        self.path = path
        self.data = data
        self.lines = lines
        self.sub = sub

    def where(self, key: str, sub: Optional[str] = None) -> str:
        line = self.sub.get(sub, {}).get(key) if sub else self.lines.get(key)
        if line is None and sub:
            line = self.lines.get(sub)
        return f"{self.path}:{line}" if line else str(self.path)


def _bad(raw: _Raw, key: str, msg: str, sub: Optional[str] = None) -> UserError:
    name = key if len(key) <= 60 and key.isprintable() else brief(key)  # a key is user text too: bounded
    shown = f"{sub}.{name}" if sub else name
    return UserError(f"{raw.where(key, sub)}: {shown}: {msg}")


def _unknown(raw: _Raw, key: Any, known: Tuple[str, ...], sub: Optional[str] = None) -> UserError:
    # difflib is quadratic in the key's length: only a key of plausible length gets a suggestion
    close = difflib.get_close_matches(str(key), known, n=1) if len(str(key)) <= 100 else []
    hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
    return _bad(raw, str(key), f"unknown key{hint}", sub)


_SUB_KEYS = tuple(SECTIONS) + ("env", "tcmalloc", "reasons")


def parse_text(text: str, path: Path) -> _Raw:
    """Parse and validate the text of one profile file (no inheritance yet). Raises UserError only."""
    data, node = load_mapping(text, str(path), "a profile")
    raw = _Raw(path, data, key_lines(node), {k: sub_lines(node, k) for k in _SUB_KEYS})
    validate(raw.data, lambda key, msg, sub: _bad(raw, key, msg, sub),
             lambda key, known, sub: _unknown(raw, key, known, sub))
    return raw


_CACHE: Dict[Tuple[str, bytes], _Raw] = {}


def read_file(path: Path) -> _Raw:
    """One profile file, checked (as root: `trust.check_path`) and then read by the name that was checked."""
    real = str(path)
    if trust.is_root():
        # Resolved once; every component is root's and not writable by others, so nobody can swap it after this.
        real = trust.check_path(path, "profile")
    try:
        blob = fsio.read_bounded(real, MAX_PROFILE_BYTES, nofollow=trust.is_root())
    except fsio.TooLarge:
        raise UserError(f"{path}: profile is larger than {MAX_PROFILE_BYTES} bytes") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read profile: {exc.strerror or exc}") from None
    key = (str(path), blob)
    if key in _CACHE:  # the same bytes again (bases are read once per profile that uses them): skip the parse
        return _CACHE[key]
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    raw = parse_text(text, path)
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[key] = raw
    return raw


# ---------------------------------------------------------------------------------------------------------------
# Resolving names and inheritance


def _looks_like_path(s: str) -> bool:
    return "/" in s or s.endswith((".yaml", ".yml"))


def _find(name: str, before: Optional[Path] = None) -> Path:
    """The winning file for `name`; with `before`, the one just earlier on the search path than that file (a
    profile that extends its own name extends the next one down, as tuned's overrides do)."""
    if not name or len(name) > 200 or not re.match(r"^[A-Za-z0-9_.@+-]+$", name) or name.startswith("."):
        raise UserError(f"{brief(name)} is not a profile name (names are letters, digits, '.', '_', '-')")
    where = locate.locator()
    cands = where.candidates(name)
    if before is not None:
        real = [p.resolve() for p in cands]
        cands = cands[: real.index(before)] if before in real else [p for p, r in zip(cands, real) if r != before]
    if not cands:
        known = [n for n, _p, _o in where.available()]
        close = difflib.get_close_matches(name, known, n=1) if len(name) <= 100 else []
        hint = f"; did you mean {close[0]!r}?" if close else (f"; known: {', '.join(known)}" if known else "")
        raise UserError(f"unknown profile {brief(name)}{hint}")
    return cands[-1]


def _chain(path: Path) -> List[_Raw]:
    """The file and its bases, base-most first; a cycle or unknown base is a UserError naming the file."""
    chain: List[_Raw] = []
    seen: List[Path] = []
    cur = path
    while True:
        real = cur.resolve()
        if real in seen:
            names = " -> ".join(str(p) for p in seen + [real])
            raise UserError(f"{chain[-1].where('base')}: base: inheritance cycle: {names}")
        seen.append(real)
        raw = read_file(cur)
        chain.append(raw)
        base = raw.data.get("base")
        if not base:
            break
        if len(chain) > 32:
            raise _bad(raw, "base", "inheritance chain deeper than 32")
        if _looks_like_path(base):
            nxt = Path(base) if base.startswith("/") else cur.parent / base
            try:
                found = nxt.is_file()
            except OSError:
                found = False
            if not found:
                raise _bad(raw, "base", f"unknown base {brief(base)}: no such file")
        else:
            try:
                nxt = _find(base, before=real if base == cur.stem else None)
            except UserError as exc:
                raise _bad(raw, "base", f"unknown base {brief(base)} ({exc})") from None
        cur = nxt
    chain.reverse()
    return chain


def _merge(chain: List[_Raw], name: str) -> Profile:
    vals: Dict[str, Any] = {}
    prov: Dict[str, str] = {}
    maps: Dict[str, Dict[str, str]] = {"env": {}, "tcmalloc": {}}
    sects: Dict[str, Dict[str, Any]] = {s: {} for s in SECTIONS}
    why_all: Dict[str, str] = {}
    env_where: Dict[str, str] = {}
    for raw in chain:
        reasons = raw.data.get("reasons") or {}
        why_all.update(reasons)

        def note(key: str, where: str, reasons: Dict[str, str] = reasons) -> str:
            why = reasons.get(key)
            return f"{where}: {why}" if why else where

        for key, value in raw.data.items():
            if key in ("base", "reasons", "name"):
                continue
            if key in maps:
                for k, v in (value or {}).items():
                    maps[key][k] = str(v)
                    if key == "env":
                        env_where[k] = raw.where(k, "env")
                    prov[f"{key}.{k}"] = note(f"{key}.{k}", raw.where(k, key))
            elif key in sects:
                for k, v in (value or {}).items():
                    sects[key][k] = v
                    prov[f"{key}.{k}"] = note(f"{key}.{k}", raw.where(k, key))
            else:
                vals[key] = "none" if (key == "memory_policy" and value is False) else value
                prov[key] = note(key, raw.where(key))
    env = maps["env"]
    for k in env:  # as root, what the merged profile will really export must be root's alone (trust.py)
        env[k] = trust.check_env_value(k, env[k], env_where[k])
    top = chain[-1]
    summary = top.data.get("summary") or next((r.data["summary"] for r in reversed(chain) if r.data.get("summary")), "")
    vals.pop("summary", None)
    return Profile(
        name=str(top.data.get("name") or name),
        summary=summary,
        source=str(top.path),
        env=env,
        tcmalloc=maps["tcmalloc"],
        dataloader=DataLoader(**sects["dataloader"]),
        tune=Tune(**sects["tune"]),
        provenance=prov,
        chain=tuple(str(r.path) for r in chain),
        reasons=why_all,
        **{k: v for k, v in vals.items() if k in PROFILE_FIELDS},
    )


def load(name_or_path: str) -> Profile:
    """A profile by name on the search path, or a file path; `base:` chains merged (later files win)."""
    if not name_or_path:
        raise UserError("empty profile name")
    if _looks_like_path(name_or_path) or Path(name_or_path).is_file() and not locate.locator().candidates(
            name_or_path):
        path = Path(name_or_path)
        if not path.is_file():
            raise UserError(f"{path}: no such profile file")
        name = path.stem
    else:
        path = _find(name_or_path)
        name = name_or_path
    return _merge(_chain(path), name)


def load_text(text: str, path: str = "<string>") -> Profile:
    """A profile from YAML text (bases resolved on the search path); used by tests and `--profile -`."""
    raw = parse_text(text, Path(path))
    chain = [raw]
    base = raw.data.get("base")
    if base:
        try:
            chain = _chain(_find(base)) + chain
        except UserError as exc:
            raise _bad(raw, "base", f"unknown base {brief(base)} ({exc})") from None
    return _merge(chain, Path(path).stem)


def active(explicit: Optional[str] = None, facts: Union[Facts, Callable[[], Facts], None] = None,
           environ: Mapping[str, str] = os.environ) -> Profile:
    """The profile in use (`locate.locate_active`), loaded; when none is configured, the built-in default generated
    for `facts`: the host's Facts, or a function that detects them (called only then). Profiles never detect: the
    caller (a command, the launcher) owns detection, so asking for the generated default without facts is a
    caller's mistake (TypeError)."""
    where = locate.locate_active(explicit, environ)
    if where.ref is not None:
        return load(where.ref)
    if facts is None:
        raise TypeError("profile.active: no profile is configured, so the default is generated for a host: pass "
                        "its facts (hosttune.profile never detects)")
    from hosttune.profile.generate import generate

    if not isinstance(facts, Facts):
        facts = facts()
    return generate(facts, where.base)
