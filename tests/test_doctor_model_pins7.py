"""Pins for hosttune.doctor.model (issue 21, practice round HDOC): Report.to_dict whole (what `doctor --json`
prints), problems order and exit codes."""

import json

import pytest

from hosttune.doctor.model import Finding, Report, Result

R1 = Result(id="os.thp", group="os", status="warn", title="THP", expected="madvise", actual="always", fix="echo")
R2 = Result(id="cpu.governor", group="cpu", status="pass", title="Governor", expected="performance",
            actual="performance", fix="")
R3 = Result(id="nvidia.driver", group="nvidia", status="fail", title="Driver", expected="loaded", actual="no", fix="x")


def test_report_to_dict_whole() -> None:
    rep = Report(results=(R1, R2, R3))
    assert rep.to_dict() == {
        "schema": "hosttune.doctor/1",
        "findings": [
            {"id": "os.thp", "group": "os", "status": "warn", "title": "THP", "expected": "madvise",
             "actual": "always", "fix": "echo"},
            {"id": "cpu.governor", "group": "cpu", "status": "pass", "title": "Governor", "expected": "performance",
             "actual": "performance", "fix": ""},
            {"id": "nvidia.driver", "group": "nvidia", "status": "fail", "title": "Driver", "expected": "loaded",
             "actual": "no", "fix": "x"},
        ],
        "summary": {"pass": 1, "warn": 1, "fail": 1, "skip": 0},
    }
    json.dumps(rep.to_dict())
    assert Report(results=()).to_dict() == {"schema": "hosttune.doctor/1", "findings": [],
                                            "summary": {"pass": 0, "warn": 0, "fail": 0, "skip": 0}}


def test_problems_and_exit_codes() -> None:
    rep = Report(results=(R1, R2, R3))
    assert rep.problems() == (R3,) and rep.problems("warn") == (R3, R1)
    assert (rep.exit_code, rep.exit_code_at("warn")) == (1, 1)
    calm = Report(results=(R1, R2))
    assert (calm.exit_code, calm.exit_code_at("warn")) == (0, 1)
    with pytest.raises(ValueError):
        rep.problems("skip")
    with pytest.raises(ValueError):
        Finding(status="ok")
