"""Build a rank's trainer: the model on its device (channels-last, activation checkpointing), wrapped for data
parallelism (DDP, or FSDP through `shard`) and maybe compiled; the optimizer, schedule and GradScaler; the data;
the FLOPs per step for MFU. The seams a parallelism scheme plugs into: `wrap_model` and `optim.build_optimizer`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple, Union

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from . import ac, float8, shard
from .config import Config
from .ema import WeightEMA
from .errors import EngineError
from .loader import TrainData
from .metrics import count_step_flops, peak_tflops
from .optim import build_optimizer, lr_scheduler
from .precision import amp_note, grad_scaler, mfu_dtype
from .runtime import Runtime, seed_all
from .shapes import shape_warning
from .state import TrainState
from .task import Task

# What defers gradient sync on the micro-steps before the last (its no_sync()): DDP, or FSDP's shard.GradSync.
GradSyncer = Union[DDP, shard.GradSync]


@dataclass
class Trainer:
    """What `build` returns: the train state plus what the loop calls."""

    state: TrainState
    model: nn.Module  # what the loop calls: wrapped for data parallelism, maybe compiled
    sync_model: Optional[GradSyncer]  # None on one rank
    data: TrainData
    channels_last: bool
    flops_per_step: int = 0  # model FLOPs, for MFU; 0 = not counted
    peak_tflops: Optional[float] = None
    hardware_flops_per_step: int = 0  # with activation checkpointing's recompute, for HFU
    # the start lines (precision path, odd shapes, float8), said once a resume has loaded: an error before it stays
    # the run's one line
    notes: List[str] = field(default_factory=list)


def build(cfg: Config, task: Task, rt: Runtime) -> Trainer:
    refuse_float8(cfg, rt)  # E1: before anything is built, one line where float8 cannot run
    model = task.model.to(rt.device)
    image_model = any(isinstance(m, nn.Conv2d) for m in model.modules())
    channels_last = cfg.channels_last and image_model  # NHWC: what cuDNN/oneDNN conv kernels prefer
    # FSDP2 shards only contiguous parameters (NotImplementedError for NHWC conv weights in torch 2.13).
    channels_last = channels_last and not (cfg.shard == "fsdp" and rt.world > 1)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    ac.configure(model, cfg.activation_checkpointing, cfg.ac_mode, cfg.ac_every)  # which blocks/ops recompute
    data = TrainData(task, cfg, rt, channels_last)
    # FLOPs for MFU: counted once, only when the device's peak is known, before the RNG streams are seeded (and
    # restored on a resume), on a copy of the unwrapped model, with every RNG stream put back: counting changes
    # nothing.
    peak = peak_tflops(cfg.peak_tflops, rt.device, mfu_dtype(rt.amp_dtype, rt.deterministic, rt.cuda))
    flops = cfg.grad_accum * count_step_flops(model, data.sample_batch(), task.loss_fn, rt.autocast) if peak else 0
    # Hardware FLOPs count what the chosen ac_mode really recomputes (the counter runs the same checkpointing).
    recomputes = peak and cfg.activation_checkpointing and hasattr(model, "activation_checkpointing")
    hardware_flops = cfg.grad_accum * count_step_flops(model, data.sample_batch(), task.loss_fn, rt.autocast,
                                                       recompute=True) if recomputes else flops
    notes = start_notes(model, cfg, rt)  # E1: the precision path, odd shapes, float8 (before compile/DDP/FSDP)
    wrapped, sync_model = wrap_model(model, cfg, rt)  # before the optimizer: FSDP replaces the parameters
    optimizer = build_optimizer(model, cfg, rt)
    scheduler = lr_scheduler(optimizer, cfg)
    scaler = grad_scaler(rt.amp_dtype, rt.device, fsdp=cfg.shard == "fsdp" and rt.world > 1)
    state = TrainState(model, optimizer, scheduler, scaler, data.loader_gen, shard=cfg.shard,
                       ema=WeightEMA(model, cfg.ema_decay) if cfg.ema_decay else None)
    trainer = Trainer(state, wrapped, sync_model, data, channels_last, flops, peak, hardware_flops, notes)
    seed_all(cfg.seed + rt.rank)  # per-rank streams: different dropout masks on each rank
    return trainer


def refuse_float8(cfg: Config, rt: Runtime) -> None:
    """E1: float8=true where it cannot run (CPU, compute capability < 8.9, no torchao, amp=fp16, CPU offload)."""
    if cfg.float8:
        why = float8.refusal(rt.device.type, torch.cuda.get_device_capability(rt.device) if rt.cuda else None,
                             float8.torchao_available(), cfg.amp, cfg.offload)
        if why:
            raise EngineError(why)


def start_notes(model: nn.Module, cfg: Config, rt: Runtime) -> List[str]:
    """E1: the lines to say at start: the precision path (on CPU: which bf16 path and why), a one-time warning of
    shapes tensor cores dislike, and what float8 converted (the swap of Linear layers happens here, when asked)."""
    notes = [f"hosttune.engine: {amp_note(cfg.amp, rt.device, rt.amp_dtype)}"]
    odd = shape_warning(model, cfg.micro_batch_size, rt.device.type, rt.amp_dtype is not None)
    if odd:
        notes.append(odd)
    if cfg.float8:
        notes.append(float8.start_line(float8.convert(model), cfg.compile))
    return notes


def wrap_model(model: nn.Module, cfg: Config, rt: Runtime) -> Tuple[nn.Module, Optional[GradSyncer]]:
    """(what the loop calls, the wrapper whose no_sync() defers gradient sync). FSDP shards `model` in place."""
    sync_model: Optional[GradSyncer] = None
    if rt.world > 1 and cfg.shard == "fsdp":
        model = shard.fully_shard_model(model, rt.amp_dtype, cfg.offload, rt.cuda)
        sync_model = shard.GradSync(model)
    elif rt.world > 1:
        # bucket_cap default; gradient_as_bucket_view saves one gradient-sized copy per step.
        model = sync_model = DDP(model, device_ids=[rt.device.index] if rt.cuda else None,
                                 gradient_as_bucket_view=True)
    if cfg.compile:
        # Compile the DDP wrapper: DDPOptimizer splits graphs at bucket boundaries.
        model = torch.compile(model)  # type: ignore[assignment]
    return model, sync_model
