"""Pins for hosttune.doctor.deep.session (issue 21, practice round HDOC): a job's timeout override (DeepOptions
.timeouts) reaches run_job, whole command lines and limits of every job with overrides."""

import sys
import types
from pathlib import Path
from typing import Any, Dict, List

import pytest

from hosttune.doctor.deep import session as S
from hosttune.doctor.deep.runner import JobResult

MiB = 1 << 20


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> List[Dict[str, Any]]:
    calls: List[Dict[str, Any]] = []

    def run_job(name: str, argv: Any, **kw: Any) -> JobResult:
        calls.append({"name": name, "argv": list(argv), "timeout": kw["timeout"],
                      "measure_limit": kw["measure_limit"], "tick": kw["tick"]})
        return JobResult(name=name, timeout_s=kw["timeout"])

    monkeypatch.setattr(S, "run_job", run_job)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setattr(S.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(S.shutil, "disk_usage", lambda p: types.SimpleNamespace(free=1 << 40))
    return calls


def ctx(data: Any = ()) -> Any:
    facts = types.SimpleNamespace(torch=None, gpus=[object(), object()], nvidia=types.SimpleNamespace(nvml="absent"))
    return types.SimpleNamespace(python="/opt/py/bin/python3", facts=facts, data=list(data))


def test_every_job_takes_its_timeout_override(runs: List[Dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    over = {"disk": 3.0, "shm": 4.0, "torch": 5.0, "gpu": 6.0, "allreduce_gloo": 7.0, "allreduce_nccl": 8.0}
    run = S.DeepRun(ctx(data=["/data/a"]), S.DeepOptions(timeouts=over, budget_s=10000.0))
    monkeypatch.setattr(S.time, "monotonic", lambda: run.started)
    for name in ("disk", "shm", "torch", "gpu", "allreduce_gloo"):
        run.job(name)
    run.jobs["torch"] = JobResult(name="torch")  # no devices: nccl gets 0 ranks, still its own limit
    run.job("allreduce_nccl")
    assert [(c["name"], c["timeout"]) for c in runs] == [(k, v) for k, v in over.items()]
    assert {c["measure_limit"] for c in runs} == {S.measure_limit}


def test_default_limits_and_whole_command_lines(runs: List[Dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    run = S.DeepRun(ctx(data=["/data/a", "/data/b"]), S.DeepOptions(budget_s=10000.0))
    monkeypatch.setattr(S.time, "monotonic", lambda: run.started)
    for name in ("disk", "shm", "torch", "gpu", "allreduce_gloo"):
        run.job(name)
    script = run.script()
    common = ["--json", "--seconds", "0.3"]
    assert [(c["name"], c["timeout"], c["argv"]) for c in runs] == [
        ("disk", 30.0, [sys.executable, "-I", script, *common, "--measure", "disk", "--file", "/data/a", "--file",
                        "/data/b"]),
        ("shm", 20.0, [sys.executable, "-I", script, *common, "--measure", "shm", "--bytes", str(256 * MiB)]),
        ("torch", 90.0, ["/opt/py/bin/python3", "-I", script, *common, "--measure", "info,cpu"]),
        ("gpu", 46.0, ["/opt/py/bin/python3", "-I", script, *common, "--measure", "info,gpu_compute,gpu_copies,p2p"]),
        ("allreduce_gloo", 90.0, ["/opt/py/bin/python3", "-I", script, *common, "--torchrun", "2", "--measure",
                                  "allreduce", "--backend", "gloo"]),
    ]
    assert [c["tick"] is not None for c in runs] == [False, False, False, True, False]
    run.close()
