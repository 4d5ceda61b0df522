"""What to say instead of a bare CUDA out-of-memory traceback: where the memory went (the allocator's summary, and
a memory snapshot of the allocations before the OOM), and the next settings to try, cheapest first.

The snapshot: on CUDA the run records the caching allocator's last `memory_history` events from the start
(torch.cuda.memory._record_memory_history, Python stacks only: about 2 us per allocation, a few KB of host memory
per event); on an OOM, `record_oom` writes them to <run>/oom-snapshot.pickle, the file
torch.cuda.memory._dump_snapshot writes, for https://pytorch.org/memory_viz. `memory` below is the
torch.cuda.memory module (a stand-in in the tests: none of this runs without a GPU).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, List, Optional

import torch

from hosttune import fsio

from .config import Config

SNAPSHOT_VIEWER = "https://pytorch.org/memory_viz"
SNAPSHOT_ATTR = "hosttune_memory_snapshot"  # set on the OutOfMemoryError: the snapshot's path


def start_memory_history(memory: Any, entries: int) -> Optional[Any]:
    """Record the allocator's last `entries` events with their Python stacks; returns `memory`, or None where this
    torch cannot record (the snapshot is a diagnosis: the run goes on without it)."""
    try:
        memory._record_memory_history(max_entries=entries, stacks="python")
    except (AttributeError, RuntimeError):
        return None
    return memory


def stop_memory_history(memory: Any) -> None:
    memory._record_memory_history(enabled=None)


def snapshot_path(run_dir: Path, rank: int, world: int) -> Path:
    return run_dir / ("oom-snapshot.pickle" if world == 1 else f"oom-snapshot-rank{rank}.pickle")


def dump_memory_snapshot(memory: Any, path: Path) -> Optional[Path]:
    """What torch.cuda.memory._dump_snapshot(path) writes (its pickle of _snapshot()), through the atomic writer: a
    dump that fails (a full disk) leaves no half-written file, and the OOM is still reported. None on failure."""
    try:
        fsio.atomic_write(path, pickle.dumps(memory._snapshot()), 0o644)
    except (OSError, RuntimeError, pickle.PicklingError):
        return None
    return path


def record_oom(exc: BaseException, memory: Optional[Any], run_dir: Path, rank: int, world: int) -> Optional[Path]:
    """On a CUDA OOM, before the report: the snapshot of the recorded history (`memory` None: none recorded), named on
    the exception for oom_report, and in its notes for a script calling fit()."""
    if memory is None:
        return None
    path = dump_memory_snapshot(memory, snapshot_path(run_dir, rank, world))
    if path is not None:
        setattr(exc, SNAPSHOT_ATTR, path)
        if hasattr(exc, "add_note"):  # Python 3.11+: shown under the traceback
            exc.add_note(f"hosttune.engine: {snapshot_advice(path)}")
    return path


def snapshot_advice(path: Path) -> str:
    return (f"see which tensors held the memory, and where they were allocated: open the memory snapshot {path} at "
            f"{SNAPSHOT_VIEWER} (drag the file onto the page; it stays in the browser)")


def oom_report(exc: BaseException, cfg: Config, device: torch.device) -> str:
    """What to print instead of a bare CUDA OOM traceback: where memory went and what to change."""
    lines = [f"hosttune.engine: error: out of GPU memory ({str(exc).splitlines()[0] if str(exc) else 'OOM'})"]
    if device.type == "cuda" and torch.cuda.is_available():
        lines.append(torch.cuda.memory_summary(device, abbreviated=True))
    lines.append("advice:")
    lines += [f"  - {line}" for line in oom_advice(cfg, getattr(exc, SNAPSHOT_ATTR, None))]
    return "\n".join(lines)


def oom_advice(cfg: Any, snapshot: Optional[Path] = None) -> List[str]:
    """The next steps against an OOM, cheapest first, from what the config already has on: activations (smaller
    micro-batch, mixed precision, recomputation), then the model's own state (shard the optimizer state, then
    parameters and gradients, then offload them to host memory). `shard`/`offload` may not be config fields yet.
    First, when the run wrote one, where the memory snapshot is and how to read it."""
    shard, offload = getattr(cfg, "shard", "none") or "none", getattr(cfg, "offload", "none") or "none"
    out = [snapshot_advice(snapshot)] if snapshot is not None else []
    if cfg.micro_batch_size > 1:
        # the largest divisor of the micro-batch at most half of it: micro x accum stays the same batch exactly
        micro = cfg.micro_batch_size
        half = next(d for d in range(micro // 2, 0, -1) if micro % d == 0)
        out.append(f"{'halve' if 2 * half == micro else 'shrink'} the micro-batch and keep the effective batch: "
                   f"--set micro_batch_size={half} --set grad_accum={cfg.grad_accum * micro // half}")
    if cfg.amp == "off":
        out.append("halve activation memory with mixed precision: --set amp=auto")
    full_ac = cfg.activation_checkpointing and getattr(cfg, "ac_mode", "full") == "full"
    if cfg.model != "resnet-tiny" and not cfg.activation_checkpointing:
        out.append("recompute activations instead of storing them: --set activation_checkpointing=true")
    elif cfg.model != "resnet-tiny" and not full_ac:
        out.append(f"recompute every block, not only some of its activations (ac_mode={cfg.ac_mode}): "
                   f"--set ac_mode=full" + (" --set ac_every=1" if cfg.ac_every != 1 else ""))
    if shard == "none":
        out.append("shard the optimizer state across ranks (AdamW keeps two fp32 values per parameter): "
                   "--set shard=zero1")
    if shard in ("none", "zero1"):
        out.append("shard parameters, gradients and optimizer state (FSDP): --set shard=fsdp")
    if shard == "fsdp" and offload in ("", "none"):
        out.append("keep the sharded state in host memory, at the cost of PCIe traffic: --set offload=cpu")
    if shard == "fsdp" and offload not in ("", "none") and cfg.micro_batch_size == 1 and full_ac:
        out.append("everything is on: the model needs more GPUs (more ranks to shard over) or larger GPUs")
    out.append("reduce fragmentation: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
               "(hosttune's profiles set it)")
    return out
