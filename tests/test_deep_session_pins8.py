"""Pins for hosttune.doctor.deep.session (issue 21, practice round HDOC8): a job stopped by its measurement's own limit
is not a budget cut even when the budget set its timeout; the budget-spent start error whole (run_job replaced by a
recorder, as in test_deep_session_pins5: no process starts)."""

from typing import Any, Dict, List

import pytest
from test_deep_session_pins5 import at, deep, runs  # noqa: F401 - runs is a fixture

from hosttune.doctor.deep import session as S
from hosttune.doctor.deep.runner import JobResult


def _ran(monkeypatch: pytest.MonkeyPatch, left: float, stopped_at: float) -> JobResult:
    run = deep(budget_s=100.0)
    at(monkeypatch, run, 100.0 - left)
    monkeypatch.setattr(S, "run_job", lambda name, argv, **kw: JobResult(name=name, timed_out=True,
                                                                         timeout_s=stopped_at))
    return run._run("gpu", ["x"], 30.0)


def test_a_measurement_limit_is_not_a_budget_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """10 s of budget left under a 30 s limit: stopped at 10 s it is the budget's cut; stopped at a measurement's own
    20 s limit (run_job's timeout_s says which) it is not, though the budget set the job's timeout."""
    assert _ran(monkeypatch, 10.0, 10.0) == JobResult(name="gpu", timed_out=True, timeout_s=10.0, budget_cut=True)
    assert _ran(monkeypatch, 25.0, 20.0) == JobResult(name="gpu", timed_out=True, timeout_s=20.0, budget_cut=False)


@pytest.mark.parametrize("budget,shown", [(100.0, "100"), (0.0, "0"), (12.5, "12.5")])
def test_budget_spent_start_error_whole(runs: List[Dict[str, Any]], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
                                        budget: float, shown: str) -> None:
    run = deep(budget_s=budget)
    at(monkeypatch, run, budget + 1.0)
    assert run._run("disk", ["x"], 20.0) == JobResult(
        name="disk", start_error=f"time budget of {shown} s spent before this measurement started")
    assert runs == []


def test_env_orders_gpus_by_bus_whatever_the_caller_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda:i must be NVML's GPU i: a caller's CUDA_DEVICE_ORDER=FASTEST_FIRST is overridden, extras are added."""
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    env = deep().env(OMP_NUM_THREADS="1")
    assert (env["CUDA_DEVICE_ORDER"], env["OMP_NUM_THREADS"]) == ("PCI_BUS_ID", "1")
