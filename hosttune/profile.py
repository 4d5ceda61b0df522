"""Environment profiles: load, validate and merge YAML profiles (`base:` inheritance), generate one from Facts.

A profile is policy, not host numbers: which allocator, how many threads per rank ("auto" = the physical cores of
the rank's binding), how ranks are bound, the memory policy, DataLoader defaults, deterministic/debug switches and
literal env. `hosttune.plan` turns a Profile plus Facts into each rank's environment.

Search path for names, later wins (tuned's locator order): the packaged `profiles/`, /usr/share/hosttune/profiles,
/etc/hosttune/profiles, ~/.config/hosttune/profiles, then each entry of $HOSTTUNE_PROFILE_PATH (colon-separated).
A profile whose `base:` is its own name extends the next one *earlier* on the path, so a user can override
`throughput` by writing ~/.config/hosttune/profiles/throughput.yaml with `base: throughput`.

As root, every file of a profile's chain (bases too, found by name or by path) and every directory above it must
pass the root trust rule (`hosttune.trust`: owned by root, not writable by group or others, symlinks resolved), and
the file is then read by its resolved name, so what was checked is what is read. A profile's `env:` entries go
through `trust.check_env_value` as root: variables whose value is code are refused, path-valued ones (PYTHONPATH,
LD_LIBRARY_PATH, PATH, BASH_ENV ...) must name only root's files. Text is parsed by `hosttune.yamlio` (no expanding
aliases, no duplicate keys) and every value quoted in a message is bounded with `yamlio.brief`.
"""

import dataclasses
import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import yaml

from hosttune import fsio, trust
from hosttune.errors import UserError
from hosttune.facts import Facts
from hosttune.yamlio import brief, key_lines, load_mapping, sub_lines

GENERATED = "<generated>"
ALLOCATORS = ("auto", "jemalloc", "tcmalloc", "system")
BINDINGS = ("auto", "numa", "cores", "none")
MEMORY_POLICIES = ("bind", "preferred", "none")
DEVICES = ("auto", "cpu")
OPENMP = ("auto", "gnu", "intel")
# jemalloc settings measured on this kind of host (perf-notes.md): x1.14-1.20 together with pinning.
THROUGHPUT_MALLOC_CONF = (
    "oversize_threshold:1,background_thread:true,metadata_thp:auto,dirty_decay_ms:-1,muzzy_decay_ms:-1"
)
MAX_PROFILE_BYTES = 1 << 20
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class DataLoader:
    """DataLoader defaults exported to the engine as HOSTTUNE_*; "auto" is decided per rank by the plan."""

    num_workers: Union[str, int] = "auto"  # auto | N
    pin_memory: Union[str, bool] = "auto"  # auto (only with a GPU) | true | false
    prefetch_factor: Union[str, int] = "auto"  # auto (2, only with workers) | N
    persistent_workers: Union[str, bool] = "auto"  # auto (with workers) | true | false


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    source: str  # file path or "<generated>"
    allocator: str = "auto"  # auto | jemalloc | tcmalloc | system
    threads: Union[str, int] = "auto"  # "auto" or a number per rank
    binding: str = "auto"  # auto | numa | cores | none
    memory_policy: str = "bind"  # bind | preferred | none
    env: Mapping[str, str] = field(default_factory=dict)  # literal extra env, applied last
    fingerprint: Optional[str] = None  # Facts.hardware_fingerprint() of the host it was generated for
    provenance: Mapping[str, str] = field(default_factory=dict)  # setting -> where it came from / why
    malloc_conf: Optional[str] = None  # MALLOC_CONF when jemalloc is preloaded
    tcmalloc: Mapping[str, str] = field(default_factory=dict)  # TCMALLOC_* env when tcmalloc is preloaded
    allocator_path: Optional[str] = None  # a specific library for `allocator` instead of the detected one
    cuda_alloc_conf: Optional[str] = None  # PYTORCH_CUDA_ALLOC_CONF (GPU ranks only)
    dataloader: DataLoader = field(default_factory=DataLoader)
    deterministic: bool = False  # CUBLAS_WORKSPACE_CONFIG, PYTHONHASHSEED=0, HOSTTUNE_DETERMINISTIC=1
    debug: bool = False  # CUDA_LAUNCH_BLOCKING, NCCL_DEBUG, TORCH_DISTRIBUTED_DEBUG, TORCH_SHOW_CPP_STACKTRACES
    device: str = "auto"  # auto (GPUs when there are any) | cpu (hide GPUs: CUDA_VISIBLE_DEVICES="")
    openmp: str = "auto"  # auto (Intel only if already preloaded) | gnu | intel (preload libiomp5, KMP_*)
    chain: Tuple[str, ...] = ()  # the files this profile was merged from, base first
    reasons: Mapping[str, str] = field(default_factory=dict)  # setting -> why (the `reasons:` of the files)

    def to_dict(self) -> Dict[str, Any]:
        out = dataclasses.asdict(self)
        out["env"] = dict(self.env)
        out["tcmalloc"] = dict(self.tcmalloc)
        out["provenance"] = dict(self.provenance)
        out["chain"] = list(self.chain)
        out["reasons"] = dict(self.reasons)
        return out


# ---------------------------------------------------------------------------------------------------------------
# Schema: key -> (kind, allowed values). Validation names the file, line and key of every problem.

_TOP_KEYS = (
    "summary",
    "base",
    "allocator",
    "allocator_path",
    "malloc_conf",
    "tcmalloc",
    "threads",
    "binding",
    "memory_policy",
    "cuda_alloc_conf",
    "dataloader",
    "deterministic",
    "debug",
    "device",
    "openmp",
    "env",
    "fingerprint",
    "reasons",
    "name",
)
# Preload/audit libraries run code in every rank (as root, too): only hosttune's checked allocator path may set them.
_MANAGED_ENV = ("LD_PRELOAD", "LD_AUDIT")
_DL_KEYS = ("num_workers", "pin_memory", "prefetch_factor", "persistent_workers")


def _packaged_dirs() -> List[Path]:
    """The packaged profiles: `hosttune/profiles` when installed, `<repo>/profiles` in a checkout."""
    here = Path(__file__).resolve().parent
    dirs = []
    # <repo>/profiles only in a checkout (next to pyproject.toml), never a stray site-packages/profiles
    cands = [here / "profiles"] + ([here.parent / "profiles"] if (here.parent / "pyproject.toml").is_file() else [])
    for cand in cands:
        if cand.is_dir() and any(cand.glob("*.yaml")) and cand not in dirs:
            dirs.append(cand)
    try:  # an editable or wheel install maps profiles/ to the package hosttune.profiles
        import importlib.util

        spec = importlib.util.find_spec("hosttune.profiles")
        for loc in (spec.submodule_search_locations or []) if spec else []:
            p = Path(loc).resolve()
            if p.is_dir() and p not in dirs:
                dirs.append(p)
    except (ImportError, ValueError):
        pass
    return dirs[:1]


def _config_home() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else Path.home() / ".config"


def _etc_dir() -> Path:
    # HOSTTUNE_ETC_DIR exists so tests (run as root on a shared host) never touch the real /etc/hosttune.
    return Path(os.environ.get("HOSTTUNE_ETC_DIR") or "/etc/hosttune")


def search_path() -> List[Path]:
    """Directories searched for profile names, earliest (lowest precedence) first."""
    dirs = _packaged_dirs() + [Path("/usr/share/hosttune/profiles"), _etc_dir() / "profiles"]
    dirs.append(_config_home() / "hosttune" / "profiles")
    extra = os.environ.get("HOSTTUNE_PROFILE_PATH", "")
    dirs.extend(Path(p) for p in extra.split(":") if p)
    return dirs


def generated_paths() -> List[Path]:
    """Where `profile generate` writes and `active()` looks: [the user's profile, the system's profile]."""
    return [_config_home() / "hosttune" / "profile.yaml", _etc_dir() / "profile.yaml"]


def default_generate_path() -> Path:
    return generated_paths()[1] if os.geteuid() == 0 else generated_paths()[0]


def _candidates(name: str) -> List[Path]:
    """Every file on the search path that defines `name`, lowest precedence first."""
    out = []
    for d in search_path():
        for ext in (".yaml", ".yml"):
            p = d / f"{name}{ext}"
            try:
                found = p.is_file()
            except OSError:  # a name too long for the file system, a directory we may not search
                found = False
            if found:
                out.append(p)
                break
    return out


def available() -> List[Tuple[str, Path, List[Path]]]:
    """(name, winning file, overridden files) for every profile on the search path."""
    seen: Dict[str, List[Path]] = {}
    for d in search_path():
        if not d.is_dir():
            continue
        try:
            entries = sorted(d.iterdir())
        except OSError:
            continue
        for p in entries:
            if p.suffix in (".yaml", ".yml") and p.is_file():
                seen.setdefault(p.stem, []).append(p)
    return [(n, ps[-1], ps[:-1]) for n, ps in sorted(seen.items())]


# ---------------------------------------------------------------------------------------------------------------
# Reading one file


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


def parse_text(text: str, path: Path) -> _Raw:
    """Parse and validate the text of one profile file (no inheritance yet). Raises UserError only."""
    data, node = load_mapping(text, str(path), "a profile")
    raw = _Raw(path, data, key_lines(node), {k: sub_lines(node, k) for k in ("env", "dataloader", "tcmalloc",
                                                                            "reasons")})
    _validate(raw)
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


def _bad(raw: _Raw, key: str, msg: str, sub: Optional[str] = None) -> UserError:
    name = key if len(key) <= 60 and key.isprintable() else brief(key)  # a key is user text too: bounded
    shown = f"{sub}.{name}" if sub else name
    return UserError(f"{raw.where(key, sub)}: {shown}: {msg}")


def _unknown(raw: _Raw, key: Any, known: Tuple[str, ...], sub: Optional[str] = None) -> UserError:
    # difflib is quadratic in the key's length: only a key of plausible length gets a suggestion
    close = difflib.get_close_matches(str(key), known, n=1) if len(str(key)) <= 100 else []
    hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
    return _bad(raw, str(key), f"unknown key{hint}", sub)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _validate(raw: _Raw) -> None:
    d = raw.data
    for key in d:
        if not isinstance(key, str) or key not in _TOP_KEYS:
            raise _unknown(raw, key, _TOP_KEYS)
    for key in ("summary", "base", "allocator_path", "malloc_conf", "cuda_alloc_conf", "fingerprint", "name"):
        if key in d and d[key] is not None and not isinstance(d[key], str):
            raise _bad(raw, key, f"must be a string, not {type(d[key]).__name__}")
        if isinstance(d.get(key), str) and "\x00" in d[key]:
            raise _bad(raw, key, "must not contain a NUL byte")
    for key, choices in (
        ("allocator", ALLOCATORS),
        ("binding", BINDINGS),
        ("memory_policy", MEMORY_POLICIES),
        ("device", DEVICES),
        ("openmp", OPENMP),
    ):
        if key in d:
            v = d[key]
            if v is False and key == "memory_policy":  # YAML 1.1 reads a bare `none`-ish `no` as false
                v = "none"
            if not isinstance(v, str) or v not in choices:
                raise _bad(raw, key, f"must be one of {', '.join(choices)}, not {brief(v)}")
    if "allocator_path" in d and d["allocator_path"] is not None and not str(d["allocator_path"]).startswith("/"):
        raise _bad(raw, "allocator_path", "must be an absolute path")
    if "threads" in d:
        v = d["threads"]
        if not (v == "auto" or (_is_int(v) and 1 <= v <= 4096)):
            raise _bad(raw, "threads", f"must be 'auto' or a number from 1 to 4096, not {brief(v)}")
    for key in ("deterministic", "debug"):
        if key in d and not isinstance(d[key], bool):
            raise _bad(raw, key, f"must be true or false, not {brief(d[key])}")
    for key in ("env", "tcmalloc"):
        if key not in d or d[key] is None:
            continue
        if not isinstance(d[key], dict):
            raise _bad(raw, key, f"must be a mapping of NAME: value, not {type(d[key]).__name__}")
        for name, value in d[key].items():
            if not isinstance(name, str) or not _ENV_NAME.match(name):
                raise _bad(raw, str(name), "not a valid environment variable name", key)
            if key == "env" and name in _MANAGED_ENV:
                raise _bad(raw, name, f"{name} is managed by hosttune (it checks every library it preloads); "
                           "set allocator/allocator_path instead", key)
            if key == "tcmalloc" and not name.startswith("TCMALLOC_"):
                raise _bad(raw, name, "tcmalloc settings are TCMALLOC_* variables", key)
            if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)):
                raise _bad(raw, name, f"value must be a string or number (quote it), not {brief(value)}", key)
            if isinstance(value, str) and "\x00" in value:
                raise _bad(raw, name, "value must not contain a NUL byte", key)
    if "reasons" in d and d["reasons"] is not None:
        if not isinstance(d["reasons"], dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in d["reasons"].items()
        ):
            raise _bad(raw, "reasons", "must be a mapping of setting: text")
    if "dataloader" in d and d["dataloader"] is not None:
        dl = d["dataloader"]
        if not isinstance(dl, dict):
            raise _bad(raw, "dataloader", f"must be a mapping, not {type(dl).__name__}")
        for key, v in dl.items():
            if not isinstance(key, str) or key not in _DL_KEYS:
                raise _unknown(raw, key, _DL_KEYS, "dataloader")
            if key in ("num_workers",) and not (v == "auto" or (_is_int(v) and 0 <= v <= 256)):
                raise _bad(raw, key, f"must be 'auto' or a number from 0 to 256, not {brief(v)}", "dataloader")
            if key == "prefetch_factor" and not (v == "auto" or (_is_int(v) and 1 <= v <= 1024)):
                raise _bad(raw, key, f"must be 'auto' or a number from 1 to 1024, not {brief(v)}", "dataloader")
            if key in ("pin_memory", "persistent_workers") and not (v == "auto" or isinstance(v, bool)):
                raise _bad(raw, key, f"must be auto, true or false, not {brief(v)}", "dataloader")


# ---------------------------------------------------------------------------------------------------------------
# Resolving names and inheritance


def _looks_like_path(s: str) -> bool:
    return "/" in s or s.endswith((".yaml", ".yml"))


def _find(name: str, before: Optional[Path] = None) -> Path:
    """The winning file for `name`; with `before`, the one just earlier on the search path than that file (a
    profile that extends its own name extends the next one down, as tuned's overrides do)."""
    if not name or len(name) > 200 or not re.match(r"^[A-Za-z0-9_.@+-]+$", name) or name.startswith("."):
        raise UserError(f"{brief(name)} is not a profile name (names are letters, digits, '.', '_', '-')")
    cands = _candidates(name)
    if before is not None:
        real = [p.resolve() for p in cands]
        cands = cands[: real.index(before)] if before in real else [p for p, r in zip(cands, real) if r != before]
    if not cands:
        known = [n for n, _p, _o in available()]
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
    env: Dict[str, str] = {}
    tcm: Dict[str, str] = {}
    dl: Dict[str, Any] = {}
    why_all: Dict[str, str] = {}
    env_where: Dict[str, str] = {}
    for raw in chain:
        reasons = raw.data.get("reasons") or {}
        why_all.update(reasons)

        def note(key: str, where: str, raw: _Raw = raw, reasons: Dict[str, str] = reasons) -> str:
            why = reasons.get(key)
            return f"{where}: {why}" if why else where

        for key, value in raw.data.items():
            if key in ("base", "reasons", "name"):
                continue
            if key == "env":
                for k, v in (value or {}).items():
                    env[k] = str(v)
                    env_where[k] = raw.where(k, "env")
                    prov[f"env.{k}"] = note(f"env.{k}", env_where[k])
            elif key == "tcmalloc":
                for k, v in (value or {}).items():
                    tcm[k] = str(v)
                    prov[f"tcmalloc.{k}"] = note(f"tcmalloc.{k}", raw.where(k, "tcmalloc"))
            elif key == "dataloader":
                for k, v in (value or {}).items():
                    dl[k] = v
                    prov[f"dataloader.{k}"] = note(f"dataloader.{k}", raw.where(k, "dataloader"))
            else:
                vals[key] = "none" if (key == "memory_policy" and value is False) else value
                prov[key] = note(key, raw.where(key))
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
        tcmalloc=tcm,
        dataloader=DataLoader(**dl),
        provenance=prov,
        chain=tuple(str(r.path) for r in chain),
        reasons=why_all,
        **{k: v for k, v in vals.items() if k in _PROFILE_FIELDS},
    )


_PROFILE_FIELDS = {f.name for f in dataclasses.fields(Profile)}


def load(name_or_path: str) -> Profile:
    """A profile by name on the search path, or a file path; `base:` chains merged (later files win)."""
    if not name_or_path:
        raise UserError("empty profile name")
    if _looks_like_path(name_or_path) or Path(name_or_path).is_file() and not _candidates(name_or_path):
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


def active(explicit: Optional[str] = None, facts: Optional[Facts] = None) -> Profile:
    """The profile in use: --profile, $HOSTTUNE_PROFILE, the user's, /etc's, else `throughput` generated now."""
    if explicit:
        return load(explicit)
    env = os.environ.get("HOSTTUNE_PROFILE")
    if env:
        return load(env)
    for p in generated_paths():
        if p.is_file():
            return load(str(p))
    if facts is None:
        from hosttune import detect

        facts = detect.collect(Path("/"), probe_torch=False)  # type: ignore[attr-defined]
    return generate(facts, "throughput")


# ---------------------------------------------------------------------------------------------------------------
# Generation from facts


def generate(facts: Facts, base: str = "throughput") -> Profile:
    """The base profile made concrete for this host, every choice with its reason."""
    b = load(base)
    prov = dict(b.provenance)
    reasons: Dict[str, str] = {}

    alloc = b.allocator
    a = facts.allocators
    if alloc == "auto":
        if a.jemalloc:
            alloc, reasons["allocator"] = "jemalloc", f"jemalloc found at {a.jemalloc}"
        elif a.tcmalloc or a.tcmalloc_minimal:
            alloc = "tcmalloc"
            reasons["allocator"] = f"tcmalloc found at {a.tcmalloc or a.tcmalloc_minimal} (no jemalloc found)"
        else:
            alloc = "system"
            hint = "dnf install jemalloc" if facts.distro.family == "rhel" else "apt install libjemalloc2"
            reasons["allocator"] = f"no jemalloc or tcmalloc found; glibc malloc (for x1.14-1.20: {hint})"
    else:
        found = {"jemalloc": a.jemalloc, "tcmalloc": a.tcmalloc or a.tcmalloc_minimal}.get(alloc)
        reasons["allocator"] = f"{alloc} set by {base}" + (f"; found at {found}" if found else "")

    allowed = facts.cpu.allowed_cpus or facts.cpu.online
    cores = [c for c in facts.cpu.cores if set(c) & set(allowed)] if facts.cpu.cores else [(c,) for c in allowed]
    nodes_with_cpus = [n for n in facts.numa.nodes if set(n.cpus) & set(allowed)]
    quota = facts.cpu.quota_cpus if facts.cpu.quota_cpus is not None else facts.cpu.cgroup.quota_cpus
    qtxt = f", cgroup quota {quota:g} CPUs" if quota else ""
    reasons["threads"] = (
        f"{b.threads}: physical cores of each rank's binding ({len(cores)} allowed cores{qtxt}); never oversubscribed"
        if b.threads == "auto"
        else f"{b.threads} per rank, set by {base}"
    )
    binding = b.binding
    if binding == "auto":
        reasons["binding"] = (
            f"auto: disjoint core sets per rank, NUMA-aligned over {len(nodes_with_cpus) or 1} node(s)"
            + (", SMT siblings together" if facts.cpu.smt else "")
            + (f", near each rank's GPU ({len(facts.gpus)} GPUs)" if facts.gpus else "")
        )
    else:
        reasons["binding"] = f"{binding}, set by {base}"
    mp = b.memory_policy
    if mp != "none" and len(facts.numa.nodes) <= 1:
        mp = "none"
        reasons["memory_policy"] = "none: a single NUMA node, nothing to bind"
    else:
        reasons["memory_policy"] = f"{mp}: {len(facts.numa.nodes)} NUMA nodes; memory on the rank's node"
    cac = b.cuda_alloc_conf
    if cac and not facts.gpus:
        reasons["cuda_alloc_conf"] = f"{cac}: kept for GPU ranks (no GPU seen now)"
    elif cac:
        reasons["cuda_alloc_conf"] = f"{cac}: set by {base} for the {len(facts.gpus)} GPUs"
    dl = b.dataloader
    if dl.num_workers == "auto":
        reasons["dataloader.num_workers"] = (
            "auto: 0 when a rank has <= 2 cores (workers steal compute), else min(4, cores//2)"
        )
    if dl.pin_memory == "auto":
        reasons["dataloader.pin_memory"] = "auto: " + ("on (GPUs present)" if facts.gpus else "off (no GPU)")
    reasons["fingerprint"] = "hardware fingerprint of this host; when it changes, regenerate"
    defaults = {
        "deterministic": "HOSTTUNE_DETERMINISTIC=" + ("1" if b.deterministic else "0"),
        "debug": "debug switches " + ("on" if b.debug else "off (only the debug profile sets them)"),
        "device": "GPUs when present" if b.device == "auto" else "GPUs hidden",
        "openmp": f"{b.openmp}: KMP_* only when Intel OpenMP is preloaded",
        "dataloader.prefetch_factor": "only with workers (2 when auto)",
        "dataloader.persistent_workers": "only with workers (on when auto)",
    }
    for key, why in defaults.items():
        if key not in reasons and key not in b.reasons:
            reasons[key] = f"{why}; from {base}"
    for key, why in reasons.items():
        prov[key] = f"generated: {why}"
    all_reasons = dict(b.reasons)
    all_reasons.update(reasons)
    host = facts.hostname or "this host"
    return dataclasses.replace(
        b,
        name=f"{b.name}@{host}" if facts.hostname else b.name,
        summary=f"{b.summary} (generated for {host})",
        source=GENERATED,
        allocator=alloc,
        binding=binding,
        memory_policy=mp,
        fingerprint=facts.hardware_fingerprint(),
        provenance=prov,
        chain=b.chain,
        reasons=all_reasons,
    )


def _reasons_for(profile: Profile) -> Dict[str, str]:
    return dict(profile.reasons)


def _one_line(s: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f]+", " ", s)


def to_yaml(profile: Profile) -> str:
    """The profile as a self-contained YAML file: every value, and why, as a comment and under `reasons:`."""
    reasons = _reasons_for(profile)
    lines = [
        f"# hosttune profile {_one_line(profile.name)}",
        f"# {_one_line(profile.summary)}",
        "# Policy for `hosttune exec` / `hosttune env`; host numbers (cores, nodes, paths) are decided per run.",
        "",
    ]

    def put(key: str, value: Any, why_key: Optional[str] = None, indent: str = "") -> None:
        dumped = yaml.safe_dump({key: value}, default_flow_style=False, sort_keys=False, width=10**6)
        first, *rest = dumped.rstrip("\n").split("\n")
        why = reasons.get(why_key or key)
        lines.append(f"{indent}{first}" + (f"  # {_one_line(why)}" if why and not rest else ""))
        lines.extend(indent + r for r in rest)

    put("name", profile.name)
    put("summary", profile.summary)
    put("allocator", profile.allocator)
    if profile.allocator_path:
        put("allocator_path", profile.allocator_path)
    if profile.malloc_conf:
        put("malloc_conf", profile.malloc_conf)
    put("threads", profile.threads)
    put("binding", profile.binding)
    put("memory_policy", profile.memory_policy)
    if profile.cuda_alloc_conf:
        put("cuda_alloc_conf", profile.cuda_alloc_conf)
    put("deterministic", profile.deterministic)
    put("debug", profile.debug)
    put("device", profile.device)
    put("openmp", profile.openmp)
    lines.append("dataloader:")
    for k in _DL_KEYS:
        put(k, getattr(profile.dataloader, k), f"dataloader.{k}", "  ")
    for sect, mapping in (("tcmalloc", profile.tcmalloc), ("env", profile.env)):
        if mapping:
            lines.append(f"{sect}:")
            for k, v in mapping.items():
                put(k, str(v), f"{sect}.{k}", "  ")
    if profile.fingerprint:
        put("fingerprint", profile.fingerprint)
    if reasons:
        lines.append("reasons:")
        for k in sorted(reasons):
            put(k, reasons[k], "-", "  ")
    return "\n".join(lines) + "\n"


def write(profile: Profile, path: Path, force: bool) -> Path:
    """Write the profile atomically (fsio.atomic_write); refuse to overwrite unforced. New parent directories get
    mode 755 whatever the umask."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not force:
        raise UserError(f"{path} exists; use --force to replace it")
    if path.is_dir():
        raise UserError(f"{path} is a directory")
    text = to_yaml(profile)
    parse_text(text, path)  # never write what we could not read back
    try:
        fsio.makedirs_private(path.parent, 0o755)
        # exclusive: link(2) never replaces, so a file that appeared since the check above is not clobbered
        fsio.atomic_write(path, text, 0o644, exclusive=not force)
    except FileExistsError:
        raise UserError(f"{path} exists; use --force to replace it") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path
