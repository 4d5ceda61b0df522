"""Datasets for the bundled presets, and the DataLoader settings the launcher's profile asks for.

Both datasets are built deterministically from the seed (or from text shipped in the package), so every rank
and every restart sees the same samples without any download.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

import torch
from torch.utils.data import Dataset, DistributedSampler, Sampler

from hosttune.policy import names
from hosttune.policy.cpu import dataloader_workers

DATA_DIR = Path(__file__).resolve().parent / "data"


class SeparableImages(Dataset):
    """Images of `num_classes` classes: a fixed random pattern per class plus heavy per-sample noise.

    The class patterns are far apart relative to the noise, so a small CNN can reach near-perfect accuracy, while a
    model that learns nothing stays at 1/num_classes: accuracy is an honest "did it train" signal.
    """

    def __init__(self, n: int, num_classes: int, size: int, seed: int, split: str = "train"):
        g = torch.Generator().manual_seed(seed)
        # Smooth, low-frequency class patterns (upsampled 4x4 noise) so conv features, not single pixels, decide.
        coarse = torch.randn(num_classes, 3, 4, 4, generator=g)
        self.patterns = torch.nn.functional.interpolate(coarse, size=(size, size), mode="bilinear",
                                                        align_corners=False)
        # The split gets its own noise stream, so val samples are never train samples.
        g_split = torch.Generator().manual_seed(seed + (1 if split == "train" else 2))
        self.labels = torch.arange(n) % num_classes
        noise = torch.randn(n, 3, size, size, generator=g_split)
        self.images = self.patterns[self.labels] + 0.8 * noise

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        return self.images[i], self.labels[i]


class CharText(Dataset):
    """Character-level language modelling windows over the bundled text (90% train, 10% val)."""

    def __init__(self, block_size: int, split: str = "train", path: Optional[Path] = None):
        text = (path or default_text()).read_text(encoding="utf-8")
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        cut = int(len(text) * 0.9)
        part = text[:cut] if split == "train" else text[cut:]
        self.data = torch.tensor([self.stoi[c] for c in part], dtype=torch.long)
        self.block_size = block_size
        # Train windows start at every character (overlapping windows act like random crops); val windows tile.
        self.stride = 1 if split == "train" else block_size
        self.train_text = text[:cut]
        if len(self.data) <= block_size + 1:
            raise ValueError(f"block_size {block_size} is too large for the {split} split ({len(self.data)} chars)")

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def __len__(self) -> int:
        return (len(self.data) - self.block_size - 1) // self.stride + 1

    def __getitem__(self, i: int):
        s = i * self.stride
        chunk = self.data[s : s + self.block_size + 1]
        return chunk[:-1], chunk[1:]

    def unigram_entropy(self) -> float:
        """Entropy (nats/char) of the train split's character frequencies: the loss of a model that learned
        only how common each character is. A loss well below it means the model uses context."""
        counts = Counter(self.train_text)
        n = sum(counts.values())
        return -sum(c / n * math.log(c / n) for c in counts.values())


def default_text() -> Path:
    return DATA_DIR / "tiny-tales.txt"


class ResumableSampler(Sampler):
    """DistributedSampler (one shard per rank, reshuffled each epoch via `set_epoch`) that can start mid-epoch.

    Its order depends only on (seed, epoch), so skipping the first `skip` samples of an epoch reproduces exactly
    what a run that never stopped would have drawn next. Works unchanged for a single process (one replica).
    """

    def __init__(self, dataset: Dataset, world_size: int, rank: int, seed: int, shuffle: bool = True):
        self.inner = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed,
                                        drop_last=True)
        self.skip = 0

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        self.inner.set_epoch(epoch)
        self.skip = skip

    def __iter__(self) -> Iterator[int]:
        it = iter(self.inner)
        for _ in range(self.skip):
            next(it)
        return it

    def __len__(self) -> int:
        return len(self.inner) - self.skip


@dataclass(frozen=True)
class LoaderSettings:
    num_workers: int
    pin_memory: bool
    prefetch_factor: Optional[int]
    persistent_workers: bool

    def kwargs(self) -> Dict[str, Any]:
        kw: Dict[str, Any] = dict(num_workers=self.num_workers, pin_memory=self.pin_memory)
        if self.num_workers > 0:  # DataLoader rejects these without workers
            kw["persistent_workers"] = self.persistent_workers
            if self.prefetch_factor is not None:
                kw["prefetch_factor"] = self.prefetch_factor
        return kw


def _env_int(env: Dict[str, str], key: str) -> Optional[int]:
    raw = env.get(key, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"${key} must be an integer, got {raw!r}") from None


def _env_bool(env: Dict[str, str], key: str) -> Optional[bool]:
    v = _env_int(env, key)
    return None if v is None else v != 0


def loader_settings(cfg: Any, cuda: bool, env: Optional[Dict[str, str]] = None) -> LoaderSettings:
    """Config value if set, else the launcher profile's HOSTTUNE_* variable, else a default for this host.

    Default workers: the rule the planner uses (hosttune.policy.cpu.dataloader_workers) for the CPUs this rank may
    use, so a rank started without `hosttune exec` gets what the profile would have given it. pin_memory only ever
    with CUDA: on CPU it only warns.
    """
    env = dict(os.environ) if env is None else env
    workers = cfg.num_workers if cfg.num_workers is not None else _env_int(env, names.NUM_WORKERS)
    if workers is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        workers = dataloader_workers(cpus)[0]
    pin = cfg.pin_memory if cfg.pin_memory is not None else _env_bool(env, names.PIN_MEMORY)
    pin = bool(cuda and (pin if pin is not None else True))
    prefetch = cfg.prefetch_factor if cfg.prefetch_factor is not None else _env_int(env, names.PREFETCH_FACTOR)
    persistent = (cfg.persistent_workers if cfg.persistent_workers is not None
                  else _env_bool(env, names.PERSISTENT_WORKERS))
    persistent = bool(workers > 0 and (persistent if persistent is not None else True))
    return LoaderSettings(workers, pin, prefetch if workers > 0 else None, persistent)


def deterministic_setting(cfg: Any, env: Optional[Dict[str, str]] = None) -> bool:
    """`deterministic` from the config when set, else HOSTTUNE_DETERMINISTIC from the profile, else off."""
    if cfg.deterministic is not None:
        return bool(cfg.deterministic)
    flag = _env_bool(dict(os.environ) if env is None else env, names.DETERMINISTIC)
    return bool(flag)
