"""Precision: the autocast dtype for this device (`amp`), the GradScaler that fp16 needs, and the math the matmuls
run in (for MFU's peak)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional, Tuple

import torch

from hosttune.policy import onednn

from . import shard
from .errors import EngineError


def cpu_bf16_path(cpuinfo: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> onednn.Bf16Path:
    """How bf16 runs on this CPU (hosttune.policy.onednn: AMX, AVX-512 BF16, or emulated, ONEDNN_MAX_CPU_ISA
    included), from /proc/cpuinfo and this process's environment unless given."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    return onednn.bf16_path(onednn.cpuinfo_flags(cpuinfo), os.environ if env is None else env)


def cpu_has_fast_bf16(cpuinfo: str, env: Optional[Mapping[str, str]] = None) -> bool:
    """True when /proc/cpuinfo's flags show native bf16 math that oneDNN may use. Without it bf16 autocast on CPU
    is emulated and runs x0.03-0.10 of fp32 (measured on an AVX2 EPYC), so `amp=auto` must not pick it."""
    return cpu_bf16_path(cpuinfo, env or {}).native


def resolve_amp(amp: str, device: torch.device, capability: Optional[Tuple[int, int]] = None,
                cpu_path: Optional[onednn.Bf16Path] = None) -> Optional[torch.dtype]:
    """The autocast dtype (None = fp32). fp16 implies a GradScaler: its narrow range underflows small grads.

    On CUDA `auto` decides by compute capability (`capability`, else the device's own; call after set_device):
    bf16 tensor cores start with Ampere (8.0), fp16 ones with Volta (7.0). torch.cuda.is_bf16_supported() is True
    on V100/T4 too, where bf16 is emulated at a fraction of the fp16 rate, so it cannot decide. Below 7.0 there are
    no tensor cores and most parts (P40, P4, GTX 10xx: 6.1) run fp16 math at 1/64 of fp32: no autocast.
    On CPU `auto` is bf16 only on a native bf16 path (`cpu_path`, else this CPU's: `cpu_bf16_path`)."""
    if amp == "off":
        return None
    if device.type == "cuda":
        if amp == "auto":
            major, minor = capability or torch.cuda.get_device_capability(device)
            if (major, minor) >= (8, 0):
                return torch.bfloat16
            return torch.float16 if (major, minor) >= (7, 0) else None
        return torch.bfloat16 if amp == "bf16" else torch.float16
    if amp == "fp16":
        raise EngineError("amp=fp16 needs CUDA (GradScaler); on CPU use amp=bf16 or amp=off")
    if amp == "bf16":
        return torch.bfloat16
    return torch.bfloat16 if (cpu_path or cpu_bf16_path()).native else None


def amp_note(amp: str, device: torch.device, amp_dtype: Optional[torch.dtype],
             cpu_path: Optional[onednn.Bf16Path] = None) -> str:
    """The line the engine says at start: the precision it trains in, and on CPU which bf16 path and why."""
    name = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(amp_dtype, "") if amp_dtype is not None else ""
    if device.type != "cpu":
        return f"amp: {name} on {device.type} (amp={amp})" if name else f"amp off on {device.type} (amp={amp})"
    path = cpu_path or cpu_bf16_path()
    if amp == "off":
        return "amp off: amp=off asked for (fp32)"
    if name == "bf16" and path.native:
        return f"amp: bf16 on CPU ({path.via}: {path.why})"
    if name == "bf16":
        return f"amp: bf16 on CPU as asked (amp=bf16), emulated: {path.why}; amp=auto would train in fp32"
    return f"amp off: {path.why}, bf16 would be emulated"


def autocast(device: torch.device, amp_dtype: Optional[torch.dtype]) -> torch.autocast:
    """The autocast context for `amp_dtype` on `device`; a disabled one for fp32 (None)."""
    return torch.autocast(device.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None)


def grad_scaler(amp_dtype: Optional[torch.dtype], device: torch.device, fsdp: bool) -> torch.amp.GradScaler:
    """fp16's loss scaler (disabled for bf16 and fp32). Under FSDP the sharded one: overflow in one rank's shard
    must skip the step on all."""
    if amp_dtype == torch.float16 and fsdp:
        return shard.grad_scaler(device.type)
    if hasattr(torch.amp, "GradScaler"):  # torch >= 2.3; torch.cuda.amp's before
        return torch.amp.GradScaler("cuda", enabled=amp_dtype == torch.float16)
    return torch.cuda.amp.GradScaler(enabled=amp_dtype == torch.float16)


def mfu_dtype(amp_dtype: Optional[torch.dtype], deterministic: bool, cuda: bool) -> str:
    """The math the matmuls run in, for the peak to compare with: autocast's dtype, else TF32 on CUDA (the engine
    allows it, deterministic or not: TF32 rounds the same way every run), else fp32. `deterministic` is kept for
    callers; it no longer changes the answer."""
    if amp_dtype is not None:
        return "bf16" if amp_dtype == torch.bfloat16 else "fp16"
    return "tf32" if cuda else "fp32"
