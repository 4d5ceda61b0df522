"""hosttune/execcache.py and the program gateway: the replay execs exactly the path the gateway (hosttune/programs.py)
resolved when the entry was recorded, and pays nothing for the gateway's imports."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_exec_speed import JOB, _env, run, warm

from hosttune import execcache, programs


def _imported(r: Any) -> set:
    return {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}


def test_a_replay_execs_the_path_the_gateway_resolved_without_importing_it(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = _env()
    *_, last = warm("--", *JOB, env=env, cwd=work)
    again = run("--", *JOB, env=env, cwd=work)
    assert again.returncode == 0
    # what this interpreter loads before any of ours (a site hook may import typing or subprocess itself)
    start = subprocess.run([sys.executable, "-c", "pass"], env=env, cwd=str(work), capture_output=True, text=True,
                           timeout=60)
    heavy = {"hosttune.programs", "subprocess", "typing", "hosttune.plan"} - _imported(start)
    assert "hosttune.programs" in heavy
    for r in (last, again):
        imported = _imported(r)
        assert "hosttune.execcache" in imported
        assert not imported & heavy, sorted(imported & heavy)
    cache = Path(execcache.cache_dir(env) or "")
    entries = [execcache.load(str(p)) for p in cache.iterdir() if len(p.name) == 32]
    exes = {e[4] for e in entries if e is not None}
    assert exes == {programs.resolve(JOB[0], "exec:", path=env.get("PATH", os.defpath), check=False)}


def test_the_recorder_keeps_only_an_absolute_exec_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(execcache, "RACY_NS", 0)
    rec = execcache.Recorder(["--", "sh"], str(tmp_path / ("0" * 32)), b"d" * 32)
    if rec.mempol is None:
        pytest.skip("the memory policy cannot be read back on this machine")
    env = dict(os.environ)
    exe = programs.resolve("sh", "exec:", check=False)
    entry = rec._entry(exe, ["sh"], env)
    assert entry is not None and entry[4] == exe
    assert rec._entry("sh", ["sh"], env) is None  # a bare name: not what the gateway returns, never replayed
    assert rec._entry("./sh", ["sh"], env) is None
