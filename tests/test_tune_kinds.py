"""hosttune.tune's structure: every tunable kind is an object in KINDS with apply/verify/revert hooks, the engine
never asks which kind it holds, and every module and function stays small (issue 23)."""

import ast
import inspect
from pathlib import Path

import hosttune.tune as tune_pkg
from hosttune.tune import core
from hosttune.tune.kinds import KINDS, Kind
from hosttune.tune.tunables import TUNABLES

TUNE_DIR = Path(tune_pkg.__file__).parent


def test_every_tunable_kind_is_a_registered_object_with_its_own_reader() -> None:
    for t in TUNABLES:
        kind = KINDS[t.kind]
        assert isinstance(kind, Kind) and kind.name == t.kind
        assert type(kind).actual is not Kind.actual, t.kind  # each kind reads its own value


def test_the_engine_never_branches_on_the_kind() -> None:
    tree = ast.parse(inspect.getsource(core))
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            names = [n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)]
            assert "kind" not in names, ast.unparse(node) if hasattr(ast, "unparse") else node.lineno


def test_every_tune_module_under_600_lines_and_function_under_60() -> None:
    for path in sorted(TUNE_DIR.glob("*.py")):
        text = path.read_text()
        assert text.count("\n") < 600, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                assert node.end_lineno - node.lineno + 1 < 60, f"{path.name}:{node.name}"
