"""Export: `python -m hosttune.engine --export DIR --run-dir RUN` turns a run's last checkpoint into files an
inference stack loads without hosttune: DIR/model.pt2 (a torch.export ExportedProgram), DIR/model.int8.pt (int8
Linear and Conv2d weights in TorchScript, quantize.py: its size and CPU latency against fp32 are reported) and
DIR/model.onnx (when onnxscript, which torch.onnx's exporter needs, is installed). Each file is read back and run on
validation samples; its outputs must match the checkpoint's model within `TOLERANCE` (`ONNX_TOLERANCE`; the int8
file within quantize.INT8_TOLERANCE, a relative error), or the command fails (exit 1).
Without onnxruntime the ONNX file is still written and checked by onnx.checker; the comparison is skipped with a
one-line note (exit 0), and export.json says so (`skipped`, `max_abs_diff: null`).

Every file goes through the atomic writer (hosttune/fsio.py: a private temp beside the target, renamed over it, no
link followed): the output directory may be one another user can write. The ONNX and int8 files are serialized in
memory and checked before they are published, so nothing is written through, or read back from, a name another user
could plant.

A sharded (zero1/fsdp) checkpoint is gathered into one full model on this process (DCP reshards on load: no process
group needed). The batch dimension is dynamic, and for sequence models the sequence length up to block_size.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import torch
from torch import nn
from torch.utils.data import IterableDataset, default_collate

from hosttune import fsio
from hosttune.term import printable

from . import checkpoint as ckpt
from . import quantize, shard
from .config import Config, ConfigError

# Absolute, on the model's outputs (logits), fp32 both sides. The exported program runs torch's own kernels
# (measured: 0 difference on both presets); ONNX Runtime's kernels sum in other orders (measured 2e-7 gpt-tiny,
# 2e-6 resnet-tiny), so ONNX gets room for deeper models. A weight nudged by 1e-3 moved gpt-tiny's logits by 5e-5.
TOLERANCE = 1e-5
ONNX_TOLERANCE = 1e-4
# Weights above this go to ONNX external-data side files (torch.onnx's _LARGE_MODEL_THRESHOLD, under protobuf's
# 2 GiB limit for one message): such a model's ONNX export is skipped with a note (model.pt2 holds it).
ONNX_SINGLE_FILE_LIMIT = 1536 << 20
SAMPLES = 16  # validation samples compared: one batch of 11 and one of 5 (the second checks the dynamic batch)


class ExportError(Exception):
    """Bad input (no run directory, no usable checkpoint, a custom model): one line, exit 2."""


@dataclass(frozen=True)
class Check:
    """One exported file read back and compared with the checkpoint's model."""

    format: str  # "torch.export" | "onnx"
    path: str
    samples: int
    max_abs_diff: float
    tolerance: float
    skipped: str = ""  # why the outputs were not compared (e.g. no onnxruntime); "" when they were

    @property
    def ok(self) -> bool:
        return bool(self.skipped) or self.max_abs_diff <= self.tolerance  # NaN fails too


def export_run(run_dir: Path, out_dir: Path, say: Callable[[str], None] = print,
               tolerance: Optional[float] = None) -> List[Union[Check, quantize.Int8Check]]:
    """Export RUN's newest usable checkpoint into `out_dir` and check every file written (outputs within
    `tolerance`, default TOLERANCE and ONNX_TOLERANCE; the int8 file within quantize.INT8_TOLERANCE); returns the
    checks, the int8 one last."""
    where, state = newest_checkpoint(run_dir, say)
    cfg = saved_config(state, where)
    model, val_set = build_model(cfg)
    load_weights(model, state, where)
    model.eval()
    batches = validation_batches(val_set, SAMPLES)
    out_dir = prepare_out_dir(out_dir)
    checks: List[Check] = []
    example = batches[0][0]
    program, dynamic = export_program(model, example)
    pt2 = out_dir / "model.pt2"
    with fsio.atomic_writer(pt2, 0o644) as f:
        torch.export.save(program, f)
    say(f"hosttune.engine: export: {where} (step {state['step']}) -> {pt2} (torch.export; dynamic: {dynamic})")
    checks.append(check_program(pt2, model, batches, TOLERANCE if tolerance is None else tolerance))
    int8 = quantize.write(model, batches, out_dir, program.module(), _size(pt2))
    if not int8.skipped:
        say(f"hosttune.engine: export: {where} (step {state['step']}) -> {int8.path} (TorchScript; int8: "
            f"{int8.quantized})")
    onnx_path = out_dir / "model.onnx"
    missing = _missing_onnx_modules()
    if missing:
        say(f"hosttune.engine: export: ONNX skipped: torch.onnx.export(dynamo=True) needs {' and '.join(missing)} "
            f"(pip install {' '.join(missing)})")
    else:
        data = onnx_bytes(model, example, dynamic_shapes(model, example))
        if data is None:
            say("hosttune.engine: export: ONNX skipped: the model's weights are over 1.5 GiB, which ONNX keeps in side "
                "files (torch.export's model.pt2 holds them)")
        else:
            # Checked before it is published (nothing is read back from a directory another user may write), then
            # written by the atomic writer: a private temp beside the target, renamed over it, no link followed.
            check = check_onnx(data, str(onnx_path), model, batches,
                               ONNX_TOLERANCE if tolerance is None else tolerance)
            fsio.atomic_write(onnx_path, data, 0o644)
            say(f"hosttune.engine: export: {where} (step {state['step']}) -> {onnx_path} (ONNX)")
            checks.append(check)
    for c in checks:
        say(check_line(c))
    say(int8.line())
    summary = {"checkpoint": str(where), "step": state["step"], "config": cfg.to_dict(),
               "checks": [check_record(c) for c in checks], "int8": int8.record()}
    fsio.atomic_write(out_dir / "export.json", json.dumps(summary, indent=1, allow_nan=False,
                                                          default=str) + "\n")
    done: List[Union[Check, quantize.Int8Check]] = [*checks, int8]
    return done


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def check_record(c: Check) -> Dict[str, Any]:
    """A check for export.json (strict JSON): a difference that was not measured (skipped) or is not finite (a
    broken file) is null; `ok` says which."""
    record = dict(asdict(c), ok=c.ok)
    if not math.isfinite(c.max_abs_diff):
        record["max_abs_diff"] = None
    return record


def check_line(c: Check) -> str:
    if c.skipped:
        return f"hosttune.engine: export check: {c.format}: {c.path} written, outputs not compared: {c.skipped}"
    verdict = "ok" if c.ok else "FAILED: outputs differ from the checkpoint's model"
    return (f"hosttune.engine: export check: {c.format}: {c.samples} validation samples, max abs diff "
            f"{c.max_abs_diff:.3g} (tolerance {c.tolerance:g}): {verdict}")


# ---- the checkpoint's model ----

def newest_checkpoint(run_dir: Path, say: Callable[[str], None]) -> Tuple[Path, Dict[str, Any]]:
    if not run_dir.is_dir():
        raise ExportError(f"{run_dir}: no such run directory")
    ckpt_dir = run_dir / "checkpoints"
    found = ckpt.list_checkpoints(ckpt_dir)
    if not found:
        raise ExportError(f"{ckpt_dir}: no checkpoint to export (train with --run-dir {run_dir} first)")
    reasons = []
    for path in reversed(found):
        try:
            return path, ckpt.load(path, 0, torch.device("cpu"))
        except ckpt.Unusable as exc:
            say(f"hosttune.engine: export: warning: skipping checkpoint {path.name}: {exc}")
            reasons.append(f"{path.name}: {exc}")
    raise ExportError(f"no usable checkpoint in {ckpt_dir}: {'; '.join(reasons[:3])}")


def saved_config(state: Dict[str, Any], where: Path) -> Config:
    known = {f.name for f in fields(Config)}
    values = {k: v for k, v in state.get("config", {}).items() if k in known}
    try:
        cfg = Config(**values)
    except ConfigError as exc:
        raise ExportError(f"{where}/state.pt: its config is not valid here: {exc}") from None
    if cfg.model == "custom":
        raise ExportError(f"{where} holds a model=custom run (the Python API): its model class is yours, so export "
                          f"it from Python with hosttune.engine.export.export_model(model, example, out_dir)")
    return cfg


def build_model(cfg: Config) -> Tuple[nn.Module, Any]:
    from .errors import EngineError
    from .task import build_preset_task

    if cfg.model == "gpt-tiny":  # an image folder (resnet-tiny) is where its validation split is: it stays
        cfg.data_path = ""  # the validation split is the bundled text's; the training shards are not needed
        cfg.data = "windows" if cfg.data == "shards" else cfg.data
    try:
        task = build_preset_task(cfg)
    except EngineError as exc:
        raise ExportError(str(exc)) from None
    return task.model, task.val_set


def load_weights(model: nn.Module, state: Dict[str, Any], where: Path) -> None:
    try:
        if state.get("shard", "none") in shard.SHARDED:
            shard.load_model(model, where / shard.DCP_DIR)  # gathers every rank's shard into the full tensors
        else:
            model.load_state_dict(state["model"])
    except (RuntimeError, ValueError, KeyError, TypeError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ExportError(f"checkpoint {where} does not fit its own config's model: {first[:200]}") from None


def validation_batches(val_set: Any, n: int) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    if val_set is None:
        raise ExportError("the run has no validation set to compare the exported model on")
    collate = getattr(val_set, "collate", None) or default_collate
    if isinstance(val_set, IterableDataset):
        items = []
        for item in val_set:
            items.append(item)
            if len(items) == n:
                break
    else:
        items = [val_set[i] for i in range(min(n, len(val_set)))]
    if len(items) < 2:
        raise ExportError("the validation set has fewer than 2 samples: nothing to compare the export on")
    cut = max(1, len(items) - max(1, len(items) // 3))
    return [collate(items[:cut]), collate(items[cut:])]


def prepare_out_dir(out_dir: Path) -> Path:
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(f"{out_dir}: exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"{out_dir}: cannot create it ({exc.strerror or exc})") from None
    return out_dir


# ---- torch.export ----

def dynamic_shapes(model: nn.Module, example: torch.Tensor) -> Tuple[Dict[int, Any]]:
    """Batch always; the sequence too for models with a block_size (positions exist only up to it)."""
    from torch.export import Dim

    dims: Dict[int, Any] = {0: Dim("batch", min=1, max=1 << 16)}
    block = getattr(model, "block_size", None)
    if isinstance(block, int) and example.dim() == 2 and block > 1:
        dims[1] = Dim("seq", min=1, max=block)
    return (dims,)


def export_program(model: nn.Module, example: torch.Tensor) -> Tuple[Any, str]:
    shapes = dynamic_shapes(model, example)
    names = {0: "batch", 1: "sequence"}
    program = torch.export.export(model, (example,), dynamic_shapes=shapes)
    return program, " and ".join(names.get(d, f"dim {d}") for d in shapes[0])


def export_model(model: nn.Module, example: torch.Tensor, out_dir: Path, tolerance: Optional[float] = None
                 ) -> Check:
    """Export your own (Python API) model: `example` is one input batch; checked on it and on its first half."""
    model.eval()
    out_dir = prepare_out_dir(Path(out_dir))
    program, _ = export_program(model, example)
    path = out_dir / "model.pt2"
    with fsio.atomic_writer(path, 0o644) as f:
        torch.export.save(program, f)
    half = example[: max(1, len(example) // 2)]
    return check_program(path, model, [(example, example), (half, half)],
                         TOLERANCE if tolerance is None else tolerance)


@torch.no_grad()
def check_program(path: Path, model: nn.Module, batches: List[Tuple[torch.Tensor, Any]], tolerance: float) -> Check:
    """Load the written file (not the in-memory program) and compare it with `model` on every batch."""
    loaded = torch.export.load(str(path)).module()
    worst, n = 0.0, 0
    for x, _ in batches:
        worst = max(worst, _max_diff(loaded(x), model(x)))
        n += len(x)
    return Check("torch.export", str(path), n, worst, tolerance)


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.shape != b.shape:
        return float("inf")
    d = (a.float() - b.float()).abs().max().item()
    return d if d == d else float("inf")  # NaN (a broken program) counts as the worst difference


# ---- ONNX ----

def _missing_onnx_modules() -> List[str]:
    import importlib.util

    return [m for m in ("onnx", "onnxscript") if importlib.util.find_spec(m) is None]


@contextlib.contextmanager
def _quiet_onnx() -> Iterator[None]:
    """torch.onnx logs a warning per torchvision op it cannot register and prints progress; neither is news."""
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.onnx._internal.exporter._registration")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def onnx_bytes(model: nn.Module, example: torch.Tensor, shapes: Tuple[Dict[int, Any]]) -> Optional[bytes]:
    """The ONNX file's bytes (serialized in memory: no file name to plant a link at), or None when its weights
    would need ONNX's external-data files (over protobuf's 2 GiB)."""
    import warnings

    with _quiet_onnx(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, (example,), dynamo=True, dynamic_shapes=shapes, verbose=False)
        if program is None:
            raise ExportError("torch.onnx.export returned no program")
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        size += sum(b.numel() * b.element_size() for b in model.buffers())
        if size >= ONNX_SINGLE_FILE_LIMIT:
            return None
        buf = io.BytesIO()
        # Typed as a path, but without external data it ends in onnx.save, which takes a binary file.
        program.save(buf, external_data=False)  # type: ignore[arg-type]
    return buf.getvalue()


@torch.no_grad()
def check_onnx(data: bytes, shown: str, model: nn.Module, batches: List[Tuple[torch.Tensor, Any]],
               tolerance: float) -> Check:
    """Check the ONNX file's bytes (`shown`: its path, for the report): structurally valid (onnx.checker), then
    run by ONNX Runtime and compared with `model` on every batch; without onnxruntime the comparison is skipped with
    its reason (the file is still written)."""
    import onnx

    try:
        onnx.checker.check_model(onnx.load_from_string(data))  # structurally valid, whatever runs it
    except Exception as exc:  # noqa: BLE001 - onnx's ValidationError/DecodeError: one line, not a traceback
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ExportError(f"the ONNX export of this model is not valid ONNX ({first[:200]}): not written") from None
    try:
        import onnxruntime as ort
    except ImportError:
        return Check("onnx", shown, 0, float("nan"), tolerance,
                     skipped="onnxruntime is not installed (pip install onnxruntime) to run it")
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    worst, n = 0.0, 0
    for x, _ in batches:
        out = torch.from_numpy(session.run(None, {name: x.numpy()})[0])
        worst = max(worst, _max_diff(out, model(x)))
        n += len(x)
    return Check("onnx", shown, n, worst, tolerance)


def main(run_dir: str, out_dir: str) -> int:
    """The CLI's `--export`: 0 when every file matched, 1 when one did not, 2 on bad input."""
    def say(line: str) -> None:
        print(printable(line), file=sys.stderr, flush=True)

    try:
        checks = export_run(Path(run_dir), Path(out_dir), say)
    except ExportError as exc:
        print(printable(f"hosttune.engine: error: {exc}"), file=sys.stderr)
        return 2
    except OSError as exc:
        print(printable(f"hosttune.engine: error: cannot write the export into {out_dir}: {exc.strerror or exc}"),
              file=sys.stderr)
        return 2
    return 0 if all(c.ok for c in checks) else 1

