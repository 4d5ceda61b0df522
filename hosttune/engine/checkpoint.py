"""Atomic, multi-rank checkpoints: `<run>/checkpoints/step-NNNNNNN/{state.pt, rng-rank<R>.pt}`.

Every rank writes its own RNG file into a staging directory, rank 0 adds the shared state (model, optimizer,
scaler, scheduler, counters) and renames the directory into place. A rename is atomic, so a directory named
`step-*` is always complete: a crash mid-save leaves only a `.tmp-*` directory, which the next save removes.
"""

from __future__ import annotations

import os
import random
import re
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import torch

STEP_RE = re.compile(r"^step-(\d+)$")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_save(obj: Any, path: Path) -> None:
    """torch.save to a temp file in the same directory, fsync it, rename over `path`, fsync the directory."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def rng_state(cuda: bool) -> Dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if cuda:
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Dict[str, Any], cuda: bool) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if cuda and "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])


def list_checkpoints(ckpt_dir: Path) -> List[Path]:
    """Complete checkpoints, oldest first."""
    if not ckpt_dir.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in ckpt_dir.iterdir() if (m := STEP_RE.match(p.name)) and p.is_dir()]
    return [p for _, p in sorted(found)]


def latest_checkpoint(ckpt_dir: Path) -> Optional[Path]:
    done = list_checkpoints(ckpt_dir)
    return done[-1] if done else None


def save(ckpt_dir: Path, step: int, rank: int, shared: Callable[[], Dict[str, Any]], rng: Dict[str, Any],
         keep: int, barrier: Callable[[], None]) -> Path:
    """Collective: every rank must call it at the same step. `shared()` is only called on rank 0."""
    final = ckpt_dir / f"step-{step:07d}"
    stage = ckpt_dir / f".tmp-step-{step:07d}"
    if rank == 0:
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        for old in ckpt_dir.glob(".tmp-step-*"):  # leftovers of a save that crashed
            shutil.rmtree(old, ignore_errors=True)
        if final.exists():  # a restart re-reached a step that was already saved: replace it
            shutil.rmtree(final)
        stage.mkdir()
    barrier()  # the staging directory exists for everyone
    atomic_save(rng, stage / f"rng-rank{rank}.pt")
    if rank == 0:
        atomic_save(shared(), stage / "state.pt")
    barrier()  # every rank's file is durable before the directory becomes visible as complete
    if rank == 0:
        os.replace(stage, final)
        _fsync_dir(ckpt_dir)
        for old in list_checkpoints(ckpt_dir)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    barrier()  # nobody races ahead to the next save (or to exit) before the rename
    return final


def load(path: Path, rank: int, device: torch.device) -> Dict[str, Any]:
    """The shared state plus this rank's RNG state (key `rng`, None if the run had fewer ranks)."""
    # weights_only=False: the state holds Python/numpy RNG tuples; these files are our own, in the run dir.
    state = torch.load(path / "state.pt", map_location=device, weights_only=False)
    rng_file = path / f"rng-rank{rank}.pt"
    state["rng"] = torch.load(rng_file, weights_only=False) if rng_file.exists() else None
    return state
