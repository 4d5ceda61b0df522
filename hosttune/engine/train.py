"""The training loop: one rank of an AMP/DDP run, alone or under torchrun. Read it top to bottom.

`run(cfg, task)` is the whole engine; the CLI (`__main__.py`), the presets (`task.build_preset_task`) and the
Python API (`api.fit`) all end up here. Its components, one module each (the way torchtitan's trainer is split):

    run -> runtime.setup (Runtime: device, process group, determinism, run dir; precision.resolve_amp)
        -> build.build (Trainer: state.TrainState = everything a checkpoint holds, the wrapped model,
                        optim's optimizer and schedule, precision's GradScaler, loader.TrainData)
        -> state.load_checkpoint -> train_loop -> state.save_checkpoint -> evaluate.summarize -> runtime.teardown

The seams a parallelism scheme plugs into: `build.wrap_model` (DDP/FSDP), `optim.build_optimizer` (zero1),
`optim.optimizer_step` (clipping), and `state.save_checkpoint`/`load_checkpoint` with
`TrainState.shared_state`/`load_shared`.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from . import oom, sinks
from .build import Trainer, build
from .config import Config
from .errors import EngineError
from .evaluate import summarize, summary_line
from .metrics import Metrics, peak_memory_mb
from .optim import optimizer_step
from .runtime import Runtime, setup, teardown
from .state import load_checkpoint, save_checkpoint
from .task import Task


def run(cfg: Config, task: Task) -> Dict[str, Any]:
    """Train `task` for cfg.steps optimizer steps; returns the summary (the same on every rank).

    SIGTERM (preemption, scancel, torchrun shutting down) finishes the current step, checkpoints and returns
    early; the previous handler is back in place afterwards, so a script calling `run` twice stays killable.
    """
    stop = {"requested": False}
    if threading.current_thread() is not threading.main_thread():  # signals can only be caught there
        return _run(cfg, task, stop)
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.update(requested=True))
    try:
        return _run(cfg, task, stop)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(cfg: Config, task: Task, stop: Dict[str, bool]) -> Dict[str, Any]:
    sinks.require(cfg)  # tensorboard=true without the package: one line now, not after the training
    rt = setup(cfg)
    finished = False
    try:
        summary = _train(cfg, task, rt, stop)  # everything holding the process group (DDP) is freed on return
        finished = True
        return summary
    except torch.cuda.OutOfMemoryError as exc:  # the snapshot first, while the memory is still held
        oom.record_oom(exc, rt.cuda_memory, rt.run_dir, rt.rank, rt.world)
        raise
    finally:
        teardown(rt, finished)


def _train(cfg: Config, task: Task, rt: Runtime, stop: Dict[str, bool]) -> Dict[str, Any]:
    trainer = build(cfg, task, rt)
    metrics = Metrics(rt.run_dir, rt.rank == 0, cfg.steps, 0)
    try:  # closed on an error too: the CSV and TensorBoard files keep what was logged
        return _train_logged(cfg, task, rt, stop, trainer, metrics)
    finally:
        metrics.close()


def _train_logged(cfg: Config, task: Task, rt: Runtime, stop: Dict[str, bool], trainer: Trainer,
                  metrics: Metrics) -> Dict[str, Any]:
    warn_debug_apis(metrics.say)
    resumed_from = load_checkpoint(trainer.state, cfg, rt, metrics, trainer.data.epoch_len)
    open_sinks(cfg, rt, metrics, trainer.state.step)
    for note in trainer.notes:  # after the resume: a checkpoint that cannot load is the run's only line
        metrics.say(note)
    if rt.rank == 0 and resumed_from is None:
        metrics.write({"event": "start", "world_size": rt.world, "device": str(rt.device),
                       "amp": str(rt.amp_dtype).replace("torch.", "") if rt.amp_dtype else "off",
                       "deterministic": rt.deterministic, "channels_last": trainer.channels_last,
                       "loader": trainer.data.settings.__dict__, "config": cfg.to_dict(), **task.notes})
    result = train_loop(cfg, task, rt, trainer, metrics, stop)
    if resumed_from is None or trainer.state.step > resumed_from:  # the final (or the SIGTERM) checkpoint
        save_checkpoint(trainer.state, cfg, rt)  # (a finished run resumed again has nothing new to save)
    summary = summarize(cfg, task, rt, trainer, result)
    metrics.write(summary)
    if rt.rank == 0:
        print(summary_line(summary), file=sys.stderr, flush=True)
    return summary


def open_sinks(cfg: Config, rt: Runtime, metrics: Metrics, step: int) -> None:
    """Rank 0's CSV/TensorBoard sinks, continued from `step` (a step an interrupted run logged after its last
    checkpoint is not kept twice). Every rank learns whether rank 0 could, so none waits alone in the first step."""
    if not (cfg.metrics_csv or cfg.tensorboard):
        return
    problem: Optional[BaseException] = None
    if rt.rank == 0:
        try:
            metrics.sinks = sinks.open_sinks(cfg, rt.run_dir, step)
        except (EngineError, OSError) as exc:
            problem = exc if isinstance(exc, EngineError) else EngineError(f"cannot write the metrics files in "
                                                                           f"{rt.run_dir}: {exc.strerror or exc}")
    if not rt.agree(problem is None):
        raise problem or EngineError("rank 0 could not open its metrics files (its error says why)")


def debug_apis_on() -> List[str]:
    """The autograd debugging switches on in this process: each slows every step (anomaly detection re-checks
    every backward op; the profiler records every op)."""
    on = []
    if torch.is_anomaly_enabled():
        on.append("anomaly detection (torch.autograd.set_detect_anomaly / detect_anomaly)")
    if torch.autograd.profiler._is_profiler_enabled or torch._C._autograd._profiler_enabled():
        on.append("the autograd profiler")
    return on


def warn_debug_apis(say: Callable[[str], None]) -> None:
    """One warning at start when debug APIs were left on (the engine's own profile_steps profiler starts later)."""
    on = debug_apis_on()
    if on:
        say(f"hosttune.engine: warning: debug APIs left on: {' and '.join(on)}; every step runs slower with "
            f"them, turn them off for a real run")


# ---- the loop ----

@dataclass
class LoopResult:
    start_step: int
    train_s: float
    last_loss: float
    samples_per_step: int
    compile_s: Optional[float] = None  # compile=true: the first step of this run (it compiles), outside throughput


@dataclass
class Interval:
    """What the loop sums between two log lines; `loss_sum` stays on the device (reading it would sync)."""

    t_log: float
    loss_sum: torch.Tensor
    wait_s: float = 0.0  # waiting for data
    ckpt_s: float = 0.0  # writing checkpoints: not training time
    steps: int = 0
    compile_s: Optional[float] = None  # the compiling first step's time, when it is in this interval

    def reset(self, now: float) -> None:
        self.loss_sum.zero_()
        self.t_log, self.wait_s, self.ckpt_s, self.steps, self.compile_s = now, 0.0, 0.0, 0, None


def train_loop(cfg: Config, task: Task, rt: Runtime, tr: Trainer, metrics: Metrics,
               stop: Dict[str, bool]) -> LoopResult:
    st = tr.state
    prof, prof_end = start_profiler(cfg, rt, st.step)
    tr.model.train()
    t_start = time.perf_counter()
    iv = Interval(t_start, torch.zeros((), device=rt.device))
    start_step = st.step
    last_loss = float("nan")
    samples_per_step = cfg.micro_batch_size * cfg.grad_accum * rt.world
    compile_s: Optional[float] = None
    while st.step < cfg.steps:
        t_step = time.perf_counter()
        micro_steps(cfg, task, rt, tr, iv)
        lr = st.optimizer.param_groups[0]["lr"]  # this step's; the scheduler moves on to the next one's
        grad_norm = optimizer_step(st, cfg)
        if st.ema is not None:
            st.ema.update(st.model)
        st.step += 1
        iv.steps += 1
        if cfg.compile and compile_s is None:  # torch.compile compiles in the first forward and backward
            compile_s = iv.compile_s = time.perf_counter() - t_step
        prof = profiler_step(prof, prof_end, st.step)
        # Every step, all ranks agree whether any got SIGTERM, so all stop (and checkpoint) at this same step.
        stopping = rt.any_rank(stop["requested"])
        if stopping or st.step % cfg.log_interval == 0 or st.step == cfg.steps:
            last_loss = log_interval(cfg, task, rt, tr, iv, lr, grad_norm, metrics)
            if stopping:
                break
        if cfg.ckpt_interval and st.step % cfg.ckpt_interval == 0 and st.step < cfg.steps:
            t_ckpt = time.perf_counter()
            save_checkpoint(st, cfg, rt)
            iv.ckpt_s += time.perf_counter() - t_ckpt
    if prof is not None:
        prof.stop()
    return LoopResult(start_step, time.perf_counter() - t_start, last_loss, samples_per_step, compile_s)


def micro_steps(cfg: Config, task: Task, rt: Runtime, tr: Trainer, iv: Interval) -> None:
    """One optimizer step's forward and backward passes, grad_accum micro-batches of them."""
    for micro in range(cfg.grad_accum):
        t_wait = time.perf_counter()
        x, y = tr.data.next(tr.state)
        iv.wait_s += time.perf_counter() - t_wait
        # Gradients are all-reduced only on the last micro-step; the others just accumulate locally.
        sync_ctx = (tr.sync_model.no_sync() if tr.sync_model is not None and micro < cfg.grad_accum - 1
                    else contextlib.nullcontext())
        with sync_ctx:
            with rt.autocast():
                loss = task.loss_fn(tr.model(x), y) / cfg.grad_accum
            tr.state.scaler.scale(loss).backward()
        iv.loss_sum += loss.detach()


def log_interval(cfg: Config, task: Task, rt: Runtime, tr: Trainer, iv: Interval, lr: float,
                 grad_norm: torch.Tensor, metrics: Metrics) -> float:
    """Write the interval's metrics line and start the next interval; the interval's mean loss (over ranks)."""
    world = rt.world
    # The only device sync of the step: the interval's loss (averaged over ranks) and grad norm.
    stats = torch.stack([iv.loss_sum, grad_norm.float()])
    if world > 1:
        rt.all_reduce(stats)
        stats /= world
    mean_loss, gnorm = stats.tolist()
    mean_loss /= iv.steps
    now = time.perf_counter()
    # Checkpoint writes and the compiling first step (compile=true) are not training time: rates leave them out.
    dt = now - iv.t_log - iv.ckpt_s - (iv.compile_s or 0.0)
    timed = iv.steps - (iv.compile_s is not None)
    samples_per_step = cfg.micro_batch_size * cfg.grad_accum * world
    rec: Dict[str, Any] = {"step": tr.state.step, "epoch": tr.state.epoch, "loss": round(mean_loss, 5), "lr": lr}
    if timed:
        rec.update(samples_per_s=round(timed * samples_per_step / dt, 2), step_time_s=round(dt / timed, 5),
                   data_wait_frac=round(iv.wait_s / dt, 4))
    rec.update(grad_norm=round(gnorm, 5), peak_mem_mb=round(peak_memory_mb(rt.device), 1))
    if iv.ckpt_s:
        rec["checkpoint_s"] = round(iv.ckpt_s, 3)
    if iv.compile_s is not None:
        rec["compile_s"] = round(iv.compile_s, 3)
    log_rates(rec, task, tr, world, dt)
    metrics.write(rec)
    metrics.progress(iv.steps, mean_loss)
    iv.reset(now)
    return mean_loss


def log_rates(rec: Dict[str, Any], task: Task, tr: Trainer, world: int, dt: float) -> None:
    """The interval's token rate, padding and MFU/HFU (none for an interval of only the compiling step)."""
    data = tr.data
    if "samples_per_s" not in rec:
        data.pad_tokens = data.tokens = 0
        return
    if task.tokens_per_sample:
        rec["tokens_per_s"] = round(rec["samples_per_s"] * task.tokens_per_sample, 1)
    if data.padded and data.tokens:  # rank 0's share, scaled: ranks see batches of similar lengths
        rec["padding_frac"] = round(data.pad_tokens / data.tokens, 4)
        rec["tokens_per_s"] = round((data.tokens - data.pad_tokens) * world / dt, 1)
        data.pad_tokens = data.tokens = 0
    if tr.flops_per_step and tr.peak_tflops:
        # MFU: the model's FLOPs; HFU (only when they differ: activation checkpointing) also counts the recompute.
        rec["mfu"] = round(tr.flops_per_step / rec["step_time_s"] / (tr.peak_tflops * 1e12), 5)
        if tr.hardware_flops_per_step != tr.flops_per_step:
            rec["hfu"] = round(tr.hardware_flops_per_step / rec["step_time_s"] / (tr.peak_tflops * 1e12), 5)


def start_profiler(cfg: Config, rt: Runtime, step: int) -> Tuple[Optional[torch.profiler.profile], int]:
    schedule = cfg.profile_schedule()
    if not schedule:
        return None, 0
    wait, warmup, active = schedule
    trace = rt.run_dir / f"trace-rank{rt.rank}.json"
    prof = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA]
                                                           if rt.cuda else []),
        schedule=torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(trace)), record_shapes=True)
    prof.start()
    return prof, step + sum(schedule)


def profiler_step(prof: Optional[torch.profiler.profile], end: int, step: int) -> Optional[torch.profiler.profile]:
    """Advance the profiler's schedule after a step; stop it (None) once its steps are done."""
    if prof is None:
        return None
    prof.step()
    if step >= end:
        prof.stop()
        return None
    return prof
