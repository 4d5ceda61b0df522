"""Sharded training (`shard: none | zero1 | fsdp`, `offload: cpu`) and its checkpoints through
torch.distributed.checkpoint (DCP).

zero1 keeps DDP's replicated parameters and gradients but gives each rank the AdamW state (two fp32 values per
parameter) of only its share of the parameters (ZeroRedundancyOptimizer); fsdp shards parameters, gradients and
optimizer state (FSDP2 `fully_shard` on every block, then the root), with the sharded state optionally kept in host
memory (`offload: cpu`).

A sharded run's checkpoint keeps the engine's layout (`step-N/state.pt` from rank 0 with the counters, scheduler and
scaler; `rng-rank<R>.pt` per rank) and puts the model and optimizer in `step-N/dcp/`, written by every rank at once.
Keys are parameter names (the optimizer's flattened too, one key per parameter and statistic), never rank-local
indices, so a checkpoint loads on any number of ranks, with or without sharding: DCP reshards on load.

DCP's reader unpickles `.metadata` and torch.load()s non-tensor values with `weights_only=False`; a checkpoint
directory is input like any other, so both go through allow-lists here (`SafeReader`, `SafePlanner`).
"""

from __future__ import annotations

import contextlib
import io
import pickle
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_state_dict,
)

from hosttune.fsio import fsync_dir

DCP_DIR = "dcp"  # inside step-N/
SHARDED = ("zero1", "fsdp")
_FLAT = StateDictOptions(flatten_optimizer_state_dict=True)


# ---- wrapping ----

def blocks(model: nn.Module) -> List[nn.Module]:
    """The repeated blocks FSDP shards one by one: the outermost non-leaf children of every ModuleList or
    Sequential (a GPT's transformer blocks, a ResNet's residual blocks). Each is gathered just before its forward
    and freed after, so only one block's full parameters exist at a time. A flat nn.Sequential of layers has none:
    the root alone then holds everything."""
    found: List[nn.Module] = []
    inside: set = set()
    for module in model.modules():
        if id(module) in inside:
            continue
        if isinstance(module, (nn.ModuleList, nn.Sequential)):
            for child in module.children():
                if any(True for _ in child.children()) and any(True for _ in child.parameters()):
                    found.append(child)
                    inside.update(id(m) for m in child.modules())
    return found


def fully_shard_model(model: nn.Module, amp_dtype: Optional[torch.dtype], offload: str, cuda: bool) -> nn.Module:
    """FSDP2 on every block, then the root (which keeps what no block owns: embeddings, tied head, final norm).

    Mixed precision follows the engine's amp: parameters are gathered in the autocast dtype, gradients reduced in
    fp32 (a bf16 reduce-scatter over many ranks loses the small contributions). amp=off gathers fp32."""
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

    kwargs: Dict[str, Any] = {}
    if amp_dtype is not None:
        kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=amp_dtype, reduce_dtype=torch.float32)
    if offload == "cpu":
        kwargs["offload_policy"] = CPUOffloadPolicy(pin_memory=cuda)  # pinned: async host<->GPU copies
    for block in blocks(model):
        fully_shard(block, **kwargs)
    fully_shard(model, **kwargs)
    return model


class GradSync:
    """FSDP's counterpart of DDP.no_sync() for gradient accumulation: the micro-steps before the last keep their
    unsharded gradients locally, and only the last one reduce-scatters."""

    def __init__(self, model: nn.Module):
        self.model = model

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        self.model.set_requires_gradient_sync(False)  # type: ignore[operator]
        try:
            yield
        finally:
            self.model.set_requires_gradient_sync(True)  # type: ignore[operator]


def zero_optimizer(groups: List[Dict[str, Any]], **kwargs: Any) -> torch.optim.Optimizer:
    """AdamW whose state each rank keeps for its share of the parameters only (it broadcasts its updated share
    after step())."""
    from torch.distributed.optim import ZeroRedundancyOptimizer

    return ZeroRedundancyOptimizer(groups, optimizer_class=torch.optim.AdamW, **kwargs)


def local_optimizer(optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """The optimizer that holds this rank's state: ZeroRedundancyOptimizer's inner one, else itself."""
    return getattr(optimizer, "optim", optimizer) if type(optimizer).__name__ == "ZeroRedundancyOptimizer" \
        else optimizer


def full_norm(norm: torch.Tensor) -> torch.Tensor:
    """clip_grad_norm_ over FSDP's sharded gradients returns a DTensor (already reduced over ranks): the plain
    tensor, so it stacks with the other metrics."""
    full = getattr(norm, "full_tensor", None)
    return full() if callable(full) else norm


# ---- checkpoints ----

def save(model: nn.Module, optimizer: torch.optim.Optimizer, where: Path) -> None:
    """Collective: every rank writes its shard of the model and optimizer into `where` (fsynced)."""
    msd, osd = get_state_dict(model, local_optimizer(optimizer), options=_FLAT)
    dcp.save({"model": msd, "optim": osd}, storage_writer=dcp.FileSystemWriter(str(where), sync_files=True))
    fsync_dir(where)


def load(model: nn.Module, optimizer: torch.optim.Optimizer, where: Path) -> None:
    """Collective: read model and optimizer from `where` resharded for this run's ranks. Raises RuntimeError when
    the checkpoint does not fit (the caller words it)."""
    # get_state_dict creates the optimizer's state (a zero-gradient, lr 0 step) so DCP has tensors to load into.
    msd, osd = get_state_dict(model, local_optimizer(optimizer), options=_FLAT)
    state = {"model": msd, "optim": osd}
    _dcp_load(state, where)
    set_state_dict(model, local_optimizer(optimizer), model_state_dict=state["model"],
                   optim_state_dict=state["optim"], options=_FLAT)


def load_model(model: nn.Module, where: Path) -> None:
    """The model alone, full (unsharded) on this process: for export. No process group needed."""
    msd = get_model_state_dict(model)
    state = {"model": msd}
    _dcp_load(state, where)
    set_model_state_dict(model, state["model"])


def _dcp_load(state: Dict[str, Any], where: Path) -> None:
    try:
        dcp.load(state, storage_reader=SafeReader(str(where)), planner=SafePlanner())
    except BaseException as exc:  # noqa: BLE001 - CheckpointException is a BaseException; one line for the user
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        failures = getattr(exc, "failures", None)  # CheckpointException: {rank: (exception, traceback)}
        if failures:
            exc = next(iter(failures.values()))[0]
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise RuntimeError(f"{DCP_DIR}/: {type(exc).__name__}: {first}") from None


def dcp_complete(step_dir: Path) -> Optional[str]:
    """Why `step_dir`'s sharded part cannot be used (None when it can): a save that crashed never renamed its
    directory into place, so this only catches a directory damaged later."""
    meta = step_dir / DCP_DIR / ".metadata"
    if meta.is_symlink() or not meta.is_file():
        return f"{DCP_DIR}/.metadata is missing"
    return None


# ---- reading DCP checkpoints without running their pickles ----

_ALLOWED_MODULES = ("torch.distributed.checkpoint.", "torch.distributed._shard.")
_ALLOWED_GLOBALS = {("torch", "Size"), ("torch", "float32"), ("torch", "float16"), ("torch", "bfloat16"),
                    ("torch", "float64"), ("torch", "int64"), ("torch", "int32"), ("torch", "int8"),
                    ("torch", "uint8"), ("torch", "bool"), ("torch", "strided"), ("torch", "sparse_coo"),
                    ("torch", "contiguous_format"), ("torch", "channels_last"), ("torch", "preserve_format"),
                    ("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
                    ("builtins", "slice"), ("torch.serialization", "_get_layout"), ("pathlib", "PosixPath"),
                    ("pathlib", "PurePosixPath"),
                    ("torch._utils", "_rebuild_tensor_v2")}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module.startswith(_ALLOWED_MODULES) or (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a checkpoint's metadata")


class SafeReader(dcp.FileSystemReader):
    """FileSystemReader whose `.metadata` may only name DCP's own metadata classes (and torch's dtypes/sizes):
    a planted pickle is refused instead of run."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
        path = Path(str(self.path)) / ".metadata"
        with open(path, "rb") as f:
            metadata = _Unpickler(f).load()
        if getattr(metadata, "storage_meta", None) is None:
            from torch.distributed.checkpoint.metadata import StorageMeta

            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


class SafePlanner(DefaultLoadPlanner):
    """Non-tensor values (the optimizer's lr, betas, ...) are loaded with weights_only=True."""

    def load_bytes(self, read_item: Any, value: io.BytesIO) -> None:
        obj = torch.load(value, weights_only=True)
        if self.flatten_state_dict:
            from torch.distributed.checkpoint._traverse import set_element

            set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], obj)
        else:
            self.state_dict[read_item.dest_index.fqn] = obj

