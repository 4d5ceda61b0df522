"""What the engine reports: metrics.jsonl (rank 0) and the sinks beside it (sinks.py: CSV, TensorBoard), a
TTY-only progress bar, peak memory, FLOPs and MFU."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, TextIO, Tuple

import torch

from hosttune import fsio
from hosttune.policy import gpu_peak
from hosttune.policy.gpu_peak import dense_peak_tflops

from .errors import EngineError

# Streaming multiprocessors of the whole GPU, for the models that can be cut into MIG slices (gpu_peak's keys). A
# slice has its share of the SMs at the same clock: its peak is the whole GPU's times sm_count / whole.
WHOLE_GPU_SMS = {"A100 SXM 40GB": 108, "A100 SXM 80GB": 108, "A100 PCIe 40GB": 108, "A100 PCIe 80GB": 108,
                 "A30": 56, "H100 SXM": 132, "H100 PCIe": 114, "H100 NVL": 132, "H200 SXM": 132, "H200 NVL": 132,
                 "GH200": 132, "B200": 148, "GB200": 148}


def peak_tflops(cfg_value: float, device: torch.device, dtype: str, device_name: Optional[str] = None,
                sm_count: Optional[int] = None) -> Optional[float]:
    """The configured peak, else the GPU's dense datasheet peak for `dtype` (bf16|fp16|tf32|fp32) from the one
    table (hosttune.policy.gpu_peak), scaled to a MIG slice, else None (no MFU; CPUs have no datasheet peak we can
    trust - set peak_tflops yourself, e.g. from a measured matmul). `device_name` and `sm_count` stand in for the
    device's own name and multiprocessor count."""
    if cfg_value > 0:
        return cfg_value
    if device.type != "cuda" and device_name is None:
        return None
    if device_name is None:
        device_name = torch.cuda.get_device_name(device)
        sm_count = torch.cuda.get_device_properties(device).multi_processor_count
    whole = dense_peak_tflops(device_name, dtype)
    fraction = gpu_fraction(device_name, sm_count)
    return None if whole is None or fraction is None else whole * fraction


def gpu_fraction(device_name: str, sm_count: Optional[int]) -> Optional[float]:
    """The share of the whole GPU's SMs this device has: 1.0 for a whole GPU, 3/7-ish for a MIG 3g slice, None
    when it is a MIG slice of a GPU whose SM count is not known here (MFU unknown: the whole GPU's peak would
    understate it up to 7x)."""
    entry = gpu_peak.match(device_name)
    whole = WHOLE_GPU_SMS.get(entry.key) if entry else None
    mig = " MIG " in f" {device_name.upper()} "
    if whole is None or not sm_count:
        return None if mig else 1.0
    return min(1.0, sm_count / whole)


def json_safe(record: Dict[str, Any]) -> Dict[str, Any]:
    """NaN/Infinity are not JSON (json.dumps writes them anyway, and strict readers refuse the line): such a value
    becomes null, and `nonfinite` names the fields (e.g. the loss after an fp16 overflow)."""
    bad = [k for k, v in record.items() if isinstance(v, float) and not math.isfinite(v)]
    if not bad:
        return record
    return {**{k: (None if k in bad else v) for k, v in record.items()}, "nonfinite": bad}


def count_step_flops(model: torch.nn.Module, batch: Tuple[torch.Tensor, torch.Tensor],
                     loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                     autocast: Callable[[], torch.autocast], recompute: bool = False) -> int:
    """FLOPs of one micro-batch's forward+backward, counted by torch's FlopCounterMode on a copy of the model.

    Model FLOPs by default: the copy runs without activation checkpointing (the engine's switch), whose recomputed
    forward is work the hardware does but the model does not need (MFU); `recompute=True` counts it too (HFU).
    On CPU attention runs through the math kernel while counting: FlopCounterMode has no formula for the CPU flash
    kernel and counted attention as zero; the math kernel's matmuls are what the GPU formulas count.
    The copy and fork_rng keep the count from touching the real model (BatchNorm statistics, gradients) or the
    RNG streams, so counting does not change the training run.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    shadow = copy.deepcopy(model)
    if hasattr(shadow, "activation_checkpointing") and not recompute:
        shadow.activation_checkpointing = False  # type: ignore[assignment]  # the switch of models.GPT
    x, y = batch
    math_attention = sdpa_kernel([SDPBackend.MATH]) if x.device.type == "cpu" else contextlib.nullcontext()
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() and torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices), FlopCounterMode(display=False) as counter, math_attention:
        with autocast():
            loss = loss_fn(shadow(x), y)
        loss.backward()
    return int(counter.get_total_flops())


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    # ru_maxrss is in KiB on Linux: the process's peak resident set.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Metrics:
    """Appends one JSON object per line to <run>/metrics.jsonl on rank 0, and hands each record to the `sinks`
    (the train loop sets them on rank 0 once it knows the step it starts from); other ranks write nothing."""

    def __init__(self, run_dir: Path, enabled: bool, total_steps: int, start_step: int):
        self.enabled = enabled
        self.path = run_dir / "metrics.jsonl"
        self._f = self._open() if enabled else None
        self.bar = None
        self.step, self.total = start_step, total_steps
        self.sinks: List[Any] = []  # each with write(record) and close(); records keep NaN (CSV, TensorBoard take it)
        if enabled and sys.stderr.isatty():  # a bar in a log file is just noise; only on a terminal
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total_steps, initial=start_step, unit="step", dynamic_ncols=True)
            except ImportError:
                self.bar = None

    def write(self, record: Dict[str, Any]) -> None:
        if self._f is not None:
            stamped = {"time": round(time.time(), 3), **record}
            self._f.write(json.dumps(json_safe(stamped)) + "\n")
            for sink in self.sinks:
                sink.write(stamped)

    def progress(self, steps: int, loss: Optional[float] = None) -> None:
        self.step += steps
        if self.bar is not None:
            self.bar.update(steps)
            if loss is not None:
                self.bar.set_postfix(loss=f"{loss:.4f}")
        elif self.enabled and loss is not None:
            # No bar (a log file, a pipe, no tqdm): one line per log interval, so a job's log shows it is alive.
            print(f"hosttune.engine: step {self.step}/{self.total} loss {loss:.4f}", file=sys.stderr, flush=True)

    def _open(self) -> TextIO:
        """metrics.jsonl for appending, line-buffered (tail -f works); a link or a non-regular file at its name is
        refused in one line, never written through."""
        try:
            fd = fsio.open_append_nofollow(self.path, 0o644)
        except OSError as exc:
            raise EngineError(f"{self.path}: cannot write the metrics: {exc.strerror or exc} (a link or a "
                              "non-regular file is never written through)") from None
        return os.fdopen(fd, "a", buffering=1, encoding="utf-8")

    def say(self, text: str) -> None:
        """A human line on stderr (rank 0 only), kept clear of the progress bar."""
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        sinks, self.sinks = self.sinks, []
        for sink in sinks:
            sink.close()
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self._f is not None:
            self._f.close()
            self._f = None
