"""The rules that keep hosttune's structure (docs/architecture.md): the import contracts in .importlinter, the size
limits (a module at most 600 lines, a function at most 60 lines of code), and what a rank's entry modules import.

The size limits are a ratchet: today's offenders are listed with their line count when they were listed, as a
ceiling. An entry fails when its module or function grows past its ceiling, and when it is no longer needed (back
under the limit, or gone): take it off the list then, so that it cannot grow back.
"""

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Iterator, List, Sequence, Set, Tuple

import pytest

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "hosttune"
CONFIG = REPO / ".importlinter"

MODULE_LIMIT = 600
FUNCTION_LIMIT = 60

# "hosttune/x.py" -> its line count when listed; may only come down, and goes when it is at or under the limit
MODULE_CEILINGS: Dict[str, int] = {}

# "hosttune/x.py::Class.function" -> its length (see function_length) when listed
FUNCTION_CEILINGS: Dict[str, int] = {}


# ---- the import contracts -------------------------------------------------------------------------------------

def _lint_imports(where: Path) -> Tuple[int, str]:
    """lint-imports with this repository's contracts over the `hosttune` package found in `where`."""
    code = textwrap.dedent(f"""
        import importlib.util, sys
        origin = importlib.util.find_spec("hosttune").origin
        assert origin.startswith({str(where)!r}), origin  # the tree under test, not an installed copy
        import inspect
        from importlinter.cli import lint_imports
        quiet = {{"no_logo": True}} if "no_logo" in inspect.signature(lint_imports).parameters else {{}}  # 2.5 on 3.9
        sys.exit(lint_imports(config_filename={str(CONFIG)!r}, no_cache=True, **quiet))
        """)
    env = dict(os.environ, PYTHONPATH=str(where), NO_COLOR="1", COLUMNS="200")
    res = subprocess.run([sys.executable, "-c", code], cwd=str(where), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=600)
    return res.returncode, re.sub(r"\x1b\[[0-9;]*m", "", res.stdout)  # import-linter 2.5 (on 3.9) colours anyway


def _need_import_linter() -> None:
    try:
        import importlinter  # noqa: F401
    except ImportError:
        pytest.skip("import-linter is not installed (pip install import-linter; it belongs in the dev extras)")


def test_import_contracts_hold() -> None:
    _need_import_linter()
    rc, out = _lint_imports(REPO)
    assert rc == 0 and "BROKEN" not in out, out


def test_import_contracts_catch_an_upward_import_and_torch_outside_the_engine(tmp_path: Path) -> None:
    """The contracts are not vacuous: in a copy of the package, a detector that imports the planner and a policy
    that imports torch each break the contract that names them."""
    _need_import_linter()
    shutil.copytree(str(PKG), str(tmp_path / "hosttune"), ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "hosttune" / "detect" / "cpu.py", "a", encoding="utf-8") as f:
        f.write("\nfrom hosttune import plan  # noqa\n")
    with open(tmp_path / "hosttune" / "policy" / "cpu.py", "a", encoding="utf-8") as f:
        f.write("\nimport torch  # noqa\n")
    rc, out = _lint_imports(tmp_path)
    assert rc != 0, out
    broken = [line for line in out.splitlines() if " BROKEN" in line]
    assert any(line.startswith("The floors") for line in broken), out
    assert any(line.startswith("policy is pure") for line in broken), out
    assert any(line.startswith("nothing outside the engine imports torch") for line in broken), out
    assert "hosttune.detect.cpu -> hosttune.plan" in out and "hosttune.policy.cpu -> torch" in out, out


# ---- sizes ----------------------------------------------------------------------------------------------------

def _modules() -> Iterator[Tuple[str, str]]:
    for path in sorted(PKG.rglob("*.py")):
        if "__pycache__" not in path.parts:
            yield path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8")


def module_lines() -> Dict[str, int]:
    return {rel: len(text.splitlines()) for rel, text in _modules()}


def _is_table_value(node: ast.AST) -> bool:
    """A literal made of constants, dotted names and containers of them (arithmetic on constants allowed): data."""
    if isinstance(node, (ast.Constant, ast.Name, ast.Attribute)):
        return isinstance(node, ast.Constant) or _dotted(node)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_table_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_table_value(k) for k in node.keys) and all(
            _is_table_value(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, ast.BinOp):
        return isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)
    return False


def _dotted(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _is_table(node: ast.AST) -> bool:
    """A dict, list, tuple or set literal over more than one line, of table values, with at least one constant."""
    return (isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)) and (node.end_lineno or 0) > node.lineno
            and _is_table_value(node) and any(isinstance(n, ast.Constant) for n in ast.walk(node)))


def _table_lines(func: ast.AST) -> int:
    """Lines of the statements in `func` that only bind or return a literal table (a dict, list, tuple or set)."""
    lines: Set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.Return)) and node.value is not None \
                and _is_table(node.value):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return len(lines)


def function_length(func: ast.AST) -> int:
    """Lines from `def` to the function's last line, less its docstring and its literal tables."""
    assert isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
    span = (func.end_lineno or func.lineno) - func.lineno + 1
    first = func.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        span -= (first.end_lineno or first.lineno) - first.lineno + 1
    return span - _table_lines(func)


def _functions(tree: ast.AST, prefix: Sequence[str] = ()) -> Iterator[Tuple[str, ast.AST]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = list(prefix) + [node.name]
            if not isinstance(node, ast.ClassDef):
                yield ".".join(name), node
            yield from _functions(node, name)
        else:
            yield from _functions(node, prefix)


def long_functions() -> Dict[str, int]:
    """"hosttune/x.py::qualified.name" -> length, for every function longer than FUNCTION_LIMIT."""
    out: Dict[str, int] = {}
    for rel, text in _modules():
        for name, func in _functions(ast.parse(text, filename=rel)):
            n = function_length(func)
            if n > FUNCTION_LIMIT:
                out[f"{rel}::{name}"] = n
    return out


def _ratchet(measured: Dict[str, int], ceilings: Dict[str, int], limit: int, what: str) -> List[str]:
    problems = [f"{k}: {n} lines, over the limit of {limit}: split it (docs/architecture.md)"
                for k, n in sorted(measured.items()) if n > limit and k not in ceilings]
    for k, ceiling in sorted(ceilings.items()):
        n = measured.get(k)
        if n is None or n <= limit:
            problems.append(f"{k}: {'gone' if n is None else f'{n} lines'}, no longer over {limit}: take it off "
                            f"{what} in tests/test_architecture.py")
        elif n > ceiling:
            problems.append(f"{k}: grew to {n} lines, past its ceiling of {ceiling} in {what}: it may only shrink")
    return problems


def test_no_module_is_over_600_lines_but_the_listed_ones_and_they_do_not_grow() -> None:
    problems = _ratchet(module_lines(), MODULE_CEILINGS, MODULE_LIMIT, "MODULE_CEILINGS")
    assert not problems, "\n".join(problems)


def test_no_function_is_over_60_lines_but_the_listed_ones_and_they_do_not_grow() -> None:
    lengths = {k: n for k, n in long_functions().items()}
    for k in FUNCTION_CEILINGS:  # a listed function's length, also once it is back under the limit
        lengths.setdefault(k, _length_of(k))
    problems = _ratchet({k: n for k, n in lengths.items() if n >= 0}, FUNCTION_CEILINGS, FUNCTION_LIMIT,
                        "FUNCTION_CEILINGS")
    assert not problems, "\n".join(problems)


def _length_of(key: str) -> int:
    rel, _, name = key.partition("::")
    path = REPO / rel
    if not path.is_file():
        return -1
    found = dict(_functions(ast.parse(path.read_text(encoding="utf-8"))))
    return function_length(found[name]) if name in found else -1


def test_the_ratchet_fails_a_new_offender_a_grown_entry_and_a_stale_one() -> None:
    measured = {"a.py": 700, "b.py": 650, "c.py": 610, "d.py": 500}
    got = _ratchet(measured, {"b.py": 640, "c.py": 620, "d.py": 620, "e.py": 700}, 600, "X")
    assert [p.split(":")[0] for p in got] == ["a.py", "b.py", "d.py", "e.py"], got
    assert "grew to 650" in got[1] and "no longer over 600" in got[2] and "gone" in got[3]


def test_function_length_counts_code_not_its_docstring_or_literal_tables() -> None:
    src = textwrap.dedent('''
        def f(x):
            """Doc
            on three
            lines."""
            table = {
                "a": 1,
                "b": (2, -3),
                "c": names.X,
            }
            y = [x, x + 1,
                 x + 2]
            return (table,
                    y)

        class C:
            def g(self):
                return [
                    1, 2 ** 10,
                ]
        ''')
    funcs = dict(_functions(ast.parse(src)))
    assert sorted(funcs) == ["C.g", "f"]
    assert function_length(funcs["f"]) == 13 - 3 - 5  # y's list computes and the return is names: they count
    assert function_length(funcs["C.g"]) == 1


# ---- the rank side --------------------------------------------------------------------------------------------

# what a rank must not load at interpreter start: the planner, profiles, the detector, YAML, click, torch
RANK_FORBIDDEN = ("yaml", "click", "hosttune.detect", "hosttune.profile", "hosttune.plan", "torch")
# what sitecustomize.py imports; the non-Python ranks' shim; the rank module both stand on
RANK_ENTRIES = ("hosttune.launch.hook", "hosttune.shim", "hosttune.launch.rank")


def _loaded_by(module: str) -> Dict[str, bool]:
    """Which of RANK_FORBIDDEN a fresh interpreter has in sys.modules after importing `module` (module level only)."""
    code = textwrap.dedent(f"""
        import importlib, json, sys
        sys.path.insert(0, {str(REPO)!r})
        importlib.import_module({module!r})
        print(json.dumps({{name: name in sys.modules for name in {list(RANK_FORBIDDEN)!r}}}))
        """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTTUNE_")}
    res = subprocess.run([sys.executable, "-I", "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    import json

    loaded: Dict[str, bool] = json.loads(res.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("module", RANK_ENTRIES)
def test_a_rank_entry_imports_no_planner_profile_detector_yaml_click_or_torch(module: str) -> None:
    loaded = _loaded_by(module)
    assert not any(loaded.values()), f"{module} imports at module level: {[n for n, on in loaded.items() if on]}"


def test_the_import_probe_sees_what_a_module_imports() -> None:
    """The probe above can fail: the CLI group imports click at module level, and the planner imports profiles."""
    assert _loaded_by("hosttune.cli")["click"]
    assert _loaded_by("hosttune.plan")["hosttune.plan"]


def test_sitecustomize_without_a_handoff_imports_nothing_of_hosttune(tmp_path: Path) -> None:
    """A Python process with no plan (no $HOSTTUNE_HANDOFF) that finds the hook first on its path pays nothing."""
    hook_dir = PKG / "launch" / "rankhook"
    code = textwrap.dedent("""
        import json, sys
        before = set(sys.modules)
        import sitecustomize
        print(json.dumps(sorted(n for n in set(sys.modules) - before if n == "hosttune" or n.startswith("hosttune.")
                                or n.split(".")[0] in ("yaml", "click", "torch"))))
        """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTTUNE_")}
    env["PYTHONPATH"] = str(hook_dir)
    res = subprocess.run([sys.executable, "-S", "-c", code], env=env, cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]", res.stdout
