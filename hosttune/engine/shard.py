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
directory is input like any other, so both go through allow-lists here (`SafeReader`, `SafePlanner`): the metadata
through the project's one unpickler (hosttune/unpickle.py) with the exact globals DCP writes, its data files named
by plain names inside the directory and opened without following links.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import pickle
import stat
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import torch
from torch import nn

from hosttune import unpickle
from hosttune.fsio import fsync_dir

from .checkpoint import SHARDED_DIR as DCP_DIR  # inside step-N/

# torch.distributed.checkpoint is imported only where it is used, never with this module: importing it (with FSDP
# and DTensor behind it) made 2 of 5 plain DDP gloo runs hang at exit here - ProcessGroupGloo's destructor joins
# its worker thread with the GIL held while that thread waits for the GIL to free a finished work's tensor.

SHARDED = ("zero1", "fsdp")


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


def grad_scaler(device_type: str) -> torch.amp.GradScaler:
    """fp16 under FSDP: each rank unscales only its shard of the gradients, so an inf/NaN is seen by one rank;
    ShardedGradScaler all-reduces the finding so every rank skips that step (a plain GradScaler would let the
    ranks' parameters diverge). Checked on 2 gloo ranks with an inf on one: both skipped, both halved the scale.

    ShardedGradScaler records `found_inf` with shape [1] where GradScaler uses a scalar; a fused optimizer (AdamW,
    fused=True: the engine's default) takes it as its `found_inf` and subtracts it from its scalar step counts:
    "output with shape [] doesn't match the broadcast shape [1]" at the first step (torch 2.13). And the finding is
    all-reduced as a sum (2.0 when two ranks overflowed), where the fused kernel skips only on exactly 1.0 and
    subtracts it from the step count: the overflowed step was applied, NaN into every weight. So once all-reduced,
    each finding becomes a scalar 0.0 or 1.0."""
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

    class ScalarInfShardedGradScaler(ShardedGradScaler):
        def unscale_(self, optimizer: torch.optim.Optimizer) -> None:
            super().unscale_(optimizer)
            found = self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
            for where, flag in list(found.items()):
                found[where] = (flag.reshape(()) > 0).to(flag.dtype)

    return ScalarInfShardedGradScaler(device=device_type)


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

def optimizer_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> Dict[str, Dict[str, Any]]:
    """This rank's optimizer state keyed by parameter name ({name: {"step", "exp_avg", ...}}). ZeRO ranks hold
    disjoint names and FSDP ranks shards (DTensors) of every name, so DCP's files cover each value exactly once
    and any world size finds what it needs. (torch's flattened get_state_dict fails on the empty parameter group a
    ZeRO partition can leave a rank.)"""
    names = {id(p): name for name, p in model.named_parameters()}
    local = local_optimizer(optimizer)
    return {names[id(p)]: dict(local.state[p]) for group in local.param_groups for p in group["params"]
            if p in local.state}


def save(model: nn.Module, optimizer: torch.optim.Optimizer, where: Path) -> None:
    """Collective: every rank writes its shard of the model and optimizer into `where` (fsynced)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    state = {"model": get_model_state_dict(model), "optim": optimizer_state(model, optimizer)}
    try:
        with _one_process_quiet():
            dcp.save(state, storage_writer=dcp.FileSystemWriter(str(where), sync_files=True))
    except BaseException as exc:  # noqa: BLE001 - CheckpointException (a BaseException) wraps each rank's error
        raise _first_failure(exc) from None
    fsync_dir(where)


def load(model: nn.Module, optimizer: torch.optim.Optimizer, where: Path) -> None:
    """Collective: read model and optimizer from `where`, resharded for this run's ranks, in place. Raises
    RuntimeError when the checkpoint does not fit (the caller words it). The optimizer's hyperparameters are not
    in the checkpoint: they come from the config and the LR scheduler's state."""
    from torch.distributed.checkpoint.state_dict import (
        _init_optim_state,
        get_model_state_dict,
        set_model_state_dict,
    )

    # DCP loads into existing tensors: AdamW's state is created by one zero-gradient step at lr 0 (what DCP's
    # own get_state_dict does).
    _init_optim_state(local_optimizer(optimizer))
    msd = get_model_state_dict(model)
    _dcp_load({"model": msd, "optim": optimizer_state(model, optimizer)}, where)
    set_model_state_dict(model, msd)


def load_model(model: nn.Module, where: Path) -> None:
    """The model alone, full (unsharded) on this process: for export. No process group needed."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict

    msd = get_model_state_dict(model)
    _dcp_load({"model": msd}, where)  # in place: DCP fills the tensors it is given
    set_model_state_dict(model, msd)


def _dcp_load(state: Dict[str, Any], where: Path) -> None:
    import torch.distributed.checkpoint as dcp

    # The metadata is read (through the allow-list) before DCP is asked: DCP answers a failed read by logging a
    # traceback and trying again with each rank's own metadata. Refused or damaged: one line.
    try:
        read_dcp_metadata(where)
    except Exception as exc:  # noqa: BLE001 - a planted or damaged pickle fails in many ways: one reason
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise RuntimeError(f"{DCP_DIR}/.metadata: {first[:300]}") from None
    reader, planner = _safe_classes()
    try:
        with _one_process_quiet():
            dcp.load(state, storage_reader=reader(str(where)), planner=planner())
    except BaseException as exc:  # noqa: BLE001 - CheckpointException is a BaseException; one line for the user
        inner = _first_failure(exc)
        first = (str(inner).strip().splitlines() or [type(inner).__name__])[0]
        raise RuntimeError(f"{DCP_DIR}/: {type(inner).__name__}: {first}") from None


@contextlib.contextmanager
def _one_process_quiet() -> Iterator[None]:
    """Without a process group (one rank, or export) DCP warns on every call that it assumes one process: it
    does, and that is what we want."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield


def _first_failure(exc: BaseException) -> BaseException:
    """The exception behind DCP's CheckpointException ({rank: (exception, traceback)}): an OSError stays an
    OSError, so a full disk is reported as one (checkpoint._save_error). Interrupts pass through."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        raise exc
    failures = getattr(exc, "failures", None)
    if failures:
        inner = next(iter(failures.values()))
        return inner[0] if isinstance(inner, tuple) else inner
    return exc


# ---- reading DCP checkpoints without running their pickles ----

# Exactly the globals DCP's `.metadata` names (listed with a recording Unpickler from real checkpoints: zero1 and
# fsdp+offload on 2 gloo ranks, fsdp on one, and a state dict with bf16/int64 tensors, a transposed tensor and plain
# values, torch 2.13), plus the dtypes the engine's state can hold. Exact pairs only, through the project's one
# unpickler (hosttune/unpickle.py): a module prefix let a dotted name walk to `os.system` (issue 22).
_DCP = "torch.distributed.checkpoint."
DCP_METADATA_GLOBALS = unpickle.allow([
    (_DCP + "metadata", "Metadata"), (_DCP + "metadata", "MetadataIndex"), (_DCP + "metadata", "StorageMeta"),
    (_DCP + "metadata", "TensorStorageMetadata"), (_DCP + "metadata", "BytesStorageMetadata"),
    (_DCP + "metadata", "ChunkStorageMetadata"), (_DCP + "metadata", "TensorProperties"),
    (_DCP + "metadata", "_MEM_FORMAT_ENCODING"), (_DCP + "filesystem", "_StorageInfo"),
    ("torch.serialization", "_get_layout"), ("torch", "Size"), ("pathlib", "PosixPath"),
    *(("torch", dtype) for dtype in ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8",
                                      "uint8", "bool")),
])
# A `.metadata` lists every chunk of every tensor: ~200 bytes each; far above any model this engine trains.
METADATA_LIMIT = 256 << 20


def read_dcp_metadata(path: Path) -> Any:
    """The DCP `Metadata` of the checkpoint directory `path`, through the allow-list. Raises OSError (not a
    regular file, a link, too large) or pickle.UnpicklingError/ValueError (refused global, damaged, not DCP's)."""
    from torch.distributed.checkpoint.metadata import Metadata

    metadata = unpickle.load_file(path / ".metadata", DCP_METADATA_GLOBALS, "a checkpoint's metadata",
                                  METADATA_LIMIT, nofollow=True)
    if not isinstance(metadata, Metadata):
        raise pickle.UnpicklingError(f"not DCP metadata (a {type(metadata).__name__})")
    storage = getattr(metadata, "storage_data", None)
    if not isinstance(storage, dict):  # DCP's save always writes one (empty without tensors): a damaged file
        raise pickle.UnpicklingError(f"not DCP metadata (its storage data is a {type(storage).__name__})")
    for info in storage.values():
        name = getattr(info, "relative_path", None)
        # Each data file is a plain name inside the checkpoint directory: "../x" or "/etc/shadow" would have DCP
        # read another file (as root, into a model that is then exported where its owner can read it).
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise pickle.UnpicklingError(f"data file name {name!r} is not a plain name in the checkpoint directory")
    return metadata


def _open_nofollow(path: Any) -> Any:
    """A data file of the checkpoint, opened without following a link, regular files only (a FIFO is refused
    without blocking)."""
    fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def safe_reader(path: Path) -> Any:
    """A DCP FileSystemReader for `path` whose `.metadata` may only name DCP's own metadata classes (and torch's
    dtypes/sizes): a planted pickle is refused instead of run."""
    return _safe_classes()[0](str(path))


@functools.lru_cache(maxsize=None)
def _safe_classes() -> Any:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
    from torch.distributed.checkpoint.filesystem import FileSystem

    class NoFollowFileSystem(FileSystem):
        """DCP's file system, reading each data file without following a link planted at its name."""

        @contextlib.contextmanager
        def create_stream(self, path: Any, mode: str) -> Iterator[Any]:
            if mode != "rb":
                raise OSError(errno.EROFS, "a checkpoint is only read here", str(path))
            with _open_nofollow(path) as stream:
                yield stream

    class SafeReader(dcp.FileSystemReader):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.fs = NoFollowFileSystem()

        def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
            metadata = read_dcp_metadata(Path(str(self.path)))
            if getattr(metadata, "storage_meta", None) is None:
                from torch.distributed.checkpoint.metadata import StorageMeta

                metadata.storage_meta = StorageMeta()
            metadata.storage_meta.load_id = self.load_id
            return metadata

    class SafePlanner(DefaultLoadPlanner):
        """Non-tensor values are loaded with weights_only=True (DCP's own planner unpickles them)."""

        def load_bytes(self, read_item: Any, value: io.BytesIO) -> None:
            obj = torch.load(value, weights_only=True)
            if self.flatten_state_dict:
                from torch.distributed.checkpoint._traverse import set_element

                set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], obj)
            else:
                self.state_dict[read_item.dest_index.fqn] = obj

    return SafeReader, SafePlanner
