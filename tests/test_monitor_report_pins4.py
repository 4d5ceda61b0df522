"""Pins of mutation round 4 (issue 21) on hosttune/monitor/report.py: `monitor report --job` as text, line for
line, and where --plot may write (its name's suffix, an unwritable place: one line each, nothing left behind)."""

import os
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune.errors import UserError
from hosttune.monitor import report
from hosttune.monitor.config import Thresholds


def _job() -> Dict[str, Any]:
    return {"job": "7", "first": 0, "last": 3725, "xid_events": [
                {"ts": 30, "time": "t30", "level": "critical", "message": "Xid 79"},
                {"ts": 31, "level": "error", "message": "m"}],
            "gpus": [{"gpu": 0, "uuid": "U0", "kind": "slurm", "user": "ann", "samples": 4, "seconds": 60,
                      "utilization_pct": {"mean": 20.0, "max": 30.0}, "memory_used_mb": {"mean": 200.5, "max": 300.0},
                      "power_w": {"mean": 150.0, "max": 200.0}, "job_memory_used_mb": {"mean": 60.0, "max": 70.0},
                      "energy_j": 7200.0, "energy_from": "counter", "throttle_seconds": {"thermal": 3.0, "power": 1.5},
                      "xid_errors": 2},
                     {"gpu": 1, "uuid": None, "kind": "k8s", "user": None, "samples": 2, "seconds": 20.5,
                      "power_w": {"mean": 70.0, "max": 80.0}, "energy_j": 1400.0, "energy_from": "power",
                      "throttle_seconds": {}, "xid_errors": None}]}


def test_the_whole_job_text() -> None:
    assert report.render_job_text(_job(), "/log", 3) == (
        "job 7: 1970-01-01 00:00:00Z .. 1970-01-01 01:02:05Z (/log, 3 unreadable lines)\n"
        "  GPU 0 U0 (slurm, user ann): 4 samples, 60 s\n"
        "    utilisation    20 % mean, 30 % max\n"
        "    memory (GPU)   200.5 MiB mean, 300 MiB max\n"
        "    memory (job)   60 MiB mean, 70 MiB max\n"
        "    power          150 W mean, 200 W max\n"
        "    energy         2.000 Wh (7200 J, from the energy counter)\n"
        "    held back      power 1.5 s, thermal 3 s\n"
        "    XID errors     2\n"
        "  GPU 1  (k8s, user ?): 2 samples, 20.5 s\n"
        "    utilisation    -\n"
        "    memory (GPU)   -\n"
        "    power          70 W mean, 80 W max\n"
        "    energy         0.389 Wh (1400 J, from the power readings)\n"
        "    held back      none\n"
        "    XID errors     not watched\n"
        "  t30  critical: Xid 79\n"
        "  31  error: m\n")


def test_job_text_edges() -> None:
    assert report.render_job_text(_job(), "/log", 0).splitlines()[0] == \
        "job 7: 1970-01-01 00:00:00Z .. 1970-01-01 01:02:05Z (/log)"
    assert report.render_job_text({"job": "9", "gpus": []}, "/log", 4) == \
        "job 9: no sample in /log has a process of it on a GPU\n"
    s = _job()
    del s["gpus"][1]["energy_j"]
    s["gpus"][0]["xid_errors"] = 0
    text = report.render_job_text(s, "/log", 0)
    assert "0.389 Wh" not in text and text.count("    energy ") == 1
    assert "    XID errors     0\n" in text


def test_plot_names_and_an_unwritable_place(tmp_path: Path) -> None:
    samples = [{"ts": 0.0}, {"ts": 10.0}]
    out = tmp_path / "p.SVG"
    report.write_plot(str(out), samples, Thresholds(), "t")
    assert out.read_bytes().startswith(b"<svg ") and oct(os.stat(out).st_mode & 0o777) == "0o644"
    with pytest.raises(UserError, match=r"^--plot .*/p\.jpg: name the picture \.svg \(or \.png when matplotlib is "
                                        r"installed\)$"):
        report.write_plot(str(tmp_path / "p.jpg"), samples, Thresholds(), "t")
    assert not (tmp_path / "p.jpg").exists()
    with pytest.raises(UserError, match=r"^--plot .*/none/p\.svg: cannot write: No such file or directory$"):
        report.write_plot(str(tmp_path / "none/p.svg"), samples, Thresholds(), "t")
