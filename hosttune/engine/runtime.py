"""Where and how this rank runs (`Runtime`): its device, the process group, determinism switches, the run
directory; `setup` makes it and `teardown` undoes it.

The process group's teardown is the subtle part: the group must really be destroyed while the interpreter runs
(see `teardown`, GROUP_DEFAULT_MODULES and `unpin_group`), or a gloo worker thread aborts the process at exit.
"""

from __future__ import annotations

import importlib
import os
import random
import sys
import time
import types
import weakref
from collections import deque
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Deque, Optional

import numpy as np
import torch
import torch.distributed as dist

from . import oom, shard
from .config import Config
from .data import deterministic_setting
from .errors import EngineError
from .precision import autocast, resolve_amp


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


def unpin_group(group: object) -> int:
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


# How many process groups the engine has made in this process (see init_process_group).
_groups_made = [0]
# How long a rank waits at teardown for rank 0's store to close (see await_store_close): a bound, never a delay.
STORE_CLOSE_WAIT = timedelta(minutes=2)


def init_process_group(backend: str, rank: int, world: int) -> Optional[dist.Store]:
    """The process group from torchrun's env, isolated per elastic attempt and per fit() in one process. Returns the
    store when rank 0 hosts it and this is another rank (teardown waits for it to close: await_store_close).

    torchrun's agent keeps its store across restarts, so after a rank died the new attempt can read the dead
    attempt's keys - gloo then dials the old rank 0's listening port ("Connection refused", or a hang). A key
    prefix per TORCHELASTIC_RESTART_COUNT gives every attempt a clean namespace. A script that calls fit() twice
    makes two groups in one attempt, and torch names each new default group as it named the first: the second
    would read the first one's addresses (a hang), so the prefix also counts the groups this process has made
    (every rank makes the same ones in the same order).
    """
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if attempt is None:
        dist.init_process_group(backend)  # plain env:// rendezvous (not under torchrun)
        return None
    # torchrun's agent hosts the store (torch >= 2.4's default); else rank 0 does (torch 2.1-2.3's c10d
    # rendezvous, TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1).
    agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                          is_master=not agent_store and rank == 0, timeout=timedelta(minutes=10))
    prefix = f"hosttune/attempt_{attempt}/group_{_groups_made[0]}"
    _groups_made[0] += 1
    dist.init_process_group(backend, store=dist.PrefixStore(prefix, store), rank=rank, world_size=world)
    return store if not agent_store and rank != 0 else None


def await_store_close(store: dist.Store) -> None:
    """Return once rank 0's store server has closed (the connection to it drops), at most STORE_CLOSE_WAIT later.

    Rank 0's store goes with the group it serves. A rank that went on before it closed could connect to it for
    whatever comes next on MASTER_PORT (a second fit(), the script's own init_process_group) and lose that
    connection a moment later: "Failed to recv, got 0 bytes", on a loaded machine. The wait is for a key nobody
    sets; it ends when the server goes away (or, bounded, at STORE_CLOSE_WAIT)."""
    try:
        store.wait(["hosttune/never-set"], STORE_CLOSE_WAIT)
    except RuntimeError:  # torch's DistNetworkError (closed: the expected end) or DistStoreError (the bound)
        pass


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
    master_store: Optional[Any] = None  # rank 0's store, on the other ranks where rank 0 hosts it (teardown)
    flag_group: Optional[dist.ProcessGroup] = None  # the CPU group the per-step stop flag is all-reduced in (world > 1)
    cuda_memory: Optional[Any] = None  # torch.cuda.memory while it records the allocator's history (oom.py)
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
            dist.barrier(device_ids=[self.device.index]) if self.cuda else dist.barrier()

    def all_reduce(self, tensor: torch.Tensor, op: dist.ReduceOp.RedOpType = dist.ReduceOp.SUM,
                   group: Optional[dist.ProcessGroup] = None) -> None:
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

    def autocast(self) -> torch.autocast:
        return autocast(self.device, self.amp_dtype)


def setup(cfg: Config) -> Runtime:
    """Device, process group, precision and determinism switches, run directory."""
    user_group = dist.is_available() and dist.is_initialized()  # the caller's own process group: use it
    world = dist.get_world_size() if user_group else int(os.environ.get("WORLD_SIZE", "1"))
    rank = dist.get_rank() if user_group else int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise EngineError("device=cuda but torch sees no CUDA device (CPU-only torch build, or no driver)")
    use_cuda = cfg.device != "cpu" and torch.cuda.is_available()
    device = rank_device(local_rank, torch.cuda.device_count()) if use_cuda else torch.device("cpu")
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
    if use_cuda and cfg.memory_history:  # from the start: an OOM's snapshot shows what led up to it
        rt.cuda_memory = oom.start_memory_history(torch.cuda.memory, cfg.memory_history)
    if world > 1 and not dist.is_initialized():
        import_group_default_modules(cfg.shard in shard.SHARDED)
        rt.master_store = init_process_group("nccl" if use_cuda else "gloo", rank, world)
        rt.owns_group = True
    try:
        determinism_switches(cfg, deterministic, use_cuda)
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


def rank_device(local_rank: int, visible: int) -> torch.device:
    """This rank's GPU: the one the plan gives it (hosttune.plan: local rank modulo the GPUs CUDA_VISIBLE_DEVICES
    leaves), not cuda:LOCAL_RANK, which assumes every GPU is visible to every rank. A launcher that gives each rank
    one GPU (CUDA_VISIBLE_DEVICES of one device, Slurm's --gpus-per-task) leaves each rank its cuda:0."""
    if visible < 1:
        raise EngineError("torch sees no CUDA device (CUDA_VISIBLE_DEVICES hides them all?)")
    return torch.device("cuda", local_rank % visible)


def determinism_switches(cfg: Config, deterministic: bool, cuda: bool) -> None:
    """torch's process-wide switches that trade speed for run-to-run equality."""
    # Autotuned kernels are fastest but may differ run to run; with varying input shapes each new shape is
    # tuned again, so it has its own switch.
    torch.backends.cudnn.benchmark = (cfg.cudnn_benchmark if cfg.cudnn_benchmark is not None
                                      else not deterministic)
    torch.backends.cudnn.deterministic = deterministic
    torch.use_deterministic_algorithms(deterministic)
    if cuda:
        # TF32 matmuls on Ampere+: ~8x the fp32 rate for the parts autocast leaves in fp32. Deterministic mode
        # keeps them: TF32 changes the precision, not the run-to-run equality (the same inputs round the same way).
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


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
    if rt.cuda_memory is not None:  # a script calling fit() does not keep paying for the recording
        oom.stop_memory_history(rt.cuda_memory)
        rt.cuda_memory = None
    try:
        if finished and rt.world > 1 and dist.is_initialized():
            rt.barrier()  # a peer that died after finishing raises here: the group still goes (finally)
    finally:
        if rt.flag_group is not None and rt.flag_group is not dist.group.WORLD and dist.is_initialized():
            dist.destroy_process_group(rt.flag_group)
        rt.flag_group = None
        if rt.owns_group and dist.is_initialized():
            group = weakref.ref(dist.group.WORLD)
            dist.destroy_process_group()
            rt.owns_group = False
            if group() is not None:
                unpin_group(group())  # the last reference goes with it: destroyed now
        if rt.master_store is not None:
            store, rt.master_store = rt.master_store, None
            if finished:  # rank 0 passed the barrier too: its store closes now (a failed run's rank just leaves)
                await_store_close(store)
        rt._recent.clear()
