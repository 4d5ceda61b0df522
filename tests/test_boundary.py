"""The trust boundary table (hosttune/boundary.py) keeps itself complete, the way doctor's catalogue tests keep every
check covered: a new HOSTTUNE_* name, a new option that names a path or a program, or a new call site that starts a
program, replaces the process, unpickles or loads a torch file fails here until it has a row; a row whose test is
missing, or whose input is gone from the code, fails too. The scans read the source (ast) and the click command
tree; nothing is run. A few rows' own attack tests live at the end of this file."""

import ast
import functools
import os
import re
from typing import Dict, Iterator, List, Optional, Set, Tuple

import click
import pytest
from conftest import REPO, OtherUser

from hosttune import boundary

PKG = REPO / "hosttune"
IS_ROOT = os.geteuid() == 0

# Options that name a path or a program by their name, whatever their click type (most are plain strings).
PATH_OPTION_NAMES = {"--python", "--profile", "--root", "--config", "--data", "--capture", "--log-dir",
                     "--textfile-dir", "--run-dir", "--export", "--output", "-o", "--plot", "--base"}
PATH_METAVARS = {"PATH", "FILE", "DIR", "DEST"}
# Positional arguments that name a program or a profile (a name or a path).
PATH_ARGUMENTS = {"command", "name"}
# Call sites that start a program, replace the process, unpickle or load a torch file (torch.export/jit files and
# DCP checkpoints too: each deserializes what a file says).
CALL_PREFIXES = ("subprocess.", "pickle.", "_pickle.", "os.exec", "os.posix_spawn", "os.spawn", "os.system",
                 "os.popen")
CALL_EXACT = {"torch.load", "torch.serialization.load", "torch.jit.load", "torch.export.load",
              "torch.distributed.checkpoint.load", "torch.distributed.checkpoint.state_dict_loader.load",
              "pickle.Unpickler", "_pickle.Unpickler", "marshal.load", "marshal.loads", "shelve.open", "numpy.load",
              "pty.spawn"}
NOT_A_CALL = re.compile(r"(Error|Exception|HIGHEST_PROTOCOL|DEFAULT_PROTOCOL|PIPE|DEVNULL|STDOUT|TimeoutExpired|"
                        r"CalledProcessError|CompletedProcess)$")


@functools.cache
def _parsed() -> Tuple[Tuple[str, ast.Module], ...]:
    out = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        out.append((rel, ast.parse(path.read_text(encoding="utf-8"), filename=rel)))
    return tuple(out)


def _sources() -> Iterator[Tuple[str, ast.Module]]:
    """Every module of hosttune/ with its syntax tree (parsed once per test session: the trees are only read)."""
    yield from _parsed()


def _dotted(node: ast.AST) -> Optional[str]:
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _imports(tree: ast.Module) -> Dict[str, str]:
    """Local name -> the dotted name it stands for (`import subprocess as sp`, `from os import execv`)."""
    names: Dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _is_dangerous(full: str) -> bool:
    if NOT_A_CALL.search(full):
        return False
    return full in CALL_EXACT or full.startswith(CALL_PREFIXES)


def _resolve(node: ast.AST, local: Dict[str, str]) -> Optional[str]:
    d = _dotted(node)
    if d is None:
        return None
    head, _, rest = d.partition(".")
    return local.get(head, head) + (f".{rest}" if rest else "")


def _visit(node: ast.AST, stack: List[str], rel: str, local: Dict[str, str], found: Dict[str, List[str]]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            for base in child.bases:
                full = _resolve(base, local)
                if full and _is_dangerous(full):
                    found.setdefault(f"{rel}::{'.'.join(stack + [child.name])}", []).append(full)
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            _visit(child, stack + [child.name], rel, local, found)
            continue
        if isinstance(child, ast.Call):
            full = _resolve(child.func, local)
            if full and _is_dangerous(full):
                found.setdefault(f"{rel}::{'.'.join(stack) or '<module>'}", []).append(full)
        _visit(child, stack, rel, local, found)


def sites_in(rel: str, tree: ast.Module) -> Dict[str, List[str]]:
    """"<rel>::<qualified function>" -> the dangerous names used there (calls, and classes that subclass one)."""
    found: Dict[str, List[str]] = {}
    _visit(tree, [], rel, _imports(tree), found)
    return found


@functools.cache
def call_sites() -> Dict[str, List[str]]:
    found: Dict[str, List[str]] = {}
    for rel, tree in _sources():
        found.update(sites_in(rel, tree))
    return found


@functools.cache
def hosttune_names() -> Set[str]:
    """Every HOSTTUNE_* name: policy/names.py's constants, and any other literal spelling one in hosttune/."""
    out: Set[str] = set()
    for _rel, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    re.fullmatch(r"HOSTTUNE_[A-Z0-9_]+", node.value):
                out.add(node.value)
    return out


def _click_params() -> Iterator[Tuple[str, click.Parameter]]:
    from hosttune.cli import cli

    ctx = click.Context(cli)

    def walk(cmd: click.Command, path: List[str]) -> Iterator[Tuple[str, click.Parameter]]:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None, name
                yield from walk(sub, path + [name])
        for p in cmd.params:
            yield " ".join(path), p

    yield from walk(cli, [])


@functools.cache
def path_options() -> Set[str]:
    """"<command> <--longest option>" (or "<command> ARGUMENT") for each click parameter that names a path or a
    program: a click.Path/click.File type, a known name, or a PATH/FILE/DIR/DEST metavar."""
    out: Set[str] = set()
    for command, p in _click_params():
        if isinstance(p, click.Option):
            names = set(p.opts) | set(p.secondary_opts)
            pathy = (isinstance(p.type, (click.Path, click.File)) or bool(names & PATH_OPTION_NAMES)
                     or (p.metavar or "").upper() in PATH_METAVARS)
            if pathy and not p.is_flag:
                out.add(f"{command} {max(p.opts, key=len)}")
        elif isinstance(p, click.Argument):
            if isinstance(p.type, (click.Path, click.File)) or p.name in PATH_ARGUMENTS:
                out.add(f"{command} {(p.name or '').upper()}")
    return out


@functools.cache
def argparse_path_options() -> Set[str]:
    """The engine's own options (argparse: `python -m hosttune.engine`, and `hosttune train`'s engine arguments)
    that name a path: "engine --option"."""
    out: Set[str] = set()
    for rel, tree in _sources():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_argument"):
                continue
            opts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            kw = {k.arg: k.value for k in node.keywords}
            metavar = kw.get("metavar")
            mv = metavar.value if isinstance(metavar, ast.Constant) and isinstance(metavar.value, str) else ""
            if opts and (set(opts) & PATH_OPTION_NAMES or mv.upper() in PATH_METAVARS):
                prog = "engine" if rel.startswith("hosttune/engine/") else rel
                out.add(f"{prog} {max(opts, key=len)}")
    return out


@functools.cache
def _test_tree(path: str) -> ast.Module:
    """A test file's syntax tree, parsed once however many rows name a test in it (the trees are only read)."""
    return ast.parse((REPO / path).read_text(encoding="utf-8"))


def _test_exists(ref: str) -> bool:
    path, _, name = ref.partition("::")
    f = REPO / path
    if not (path.startswith("tests/") and path.endswith(".py") and f.is_file() and name):
        return False
    name = name.split("[", 1)[0]
    tree = _test_tree(path)
    parts = name.split("::")
    scope: List[ast.stmt] = list(tree.body)
    for i, part in enumerate(parts):
        hit = [n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               and n.name == part]
        if not hit:
            return False
        if i < len(parts) - 1:
            scope = list(hit[0].body) if isinstance(hit[0], ast.ClassDef) else []
    return parts[-1].startswith("test")


# ---- the table is well formed ---------------------------------------------------------------------------------


def test_every_row_is_complete_and_unique() -> None:
    seen: Set[str] = set()
    for row in boundary.ROWS:
        assert row.kind in boundary.KINDS, row
        assert row.input and row.gateway and row.rule and row.test, row
        assert row.input not in seen, f"two rows for {row.input}"
        seen.add(row.input)
        assert "\n" not in row.rule + row.gateway, row


def test_every_row_names_a_test_that_exists() -> None:
    missing = [f"{r.input}: {r.test}" for r in boundary.ROWS if not _test_exists(r.test)]
    assert not missing, "rows naming a test that does not exist:\n" + "\n".join(missing)


# ---- the code has no input without a row ---------------------------------------------------------------------


def test_every_hosttune_variable_has_a_row() -> None:
    names = hosttune_names()
    assert {"HOSTTUNE_PROFILE", "HOSTTUNE_PYTHON", "HOSTTUNE_RUNTIME_DIR"} <= names  # the scan works
    missing = sorted(n for n in names if n not in boundary.BY_INPUT or boundary.BY_INPUT[n].kind != boundary.ENV)
    assert not missing, f"HOSTTUNE_* variables without a row in hosttune/boundary.py: {missing}"


def test_every_path_or_program_option_has_a_row() -> None:
    options = path_options() | argparse_path_options()
    assert {"facts --capture", "train --python", "engine --export"} <= options  # the scans work
    missing = sorted(o for o in options if o not in boundary.BY_INPUT or boundary.BY_INPUT[o].kind != boundary.OPTION)
    assert not missing, f"options naming a path or a program without a row in hosttune/boundary.py: {missing}"


def test_every_dangerous_call_site_has_a_row() -> None:
    sites = call_sites()
    assert any("subprocess." in n for names in sites.values() for n in names)  # the scan works
    missing = sorted(f"{s} ({', '.join(sorted(set(n)))})" for s, n in sites.items()
                     if s not in boundary.BY_INPUT or boundary.BY_INPUT[s].kind != boundary.CALL)
    assert not missing, ("call sites that start a program, exec, unpickle or torch.load without a row in "
                         "hosttune/boundary.py (route them through the gateway, or add the row):\n"
                         + "\n".join(missing))


# ---- and no row for an input that is gone -------------------------------------------------------------------


def test_no_row_outlives_its_input() -> None:
    names = hosttune_names()
    options = path_options() | argparse_path_options()
    sites = set(call_sites())
    stale = []
    for row in boundary.ROWS:
        if row.kind == boundary.ENV and row.input.startswith("HOSTTUNE_") and row.input not in names:
            stale.append(row.input)
        elif row.kind == boundary.OPTION and row.input not in options:
            stale.append(row.input)
        elif row.kind == boundary.CALL and row.input not in sites:
            stale.append(row.input)
    assert not stale, f"rows whose input is no longer in the code: {stale}"


# ---- the meta-test catches what it should ---------------------------------------------------------------------


def test_the_scans_see_each_kind_of_call_and_ignore_exceptions() -> None:
    src = ("import pickle, subprocess as sp\nfrom os import execv\nimport torch\n"
           "class U(pickle.Unpickler):\n    pass\n"
           "def f():\n    sp.run(['x'])\n    execv('/bin/x', ['x'])\n    torch.load('p')\n"
           "    raise pickle.UnpicklingError('no')\n"
           "class C:\n    def m(self):\n        return sp.TimeoutExpired\n"
           "sp.Popen(['y'])\n")
    got = {k: sorted(v) for k, v in sites_in("hosttune/x.py", ast.parse(src)).items()}
    assert got == {"hosttune/x.py::U": ["pickle.Unpickler"],
                   "hosttune/x.py::f": ["os.execv", "subprocess.run", "torch.load"],
                   "hosttune/x.py::<module>": ["subprocess.Popen"]}, got


def test_a_new_call_site_or_variable_or_option_without_a_row_would_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above read boundary.BY_INPUT: with one row of each kind taken out, each reports it."""
    for row in (boundary.BY_INPUT["HOSTTUNE_PYTHON"], boundary.BY_INPUT["facts --capture"],
                next(r for r in boundary.ROWS if r.kind == boundary.CALL and r.input in call_sites())):
        monkeypatch.setattr(boundary, "BY_INPUT", {k: v for k, v in boundary.BY_INPUT.items() if k != row.input})
        check = {boundary.ENV: test_every_hosttune_variable_has_a_row,
                 boundary.OPTION: test_every_path_or_program_option_has_a_row,
                 boundary.CALL: test_every_dangerous_call_site_has_a_row}[row.kind]
        with pytest.raises(AssertionError, match=re.escape(row.input)):
            check()
        monkeypatch.undo()
    assert not _test_exists("tests/test_boundary.py::test_no_such_test")
    assert not _test_exists("tests/no_such_file.py::test_x") and not _test_exists("hosttune/boundary.py::ROWS")
    assert _test_exists("tests/test_boundary.py::test_every_row_names_a_test_that_exists[param]")


# ---- attack tests for rows that had none ---------------------------------------------------------------------


@pytest.mark.skipif(not IS_ROOT, reason="root's runtime directory is used as root")
def test_a_runtime_dir_in_another_users_directory_gets_no_handoff_and_no_directory(other_user: OtherUser) -> None:
    """$HOSTTUNE_RUNTIME_DIR survives `sudo -E`: pointed into the other user's directory, root's handoff goes
    elsewhere and nothing of root's is made there."""
    from hosttune.launch import handoff

    run = other_user.home / "run"
    env = {"HOSTTUNE_RUNTIME_DIR": str(run)}
    path = handoff.write({"x": 1}, env)
    try:
        assert not path.startswith(str(other_user.home) + "/"), path
        assert not run.exists() and sorted(p.name for p in other_user.home.iterdir()) == []
    finally:
        handoff.remove(path)
    other_user.run(["mkdir", "-m", "700", str(run)])  # made by them first: still not used
    path = handoff.write({"x": 1}, env)
    try:
        assert not path.startswith(str(other_user.home) + "/"), path
        assert os.listdir(run) == []
    finally:
        handoff.remove(path)


def test_job_variables_with_hostile_values_are_one_line_or_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Variables hosttune sets for its own job come back from the environment: a bad one is one line or ignored,
    never a traceback, and never widens what the rank may use."""
    from hosttune.errors import UserError
    from hosttune.launch import hook, supervise

    monkeypatch.setenv("HOSTTUNE_STOP_GRACE", "1e9999x")
    with pytest.raises(UserError, match=r"HOSTTUNE_STOP_GRACE=.* is not a number of seconds"):
        supervise._grace()
    mine = os.sched_getaffinity(0)
    for raw in ("9" * 5000, "0-99999999", "\n1", "-1", "x"):
        try:
            allowed = hook._allowed({"HOSTTUNE_JOB_CPUS": raw})
        except UserError:
            continue
        assert allowed == mine or allowed <= set(range(16384)), raw
    for raw in ("99999999999999999999", "9" * 5000, "x:pool", "-3", "", "\n2"):
        threads, counted, _ = hook.spawn_share({"touched": {}}, {"HOSTTUNE_SPAWN_PROCS": raw})
        assert threads >= 1 and counted < 10 ** 6, raw
    threads, _, job = hook.spawn_share({"top_env": {"OMP_NUM_THREADS": "9" * 5000}, "touched": {}}, {})
    assert job == len(os.sched_getaffinity(0)), job  # a 5000-digit thread count is no count (int() would raise)
    for raw in ("inf", "nan", "-1", "86401", "1e9999"):  # inf/nan would never send the SIGKILL
        monkeypatch.setenv("HOSTTUNE_STOP_GRACE", raw)
        with pytest.raises(UserError, match=r"HOSTTUNE_STOP_GRACE=.* is not a number of seconds from 0"):
            supervise._grace()
    monkeypatch.setenv("HOSTTUNE_STOP_GRACE", "2.5")
    assert supervise._grace() == 2.5


def test_fake_nvml_is_read_by_no_module_of_hosttune() -> None:
    """The test-only NVML fake is steered by $HOSTTUNE_FAKE_NVML: no module of hosttune/ may read it (only
    tests/fakes/pynvml.py does, and only where a test puts it on sys.path)."""
    readers = []
    for rel, tree in _sources():
        if rel == "hosttune/policy/names.py" or rel == "hosttune/boundary.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value == "HOSTTUNE_FAKE_NVML":
                readers.append(rel)
            if isinstance(node, ast.Attribute) and node.attr == "FAKE_NVML":
                readers.append(rel)
    assert not readers, readers
    assert not (PKG / "pynvml.py").exists() and not list(PKG.rglob("fakes"))


def test_every_test_security_md_names_exists() -> None:
    """SECURITY.md's promises each name their proof: a renamed or removed test fails here, not in a reader's trust."""
    text = (REPO / "SECURITY.md").read_text(encoding="utf-8")
    refs = set(re.findall(r"`(tests/[\w/]+\.py::\w+)`", text))
    files = set(re.findall(r"`(tests/[\w/*]+\.py)`", text))
    assert len(refs) >= 10, refs
    missing = sorted(r for r in refs if not _test_exists(r))
    missing += sorted(f for f in files if "*" not in f and not (REPO / f).is_file())
    assert not missing, f"SECURITY.md names tests that do not exist: {missing}"


def _defines(rel: str, qualname: str) -> bool:
    tree = dict(_sources()).get(rel)
    if tree is None:
        return False
    scope: List[ast.stmt] = list(tree.body)
    for part in qualname.split("."):
        hit = [n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               and n.name == part]
        if not hit:
            return False
        scope = list(hit[0].body)
    return True


def test_every_gateway_a_row_names_exists() -> None:
    """"hosttune/x.py" and "hosttune/x.py::name" in a row's gateway (or a call site's input) name real code: a
    gateway renamed or moved makes its rows wrong, and this says which."""
    wrong = []
    for row in boundary.ROWS:
        for ref in re.findall(r"hosttune/[\w/]+\.py(?:::[\w.]+)?", f"{row.gateway} {row.input}"):
            rel, _, name = ref.partition("::")
            if not (REPO / rel).is_file() or (name and not _defines(rel, name)):
                wrong.append(f"{row.input}: {ref}")
    assert not wrong, "rows naming code that does not exist:\n" + "\n".join(wrong)
