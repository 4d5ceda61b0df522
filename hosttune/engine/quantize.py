"""The int8 export (issue 25): `--export` also writes DIR/model.int8.pt beside the fp32 model.pt2, checks it against
the checkpoint's model on the same validation samples within a stated bound, and reports its size on disk and its CPU
latency against the fp32 program (median of LATENCY_RUNS, same input, same thread count, timed alternately in this
process).

What is quantised, and how:
- nn.Linear: dynamic quantisation (int8 weights per output channel; activations quantised per batch at run time)
  through torch.ao.quantization.quantize_dynamic, whose int8 matmuls are fbgemm's/oneDNN's on x86. torch 2.13
  marks torch.ao.quantization deprecated in favour of torchao; the warning is caught here (it is about our call,
  not the user's run). torchao's int8 dynamic-activation/int8-weight config is not used where it is installed:
  its CPU matmul is aten._int_mm, measured here (AVX2, no VNNI) 2.7x slower than fp32 on gpt-tiny, and its program
  needs torchao imported to load (torchao.choose_qparams_affine/quantize_affine ops).
- nn.Conv2d: weight-only int8 (per output channel, symmetric), dequantised when the layer runs: a quarter of the
  bytes on disk, fp32 arithmetic (dynamic quantisation has no convolution).
Embeddings, norms and everything else stay fp32.

The format is TorchScript (torch.jit.trace, then torch.jit.save): torch.export cannot serialize quantize_dynamic's
packed weights (LinearPackedParamsBase has no __obj_flatten__ in torch 2.13), and TorchScript's own loader needs
torch only (no hosttune, no torchao): `torch.jit.load(PATH)`, said in the output (`LOAD_HINT`). The trace keeps the
batch and sequence dimensions dynamic (the traced shapes are read from the input). torch.jit is deprecated in torch
2.13 too: its warnings are caught here like torch.ao's.

The file is checked before it is published: serialized in memory, loaded back from those bytes, compared, and only
then written by the atomic writer, so nothing is read back from a directory another user could write. Nothing is
unpickled by Python here: TorchScript's archive is read by its own loader, which builds only TorchScript types.
"""

from __future__ import annotations

import contextlib
import io
import math
import statistics
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from hosttune import fsio

# The bound: the int8 outputs' relative L2 error against the checkpoint's fp32 outputs, ||q - f|| / ||f|| over all
# validation samples. Measured here after 3 steps: gpt-tiny 0.0047, resnet-tiny 0.0060 (top-1 agreement 100 %); a
# randomly initialised gpt-tiny 0.015-0.033. Every weight 20 % off is 0.2 (tests/test_engine_int8.py).
INT8_TOLERANCE = 0.05
LATENCY_RUNS = 15  # timed runs per format, after WARMUP_RUNS untimed ones
WARMUP_RUNS = 3
LATENCY_BUDGET_S = 20.0  # fewer runs (never under 3) when one forward is slow: the export stays bounded
FILE_NAME = "model.int8.pt"
FORMAT = "torchscript int8"
LOAD_HINT = "torch.jit.load(PATH) (torch only)"


@dataclass(frozen=True)
class Int8Check:
    """The int8 file read back and compared with the checkpoint's model; its size and latency against fp32."""

    format: str
    path: str
    samples: int
    rel_error: float  # ||int8 - fp32|| / ||fp32|| over the samples' outputs
    top1_agreement: float  # share of outputs (rows of logits) whose argmax is the fp32 one's
    tolerance: float
    bytes: int
    fp32_bytes: int
    fp32_ms: float
    int8_ms: float
    runs: int
    threads: int
    batch: int
    quantized: str  # what was quantised, e.g. "8 Linear (dynamic), 0 Conv2d (weights)"
    load: str = LOAD_HINT
    skipped: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.skipped) or self.rel_error <= self.tolerance  # NaN fails too

    def line(self) -> str:
        if self.skipped:
            return f"hosttune.engine: export check: int8: not written: {self.skipped}"
        verdict = "ok" if self.ok else "FAILED: int8 outputs are off the checkpoint's model by more than the bound"
        speed = self.fp32_ms / self.int8_ms if self.int8_ms > 0 else float("nan")
        return (f"hosttune.engine: export check: int8: {self.samples} validation samples, relative error "
                f"{self.rel_error:.3g} (tolerance {self.tolerance:g}), top-1 agreement {100 * self.top1_agreement:.1f} "
                f"%: {verdict}; {self.bytes / 1e6:.3g} MB on disk vs {self.fp32_bytes / 1e6:.3g} MB fp32 "
                f"({self.bytes / max(1, self.fp32_bytes):.2f}x); CPU latency, batch {self.batch}, {self.threads} "
                f"thread(s), median of {self.runs}: {self.int8_ms:.3g} ms vs {self.fp32_ms:.3g} ms fp32 "
                f"({speed:.2f}x as fast); load it with {self.load}")

    def record(self) -> Dict[str, Any]:
        out = dict(asdict(self), ok=self.ok)
        for key in ("rel_error", "top1_agreement", "fp32_ms", "int8_ms"):
            if not math.isfinite(out[key]):
                out[key] = None
        return out


class Int8WeightConv2d(nn.Module):
    """A Conv2d whose weight is stored as int8 with one fp32 scale per output channel, dequantised when it runs."""

    def __init__(self, conv: nn.Conv2d) -> None:
        super().__init__()
        w = conv.weight.detach().float()
        scale = w.abs().amax(dim=(1, 2, 3)) / 127.0
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # an all-zero channel stays zero
        self.weight_int8: torch.Tensor
        self.weight_scale: torch.Tensor
        self.register_buffer("weight_int8", torch.round(w / scale.view(-1, 1, 1, 1)).clamp(-127, 127).to(torch.int8))
        self.register_buffer("weight_scale", scale)
        self.bias = None if conv.bias is None else nn.Parameter(conv.bias.detach().clone(), requires_grad=False)
        self.stride, self.padding, self.dilation, self.groups = conv.stride, conv.padding, conv.dilation, conv.groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.weight_int8.to(x.dtype) * self.weight_scale.view(-1, 1, 1, 1).to(x.dtype)
        return F.conv2d(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


def _swap_convs(model: nn.Module) -> int:
    """Replace every zero-padded Conv2d below `model` by an Int8WeightConv2d; returns how many."""
    n = 0
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Conv2d) and child.padding_mode == "zeros":
            setattr(model, name, Int8WeightConv2d(child))
            n += 1
        else:
            n += _swap_convs(child)
    return n


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """torch.ao.quantization's and torch.jit's deprecation warnings, quantized tensors' "will be removed" warning and
    the tracer's warnings name our calls, not anything the user can act on: the parity check says whether the file
    is right."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message=r".*(torch\.ao\.quantization|quantized tensor|deprecated).*")
        yield


def quantize(model: nn.Module) -> Tuple[nn.Module, str]:
    """An int8 copy of `model` (eval mode; `model` itself is untouched) and what was quantised."""
    import copy

    copied = copy.deepcopy(model).eval()
    convs = _swap_convs(copied)
    linears = sum(1 for m in copied.modules() if type(m) is nn.Linear)
    if linears:
        with _quiet():
            copied = torch.ao.quantization.quantize_dynamic(copied, {nn.Linear}, dtype=torch.qint8)
    return copied, f"{linears} Linear (dynamic int8), {convs} Conv2d (int8 weights)"


@torch.no_grad()
def to_torchscript(model: nn.Module, example: torch.Tensor) -> bytes:
    """`model` traced on `example` (its shapes stay symbolic) and saved, as bytes."""
    with _quiet():
        traced = torch.jit.trace(model, (example,), check_trace=False)
        buf = io.BytesIO()
        torch.jit.save(traced, buf)
    return buf.getvalue()


def skipped(shown: str, why: str, tolerance: Optional[float] = None) -> Int8Check:
    nan = float("nan")
    tolerance = INT8_TOLERANCE if tolerance is None else tolerance
    return Int8Check(FORMAT, shown, 0, nan, nan, tolerance, 0, 0, nan, nan, 0, torch.get_num_threads(),
                     0, "nothing", skipped=why)


def has_quantizable(model: nn.Module) -> bool:
    return any(type(m) is nn.Linear or (isinstance(m, nn.Conv2d) and m.padding_mode == "zeros")
               for m in model.modules())


@torch.no_grad()
def compare(int8: Callable[[torch.Tensor], torch.Tensor], model: nn.Module,
            batches: List[Tuple[torch.Tensor, Any]]) -> Tuple[float, float, int]:
    """(relative L2 error, top-1 agreement, samples) of `int8` against `model` over `batches`."""
    err2 = ref2 = 0.0
    agree = rows = n = 0
    for x, _ in batches:
        ref, out = model(x).float(), int8(x).float()
        if ref.shape != out.shape:
            return float("inf"), 0.0, n
        err2 += (out - ref).pow(2).sum().item()
        ref2 += ref.pow(2).sum().item()
        agree += int((out.argmax(-1) == ref.argmax(-1)).sum().item())
        rows += ref[..., 0].numel()
        n += len(x)
    rel = math.sqrt(err2 / ref2) if ref2 > 0 else (0.0 if err2 == 0 else float("inf"))
    return (rel if rel == rel else float("inf")), agree / max(1, rows), n


@torch.no_grad()
def latency_ms(fp32: Callable[[torch.Tensor], Any], int8: Callable[[torch.Tensor], Any], x: torch.Tensor
               ) -> Tuple[float, float, int]:
    """Median milliseconds of one forward of each on `x`, timed alternately (both see the same machine load) after
    WARMUP_RUNS untimed ones; fewer runs (at least 3) when LATENCY_BUDGET_S would not hold LATENCY_RUNS."""
    start = time.perf_counter()
    for _ in range(WARMUP_RUNS):
        fp32(x)
        int8(x)
    per_pair = (time.perf_counter() - start) / WARMUP_RUNS
    runs = max(3, min(LATENCY_RUNS, int(LATENCY_BUDGET_S / max(per_pair, 1e-9))))
    a: List[float] = []
    b: List[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fp32(x)
        t1 = time.perf_counter()
        int8(x)
        t2 = time.perf_counter()
        a.append(t1 - t0)
        b.append(t2 - t1)
    return statistics.median(a) * 1e3, statistics.median(b) * 1e3, runs


def check(data: bytes, shown: str, model: nn.Module, fp32: Callable[[torch.Tensor], Any],
          batches: List[Tuple[torch.Tensor, Any]], fp32_bytes: int, what: str,
          tolerance: Optional[float] = None) -> Int8Check:
    """Load the int8 file's bytes (`shown`: its path, for the report), compare it with `model` on `batches`, time it
    against `fp32` (the fp32 program) on the first batch."""
    with _quiet():
        loaded = torch.jit.load(io.BytesIO(data), map_location="cpu")
    rel, top1, n = compare(loaded, model, batches)
    x = batches[0][0]
    fp32_ms, int8_ms, runs = latency_ms(fp32, loaded, x)
    return Int8Check(FORMAT, shown, n, rel, top1, INT8_TOLERANCE if tolerance is None else tolerance,
                     len(data), fp32_bytes, fp32_ms, int8_ms, runs, torch.get_num_threads(), len(x), what)


def write(model: nn.Module, batches: List[Tuple[torch.Tensor, Any]], out_dir: Path, fp32: Callable[[torch.Tensor], Any],
          fp32_bytes: int, tolerance: Optional[float] = None) -> Int8Check:
    """Quantise `model`, trace it into TorchScript on the first batch, check the bytes, then write them to
    out_dir/FILE_NAME by the atomic writer (only when the check ran)."""
    path = out_dir / FILE_NAME
    if not has_quantizable(model):
        return skipped(str(path), "the model has no Linear or Conv2d layer to quantise", tolerance)
    q, what = quantize(model)
    data = to_torchscript(q, batches[0][0])
    result = check(data, str(path), model, fp32, batches, fp32_bytes, what, tolerance)
    fsio.atomic_write(path, data, 0o644)
    return result
