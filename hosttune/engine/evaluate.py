"""After training: evaluation on the validation set (each rank its shard, summed over ranks), the run's summary
record and its one-line form."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable

import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, default_collate

from .config import Config
from .data import ResumableSampler
from .loader import iterable_batches
from .runtime import Runtime
from .task import Task

if TYPE_CHECKING:
    from .build import Trainer
    from .train import LoopResult


def summarize(cfg: Config, task: Task, rt: Runtime, tr: Trainer, res: LoopResult) -> Dict[str, Any]:
    step = tr.state.step
    stopped_early = step < cfg.steps
    summary: Dict[str, Any] = {"event": "summary", "model": cfg.preset or cfg.model, "step": step,
                               "steps_this_run": step - res.start_step, "world_size": rt.world,
                               "train_s": round(res.train_s, 2), "final_train_loss": round(res.last_loss, 5),
                               "stopped_early": stopped_early, "run_dir": str(rt.run_dir), **task.notes}
    timed_steps, timed_s = step - res.start_step, res.train_s
    if res.compile_s is not None:  # compile=true: throughput after the compiling first step; its time apart
        summary["compile_s"] = round(res.compile_s, 2)
        timed_steps, timed_s = timed_steps - 1, timed_s - res.compile_s
    if timed_steps > 0:
        summary["samples_per_s"] = round(timed_steps * res.samples_per_step / timed_s, 2)
    if task.val_set is not None and not stopped_early:
        ema = tr.state.ema
        if ema is None:
            summary.update(evaluate(tr.model, task, cfg, rt, tr.data.to_device))
        else:  # the average's weights in the model for the evaluation, the trained ones back after it
            with ema.swapped_in(tr.state.model):
                summary.update(evaluate(tr.model, task, cfg, rt, tr.data.to_device))
            summary["eval_weights"] = f"ema (decay {cfg.ema_decay})"
    return summary


@torch.no_grad()
def evaluate(model: nn.Module, task: Task, cfg: Config, rt: Runtime,
             to_device: Callable[[torch.Tensor], torch.Tensor]) -> Dict[str, Any]:
    """Mean loss (and accuracy) over each rank's shard of the validation set, summed over ranks: the first
    eval_samples // world samples of each shard, so what is evaluated does not depend on the micro-batch size
    (eval_batches, when set, caps the batches too)."""
    assert task.val_set is not None
    collate = getattr(task.val_set, "collate", None)
    loader: Iterable[Any]
    if isinstance(task.val_set, IterableDataset):  # one pass, every world-th sample on each rank
        loader = iterable_batches(task.val_set, rt.world, rt.rank, cfg.micro_batch_size, collate or default_collate)
    else:
        sampler = ResumableSampler(task.val_set, rt.world, rt.rank, cfg.seed, shuffle=False)
        loader = DataLoader(task.val_set, batch_size=cfg.micro_batch_size, sampler=sampler, collate_fn=collate)
    totals = torch.zeros(3, device=rt.device, dtype=torch.float64)  # loss*n, correct, n
    left = max(1, cfg.eval_samples // rt.world)  # this rank's samples still to evaluate
    model.eval()
    for i, (x, y) in enumerate(loader):
        if i == cfg.eval_batches or left <= 0:
            break
        x, y = to_device(x[:left]), y[:left].to(rt.device)
        left -= y.shape[0]
        with rt.autocast():
            out = model(x)
        totals[0] += task.loss_fn(out, y).double() * y.shape[0]  # per-sample mean losses, weighted by samples
        if task.accuracy:
            totals[1] += (out.argmax(-1) == y).sum()
        totals[2] += y.shape[0]
    model.train()
    if rt.world > 1:
        rt.all_reduce(totals)
    loss_x_n, correct, n = totals.tolist()
    result = {"val_loss": round(loss_x_n / max(n, 1), 5), "val_samples": int(n)}
    if task.accuracy:
        result["val_accuracy"] = round(correct / max(n, 1), 4)
    return result


def summary_line(s: Dict[str, Any]) -> str:
    parts = [f"hosttune.engine: {'stopped' if s['stopped_early'] else 'done'}: {s['model']} step {s['step']} "
             f"on {s['world_size']} rank(s) in {s['train_s']}s"]
    if "compile_s" in s:
        parts.append(f"{s['compile_s']}s of it compiling (the first step)")
    if "samples_per_s" in s:
        parts.append(f"{s['samples_per_s']} samples/s" + (" after it" if "compile_s" in s else ""))
    parts.append(f"train loss {s['final_train_loss']:.4f}")
    if "val_loss" in s:
        parts.append(f"val loss {s['val_loss']:.4f}" + (f" with the {s['eval_weights']} weights"
                                                         if "eval_weights" in s else ""))
    if "unigram_entropy" in s:
        parts.append(f"unigram entropy {s['unigram_entropy']:.4f} nats")
    if "val_accuracy" in s:
        chance = f" (chance {s['chance_accuracy']:.3f})" if "chance_accuracy" in s else ""
        parts.append(f"val accuracy {s['val_accuracy']:.3f}{chance}")
    if s["stopped_early"]:
        parts.append("checkpoint saved; run again with --resume to continue")
    return ", ".join(parts)
