"""Atomic, multi-rank checkpoints: `<run>/checkpoints/step-NNNNNNN/{state.pt, rng-rank<R>.pt}`.

Writing: every rank writes its own RNG file into a staging directory, rank 0 adds the shared state (model,
optimizer, scaler, scheduler, counters); once every file is fsynced, rank 0 renames the directory into place and
fsyncs the checkpoints directory. Only then are older checkpoints pruned, so the last good checkpoint is never
deleted before its replacement is durable. A rename is atomic, so a directory named `step-*` is always complete: a
crash mid-save leaves only a `.tmp-step-*` directory, which the next save removes. Saving a step that already
exists moves the old directory to `.replaced-step-*` only after the new one is complete, and deletes it only after
the new one is in place; a crash between those two renames leaves the old one, which is still listed and loaded.

A sharded run (shard=zero1/fsdp) also writes `dcp/` into the staging directory: every rank its shard of the model
and optimizer through torch.distributed.checkpoint (`shard.save`, files fsynced), before anything else, so the same
agree/rename/prune steps make it durable and visible with the rest, or not at all.

Reading trusts nothing: files are loaded with `weights_only=True` (they hold only tensors and plain Python values,
RNG states included, so no allow-list is needed and a planted pickle cannot run code), regular files only, and a
checkpoint that fails to load or has the wrong shape is reported so the caller can fall back to an older one.
"""

from __future__ import annotations

import errno
import os
import random
import re
import shutil
import stat
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

from hosttune import fsio
from hosttune.fsio import fsync_dir
from hosttune.yamlio import brief

STEP_RE = re.compile(r"^step-(\d+)$")
REPLACED_RE = re.compile(r"^\.replaced-step-(\d+)$")  # an old copy of a step being saved again
STAGE_PREFIX = ".tmp-step-"
SHARDED_DIR = "dcp"  # a sharded run's model and optimizer (torch.distributed.checkpoint), inside step-N/
SHARD_KINDS = ("none", "zero1", "fsdp")
_SHARED_KEYS = {"model": dict, "optimizer": dict, "scheduler": dict, "scaler": dict, "step": int, "epoch": int,
                "pos": int}
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)

Agree = Callable[[bool], bool]  # collective: True only when every rank passed True (also a barrier)


class CheckpointError(Exception):
    """A checkpoint could not be written: one line for the user (the previous checkpoint is intact)."""


class Unusable(Exception):
    """A checkpoint that cannot be loaded (truncated, corrupt, incomplete, not ours); the message says why."""


def _alone(ok: bool) -> bool:
    return ok


def atomic_save(obj: Any, path: Path) -> None:
    """torch.save through hosttune's one atomic write: a random temp name in the same directory, fsync, rename
    over `path`, fsync the directory."""
    with fsio.atomic_writer(path, 0o644) as f:
        torch.save(obj, f)


def rng_state(cuda: bool) -> Dict[str, Any]:
    """Every RNG stream as tensors and plain values: loadable with weights_only=True, no numpy pickles."""
    name, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)  # the 5-tuple, not the dict form
    state: Dict[str, Any] = {"python": random.getstate(),
                             "numpy": (str(name), np.asarray(keys).tolist(), int(pos), int(has_gauss), float(gauss)),
                             "torch": torch.get_rng_state()}
    if cuda:
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Dict[str, Any], cuda: bool) -> None:
    """Raises ValueError/TypeError/KeyError on a malformed state (the caller then reseeds and warns)."""
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    np.random.set_state(tuple(state["numpy"]))
    torch.set_rng_state(state["torch"])
    if cuda and "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])


def step_of(path: Path) -> int:
    m = STEP_RE.match(path.name) or REPLACED_RE.match(path.name)
    assert m is not None, path
    return int(m.group(1))


def list_checkpoints(ckpt_dir: Path) -> List[Path]:
    """Complete checkpoints, oldest first. A `.replaced-step-N` counts when `step-N` is missing: a save of the same
    step crashed between moving the old copy aside and renaming the new one into place."""
    if not ckpt_dir.is_dir():
        return []
    found: Dict[int, Path] = {}
    replaced: Dict[int, Path] = {}
    for p in ckpt_dir.iterdir():
        if not p.is_dir() or p.is_symlink():
            continue
        m = STEP_RE.match(p.name)
        if m:
            found[int(m.group(1))] = p
        m = REPLACED_RE.match(p.name)
        if m:
            replaced[int(m.group(1))] = p
    for step, p in replaced.items():
        found.setdefault(step, p)
    return [found[s] for s in sorted(found)]


def latest_checkpoint(ckpt_dir: Path) -> Optional[Path]:
    done = list_checkpoints(ckpt_dir)
    return done[-1] if done else None


def _tidy(ckpt_dir: Path) -> None:
    """Rank 0, before a save: remove what crashed saves left, and put back an old copy whose replacement never
    arrived."""
    for p in ckpt_dir.iterdir():
        if p.name.startswith(STAGE_PREFIX):
            shutil.rmtree(p, ignore_errors=True)
        elif REPLACED_RE.match(p.name):
            final = ckpt_dir / f"step-{step_of(p):07d}"
            if final.exists():
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.replace(p, final)
    fsync_dir(ckpt_dir)


def _os_error(exc: BaseException) -> Optional[OSError]:
    """The OSError behind `exc`: torch.save reports a full disk as a RuntimeError whose context is the OSError."""
    seen = 0
    cur: Optional[BaseException] = exc
    while cur is not None and seen < 8:
        if isinstance(cur, OSError):
            return cur
        cur, seen = cur.__cause__ or cur.__context__, seen + 1
    return None


def _human(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _save_error(ckpt_dir: Path, final: Path, exc: OSError) -> CheckpointError:
    try:
        free = f", {_human(shutil.disk_usage(ckpt_dir).free)} free there"
    except OSError:
        free = ""
    prev = list_checkpoints(ckpt_dir)
    kept = f"the last checkpoint, {prev[-1].name}, is kept" if prev else "no earlier checkpoint exists"
    hint = "; free some space and run again with --resume" if exc.errno in _DISK_FULL else ""
    return CheckpointError(f"cannot save checkpoint {final.name} in {ckpt_dir}: {exc.strerror or exc}{free}; "
                           f"{kept}{hint}")


def save(ckpt_dir: Path, step: int, rank: int, shared: Callable[[], Dict[str, Any]], rng: Dict[str, Any],
         keep: int, agree: Agree = _alone, sharded: Optional[Callable[[Path], None]] = None) -> Path:
    """Collective: every rank must call it at the same step. `shared()` is only called on rank 0; `sharded(dir)`
    (a collective itself: torch.distributed.checkpoint) on every rank, with `<stage>/dcp`.

    A file that cannot be written (full disk, quota, permissions) raises CheckpointError on every rank, with the
    staging directory removed and every existing checkpoint untouched; any other failure is re-raised as is
    (after the same cleanup) on the rank where it happened.
    """
    final = ckpt_dir / f"step-{step:07d}"
    stage = ckpt_dir / f"{STAGE_PREFIX}{step:07d}"
    failure: Optional[BaseException] = None
    if rank == 0:
        try:
            ckpt_dir.mkdir(parents=True, exist_ok=True)
            _tidy(ckpt_dir)
            stage.mkdir()
        except OSError as exc:
            failure = exc
    if agree(failure is None):  # the staging directory exists for everyone
        try:
            if sharded is not None:  # first: it is collective, so every rank must reach it
                sharded(stage / SHARDED_DIR)
            atomic_save(rng, stage / f"rng-rank{rank}.pt")
            if rank == 0:
                atomic_save(shared(), stage / "state.pt")
        except Exception as exc:  # noqa: BLE001 - cleaned up below, then re-raised or reported in one line
            failure = exc
    elif failure is None:
        failure = CheckpointError(f"cannot save checkpoint {final.name} in {ckpt_dir}: rank 0 could not create it")
    # Every rank's file is durable before the directory becomes visible as complete; or nobody renames anything.
    if not agree(failure is None):
        if rank == 0:
            shutil.rmtree(stage, ignore_errors=True)
        if failure is None:
            raise CheckpointError(f"cannot save checkpoint {final.name} in {ckpt_dir}: another rank failed to "
                                  f"write its part; the existing checkpoints are kept")
        os_exc = _os_error(failure)
        if os_exc is not None and not isinstance(failure, CheckpointError):
            raise _save_error(ckpt_dir, final, os_exc) from None
        raise failure
    if rank == 0:
        try:
            _swap_in(stage, final)
        except OSError as exc:
            shutil.rmtree(stage, ignore_errors=True)
            failure = _save_error(ckpt_dir, final, exc)
        else:
            # Prune only checkpoints older than this one: the one just written is never a candidate.
            older = [p for p in list_checkpoints(ckpt_dir) if step_of(p) < step]
            for old in older[: max(0, len(older) - (keep - 1))]:
                shutil.rmtree(old, ignore_errors=True)
    if not agree(failure is None):  # nobody races ahead to the next save (or to exit) before the rename
        raise failure or CheckpointError(f"cannot save checkpoint {final.name} in {ckpt_dir}: rank 0 could not "
                                         f"rename it into place")
    return final


def _swap_in(stage: Path, final: Path) -> None:
    """Rename the complete staging directory to `final`. An existing `final` (the same step saved again) is moved
    aside first and deleted only once the new one is in place and the rename is durable."""
    aside = final.with_name(f".replaced-{final.name}")
    if final.exists():
        if aside.exists():
            shutil.rmtree(aside)
        os.replace(final, aside)
    try:
        os.replace(stage, final)
    except OSError:
        if aside.exists() and not final.exists():
            os.replace(aside, final)
        raise
    fsync_dir(final.parent)
    if aside.exists():
        shutil.rmtree(aside, ignore_errors=True)


def _read(path: Path, device: torch.device) -> Any:
    """torch.load of one file, weights only. A link, FIFO or device at the name is refused without blocking."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise Unusable(f"{path.name} is not a regular file")
        try:
            return torch.load(f, map_location=device, weights_only=True)
        except Exception as exc:  # noqa: BLE001 - truncated zip, refused pickle global, ...: one reason
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise Unusable(f"{path.name} is truncated, corrupt or not written by hosttune ({brief(first, 120)[1:-1]})"
                           ) from None


def load(path: Path, rank: int, device: torch.device) -> Dict[str, Any]:
    """The shared state plus this rank's RNG state: key `rng` (None when missing or unreadable; key `rng_problem`
    then says which, e.g. the run had fewer ranks). Raises Unusable when the shared state cannot be used."""
    try:
        state = _read(path / "state.pt", device)
    except FileNotFoundError:
        raise Unusable("state.pt is missing") from None
    except OSError as exc:
        raise Unusable(f"state.pt cannot be read ({exc.strerror or exc})") from None
    if not isinstance(state, dict):
        raise Unusable(f"state.pt holds {type(state).__name__}, not a checkpoint")
    for key, kind in _SHARED_KEYS.items():
        if not isinstance(state.get(key), kind) or isinstance(state.get(key), bool):
            raise Unusable(f"state.pt has no valid {key!r}")
    if state["step"] < 0 or state["epoch"] < 0 or state["pos"] < 0:
        raise Unusable("state.pt has a negative step, epoch or position")
    for key, least in (("samples", 0), ("world_size", 1)):  # optional: older checkpoints lack `samples`
        value = state.get(key, least)
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise Unusable(f"state.pt has no valid {key!r}")
    if not isinstance(state.get("config", {}), dict):
        raise Unusable("state.pt has no valid 'config'")
    if state.get("shard", "none") not in SHARD_KINDS:
        raise Unusable("state.pt has no valid 'shard'")
    meta = path / SHARDED_DIR / ".metadata"
    if state.get("shard", "none") != "none" and (meta.is_symlink() or not meta.is_file()):
        raise Unusable(f"{SHARDED_DIR}/.metadata is missing (a sharded checkpoint keeps its model there)")
    state["dir"] = path
    state["rng"], state["rng_problem"] = None, ""
    try:
        rng = _read(path / f"rng-rank{rank}.pt", torch.device("cpu"))
    except FileNotFoundError:
        state["rng_problem"] = "missing"
    except (OSError, Unusable) as exc:
        state["rng_problem"] = f"unreadable ({getattr(exc, 'strerror', None) or exc})"
    else:
        if isinstance(rng, dict):
            state["rng"] = rng
        else:
            state["rng_problem"] = f"unreadable (holds {type(rng).__name__})"
    return state


def load_latest(ckpt_dir: Path, rank: int, device: torch.device, agree: Agree = _alone
                ) -> Tuple[Optional[Path], Optional[Dict[str, Any]], List[Tuple[Path, str]]]:
    """(path, state, skipped): the newest checkpoint every rank could load, and the newer ones that were not
    usable, each with the reason. (None, None, skipped) when none is usable. Collective."""
    skipped: List[Tuple[Path, str]] = []
    for path in reversed(list_checkpoints(ckpt_dir)):
        state: Optional[Dict[str, Any]] = None
        reason = "unreadable on another rank"
        try:
            state = load(path, rank, device)
        except Unusable as exc:
            reason = str(exc)
        if agree(state is not None):  # every rank resumes from the same step, or none does
            return path, state, skipped
        skipped.append((path, reason))
    return None, None, skipped


def set_aside(path: Path) -> Path:
    """Rename an unusable checkpoint to `<name>.unusable` (kept for inspection, no longer listed or pruned)."""
    for n in range(100):
        target = path.with_name(path.name.lstrip(".") + (".unusable" if n == 0 else f".unusable-{n}"))
        if not target.exists():
            os.replace(path, target)
            fsync_dir(path.parent)
            return target
    return path
