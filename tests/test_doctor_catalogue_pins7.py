"""Pins for hosttune.doctor.catalogue (issue 21, practice round HDOC): `doctor --deep` runs the ordinary checks too
(the measured ones after them); the facts are a fixed host (detect.collect replaced), no process starts."""

from typing import Any, List

import pytest
from _doctorhelp import cpu_host

import hosttune.detect
from hosttune.doctor import catalogue
from hosttune.doctor.deep.session import DeepOptions


@pytest.fixture
def fixed_host(monkeypatch: pytest.MonkeyPatch) -> List[Any]:
    asked: List[Any] = []
    monkeypatch.setattr(hosttune.detect, "collect", lambda *a, **kw: asked.append((a, kw)) or cpu_host())
    return asked


def test_deep_keeps_the_ordinary_checks(fixed_host: List[Any]) -> None:
    plain = catalogue.diagnose(only="tools", env={})
    deep = catalogue.diagnose(only="tools", env={}, deep=DeepOptions(progress=False))
    ids = [r.id for r in plain.results]
    assert ids and all(i.startswith("tools.") for i in ids)
    assert [(r.id, r.status, r.actual) for r in deep.results] == [(r.id, r.status, r.actual) for r in plain.results]


def test_deep_runs_its_checks_after_the_others(fixed_host: List[Any]) -> None:
    deep_cpu = [c.id for c in catalogue.DEEP_CHECKS if c.group == "cpu"]
    report = catalogue.diagnose(only="cpu", env={}, skip=deep_cpu, deep=DeepOptions(progress=False))
    ids = [r.id for r in report.results]
    plain = [r.id for r in catalogue.diagnose(only="cpu", env={}).results]
    assert ids[:len(plain)] == plain and plain
    assert set(ids[len(plain):]) <= set(deep_cpu)
