"""Pins for mutation round 4's last doctor --deep survivors (issue 21), on the probe's own code run in this process
with a stand-in torch module (the probe's CPU group needs only get_num_threads, randn and mm to pick and report its
sizes; no torch outside the engine's tests): the CPU matmul's size follows the thread count, 1024^2 up to 8 threads,
2048^2 up to 32, 4096^2 beyond, and cpu.deep_matmul's finding names it."""
import argparse
import json
import sys
import types
from typing import Any, Dict, List

import pytest

from hosttune.doctor.deep import findings, probe_torch
from hosttune.doctor.deep.runner import JobResult, parse_events


def fake_torch(threads: int) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.__version__ = "2.5.1"  # type: ignore[attr-defined]
    torch.version = types.SimpleNamespace(cuda=None)  # type: ignore[attr-defined]
    torch.backends = types.SimpleNamespace()  # type: ignore[attr-defined]
    torch.cuda = types.SimpleNamespace(is_available=lambda: False)  # type: ignore[attr-defined]
    torch.get_num_threads = lambda: threads  # type: ignore[attr-defined]
    torch.randn = lambda *shape: shape  # type: ignore[attr-defined]
    torch.mm = lambda a, b: None  # type: ignore[attr-defined]
    return torch


def cpu_group(threads: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> List[Dict[str, Any]]:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(threads))
    monkeypatch.setattr(probe_torch, "JSON", True)
    probe_torch.run_torch_groups({"info", "cpu"}, argparse.Namespace(small=False, seconds=0.001))
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("threads,n", [(1, 1024), (8, 1024), (9, 2048), (32, 2048), (33, 4096)])
def test_the_cpu_matmul_size_follows_the_thread_count(threads: int, n: int, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture) -> None:
    events = cpu_group(threads, monkeypatch, capsys)
    (row,) = [e for e in events if e["event"] == "result" and e["what"] == "cpu_matmul"]
    assert (row["n"], row["threads"]) == (n, threads)
    job = JobResult(name="torch", events=parse_events("\n".join(json.dumps(e) for e in events)), returncode=0)
    f = findings.cpu_matmul_finding(job, threads, None, (), None, None)
    assert f.status == "pass" and f"({n}x{n} matmul, {threads} threads)" in f.actual, f
