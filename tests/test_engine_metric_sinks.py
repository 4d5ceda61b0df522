"""Metrics to CSV and TensorBoard beside metrics.jsonl (issue 25, "what trainers expect"; hosttune/engine/sinks.py):
off by default; rank 0 writes <run>/metrics.csv under a fixed header and TensorBoard event files in
<run>/tensorboard/, read back here with tensorboard's own EventAccumulator; a resumed 2-rank run continues both
without a step twice; tensorboard=true where the package is missing is one line, exit 2, before any training."""

import csv
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
from _ranks import run_ranks

from hosttune.engine import sinks  # no torch: the CSV tests run in the Python 3.9 pass too

REPO = Path(__file__).resolve().parents[1]
SETS = ["n_layer=1", "n_embd=32", "n_head=2", "block_size=16", "micro_batch_size=4", "eval_batches=1",
        "log_interval=1", "warmup_steps=0", "amp=off", "device=cpu", "num_workers=0", "ckpt_interval=2"]


def engine_argv(run_dir: Path, *sets: str) -> List[str]:
    argv = ["--preset", "gpt-tiny", "--run-dir", str(run_dir)]
    for s in [*SETS, *sets]:
        argv += ["--set", s]
    return argv


def jsonl(run_dir: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def csv_rows(run_dir: Path) -> List[Dict[str, str]]:
    with open(run_dir / "metrics.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def scalars(run_dir: Path, tag: str) -> List[Any]:
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = accumulator.EventAccumulator(str(run_dir / "tensorboard"))
    acc.Reload()  # reads every event file in order; a later writer's purge_step drops the earlier files' later steps
    return list(acc.Scalars(tag))


# ---- the CSV on its own -----------------------------------------------------------------------------------------

def test_the_csv_header_is_fixed_and_a_field_that_appears_later_fills_its_own_column(tmp_path: Path) -> None:
    sink = sinks.CsvSink(tmp_path / "metrics.csv", 0)
    sink.write({"step": 1, "loss": 2.5, "lr": 0.1, "time": 1.0})
    sink.write({"event": "start", "world_size": 2})  # not a training record: no row
    sink.write({"step": 2, "loss": 2.25, "lr": 0.1, "time": 2.0, "checkpoint_s": 0.5, "hfu": 0.2, "new_field": 7})
    sink.close()
    lines = (tmp_path / "metrics.csv").read_text().splitlines()
    assert lines[0].split(",") == list(sinks.CSV_COLUMNS)
    assert all(len(next(csv.reader([line]))) == len(sinks.CSV_COLUMNS) for line in lines)  # no shifted column
    rows = csv_rows(tmp_path)
    assert [(r["step"], r["loss"], r["checkpoint_s"], r["hfu"]) for r in rows] == [("1", "2.5", "", ""),
                                                                                 ("2", "2.25", "0.5", "0.2")]


def test_a_resume_keeps_the_rows_up_to_its_step_and_rewrites_another_header(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    # An earlier writer's file: other columns, in another order, rows past the checkpoint, a torn last line.
    path.write_text("loss,step,extra\n3.0,1,x\n2.0,2,y\n1.5,3,z\n1.2,4,w\n1.1,")
    sink = sinks.CsvSink(path, 2)
    sink.write({"step": 3, "loss": 1.75, "time": 5.0})
    sink.close()
    rows = csv_rows(tmp_path)
    assert path.read_text().splitlines()[0].split(",") == list(sinks.CSV_COLUMNS)
    assert [(r["step"], r["loss"]) for r in rows] == [("1", "3.0"), ("2", "2.0"), ("3", "1.75")]


def test_a_fresh_run_starts_the_csv_over_and_a_continued_one_is_appended_in_place(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    first = sinks.CsvSink(path, 0)
    first.write({"step": 1, "loss": 1.0})
    first.close()
    inode = path.stat().st_ino
    sinks.CsvSink(path, 1).close()  # every row is at or before the step: kept, the file is not rewritten
    assert path.stat().st_ino == inode and len(csv_rows(tmp_path)) == 1
    sinks.CsvSink(path, 0).close()  # step 0: a new run in this directory
    assert csv_rows(tmp_path) == []


def test_every_field_of_a_training_record_has_a_csv_column() -> None:
    """train.log_interval and log_rates build the record: every key they can set is one of CSV_COLUMNS (a new one
    must be added there, or it would be in metrics.jsonl only)."""
    import ast

    tree = ast.parse((REPO / "hosttune" / "engine" / "train.py").read_text())
    keys = {"time"}  # Metrics.write stamps it
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "rec" \
                and isinstance(node.slice, ast.Constant) and isinstance(node.ctx, ast.Store):
            keys.add(node.slice.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "rec":
            keys |= {kw.arg for kw in node.keywords if kw.arg}
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "rec" \
                and isinstance(node.value, ast.Dict):
            keys |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    assert {"step", "loss", "lr", "mfu", "hfu", "samples_per_s", "checkpoint_s"} <= keys  # the walk found them
    assert keys <= set(sinks.CSV_COLUMNS), keys - set(sinks.CSV_COLUMNS)


def test_tensorboard_continued_from_a_step_hides_the_later_steps_an_earlier_writer_logged(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    first = sinks.TensorBoardSink(tmp_path / "tensorboard", 0)
    for step in (1, 2, 3):
        first.write({"step": step, "loss": float(step), "lr": 0.5, "time": 100.0 + step})
    first.write({"event": "summary", "step": 3, "val_loss": 9.0, "time": 104.0})
    first.close()
    second = sinks.TensorBoardSink(tmp_path / "tensorboard", 2)  # resumed from step 2's checkpoint
    second.write({"step": 3, "loss": 30.0, "lr": 0.5, "time": 200.0})
    second.write({"event": "summary", "step": 3, "val_loss": 8.0, "time": 201.0})
    second.close()
    assert [(e.step, e.value) for e in scalars(tmp_path, "train/loss")] == [(1, 1.0), (2, 2.0), (3, 30.0)]
    assert [(e.step, e.value) for e in scalars(tmp_path, "val/loss")] == [(3, 8.0)]
    third = sinks.TensorBoardSink(tmp_path / "tensorboard", 3)  # the finished run resumed again: nothing new
    third.write({"event": "summary", "step": 3, "val_loss": 7.0, "time": 300.0})
    third.close()
    assert [(e.step, e.value) for e in scalars(tmp_path, "val/loss")] == [(3, 8.0)]


def test_a_link_at_the_csv_or_the_tensorboard_directory_is_refused_and_nothing_is_written_through_it(
        tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "target.csv").write_text("keep\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.csv").symlink_to(elsewhere / "target.csv")
    with pytest.raises(sinks.EngineError, match="cannot continue the metrics CSV"):
        sinks.CsvSink(run / "metrics.csv", 3)
    assert (elsewhere / "target.csv").read_text() == "keep\n"
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    (run / "tensorboard").symlink_to(elsewhere)
    with pytest.raises(sinks.EngineError, match="a link or a file where the run's TensorBoard directory goes"):
        sinks.TensorBoardSink(run / "tensorboard", 0)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["target.csv"]


# ---- off by default; tensorboard missing ------------------------------------------------------------------------

def test_off_by_default_and_tensorboard_missing_is_one_line_before_training(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    from _enginehelp import assert_one_line_error
    from _enginemainhelp import engine_here

    from hosttune.engine.config import load_config

    cfg = load_config("gpt-tiny")
    assert not cfg.metrics_csv and not cfg.tensorboard
    # The engine's CLI in this process (the refusal is the subject, not the process: a child's torch import cost
    # 4 CPU-s, issue 21; test_engine.py keeps a real process for the CLI's one-line errors), with `tensorboard`
    # unimportable as where it is not installed: None in sys.modules stops its import, and torch's wrapper module
    # is dropped so that `from torch.utils.tensorboard import ...` runs it again (both restored afterwards).
    for name in [m for m in sys.modules if m.startswith(("tensorboard", "torch.utils.tensorboard"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    run_dir = tmp_path / "run"
    r = engine_here(*engine_argv(run_dir, "steps=2", "tensorboard=true"), cwd=tmp_path)
    assert_one_line_error(r, "tensorboard=true needs the tensorboard package", "pip install tensorboard")
    assert not run_dir.exists()  # refused before the run directory, let alone a step


# ---- a 2-rank run and its resume --------------------------------------------------------------------------------

@pytest.mark.integration
@pytest.mark.slow
def test_a_two_rank_run_and_its_resume_log_each_step_once_to_csv_and_tensorboard(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    run_dir = tmp_path / "run"

    def job(*extra: str) -> None:
        # the 2 ranks as torchrun starts them, without its agent (tests/_ranks.py; torchrun is not the subject)
        run_ranks(["-m", "hosttune.engine", *engine_argv(run_dir, "metrics_csv=true", "tensorboard=true", *extra)],
                  tmp_path, timeout=600)

    job("steps=5")  # checkpoints at steps 2, 4 and 5
    first = {r["step"]: r for r in jsonl(run_dir) if sinks.is_training_record(r)}
    first_loss = {s: r["loss"] for s, r in first.items()}
    # Interrupted after it logged step 5, before its checkpoint: the resume starts from step 4 and logs 5 again.
    shutil.rmtree(run_dir / "checkpoints" / "step-0000005")
    job("steps=6", "resume=true")
    records = jsonl(run_dir)
    at = max(i for i, r in enumerate(records) if r.get("event") == "resume")
    assert records[at]["step"] == 4
    second = {r["step"]: r for r in records[at:] if sinks.is_training_record(r)}
    assert sorted(second) == [5, 6]

    rows = csv_rows(run_dir)
    assert [int(r["step"]) for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [float(r["loss"]) for r in rows[:4]] == [first_loss[s] for s in (1, 2, 3, 4)]
    assert [float(r["time"]) for r in rows[4:]] == [second[5]["time"], second[6]["time"]]  # the resumed run's
    # checkpoint_s: only in the interval after a checkpoint, in its own column (a field that comes and goes).
    logged = [first[s] for s in (1, 2, 3, 4)] + [second[5], second[6]]
    assert [r["checkpoint_s"] for r in rows] == [str(rec.get("checkpoint_s", "")) for rec in logged]
    assert sum(r["checkpoint_s"] != "" for r in rows) >= 1
    assert not any(p.name.startswith("metrics.csv") and p.name != "metrics.csv" for p in run_dir.iterdir())

    loss = scalars(run_dir, "train/loss")
    assert [e.step for e in loss] == [1, 2, 3, 4, 5, 6]  # step 5 once: the first run's was purged
    assert [e.value for e in loss[:4]] == pytest.approx([first_loss[s] for s in (1, 2, 3, 4)], rel=1e-6)
    assert [round(e.wall_time, 3) for e in loss[4:]] == [second[5]["time"], second[6]["time"]]
    assert [e.step for e in scalars(run_dir, "train/lr")] == [1, 2, 3, 4, 5, 6]
    summary = [r for r in records if r.get("event") == "summary"][-1]
    val = scalars(run_dir, "val/loss")  # the first run's at step 5 went with its step 5
    assert [e.step for e in val] == [6] and val[0].value == pytest.approx(summary["val_loss"], rel=1e-6)
    files = sorted(p.name for p in (run_dir / "tensorboard").iterdir())
    assert len(files) == 2 and all(f.startswith("events.out.tfevents.") for f in files)  # rank 0's, per run
