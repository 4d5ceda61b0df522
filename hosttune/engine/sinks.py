"""Rank 0's metrics beside metrics.jsonl, for the tools trainers already read: <run>/metrics.csv (metrics_csv) and
TensorBoard event files in <run>/tensorboard/ (tensorboard; the optional tensorboard package).

They take metrics.jsonl's records: the training record of each log interval (a "step" and a "loss", no "event"),
and TensorBoard also the final evaluation. A resumed run continues the same files without a step twice: the CSV
keeps its rows up to the step resumed from (rewritten atomically when later rows or another header were there), and
TensorBoard's purge_step hides the events an interrupted run logged after that step. A fresh run (step 0) in a run
directory that has them starts them over the same way.
"""

from __future__ import annotations

import csv
import io
import math
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, TextIO

from hosttune import fsio

from .config import Config
from .errors import EngineError

CSV_NAME = "metrics.csv"
TENSORBOARD_DIR = "tensorboard"
CSV_LIMIT = 256 << 20  # bytes read back on a resume: ~1.5M rows

# The CSV's header, fixed: every field a training record can have (tests/test_engine_metric_sinks.py holds
# train.log_interval to this list), in reading order. A field a record lacks is an empty cell, and one not listed
# stays in metrics.jsonl only: a field that appears later (checkpoint_s, hfu, ...) never shifts the columns.
CSV_COLUMNS = ("step", "epoch", "time", "loss", "lr", "grad_norm", "samples_per_s", "tokens_per_s", "step_time_s",
               "data_wait_frac", "padding_frac", "mfu", "hfu", "peak_mem_mb", "checkpoint_s", "compile_s")
# The final evaluation's fields that TensorBoard shows (as val/loss, val/accuracy) at the run's last step.
EVAL_FIELDS = ("val_loss", "val_accuracy")


def is_training_record(record: Dict[str, Any]) -> bool:
    return "step" in record and "loss" in record and "event" not in record


def require(cfg: Config) -> None:
    """Refuse at start, on every rank alike, a sink whose package this Python lacks (not after the training)."""
    if not cfg.tensorboard:
        return
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
    except ImportError as exc:
        why = (str(exc).splitlines() or ["ImportError"])[0][:200]
        raise EngineError(f"tensorboard=true needs the tensorboard package in {sys.executable} ({why}): "
                          f"pip install tensorboard, or set tensorboard=false") from None


def open_sinks(cfg: Config, run_dir: Path, start_step: int) -> List[Any]:
    """The sinks the config turns on, continuing from `start_step` (0 on a fresh run)."""
    sinks: List[Any] = []
    try:
        if cfg.metrics_csv:
            sinks.append(CsvSink(run_dir / CSV_NAME, start_step))
        if cfg.tensorboard:
            sinks.append(TensorBoardSink(run_dir / TENSORBOARD_DIR, start_step))
    except BaseException:
        for sink in sinks:
            sink.close()
        raise
    return sinks


def _step_of(row: Dict[str, Any]) -> Optional[int]:
    try:
        return int(row.get("step") or "")
    except ValueError:
        return None


class CsvSink:
    """<run>/metrics.csv: one row per log interval under CSV_COLUMNS, line-buffered (tail -f works)."""

    def __init__(self, path: Path, start_step: int):
        self.path = path
        self._continue(start_step)
        self._f: Optional[TextIO] = os.fdopen(fsio.open_append_nofollow(path, 0o644), "a", buffering=1,
                                              encoding="utf-8", newline="")
        self._writer = csv.DictWriter(self._f, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")

    def _continue(self, start_step: int) -> None:
        """Leave the file with our header and only the rows of steps up to `start_step`."""
        try:
            text = fsio.read_bounded(self.path, CSV_LIMIT, nofollow=True).decode("utf-8", "replace")
        except FileNotFoundError:
            text = ""
        except OSError as exc:
            raise EngineError(f"{self.path}: cannot continue the metrics CSV: {exc.strerror or exc}") from None
        lines = text.splitlines()
        rows = list(csv.DictReader(lines))
        kept = [r for r in rows if 1 <= (_step_of(r) or 0) <= start_step]
        same_header = bool(lines) and next(csv.reader(lines[:1])) == list(CSV_COLUMNS)
        if same_header and len(kept) == len(rows) and text.endswith("\n"):
            return  # append to it as it is
        out = io.StringIO()
        writer = csv.DictWriter(out, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: v for k, v in r.items() if k in CSV_COLUMNS} for r in kept)
        fsio.atomic_write(self.path, out.getvalue(), 0o644)

    def write(self, record: Dict[str, Any]) -> None:
        if self._f is not None and is_training_record(record):
            self._writer.writerow(record)

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class TensorBoardSink:
    """Event files in <run>/tensorboard/: train/<field> for each training record's numbers at its step, val/loss
    and val/accuracy at the last step."""

    def __init__(self, log_dir: Path, start_step: int):
        from torch.utils.tensorboard import SummaryWriter

        # SummaryWriter writes its files into whatever the name leads to: a link planted there is refused.
        if log_dir.is_symlink() or (log_dir.exists() and not log_dir.is_dir()):
            raise EngineError(f"{log_dir}: a link or a file where the run's TensorBoard directory goes: move it aside")
        log_dir.mkdir(mode=0o755, exist_ok=True)
        self.start_step = start_step
        # purge_step: TensorBoard hides the events at this step and later that earlier writers in the directory
        # logged (the steps an interrupted run logged after its last checkpoint): each step is shown once.
        self.writer: Optional[Any] = SummaryWriter(str(log_dir), purge_step=start_step + 1, flush_secs=30)

    def write(self, record: Dict[str, Any]) -> None:
        if self.writer is None:
            return
        step, walltime = record.get("step"), record.get("time")
        if is_training_record(record):
            for key, value in record.items():
                if key not in ("step", "time") and _scalar(value):
                    self.writer.add_scalar(f"train/{key}", value, global_step=step, walltime=walltime)
        elif record.get("event") == "summary" and isinstance(step, int) and step > self.start_step:
            # (a finished run resumed again logs its summary at the step it resumed from: already shown)
            for key in EVAL_FIELDS:
                value = record.get(key)
                if isinstance(value, (int, float)) and _scalar(value) and math.isfinite(value):
                    self.writer.add_scalar(f"val/{key[4:]}", value, global_step=step, walltime=walltime)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
