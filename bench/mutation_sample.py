#!/usr/bin/env python3
"""Random mutation sites (issue 21; a bench, not CI): draws the places a mutation round plants its changes, so the
round measures what the suite misses instead of what a helper chose to plant.

    python3 bench/mutation_sample.py --seed 20261202 --count 140          # the sites, in draw order, as a table
    python3 bench/mutation_sample.py --seed 20261202 --count 140 --json - # the same as JSON (or --json FILE)
    python3 bench/mutation_sample.py --stats                              # candidate sites per file
    python3 bench/mutation_sample.py --tests hosttune/cpulist.py          # the test files the rule gives a module
    python3 bench/mutation_sample.py --repo CLONE ...                     # read another checkout (a clone of HEAD)

Candidates: every statement of hosttune/**/*.py (parsed with `ast`) that carries behaviour, one site per
(file, line, kind):
  if / while (the condition), for (the iterable), return (with a value), assign / augassign / annassign (with a
  value), call (an expression statement that is a call), raise, assert, with (the items).
Comparisons and boolean expressions count as part of the statement that holds them (the change is planted at that
line: the statement or an expression on it).
Left out: docstrings and other bare constants, imports, `pass`, def/class lines (their bodies are candidates),
`if TYPE_CHECKING:` blocks and `if __name__ == "__main__":` blocks (the whole block), `__all__ = ...` and
`TYPE_CHECKING = False`, and calls that
only log or print (print, logging.*, log/logger/LOG/_log.*, click.echo/secho, warnings.warn, and `.debug/.info/
.warning/.exception/.critical` on anything). A line that holds two candidate statements is one site (the first).

Drawing: the candidates sorted by (file, line), then `random.Random(seed).sample(candidates, count)`: uniform without
replacement (a module with more statements gets more sites), in draw order, the same for the same seed and the same
code. Take the sites in that order; skip one only when its statement has no behaviour a user could observe.

The tests of a mutated module, by rule (`tests_for(path)`), never chosen per mutant: every tests/test_*.py whose
text names the module: the dotted name (`hosttune.a.b`, not followed by more of an identifier; for a package
`hosttune.a`, not followed by `.`), `from hosttune.a import b` (also in a parenthesised list), or the path
`hosttune/a/b.py`. A module no test names is one reached only through the CLI or another module: for
`hosttune/commands/X.py` (and for `hosttune/cli.py`, `__main__.py`) the test files that run the command
(`hosttune X`, `-m hosttune X`, `run_cli(["X"`, `hosttune("X"`); for any other module the union of `tests_for` of
the hosttune modules that name it (its importers, followed up the import graph until some test names one).
"""

import argparse
import ast
import json
import random
import re
import sys
from functools import cache
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Set, Tuple

REPO = Path(__file__).resolve().parent.parent
SEED = 20261202  # the date of round 4 (2026-12-02)

_LOG_FUNCS = {"print"}
_LOG_OBJECTS = {"logging", "log", "logger", "LOG", "_log", "_logger", "warnings"}
_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "echo", "secho"}


class Site(NamedTuple):
    file: str  # relative to the checkout
    line: int
    kind: str
    text: str  # the line, stripped (for the table)


def _is_log_call(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id in _LOG_FUNCS
    if isinstance(f, ast.Attribute):
        base = f.value
        if isinstance(base, ast.Name) and base.id == "click" and f.attr in ("echo", "secho"):
            return True
        if isinstance(base, ast.Name) and base.id == "warnings" and f.attr == "warn":
            return True
        if isinstance(base, ast.Name) and base.id in _LOG_OBJECTS:
            return True
        if isinstance(base, ast.Attribute) and base.attr in ("log", "logger", "_log", "_logger"):
            return f.attr in _LOG_METHODS
        return f.attr in _LOG_METHODS and f.attr not in ("echo", "secho", "error", "warn")
    return False


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_main_guard(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _kind(node: ast.stmt) -> Optional[str]:
    """The site kind of one statement, or None when it is not a candidate."""
    if isinstance(node, ast.If):
        return "if"
    if isinstance(node, ast.While):
        return "while"
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return "for"
    if isinstance(node, ast.Return):
        return "return" if node.value is not None else None
    if isinstance(node, ast.Assign):
        if any(isinstance(t, ast.Name) and t.id in ("__all__", "TYPE_CHECKING") for t in node.targets):
            return None
        return "assign"
    if isinstance(node, ast.AugAssign):
        return "augassign"
    if isinstance(node, ast.AnnAssign):
        return "annassign" if node.value is not None else None
    if isinstance(node, ast.Expr):
        v = node.value
        if isinstance(v, ast.Await):
            v = v.value
        if isinstance(v, ast.Call) and not _is_log_call(v):
            return "call"
        return None
    if isinstance(node, ast.Raise):
        return "raise"
    if isinstance(node, ast.Assert):
        return "assert"
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return "with"
    return None


def _bodies(node: ast.AST) -> Iterator[List[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        b = getattr(node, field, None)
        if isinstance(b, list) and b and isinstance(b[0], ast.stmt):
            yield b
    for h in getattr(node, "handlers", []) or []:
        yield h.body


def _walk(stmts: List[ast.stmt]) -> Iterator[Tuple[ast.stmt, str]]:
    for node in stmts:
        if isinstance(node, ast.If) and (_is_type_checking(node.test) or _is_main_guard(node.test)):
            continue  # the whole block
        kind = _kind(node)
        if kind is not None:
            yield node, kind
        for body in _bodies(node):
            yield from _walk(body)


def sites_of(path: Path, root: Optional[Path] = None) -> List[Site]:
    root = root or REPO
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text, filename=str(path))
    seen: Set[int] = set()
    out: List[Site] = []
    rel = path.relative_to(root).as_posix()
    for node, kind in _walk(tree.body):
        if node.lineno in seen:
            continue
        seen.add(node.lineno)
        out.append(Site(rel, node.lineno, kind, lines[node.lineno - 1].strip()))
    return sorted(out, key=lambda s: s.line)


def candidates(root: Optional[Path] = None) -> List[Site]:
    root = root or REPO
    out: List[Site] = []
    for path in sorted((root / "hosttune").rglob("*.py")):
        out += sites_of(path, root)
    return sorted(out, key=lambda s: (s.file, s.line))


def draw(seed: int, count: int, root: Optional[Path] = None) -> List[Site]:
    pool = candidates(root)
    return random.Random(seed).sample(pool, min(count, len(pool)))


# ---- the tests of a module, by rule ------------------------------------------------------------------------------

def module_name(path: str) -> str:
    """hosttune/a/b.py -> hosttune.a.b; hosttune/a/__init__.py -> hosttune.a."""
    parts = Path(path).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


_FROM_IMPORT = re.compile(r"from\s+([\w.]+)\s+import\s+(\([^)]*\)|[^\n]*)")


def names(text: str, path: str) -> bool:
    """Whether `text` names the module at `path` (relative, hosttune/...)."""
    mod = module_name(path)
    if mod.rpartition(".")[2] not in text:
        return False
    is_pkg = path.endswith("__init__.py")
    tail = r"(?![\w.])" if is_pkg else r"(?!\w)"
    if re.search(r"(?<![\w.])" + re.escape(mod) + tail, text):
        return True
    if not is_pkg and re.search(r"(?<![\w/])" + re.escape(path) + r"(?!\w)", text):
        return True
    parent, _, leaf = mod.rpartition(".")
    if parent:
        for m in _FROM_IMPORT.finditer(text):
            if m.group(1) == parent and re.search(r"(?<![\w.])" + re.escape(leaf) + r"(?!\w)",
                                                  re.sub(r"#[^\n]*", "", m.group(2))):
                return True
    return False


@cache
def _texts(folder: str, pattern: str) -> Tuple[Tuple[str, str], ...]:
    root = REPO / folder
    return tuple((p.relative_to(REPO).as_posix(), p.read_text(errors="replace")) for p in sorted(root.rglob(pattern)))


def _test_texts() -> Tuple[Tuple[str, str], ...]:
    return tuple(t for t in _texts("tests", "test_*.py") if "/" not in t[0][len("tests/"):])


def _command_of(path: str) -> Optional[str]:
    m = re.fullmatch(r"hosttune/commands/(\w+)\.py", path)
    if m and m.group(1) != "__init__":
        return {"train_rank": "train"}.get(m.group(1), m.group(1))
    return None


def _runs_command(text: str, cmd: str) -> bool:
    q = r"""["']""" + re.escape(cmd) + r"""["']"""
    return bool(re.search(r"(?:hosttune|run_cli|invoke\(\s*cli)[^\n]{0,40}?" + q, text))


@cache
def tests_for(path: str) -> Tuple[str, ...]:
    """The test files (tests/test_*.py, sorted) that exercise the hosttune module at `path`; see the docstring."""
    return tuple(sorted(_tests_for(path, frozenset())))


def _tests_for(path: str, seen: frozenset) -> Set[str]:
    direct = {f for f, text in _test_texts() if names(text, path)}
    if direct:
        return direct
    cmd = _command_of(path)
    if cmd:
        return {f for f, text in _test_texts() if _runs_command(text, cmd)}
    if path in ("hosttune/cli.py", "hosttune/__main__.py"):
        return {f for f, text in _test_texts() if re.search(r"run_cli\(|\"-m\",\s*\"hosttune\"|invoke\(\s*cli", text)}
    found: Set[str] = set()
    for f in _importers(path):
        if f not in seen:
            found |= _tests_for(f, seen | {path})
    return found


@cache
def _imports() -> Dict[str, Set[str]]:
    """Every hosttune module's imports as absolute dotted names (relative imports resolved; `from a import b` gives
    both a and a.b)."""
    out: Dict[str, Set[str]] = {}
    for f, text in _texts("hosttune", "*.py"):
        pkg = module_name(f) if f.endswith("__init__.py") else module_name(f).rpartition(".")[0]
        got: Set[str] = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                got |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                got.add(mod)
                got |= {f"{mod}.{a.name}" for a in node.names}
        out[f] = got
    return out


def _importers(path: str) -> List[str]:
    """The hosttune modules that import or name the module at `path` (a module in a folder that is no package, put on
    sys.path by name like launch/rankhook/, is reached through the modules that name the folder)."""
    mod = module_name(path)
    folder = Path(path).parent
    loose = not (REPO / folder / "__init__.py").is_file()
    out = []
    for f, text in _texts("hosttune", "*.py"):
        if f == path:
            continue
        if mod in _imports()[f] or names(text, path) or (loose and re.search(
                r"[\"'/]" + re.escape(folder.name) + r"[\"'/]", text)):
            out.append(f)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    global REPO
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=SEED, help=f"the random seed (default {SEED}: the round's date)")
    ap.add_argument("--count", type=int, default=140, help="how many sites to draw (default 140)")
    ap.add_argument("--json", metavar="FILE", help="also write the sites as JSON (- for stdout only)")
    ap.add_argument("--stats", action="store_true", help="candidate sites per file, and exit")
    ap.add_argument("--tests", metavar="PATH", nargs="+", help="the test files the rule gives these modules, and exit")
    ap.add_argument("--repo", default=str(REPO), help="the checkout to read (default: this one)")
    args = ap.parse_args(argv)
    REPO = Path(args.repo).resolve()
    if args.tests:
        for p in args.tests:
            print(f"{p}: {' '.join(tests_for(p)) or '(none)'}")
        return 0
    if args.stats:
        per: Dict[str, int] = {}
        for s in candidates():
            per[s.file] = per.get(s.file, 0) + 1
        for f, n in sorted(per.items(), key=lambda kv: -kv[1]):
            print(f"{n:5}  {f}")
        print(f"{sum(per.values()):5}  candidate sites in {len(per)} files")
        return 0
    pool = candidates()
    sites = draw(args.seed, args.count)
    if args.json != "-":
        print(f"seed {args.seed}: {len(sites)} of {len(pool)} candidate sites, in draw order")
        for i, s in enumerate(sites, 1):
            print(f"{i:4} {s.file}:{s.line:<5} {s.kind:<10} {len(tests_for(s.file)):3} tests  {s.text[:80]}")
    if args.json:
        rows = [{"n": i, "file": s.file, "line": s.line, "kind": s.kind, "text": s.text,
                 "tests": list(tests_for(s.file))} for i, s in enumerate(sites, 1)]
        doc = json.dumps({"seed": args.seed, "candidates": len(pool), "sites": rows}, indent=1)
        if args.json == "-":
            print(doc)
        else:
            Path(args.json).write_text(doc + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
