"""The train state and its checkpoint glue: `TrainState` (everything a checkpoint holds), `save_checkpoint`, and
`load_checkpoint` with what makes a resume exact (`restore` checks the checkpoint is this model's; `resume_offset`
puts the RNG streams back and says where in the epoch each rank continues).

The seam for sharded state: `TrainState.shared_state`/`load_shared` (zero1/fsdp go through `shard`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import torch
from torch import nn

from hosttune.yamlio import brief

from . import checkpoint as ckpt
from . import shard
from .config import Config
from .ema import WeightEMA
from .errors import EngineError
from .metrics import Metrics
from .runtime import Runtime, seed_all


@dataclass
class TrainState:
    """Everything a checkpoint holds, in one place.

    shared (rank 0 writes `state.pt`, every rank reads it): the unwrapped model, optimizer, LR scheduler,
    GradScaler, the step, and the data position (epoch, samples of it consumed by each rank);
    per rank (`rng-rank<R>.pt`): every RNG stream (python, numpy, torch, CUDA) and the loader's generator.
    A sharding scheme replaces `shared_state`/`load_shared` (e.g. with torch.distributed.checkpoint); the rest of
    the engine only sees this object.
    """

    model: nn.Module  # unwrapped: no DDP/compile prefixes in the state dict
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler  # disabled unless fp16 (ShardedGradScaler under fsdp)
    loader_gen: torch.Generator  # seeds the DataLoader's workers
    step: int = 0
    epoch: int = 0
    samples: int = 0  # samples of `epoch` this rank has consumed: the data position, independent of batch size
    shard: str = "none"  # zero1/fsdp: model and optimizer go to the checkpoint's dcp/ (shard.save), not state.pt
    ema: Optional[WeightEMA] = None  # ema_decay > 0: the average of the weights (in state.pt)

    def shared_state(self, cfg: Config, world: int) -> Dict[str, Any]:
        sharded = self.shard in shard.SHARDED
        return {"model": {} if sharded else self.model.state_dict(),
                "optimizer": {} if sharded else self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(), "scaler": self.scaler.state_dict(), "step": self.step,
                "epoch": self.epoch, "pos": self.samples // cfg.micro_batch_size, "samples": self.samples,
                "world_size": world, "config": cfg.to_dict(), "shard": self.shard,
                "ema": self.ema.state_dict() if self.ema is not None else None}

    def rank_state(self, cuda: bool) -> Dict[str, Any]:
        return {"rng": ckpt.rng_state(cuda), "loader": self.loader_gen.get_state()}

    def load_shared(self, state: Dict[str, Any]) -> None:
        """Raises RuntimeError/ValueError/KeyError/... when the state does not fit (the caller words it).
        Collective when the checkpoint is sharded (every rank reads its part of dcp/, resharded to this run)."""
        written = state.get("shard", "none")
        if written in shard.SHARDED:
            shard.load(self.model, self.optimizer, Path(state["dir"]) / shard.DCP_DIR)
        elif self.shard in shard.SHARDED:
            raise ValueError(f"it was written with shard={written}; resume it with shard={written}")
        else:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if written in shard.SHARDED:  # ZeroRedundancyOptimizer hands its own groups' lr to the inner optimizer
            for group, lr in zip(self.optimizer.param_groups, self.scheduler.get_last_lr()):
                group["lr"] = lr
        if state["scaler"] or not self.scaler.is_enabled():  # a disabled scaler ignores what it is given
            self.scaler.load_state_dict(state["scaler"])
        # else: written without fp16's scaler (bf16 or fp32) and resumed with fp16: it starts at its initial scale
        # (load_checkpoint says so), rather than refusing an empty state as a checkpoint of another model.
        if self.ema is not None and state.get("ema"):
            self.ema.load_state_dict(state["ema"])
        self.step, self.epoch = state["step"], state["epoch"]

    def load_rank(self, rng: Dict[str, Any], cuda: bool) -> bool:
        """Put this rank's saved RNG streams back (what makes a resume bit-exact); False when malformed."""
        try:
            ckpt.set_rng_state(rng["rng"], cuda)
            self.loader_gen.set_state(rng["loader"])
        except (KeyError, TypeError, ValueError, IndexError, RuntimeError):
            return False
        return True


def save_checkpoint(state: TrainState, cfg: Config, rt: Runtime) -> None:
    try:
        ckpt.save(rt.ckpt_dir, state.step, rt.rank, lambda: state.shared_state(cfg, rt.world),
                  state.rank_state(rt.cuda), cfg.keep_checkpoints, rt.agree,
                  sharded=(lambda where: shard.save(state.model, state.optimizer, where))
                  if state.shard in shard.SHARDED else None)
    except ckpt.CheckpointError as exc:
        raise EngineError(str(exc)) from None


def load_checkpoint(state: TrainState, cfg: Config, rt: Runtime, metrics: Metrics, epoch_len: Optional[int]
                    ) -> Optional[int]:
    """Restore `state` from the newest usable checkpoint when resuming; returns the step resumed from, or None."""
    elastic_restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0
    if not (cfg.resume or elastic_restart):
        return None
    ckpt_dir = rt.ckpt_dir
    last, saved, skipped = ckpt.load_latest(ckpt_dir, rt.rank, rt.device, rt.agree)
    if last is None and skipped:
        reasons = "; ".join(f"{p.name}: {why}" for p, why in skipped[:3])
        more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        raise EngineError(f"no usable checkpoint in {ckpt_dir}: {reasons}{more}; move them aside to start from "
                          f"step 0")
    for bad, why in skipped:  # fall back, and move the bad ones aside so they never shadow newer saves
        metrics.say(f"hosttune.engine: warning: skipping checkpoint {bad.name}: {why}; it is renamed to "
                    f"{bad.name.lstrip('.')}.unusable")
    rt.barrier()  # every rank has finished reading before rank 0 renames anything
    if rt.rank == 0:
        for bad, _ in skipped:
            ckpt.set_aside(bad)
    if last is None or saved is None:
        metrics.say(f"hosttune.engine: no checkpoint in {ckpt_dir}; starting from step 0")
        return None
    restore(saved, last, cfg, state)
    precision_change(saved, state, metrics.say)
    if state.ema is not None and not saved.get("ema"):  # written with ema_decay=0: the average starts here
        state.ema = WeightEMA(state.model, state.ema.decay)
        metrics.say(f"hosttune.engine: warning: the checkpoint has no EMA of the weights (written with ema_decay=0); "
                    f"the average starts from the weights of step {state.step}")
    state.samples = resume_offset(saved, last, cfg, rt, state, metrics.say)
    if epoch_len is not None:
        state.samples = min(state.samples, epoch_len)
    metrics.progress(state.step)
    metrics.write({"event": "resume", "step": state.step, "epoch": state.epoch,
                   "pos": state.samples // cfg.micro_batch_size, "samples": state.samples, "checkpoint": str(last),
                   "skipped": [str(p) for p, _ in skipped],
                   "elastic_restart": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))})
    metrics.say(f"hosttune.engine: resumed from {last} (step {state.step}, epoch {state.epoch}, "
                f"sample {state.samples})")
    return state.step


# What shapes a preset's parameters: a checkpoint that differs in these belongs to another model.
ARCH_KEYS = {"gpt-tiny": ("n_layer", "n_head", "n_embd", "block_size"), "resnet-tiny": ("width", "num_classes")}


def restore(state: Dict[str, Any], where: Path, cfg: Config, train_state: TrainState) -> None:
    """Load a checkpoint's shared state, or stop with one line when it belongs to another model: loading it would
    be a traceback at best and, with the same shapes (n_head), a silently different model at worst."""
    saved_cfg = state.get("config", {})
    diff = ["model"] if saved_cfg.get("model", cfg.model) != cfg.model else [
        k for k in ARCH_KEYS.get(cfg.model, ()) if k in saved_cfg and saved_cfg[k] != getattr(cfg, k)]
    if diff:
        theirs = ", ".join(f"{k}={brief(saved_cfg[k], 40)}" for k in diff)
        ours = ", ".join(f"{k}={getattr(cfg, k)!r}" for k in diff)
        raise EngineError(f"checkpoint {where} was written for {theirs}, this run has {ours}: resume with the same "
                          f"settings, or use another --run-dir")
    try:
        train_state.load_shared(state)
    except (RuntimeError, ValueError, KeyError, TypeError, IndexError) as exc:
        first = " ".join(str(exc).split())
        raise EngineError(f"checkpoint {where} does not fit this model: {brief(first, 200)[1:-1]}") from None


def precision_change(saved: Dict[str, Any], state: TrainState, say: Callable[[str], None]) -> None:
    """Say when the resume changes whether fp16's loss scaler is used (amp bf16/off <-> fp16)."""
    was = saved.get("config", {}).get("amp", "?")
    if not saved["scaler"] and state.scaler.is_enabled():
        say(f"hosttune.engine: warning: the checkpoint was written without fp16's loss scaler (amp={brief(was)}); "
            f"this run uses fp16, and its loss scale starts at {state.scaler.get_scale():g}")
    elif saved["scaler"] and not state.scaler.is_enabled():
        say(f"hosttune.engine: warning: the checkpoint was written with fp16 (amp={brief(was)}); this run does not "
            f"use fp16, so its loss scale is dropped")


def effective_batch(saved_mbs: int, saved_accum: int, saved_world: int, cfg: Config, world: int) -> str:
    """How the effective batch (micro-batch x accumulation x ranks) compares with the checkpoint's, in words."""
    before, after = saved_mbs * saved_accum * saved_world, cfg.micro_batch_size * cfg.grad_accum * world
    now = f"{cfg.micro_batch_size} x {cfg.grad_accum} x {world}"
    if before == after:
        return f"the effective batch stays {after} samples per step ({saved_mbs} x {saved_accum} x {saved_world} " \
               f"then, {now} now)"
    keep = before // (cfg.micro_batch_size * world) if before % (cfg.micro_batch_size * world) == 0 else 0
    hint = f"; grad_accum={keep} keeps it" if keep and keep != cfg.grad_accum else ""
    return (f"the effective batch changes from {saved_mbs} x {saved_accum} x {saved_world} = {before} to {now} = "
            f"{after} samples per step (the learning rate and schedule stay as set){hint}")


def _saved_int(saved_cfg: Dict[str, Any], key: str, default: int) -> int:
    value = saved_cfg.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else default


def resume_offset(state: Dict[str, Any], where: Path, cfg: Config, rt: Runtime, train_state: TrainState,
                  say: Callable[[str], None]) -> int:
    """Where in its epoch this rank continues (samples consumed), with its RNG streams put back; warns about
    whatever makes the resume not bit-exact. Counting samples, not batches, keeps a changed micro_batch_size from
    skipping or repeating data."""
    saved_cfg = state.get("config", {})
    world, rank = rt.world, rt.rank
    saved_world = state.get("world_size", world)
    saved_mbs = _saved_int(saved_cfg, "micro_batch_size", cfg.micro_batch_size)
    saved_accum = _saved_int(saved_cfg, "grad_accum", cfg.grad_accum)
    batch = effective_batch(saved_mbs, saved_accum, saved_world, cfg, world)
    offset = state.get("samples", state["pos"] * saved_mbs)  # checkpoints before `samples` have only `pos`
    if saved_world != world:  # a different world size reshards the data: continue, but not bit-exactly
        say(f"hosttune.engine: warning: checkpoint was written by {saved_world} rank(s), this run has {world}: "
            f"data order and RNG streams restart; {batch}")
        offset = offset * saved_world // world
    elif state["rng"] is None or not train_state.load_rank(state["rng"], rt.cuda):
        seed_all(cfg.seed + rank)  # a half-applied state must not linger
        problem = state["rng_problem"] or "unreadable (malformed RNG state)"
        # Every rank has its own file, so the rank that lacks it says so (`say` is rank 0 only).
        print(f"hosttune.engine: warning: rank {rank}: {where / f'rng-rank{rank}.pt'} is {problem}: resuming "
              f"continues, but not bit-exactly (this rank's dropout and loader RNG streams restart from the seed; "
              f"the data order is unaffected)", file=sys.stderr, flush=True)
    if saved_mbs != cfg.micro_batch_size:
        say(f"hosttune.engine: warning: micro_batch_size changed from {saved_mbs} (checkpoint) to "
            f"{cfg.micro_batch_size}: continuing at sample {offset} of epoch {state['epoch']}, so no sample is "
            f"skipped or repeated; {batch}")
    elif saved_accum != cfg.grad_accum and saved_world == world:
        say(f"hosttune.engine: warning: grad_accum changed from {saved_accum} (checkpoint) to {cfg.grad_accum}: "
            f"{batch}")
    return offset
