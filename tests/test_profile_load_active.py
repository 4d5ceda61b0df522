"""Profiles never detect (issue 23): `profile.active()` generates the built-in default for the Facts its caller
passes (or a function of the caller's that detects them, called only when the default is needed); hosttune.profile
imports no hosttune.detect, lazily or not (the import contract in /work/notes/h3-contract.ini says the same)."""

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest
from conftest import REPO
from test_profile import small_facts

from hosttune import profile
from hosttune.facts import Facts


@pytest.fixture
def nothing_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTTUNE_ETC_DIR", str(tmp_path / "etc-hosttune"))  # no system profile
    monkeypatch.delenv("HOSTTUNE_PROFILE", raising=False)
    assert profile.locate_active(None).ref is None


def test_without_facts_the_default_is_not_generated(nothing_configured: None) -> None:
    with pytest.raises(TypeError, match="never detects"):
        profile.active(None)


def test_a_detector_is_called_once_and_only_for_the_default(nothing_configured: None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[int] = []

    def detect() -> Facts:
        calls.append(1)
        return small_facts()

    assert profile.active(None, detect).source == profile.GENERATED and calls == [1]
    assert profile.active("debug", detect).debug and calls == [1]  # a named profile needs no host
    monkeypatch.setenv("HOSTTUNE_PROFILE", "memory-saver")
    assert profile.active(None, detect).name == "memory-saver" and calls == [1]
    assert profile.active(None).name == "memory-saver"  # nor any facts at all


def _imports(path: Path) -> List[str]:
    """Every module `path` imports, at module level or inside a function, TYPE_CHECKING included."""
    out: List[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


def test_no_profile_module_imports_the_detector() -> None:
    files = sorted((REPO / "hosttune" / "profile").glob("*.py"))
    assert files
    found = [f"{f.name}: {m}" for f in files for m in _imports(f)
             if m == "hosttune.detect" or m.startswith("hosttune.detect.")]
    assert not found, found


def test_profiles_import_and_generate_without_the_detector(nothing_configured: None) -> None:
    code = ("import sys, json\n"
            "from hosttune import profile\n"
            "from hosttune.facts import Facts\n"
            "from hosttune.profile import generate, load, locate, settings\n"
            "p = profile.active(None, Facts.from_dict(json.loads(sys.stdin.read())))\n"
            "print(json.dumps([p.source, sorted(m for m in sys.modules if m.startswith('hosttune.detect'))]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), capture_output=True, text=True, timeout=120,
                          input=json.dumps(small_facts().to_dict()))
    assert done.returncode == 0, done.stderr
    source, detect = json.loads(done.stdout.strip().splitlines()[-1])
    assert source == profile.GENERATED and detect == []
