"""hosttune.detect.torchenv pins (issue 21, practice round HDET8): what a JSON probe answers for each way the
interpreter can fail, through the real program gateway (one short `python -I -c` each)."""

import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune.detect import torchenv
from hosttune.detect.hostio import HostIO


@pytest.mark.parametrize("script,want", [
    ("import sys; sys.stderr.write('Traceback:\\n  first\\nImportError: second\\n'); sys.exit(3)",
     {"error": "probe failed: ImportError: second"}),
    ("import sys; sys.exit(4)", {"error": "probe failed: exit status 4"}),
    ("import sys; sys.stderr.write('x' * 300 + '\\n'); sys.exit(1)", {"error": "probe failed: " + "x" * 200}),
    ("print('noise'); print('{\"a\": 1}')", {"a": 1}),
    ("print('{\"a\": 1}'); print('not json')", {"error": "probe printed no JSON"}),
    ("pass", {"error": "probe printed no JSON"}),
    ("print('[1, 2]')", {"error": "probe printed no JSON object"}),
])
def test_json_probe_answers(monkeypatch: pytest.MonkeyPatch, script: str, want: Dict[str, Any]) -> None:
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.delenv("PYTHONPATH")
    io = HostIO(Path("/"))
    assert torchenv._run_json_probe(io, sys.executable, script, 600.0, note_dropped=True) == want


def test_default_python_of_a_captured_tree_is_none(tmp_path: Path) -> None:
    """A foreign root's python3 is never run: no default interpreter there, whatever its /usr/bin holds."""
    exe = tmp_path / "usr/bin/python3"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    io = HostIO(tmp_path)
    assert io.which("python3") == "/usr/bin/python3"  # it is there ...
    assert torchenv.default_python(io) is None  # ... and not the probe's interpreter
