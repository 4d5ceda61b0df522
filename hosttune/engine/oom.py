"""What to say instead of a bare CUDA out-of-memory traceback: where the memory went, and the next settings to
try, cheapest first."""

from __future__ import annotations

from typing import Any, List

import torch

from .config import Config


def oom_report(exc: BaseException, cfg: Config, device: torch.device) -> str:
    """What to print instead of a bare CUDA OOM traceback: where memory went and what to change."""
    lines = [f"hosttune.engine: error: out of GPU memory ({str(exc).splitlines()[0] if str(exc) else 'OOM'})"]
    if device.type == "cuda" and torch.cuda.is_available():
        lines.append(torch.cuda.memory_summary(device, abbreviated=True))
    lines.append("advice:")
    lines += [f"  - {line}" for line in oom_advice(cfg)]
    return "\n".join(lines)


def oom_advice(cfg: Any) -> List[str]:
    """The next steps against an OOM, cheapest first, from what the config already has on: activations (smaller
    micro-batch, mixed precision, recomputation), then the model's own state (shard the optimizer state, then
    parameters and gradients, then offload them to host memory). `shard`/`offload` may not be config fields yet."""
    shard, offload = getattr(cfg, "shard", "none") or "none", getattr(cfg, "offload", "none") or "none"
    out = []
    if cfg.micro_batch_size > 1:
        half = cfg.micro_batch_size // 2
        out.append(f"halve the micro-batch and keep the effective batch: --set micro_batch_size={half} "
                   f"--set grad_accum={cfg.grad_accum * cfg.micro_batch_size // half}")
    if cfg.amp == "off":
        out.append("halve activation memory with mixed precision: --set amp=auto")
    if cfg.model != "resnet-tiny" and not cfg.activation_checkpointing:
        out.append("recompute activations instead of storing them: --set activation_checkpointing=true")
    if shard == "none":
        out.append("shard the optimizer state across ranks (AdamW keeps two fp32 values per parameter): "
                   "--set shard=zero1")
    if shard in ("none", "zero1"):
        out.append("shard parameters, gradients and optimizer state (FSDP): --set shard=fsdp")
    if shard == "fsdp" and offload in ("", "none"):
        out.append("keep the sharded state in host memory, at the cost of PCIe traffic: --set offload=cpu")
    if shard == "fsdp" and offload not in ("", "none") and cfg.micro_batch_size == 1 and cfg.activation_checkpointing:
        out.append("everything is on: the model needs more GPUs (more ranks to shard over) or larger GPUs")
    out.append("reduce fragmentation: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
               "(hosttune's profiles set it)")
    return out
