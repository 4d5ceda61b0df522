"""The training loop: one rank of an AMP/DDP run, alone or under torchrun. Read it top to bottom.

`run(cfg, task)` is the whole engine; the CLI (`__main__.py`), the presets (`build_preset_task`) and the Python API
(`api.fit`) all end up here. Settings come from `config.Config`; DataLoader settings from the launcher's profile.

    run -> setup (Runtime: device, process group, precision)
        -> build (Trainer: TrainState = everything a checkpoint holds, the wrapped model, the data)
        -> load_checkpoint -> train_loop -> save_checkpoint -> summarize/evaluate -> teardown

The seams a parallelism scheme plugs into: `wrap_model` (DDP today), `build_optimizer`, `optimizer_step` (clipping),
and `save_checkpoint`/`load_checkpoint` with `TrainState.shared_state`/`load_shared`.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import random
import signal
import sys
import threading
import time
import types
import weakref
from collections import deque
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, IterableDataset, default_collate

from hosttune.yamlio import brief

from . import checkpoint as ckpt
from . import shard
from .config import Config
from .data import (
    IGNORE_INDEX,
    CharLines,
    CharText,
    EpochBatches,
    ResumableSampler,
    SeededFetch,
    SeparableImages,
    ShardedText,
    StreamReader,
    dataset_lengths,
    default_shards,
    deterministic_setting,
    loader_settings,
    seeded_rng,
)
from .metrics import Metrics, count_step_flops, peak_memory_mb, peak_tflops
from .models import GPT, TinyResNet, classification_loss, lm_loss


class EngineError(Exception):
    """A setting this host cannot honour (e.g. amp=fp16 without CUDA): one line, exit 2."""


@dataclass
class Task:
    """What to train. The presets build one; the Python API builds one from the user's own pieces."""

    model: nn.Module
    train_set: Dataset
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    val_set: Optional[Dataset] = None
    accuracy: bool = False  # also report top-1 accuracy on val_set
    tokens_per_sample: int = 0  # > 0 for sequence models: metrics get tokens/s
    notes: Dict[str, Any] = field(default_factory=dict)  # extra summary fields (e.g. unigram entropy)


def build_preset_task(cfg: Config) -> Task:
    torch.manual_seed(cfg.seed)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    if cfg.model == "resnet-tiny":
        train = SeparableImages(cfg.train_samples, cfg.num_classes, cfg.image_size, cfg.seed, "train")
        val = SeparableImages(cfg.val_samples, cfg.num_classes, cfg.image_size, cfg.seed, "val")
        model = TinyResNet(cfg.num_classes, cfg.width)
        return Task(model, train, classification_loss, val, accuracy=True,
                    notes={"chance_accuracy": round(1 / cfg.num_classes, 4)})
    if cfg.model == "gpt-tiny":
        windows = CharText(cfg.block_size, "train")
        text_train: Dataset = windows
        text_val: Dataset = CharText(cfg.block_size, "val")
        if cfg.data == "lines":
            text_train, text_val = CharLines(cfg.block_size, "train"), CharLines(cfg.block_size, "val")
        elif cfg.data == "shards":
            index = Path(cfg.data_path) if cfg.data_path else default_shards()
            try:
                stream = ShardedText(index, cfg.block_size, cfg.seed)
            except ValueError as exc:
                raise EngineError(str(exc)) from None
            if stream.chars != "".join(windows.chars):
                raise EngineError(f"{index}: its vocabulary is not the bundled text's; gpt-tiny's val split needs it")
            text_train = stream
        # Tensor cores want matrix sides in multiples of 64: the embedding/output layer's 62 rows become 64 (the
        # extra tokens never occur, so they only learn to be unlikely).
        gpt = GPT(pad_to_multiple(windows.vocab_size, 64), cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd,
                  cfg.dropout)
        return Task(gpt, text_train, lm_loss, text_val,
                    tokens_per_sample=cfg.block_size if cfg.data != "lines" else 0,
                    notes={"unigram_entropy": round(windows.unigram_entropy(), 4)})
    raise EngineError("model=custom needs the Python API (hosttune.engine.api.fit) with your own model")


def pad_to_multiple(n: int, k: int) -> int:
    return -(-n // k) * k


def cpu_has_fast_bf16(cpuinfo: str) -> bool:
    """True when /proc/cpuinfo's flags show native bf16 math. Without it bf16 autocast on CPU is emulated and
    runs x0.03-0.10 of fp32 (measured on an AVX2 EPYC), so `amp=auto` must not pick it."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return bool(flags & {"avx512_bf16", "amx_bf16"})
    return False


def resolve_amp(amp: str, device: torch.device, capability: Optional[Tuple[int, int]] = None
                ) -> Optional[torch.dtype]:
    """The autocast dtype (None = fp32). fp16 implies a GradScaler: its narrow range underflows small grads.

    On CUDA `auto` decides by compute capability (`capability`, else the device's own; call after set_device):
    bf16 tensor cores start with Ampere (8.0). torch.cuda.is_bf16_supported() is True on V100/T4 too, where bf16
    is emulated at a fraction of the fp16 rate, so it cannot decide."""
    if amp == "off":
        return None
    if device.type == "cuda":
        if amp == "auto":
            major, minor = capability or torch.cuda.get_device_capability(device)
            return torch.bfloat16 if (major, minor) >= (8, 0) else torch.float16
        return torch.bfloat16 if amp == "bf16" else torch.float16
    if amp == "fp16":
        raise EngineError("amp=fp16 needs CUDA (GradScaler); on CPU use amp=bf16 or amp=off")
    if amp == "bf16":
        return torch.bfloat16
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        cpuinfo = ""
    return torch.bfloat16 if cpu_has_fast_bf16(cpuinfo) else None


def lr_at(step: int, cfg: Config) -> float:
    """Linear warmup (Adam's early moment estimates are noisy), then cosine decay to min_lr."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * min(1.0, progress)))


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


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def default_run_dir(cfg: Config, rank: int, world: int) -> Path:
    """runs/<preset>-<time>, chosen once by rank 0. An elastic restart (new processes, same torchrun run id)
    must land in the same directory to find its checkpoints, so the run id is recorded there."""
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", "")
    chosen = [""]
    if rank == 0:
        root = Path("runs")
        if run_id and int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0:
            chosen[0] = next((str(p.parent) for p in root.glob("*/.torchelastic-run-id")
                              if p.read_text().strip() == run_id), "")
        if not chosen[0]:
            chosen[0] = str(root / f"{cfg.preset or cfg.model}-{time.strftime('%Y%m%d-%H%M%S')}")
            Path(chosen[0]).mkdir(parents=True, exist_ok=True)
            if run_id:
                (Path(chosen[0]) / ".torchelastic-run-id").write_text(run_id + "\n")
    if world > 1:
        dist.broadcast_object_list(chosen, src=0)
    return Path(chosen[0])


# torch modules with `group=group.WORLD` as a default argument. Python evaluates a default once, when the module is
# imported: imported while a process group exists, they keep that group alive for good - destroy_process_group(),
# `del` and gc.collect() cannot free it. DDP's constructor imports torch.distributed.nn.functional (through
# torch.distributed._shard), i.e. after init_process_group, so the engine's gloo group outlived
# destroy_process_group() and was destroyed during interpreter shutdown, where a gloo worker thread dropping a
# finished collective's Python tensor needs the GIL: "terminate called without an active exception", SIGABRT, in
# 4 of 106 two-rank runs (torch 2.13). torch.distributed.checkpoint (sharded saves) and the zero1 optimizer import
# them too. Imported before any group exists, the defaults are None: the default group at call time.
GROUP_DEFAULT_MODULES = ("torch.distributed.nn.functional",)
SHARDED_GROUP_DEFAULT_MODULES = ("torch.distributed.optim.zero_redundancy_optimizer",
                                 "torch.distributed.fsdp.sharded_grad_scaler")


def import_group_default_modules(sharded: bool) -> None:
    """Import the modules above before the engine creates its process group (see GROUP_DEFAULT_MODULES)."""
    for name in GROUP_DEFAULT_MODULES + (SHARDED_GROUP_DEFAULT_MODULES if sharded else ()):
        importlib.import_module(name)


def unpin_group(group: Any) -> int:
    """Reset every function default in torch's loaded modules that is `group` to None (what it is when the module
    is imported before any group exists); returns how many. The safety net behind import_group_default_modules
    for a module that a later torch imports lazily after the group exists."""
    found = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("torch.") or not isinstance(module, types.ModuleType):
            continue
        for value in list(vars(module).values()):
            # type(), not isinstance(): some torch objects warn (deprecation) when their __class__ is read.
            funcs = [value] if type(value) is types.FunctionType else []
            if issubclass(type(value), type):
                funcs = [f for f in vars(value).values() if type(f) is types.FunctionType]
            for func in funcs:
                if func.__defaults__ and any(d is group for d in func.__defaults__):
                    func.__defaults__ = tuple(None if d is group else d for d in func.__defaults__)
                    found += 1
                if func.__kwdefaults__ and any(d is group for d in func.__kwdefaults__.values()):
                    func.__kwdefaults__ = {k: (None if d is group else d) for k, d in func.__kwdefaults__.items()}
                    found += 1
    return found


def init_process_group(backend: str, rank: int, world: int) -> None:
    """The process group from torchrun's env, isolated per elastic attempt.

    torchrun's agent keeps its store across restarts, so after a rank died the new attempt can read the dead
    attempt's keys - gloo then dials the old rank 0's listening port ("Connection refused", or a hang). A key
    prefix per TORCHELASTIC_RESTART_COUNT gives every attempt a clean namespace.
    """
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if attempt is None:
        dist.init_process_group(backend)  # plain env:// rendezvous (not under torchrun)
        return
    agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"  # the agent hosts the store
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                          is_master=not agent_store and rank == 0, timeout=timedelta(minutes=10))
    dist.init_process_group(backend, store=dist.PrefixStore(f"hosttune/attempt_{attempt}", store), rank=rank,
                            world_size=world)


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
    rt = setup(cfg)
    finished = False
    try:
        summary = _train(cfg, task, rt, stop)  # everything holding the process group (DDP) is freed on return
        finished = True
        return summary
    finally:
        teardown(rt, finished)


def _train(cfg: Config, task: Task, rt: Runtime, stop: Dict[str, bool]) -> Dict[str, Any]:
    trainer = build(cfg, task, rt)
    metrics = Metrics(rt.run_dir, rt.rank == 0, cfg.steps, 0)
    resumed_from = load_checkpoint(trainer.state, cfg, rt, metrics, trainer.data.epoch_len)
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
    metrics.close()
    if rt.rank == 0:
        print(summary_line(summary), file=sys.stderr, flush=True)
    return summary


# ---- setup: where and how this rank runs ----

@dataclass
class Runtime:
    """Where and how this rank runs; fixed for the whole run."""

    world: int
    rank: int
    local_rank: int
    device: torch.device
    amp_dtype: Optional[torch.dtype]  # the autocast dtype; None = fp32
    deterministic: bool
    run_dir: Path = Path(".")
    owns_group: bool = False  # the engine created the process group, so it (and only it) destroys it
    flag_group: Any = None  # the CPU group the per-step stop flag is all-reduced in (world > 1)
    _flag: torch.Tensor = field(default_factory=lambda: torch.zeros(1, dtype=torch.int32))
    # The tensors of the last collectives, held until the group is destroyed (see teardown).
    _recent: Deque[torch.Tensor] = field(default_factory=lambda: deque(maxlen=16))

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def ckpt_dir(self) -> Path:
        return self.run_dir / "checkpoints"

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier(device_ids=[self.local_rank]) if self.cuda else dist.barrier()

    def all_reduce(self, tensor: torch.Tensor, op: Any = dist.ReduceOp.SUM, group: Any = None) -> None:
        """dist.all_reduce, with `tensor` kept referenced from Python until the group is destroyed: a gloo worker
        thread can still hold a finished collective; if it dropped the tensor's last reference, it would need the
        GIL, which teardown's thread holds while the group's destructor joins that worker (a hang at exit)."""
        self._recent.append(tensor)
        dist.all_reduce(tensor, op=op, group=group)

    def agree(self, ok: bool) -> bool:
        """True only when every rank says ok; a barrier too. Checkpoint saves and loads use it so that a failure on
        one rank stops all of them in step, instead of leaving the others waiting forever."""
        if self.world == 1:
            return ok
        flag = torch.tensor([int(ok)], device=self.device, dtype=torch.int32)
        self.all_reduce(flag, op=dist.ReduceOp.MIN)
        return bool(flag.item())

    def any_rank(self, flag: bool) -> bool:
        """True when any rank passed True: every rank calls it at the same step (a small CPU all-reduce)."""
        if self.world == 1:
            return flag
        self._flag[0] = int(flag)
        self.all_reduce(self._flag, op=dist.ReduceOp.MAX, group=self.flag_group)
        return bool(self._flag[0])

    def autocast(self) -> Any:
        return torch.autocast(self.device.type, dtype=self.amp_dtype or torch.float32,
                              enabled=self.amp_dtype is not None)


def setup(cfg: Config) -> Runtime:
    """Device, process group, precision and determinism switches, run directory."""
    user_group = dist.is_available() and dist.is_initialized()  # the caller's own process group: use it
    world = dist.get_world_size() if user_group else int(os.environ.get("WORLD_SIZE", "1"))
    rank = dist.get_rank() if user_group else int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise EngineError("device=cuda but torch sees no CUDA device (CPU-only torch build, or no driver)")
    use_cuda = cfg.device != "cpu" and torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    deterministic = deterministic_setting(cfg)
    if deterministic and cfg.cudnn_benchmark:
        raise EngineError("cudnn_benchmark=true contradicts deterministic mode (HOSTTUNE_DETERMINISTIC=1 from the "
                          "profile): autotuning picks kernels run by run")
    if deterministic:
        # cuBLAS needs a fixed workspace to be deterministic; it must be set before the first cuBLAS call.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if use_cuda:
        torch.cuda.set_device(device)  # before init_process_group, so NCCL binds this rank to its GPU
    amp_dtype = resolve_amp(cfg.amp, device)  # after set_device: a CUDA query before it opens a context on GPU 0
    rt = Runtime(world, rank, local_rank, device, amp_dtype, deterministic)
    if world > 1 and not dist.is_initialized():
        import_group_default_modules(cfg.shard in shard.SHARDED)
        init_process_group("nccl" if use_cuda else "gloo", rank, world)
        rt.owns_group = True
    try:
        # Autotuned kernels are fastest but may differ run to run; with varying input shapes each new shape is
        # tuned again, so it has its own switch.
        torch.backends.cudnn.benchmark = (cfg.cudnn_benchmark if cfg.cudnn_benchmark is not None
                                          else not deterministic)
        torch.backends.cudnn.deterministic = deterministic
        torch.use_deterministic_algorithms(deterministic)
        if use_cuda:
            # TF32 matmuls on Ampere+: ~8x the fp32 rate for the parts autocast leaves in fp32.
            torch.backends.cuda.matmul.allow_tf32 = not deterministic
            torch.backends.cudnn.allow_tf32 = not deterministic
        if world > 1:
            # SIGTERM reaches ranks at different moments; they agree every step through a CPU (gloo) all-reduce
            # of one flag, which never waits for the GPU. On CPU runs the default group is gloo already.
            gloo = dist.get_backend() == "gloo"
            rt.flag_group = dist.group.WORLD if gloo else dist.new_group(backend="gloo")
        rt.run_dir = Path(cfg.run_dir) if cfg.run_dir else default_run_dir(cfg, rank, world)
        if rank == 0:
            rt.run_dir.mkdir(parents=True, exist_ok=True)
        rt.barrier()
    except BaseException:
        teardown(rt)
        raise
    return rt


def teardown(rt: Runtime, finished: bool = False) -> None:
    """Destroy the process group if the engine created it; a group the caller made is the caller's.

    The group must really be destroyed here, while the interpreter runs, not at its shutdown: there a gloo worker
    thread that drops a finished collective's Python tensor needs the GIL, and the process aborts ("terminate
    called without an active exception"). So nothing may keep it alive: the trainer (DDP and its reducer) is
    freed when _train returns, import_group_default_modules ran before the group existed, and unpin_group
    releases any default argument that still holds it.

    The destructor joins gloo's worker threads with the GIL held; a worker that still holds a finished
    collective and drops the last reference to its Python tensor would need the GIL: a hang. So after a finished
    run every rank first meets in a barrier (its wait releases the GIL, and it waits for every earlier
    collective), and the tensors of the engine's last collectives (`Runtime._recent`) stay referenced until the
    group is gone, so a worker's drop is never the last one.
    """
    if finished and rt.world > 1 and dist.is_initialized():
        rt.barrier()
    if rt.flag_group is not None and rt.flag_group is not dist.group.WORLD and dist.is_initialized():
        dist.destroy_process_group(rt.flag_group)
    rt.flag_group = None
    if rt.owns_group and dist.is_initialized():
        group = weakref.ref(dist.group.WORLD)
        dist.destroy_process_group()
        rt.owns_group = False
        if group() is not None:
            unpin_group(group())  # the last reference goes with it: destroyed now
    rt._recent.clear()


# ---- build: model, optimizer, data, and the train state that a checkpoint holds ----

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
    scheduler: Any  # torch.optim.lr_scheduler.LRScheduler
    scaler: Any  # torch.amp.GradScaler (disabled unless fp16)
    loader_gen: torch.Generator  # seeds the DataLoader's workers
    step: int = 0
    epoch: int = 0
    samples: int = 0  # samples of `epoch` this rank has consumed: the data position, independent of batch size
    shard: str = "none"  # zero1/fsdp: model and optimizer go to the checkpoint's dcp/ (shard.save), not state.pt

    def shared_state(self, cfg: Config, world: int) -> Dict[str, Any]:
        sharded = self.shard in shard.SHARDED
        return {"model": {} if sharded else self.model.state_dict(),
                "optimizer": {} if sharded else self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(), "scaler": self.scaler.state_dict(), "step": self.step,
                "epoch": self.epoch, "pos": self.samples // cfg.micro_batch_size, "samples": self.samples,
                "world_size": world, "config": cfg.to_dict(), "shard": self.shard}

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
        self.scaler.load_state_dict(state["scaler"])
        self.step, self.epoch = state["step"], state["epoch"]

    def load_rank(self, rng: Dict[str, Any], cuda: bool) -> bool:
        """Put this rank's saved RNG streams back (what makes a resume bit-exact); False when malformed."""
        try:
            ckpt.set_rng_state(rng["rng"], cuda)
            self.loader_gen.set_state(rng["loader"])
        except (KeyError, TypeError, ValueError, IndexError, RuntimeError):
            return False
        return True


@dataclass
class Trainer:
    """What `build` returns: the train state plus what the loop calls."""

    state: TrainState
    model: nn.Module  # what the loop calls: wrapped for data parallelism, maybe compiled
    sync_model: Any  # the DDP wrapper or shard.GradSync (its no_sync() defers gradient sync), None on one rank
    data: "TrainData"
    channels_last: bool
    flops_per_step: int = 0  # for MFU; 0 = not counted
    peak_tflops: Optional[float] = None


def build(cfg: Config, task: Task, rt: Runtime) -> Trainer:
    model = task.model.to(rt.device)
    image_model = any(isinstance(m, nn.Conv2d) for m in model.modules())
    channels_last = cfg.channels_last and image_model  # NHWC: what cuDNN/oneDNN conv kernels prefer
    # FSDP2 shards only contiguous parameters (NotImplementedError for NHWC conv weights in torch 2.13).
    channels_last = channels_last and not (cfg.shard == "fsdp" and rt.world > 1)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    if hasattr(model, "activation_checkpointing"):
        model.activation_checkpointing = cfg.activation_checkpointing  # type: ignore[assignment]
    data = TrainData(task, cfg, rt, channels_last)
    # FLOPs for MFU: counted once, only when the device's peak is known, before the RNG streams are seeded (and
    # restored on a resume), on a copy of the unwrapped model, with every RNG stream put back: counting changes
    # nothing.
    peak = peak_tflops(cfg.peak_tflops, rt.device, mfu_dtype(rt))
    flops = cfg.grad_accum * count_step_flops(model, data.sample_batch(), task.loss_fn, rt.autocast) if peak else 0
    wrapped, sync_model = wrap_model(model, cfg, rt)  # before the optimizer: FSDP replaces the parameters
    optimizer = build_optimizer(model, cfg, rt)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_at(s, cfg) / cfg.lr)
    scaler_cls = getattr(torch.amp, "GradScaler", None)  # torch >= 2.3; torch.cuda.amp's before
    scaler = (scaler_cls("cuda", enabled=rt.amp_dtype == torch.float16) if scaler_cls is not None
              else torch.cuda.amp.GradScaler(enabled=rt.amp_dtype == torch.float16))
    if rt.amp_dtype == torch.float16 and cfg.shard == "fsdp" and rt.world > 1:
        scaler = shard.grad_scaler(rt.device.type)  # overflow in one rank's shard must skip the step on all
    state = TrainState(model, optimizer, scheduler, scaler, data.loader_gen, shard=cfg.shard)
    trainer = Trainer(state, wrapped, sync_model, data, channels_last, flops, peak)
    seed_all(cfg.seed + rt.rank)  # per-rank streams: different dropout masks on each rank
    return trainer


def mfu_dtype(rt: Runtime) -> str:
    """The math the matmuls run in, for the peak to compare with: autocast's dtype, else TF32 (on unless
    deterministic), else fp32."""
    if rt.amp_dtype is not None:
        return "bf16" if rt.amp_dtype == torch.bfloat16 else "fp16"
    return "fp32" if rt.deterministic or not rt.cuda else "tf32"


def build_optimizer(model: nn.Module, cfg: Config, rt: Runtime) -> torch.optim.Optimizer:
    """AdamW with weight decay on matrices only: decaying biases and norm gains just fights the normalisation.
    The seam for optimizer-state sharding (ZeroRedundancyOptimizer)."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # FSDP with offload=cpu steps on the host-side shards: fused only if the CPU has it.
    where = torch.device("cpu") if cfg.offload == "cpu" else rt.device
    kwargs: Dict[str, Any] = dict(lr=cfg.lr, betas=(cfg.beta1, cfg.beta2),
                                  **({"fused": True} if fused_optimizer_ok(where) else {}))
    if cfg.shard == "zero1" and rt.world > 1:
        return shard.zero_optimizer(groups, **kwargs)
    return torch.optim.AdamW(groups, **kwargs)


def fused_optimizer_ok(device: torch.device) -> bool:
    """Whether torch has fused AdamW for this device type: one kernel (CUDA) or one vectorised loop (CPU, torch
    >= 2.4) over all parameters. On CPU it measured 0.41 vs 2.22 ms per step for gpt-tiny's optimizer."""
    try:
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices
    except ImportError:  # older torch: fused exists for CUDA only
        return device.type == "cuda"
    return device.type in _get_fused_kernels_supported_devices()


def wrap_model(model: nn.Module, cfg: Config, rt: Runtime) -> Tuple[nn.Module, Optional[nn.Module]]:
    """(what the loop calls, the wrapper whose no_sync() defers gradient sync). FSDP shards `model` in place."""
    sync_model: Any = None
    if rt.world > 1 and cfg.shard == "fsdp":
        model = shard.fully_shard_model(model, rt.amp_dtype, cfg.offload, rt.cuda)
        sync_model = shard.GradSync(model)
    elif rt.world > 1:
        # bucket_cap default; gradient_as_bucket_view saves one gradient-sized copy per step.
        model = sync_model = DDP(model, device_ids=[rt.local_rank] if rt.cuda else None,
                                 gradient_as_bucket_view=True)
    if cfg.compile:
        # Compile the DDP wrapper: DDPOptimizer splits graphs at bucket boundaries.
        model = torch.compile(model)  # type: ignore[assignment]
    return model, sync_model


class TrainData:
    """This rank's training batches and its position in them (epoch, samples consumed), resumable exactly.

    Map-style datasets: EpochBatches picks each epoch's micro-batches (optionally length-bucketed) and SeededFetch
    fetches each under an RNG seeded by its position, so random augmentation gives the same batch with any number
    of workers and after a resume. IterableDatasets stream through StreamReader (one reader per rank and worker)
    and have no epochs here: `samples` counts the rank's whole stream.
    """

    def __init__(self, task: Task, cfg: Config, rt: Runtime, channels_last: bool):
        self.cfg, self.rt, self.device, self.channels_last = cfg, rt, rt.device, channels_last
        self.dataset = task.train_set
        self.settings = loader_settings(cfg, rt.cuda)
        self.streaming = isinstance(self.dataset, IterableDataset)
        self.collate = getattr(self.dataset, "collate", None)  # e.g. padding for variable-length samples
        self.padded = self.collate is not None
        self.pad_tokens = self.tokens = 0  # this rank's, since the last log line (padded data only)
        # A private generator for the loader's worker base seeds, so creating an iterator (each epoch, and again
        # after a resume) never draws from the global RNG that dropout uses: resume stays exact.
        self.loader_gen = torch.Generator().manual_seed(cfg.seed + rt.rank)
        self.epoch_len: Optional[int] = None  # this rank's samples per epoch; None when streaming
        self.batches: Optional[EpochBatches] = None
        self._it: Optional[Iterator[Any]] = None
        mbs = cfg.micro_batch_size
        if self.streaming:
            if cfg.length_bucketing:
                raise EngineError("length_bucketing needs a map-style dataset (it sorts an epoch by length); "
                                  "a streamed dataset can only be bucketed by its own reader")
            shards = getattr(self.dataset, "shards", None)
            readers = rt.world * max(1, self.settings.num_workers)
            if shards is not None and len(shards) < readers:
                raise EngineError(f"the stream has {len(shards)} shard(s) for {readers} readers ({rt.world} rank(s) "
                                  f"x {max(1, self.settings.num_workers)} loader worker(s)): lower num_workers or "
                                  f"cut more shards")
            return
        try:
            n = len(self.dataset)  # type: ignore[arg-type]
        except TypeError:
            raise EngineError(f"the training set ({type(self.dataset).__name__}) has no len() and is not an "
                              f"IterableDataset: subclass torch.utils.data.IterableDataset to stream it") from None
        lengths = None
        if cfg.length_bucketing:
            lengths = dataset_lengths(self.dataset)
            if lengths is None or len(lengths) != n:
                raise EngineError("length_bucketing needs the dataset to give each sample's length (a lengths() "
                                  "method or a lengths list, one per sample)")
        self.batches = EpochBatches(self.dataset, rt.world, rt.rank, cfg.seed, mbs, lengths)
        self.epoch_len = self.batches.epoch_len
        if self.epoch_len < mbs:
            raise EngineError(f"the training set has {n} samples: too few for micro_batch_size={mbs} on "
                              f"{rt.world} rank(s)")
        self.loader = DataLoader(SeededFetch(self.dataset, cfg.seed, rt.rank), batch_sampler=self.batches,
                                 collate_fn=self.collate, generator=self.loader_gen, **self.settings.kwargs())

    def to_device(self, x: torch.Tensor) -> torch.Tensor:
        # non_blocking only helps (and is only safe) from pinned memory to a GPU.
        x = x.to(self.device, non_blocking=self.settings.pin_memory)
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last and x.dim() == 4 else x

    def _start(self, state: TrainState) -> Iterator[Any]:
        if self.batches is not None:
            self.batches.set_epoch(state.epoch, skip=state.samples)
            return iter(self.loader)
        mbs = self.cfg.micro_batch_size
        reader = StreamReader(self.dataset, self.rt.world, self.rt.rank, self.cfg.seed, mbs,  # type: ignore[arg-type]
                              state.samples // mbs)
        kwargs = self.settings.kwargs()
        kwargs["persistent_workers"] = False  # one iterator for the whole run
        return iter(DataLoader(reader, batch_size=mbs, collate_fn=self.collate, generator=self.loader_gen,
                               **kwargs))

    def next(self, state: TrainState) -> Tuple[torch.Tensor, torch.Tensor]:
        """The next micro-batch on the device; advances state.epoch/state.samples."""
        mbs = self.cfg.micro_batch_size
        if self.epoch_len is not None and state.samples + mbs > self.epoch_len:
            # epoch boundary: a new shuffle, the same on every rank
            state.epoch, state.samples = state.epoch + 1, 0
            self._it = None
        if self._it is None:
            self._it = self._start(state)
        x, y = next(self._it)
        state.samples += mbs
        if self.padded:  # counted on the host, before the copy: no device sync
            self.pad_tokens += int((y == IGNORE_INDEX).sum())
            self.tokens += y.numel()
        return self.to_device(x), y.to(self.device, non_blocking=self.settings.pin_memory)

    def sample_batch(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """One micro-batch for counting FLOPs, drawn without touching any RNG stream or the data position."""
        mbs = self.cfg.micro_batch_size
        with seeded_rng(0):
            if self.streaming:
                it = iter(self.dataset)
                items = [next(it) for _ in range(mbs)]
            else:
                items = [self.dataset[i] for i in range(mbs)]
        x, y = (self.collate or default_collate)(items)
        return self.to_device(x), y.to(self.device)


# ---- checkpoints: the seam for sharded state ----

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


# ---- the loop ----

@dataclass
class LoopResult:
    start_step: int
    train_s: float
    last_loss: float
    samples_per_step: int


def train_loop(cfg: Config, task: Task, rt: Runtime, tr: Trainer, metrics: Metrics,
               stop: Dict[str, bool]) -> LoopResult:
    st, data, world = tr.state, tr.data, rt.world
    prof, prof_end = start_profiler(cfg, rt, st.step)
    tr.model.train()
    t_start = t_log = time.perf_counter()
    wait_s, ckpt_s, steps_since_log, start_step = 0.0, 0.0, 0, st.step
    loss_sum = torch.zeros((), device=rt.device)  # stays on the device: reading it would sync every step
    grad_norm = torch.zeros((), device=rt.device)
    last_loss = float("nan")
    samples_per_step = cfg.micro_batch_size * cfg.grad_accum * world
    while st.step < cfg.steps:
        for micro in range(cfg.grad_accum):
            t_wait = time.perf_counter()
            x, y = data.next(st)
            wait_s += time.perf_counter() - t_wait
            # Gradients are all-reduced only on the last micro-step; the others just accumulate locally.
            sync_ctx = (tr.sync_model.no_sync() if tr.sync_model is not None and micro < cfg.grad_accum - 1
                        else contextlib.nullcontext())
            with sync_ctx:
                with rt.autocast():
                    loss = task.loss_fn(tr.model(x), y) / cfg.grad_accum
                st.scaler.scale(loss).backward()
            loss_sum += loss.detach()
        lr = st.optimizer.param_groups[0]["lr"]  # this step's; the scheduler moves on to the next one's
        grad_norm = optimizer_step(st, cfg)
        st.step += 1
        steps_since_log += 1
        if prof is not None:
            prof.step()
            if st.step >= prof_end:
                prof.stop()
                prof = None
        # Every step, all ranks agree whether any got SIGTERM, so all stop (and checkpoint) at this same step.
        stopping = rt.any_rank(stop["requested"])
        if stopping or st.step % cfg.log_interval == 0 or st.step == cfg.steps:
            # The only device sync of the step: the interval's loss (averaged over ranks) and grad norm.
            stats = torch.stack([loss_sum, grad_norm.float()])
            if world > 1:
                rt.all_reduce(stats)
                stats /= world
            mean_loss, gnorm = stats.tolist()
            mean_loss /= steps_since_log
            now = time.perf_counter()
            dt = now - t_log - ckpt_s  # checkpoint writes are not training time
            rec: Dict[str, Any] = {
                "step": st.step, "epoch": st.epoch, "loss": round(mean_loss, 5), "lr": lr,
                "samples_per_s": round(steps_since_log * samples_per_step / dt, 2),
                "step_time_s": round(dt / steps_since_log, 5), "data_wait_frac": round(wait_s / dt, 4),
                "grad_norm": round(gnorm, 5), "peak_mem_mb": round(peak_memory_mb(rt.device), 1)}
            if ckpt_s:
                rec["checkpoint_s"] = round(ckpt_s, 3)
            if task.tokens_per_sample:
                rec["tokens_per_s"] = round(rec["samples_per_s"] * task.tokens_per_sample, 1)
            if data.padded and data.tokens:  # rank 0's share, scaled: ranks see batches of similar lengths
                rec["padding_frac"] = round(data.pad_tokens / data.tokens, 4)
                rec["tokens_per_s"] = round((data.tokens - data.pad_tokens) * world / dt, 1)
                data.pad_tokens = data.tokens = 0
            if tr.flops_per_step and tr.peak_tflops:
                rec["mfu"] = round(tr.flops_per_step / rec["step_time_s"] / (tr.peak_tflops * 1e12), 5)
            metrics.write(rec)
            metrics.progress(steps_since_log, mean_loss)
            last_loss = mean_loss
            loss_sum.zero_()
            t_log, wait_s, ckpt_s, steps_since_log = now, 0.0, 0.0, 0
            if stopping:
                break
        if cfg.ckpt_interval and st.step % cfg.ckpt_interval == 0 and st.step < cfg.steps:
            t_ckpt = time.perf_counter()
            save_checkpoint(st, cfg, rt)
            ckpt_s += time.perf_counter() - t_ckpt
    if prof is not None:
        prof.stop()
    return LoopResult(start_step, time.perf_counter() - t_start, last_loss, samples_per_step)


def optimizer_step(st: TrainState, cfg: Config) -> torch.Tensor:
    """Unscale, clip, step (skipped by the scaler on fp16 overflow), zero, advance the schedule; the grad norm."""
    st.scaler.unscale_(st.optimizer)  # clip true gradients, not fp16-scaled ones
    grad_norm = shard.full_norm(torch.nn.utils.clip_grad_norm_(st.model.parameters(), cfg.grad_clip or math.inf))
    st.scaler.step(st.optimizer)  # skips the update if fp16 gradients overflowed
    st.scaler.update()
    st.optimizer.zero_grad(set_to_none=True)  # frees gradient memory; the next backward writes, not adds
    st.scheduler.step()
    return grad_norm


def start_profiler(cfg: Config, rt: Runtime, step: int) -> Tuple[Any, int]:
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


# ---- evaluation and summary ----

def summarize(cfg: Config, task: Task, rt: Runtime, tr: Trainer, res: LoopResult) -> Dict[str, Any]:
    step = tr.state.step
    stopped_early = step < cfg.steps
    summary: Dict[str, Any] = {"event": "summary", "model": cfg.preset or cfg.model, "step": step,
                               "steps_this_run": step - res.start_step, "world_size": rt.world,
                               "train_s": round(res.train_s, 2), "final_train_loss": round(res.last_loss, 5),
                               "stopped_early": stopped_early, "run_dir": str(rt.run_dir), **task.notes}
    if step > res.start_step:
        summary["samples_per_s"] = round((step - res.start_step) * res.samples_per_step / res.train_s, 2)
    if task.val_set is not None and not stopped_early:
        summary.update(evaluate(tr.model, task, cfg, rt, tr.data.to_device))
    return summary


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


def resume_offset(state: Dict[str, Any], where: Path, cfg: Config, rt: Runtime, train_state: TrainState,
                  say: Callable[[str], None]) -> int:
    """Where in its epoch this rank continues (samples consumed), with its RNG streams put back; warns about
    whatever makes the resume not bit-exact. Counting samples, not batches, keeps a changed micro_batch_size from
    skipping or repeating data."""
    saved_cfg = state.get("config", {})
    world, rank = rt.world, rt.rank
    saved_world = state.get("world_size", world)
    saved_mbs = saved_cfg.get("micro_batch_size")
    if not isinstance(saved_mbs, int) or isinstance(saved_mbs, bool) or saved_mbs < 1:
        saved_mbs = cfg.micro_batch_size
    offset = state.get("samples", state["pos"] * saved_mbs)  # checkpoints before `samples` have only `pos`
    if saved_world != world:  # a different world size reshards the data: continue, but not bit-exactly
        say(f"hosttune.engine: warning: checkpoint was written by {saved_world} rank(s), this run has {world}: "
            f"data order and RNG streams restart")
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
            f"skipped or repeated; the effective batch changes from {saved_mbs} x "
            f"{brief(saved_cfg.get('grad_accum', cfg.grad_accum))} x {saved_world} to {cfg.micro_batch_size} x "
            f"{cfg.grad_accum} x {world}")
    return offset


@torch.no_grad()
def evaluate(model: nn.Module, task: Task, cfg: Config, rt: Runtime, to_device: Callable) -> Dict[str, Any]:
    """Mean loss (and accuracy) over each rank's shard of the validation set, summed over ranks."""
    assert task.val_set is not None
    collate = getattr(task.val_set, "collate", None)
    loader: Iterable[Any]
    if isinstance(task.val_set, IterableDataset):  # one pass, every world-th sample on each rank
        loader = iterable_batches(task.val_set, rt.world, rt.rank, cfg.micro_batch_size, collate or default_collate)
    else:
        sampler = ResumableSampler(task.val_set, rt.world, rt.rank, cfg.seed, shuffle=False)
        loader = DataLoader(task.val_set, batch_size=cfg.micro_batch_size, sampler=sampler, collate_fn=collate)
    totals = torch.zeros(3, device=rt.device, dtype=torch.float64)  # loss*n, correct, n
    model.eval()
    for i, (x, y) in enumerate(loader):
        if i == cfg.eval_batches:
            break
        x, y = to_device(x), y.to(rt.device)
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


def iterable_batches(dataset: Any, world: int, rank: int, size: int, collate: Callable) -> Iterator[Any]:
    batch: List[Any] = []
    for j, sample in enumerate(dataset):
        if j % world == rank:
            batch.append(sample)
            if len(batch) == size:
                yield collate(batch)
                batch = []
    if batch:
        yield collate(batch)


def summary_line(s: Dict[str, Any]) -> str:
    parts = [f"hosttune.engine: {'stopped' if s['stopped_early'] else 'done'}: {s['model']} step {s['step']} "
             f"on {s['world_size']} rank(s) in {s['train_s']}s"]
    if "samples_per_s" in s:
        parts.append(f"{s['samples_per_s']} samples/s")
    parts.append(f"train loss {s['final_train_loss']:.4f}")
    if "val_loss" in s:
        parts.append(f"val loss {s['val_loss']:.4f}")
    if "unigram_entropy" in s:
        parts.append(f"unigram entropy {s['unigram_entropy']:.4f} nats")
    if "val_accuracy" in s:
        chance = f" (chance {s['chance_accuracy']:.3f})" if "chance_accuracy" in s else ""
        parts.append(f"val accuracy {s['val_accuracy']:.3f}{chance}")
    if s["stopped_early"]:
        parts.append("checkpoint saved; run again with --resume to continue")
    return ", ".join(parts)
