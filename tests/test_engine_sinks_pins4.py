"""Pins (issue 21, round 4) for hosttune/engine/sinks.py in-process: the CSV's rows on a fresh run and a resume (the
step boundary, the rewrite cases, mode 0644), and which numbers the TensorBoard sink hands its writer (a recording
writer stands in for SummaryWriter). No torch."""

import math
import os
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from hosttune.engine import sinks
from hosttune.engine.errors import EngineError

HEADER = ",".join(sinks.CSV_COLUMNS)


def rows(path: Path) -> List[str]:
    return path.read_text().splitlines()


def test_a_fresh_csv_has_the_header_and_one_row_per_training_record(tmp_path: Path) -> None:
    p = tmp_path / "metrics.csv"
    s = sinks.CsvSink(p, 0)
    s.write({"step": 1, "loss": 2.5, "lr": 0.1, "unlisted": 7, "time": 3.0})
    s.write({"step": 2, "loss": 2.0, "event": "checkpoint"})  # an event: not a row
    s.write({"step": 3})  # no loss: not a training record
    s.write({"loss": 1.0})
    s.close()
    s.write({"step": 4, "loss": 1.0})  # after close: nothing
    assert rows(p) == [HEADER, "1,,3.0,2.5,0.1" + "," * (len(sinks.CSV_COLUMNS) - 5)]
    assert (p.stat().st_mode & 0o777) == 0o644


def _csv(p: Path, steps: List[int], header: str = HEADER, end: str = "\n") -> None:
    cells = "," * (len(sinks.CSV_COLUMNS) - 1)
    p.write_text("\n".join([header] + [f"{s}{cells}" for s in steps]) + end)


def test_a_resume_keeps_the_rows_up_to_and_including_its_step(tmp_path: Path) -> None:
    p = tmp_path / "metrics.csv"
    _csv(p, [10, 20, 30])
    sinks.CsvSink(p, 20).close()
    assert [r.split(",")[0] for r in rows(p)[1:]] == ["10", "20"]
    _csv(p, [10, 20])
    ino = p.stat().st_ino
    s = sinks.CsvSink(p, 20)
    s.write({"step": 30, "loss": 1.0})
    s.close()
    assert p.stat().st_ino == ino  # nothing to drop: appended in place
    assert [r.split(",")[0] for r in rows(p)[1:]] == ["10", "20", "30"]


def test_a_fresh_run_in_a_directory_with_a_csv_starts_it_over(tmp_path: Path) -> None:
    p = tmp_path / "metrics.csv"
    _csv(p, [1, 2])
    sinks.CsvSink(p, 0).close()
    assert rows(p) == [HEADER]


def test_another_header_or_a_torn_last_line_is_rewritten(tmp_path: Path) -> None:
    p = tmp_path / "metrics.csv"
    p.write_text("step,loss\n5,1.0\n")
    sinks.CsvSink(p, 10).close()
    assert rows(p) == [HEADER, "5,,,1.0" + "," * (len(sinks.CSV_COLUMNS) - 4)]  # its columns moved to ours
    _csv(p, [5, 6], end="")  # the last row was cut mid-write
    ino = p.stat().st_ino
    sinks.CsvSink(p, 10).close()
    assert p.read_text().endswith("\n") and p.stat().st_ino != ino
    assert [r.split(",")[0] for r in rows(p)[1:]] == ["5", "6"]
    _csv(p, [0, 1, 2])  # a step 0 row (or none) is never a step of the run
    sinks.CsvSink(p, 5).close()
    assert [r.split(",")[0] for r in rows(p)[1:]] == ["1", "2"]


def test_a_link_at_the_csv_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("keep\n")
    link = tmp_path / "metrics.csv"
    link.symlink_to(target)
    with pytest.raises(EngineError, match="cannot continue the metrics CSV"):
        sinks.CsvSink(link, 3)
    assert target.read_text() == "keep\n"


def test_step_of() -> None:
    assert sinks._step_of({"step": "12"}) == 12
    assert sinks._step_of({"step": ""}) is None and sinks._step_of({}) is None
    assert sinks._step_of({"step": "x"}) is None


def test_is_training_record() -> None:
    assert sinks.is_training_record({"step": 1, "loss": 0.5})
    assert not sinks.is_training_record({"step": 1, "loss": 0.5, "event": "x"})
    assert not sinks.is_training_record({"step": 1}) and not sinks.is_training_record({"loss": 1.0})


class Writer:
    def __init__(self) -> None:
        self.calls: List[Tuple[str, Any, Any, Any]] = []
        self.closed = 0

    def add_scalar(self, tag: str, value: Any, global_step: Any = None, walltime: Any = None) -> None:
        self.calls.append((tag, value, global_step, walltime))

    def close(self) -> None:
        self.closed += 1


def tb(start_step: int) -> Any:
    s = sinks.TensorBoardSink.__new__(sinks.TensorBoardSink)
    s.start_step, s.writer = start_step, Writer()
    return s


def test_tensorboard_gets_each_number_of_a_training_record() -> None:
    s = tb(0)
    w = s.writer
    s.write({"time": 9.5, "step": 3, "loss": 2.0, "lr": 1, "flag": True, "name": "x", "epoch": 0})
    assert w.calls == [("train/loss", 2.0, 3, 9.5), ("train/lr", 1, 3, 9.5), ("train/epoch", 0, 3, 9.5)]
    s.close()
    assert w.closed == 1 and s.writer is None
    s.write({"step": 4, "loss": 1.0})
    s.close()
    assert w.closed == 1 and len(w.calls) == 3


def test_tensorboard_shows_the_evaluation_once_after_the_resumed_step() -> None:
    s = tb(5)
    s.write({"event": "summary", "step": 6, "val_loss": 1.5, "val_accuracy": 0.75, "time": 1.0, "other": 3})
    assert s.writer.calls == [("val/loss", 1.5, 6, 1.0), ("val/accuracy", 0.75, 6, 1.0)]
    s = tb(5)
    s.write({"event": "summary", "step": 5, "val_loss": 1.5})  # already shown by the run resumed from
    s.write({"event": "summary", "step": "6", "val_loss": 1.5})
    s.write({"event": "checkpoint", "step": 9, "val_loss": 1.5})
    s.write({"event": "summary", "step": 9, "val_loss": math.nan, "val_accuracy": True})
    assert s.writer.calls == []


def test_open_sinks_follows_the_config(tmp_path: Path) -> None:
    from hosttune.engine.config import Config

    assert sinks.open_sinks(Config(), tmp_path, 0) == []
    got = sinks.open_sinks(Config(metrics_csv=True), tmp_path, 0)
    assert [type(x) for x in got] == [sinks.CsvSink] and got[0].path == tmp_path / "metrics.csv"
    got[0].close()
    sinks.require(Config())  # nothing to check without tensorboard
    assert os.path.exists(tmp_path / "metrics.csv")
