"""Datasets for the bundled presets, and the DataLoader settings the launcher's profile asks for.

Both datasets are built deterministically from the seed (or from text shipped in the package), so every rank
and every restart sees the same samples without any download.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch.utils.data import Dataset, DistributedSampler, IterableDataset, Sampler, default_collate, get_worker_info

from hosttune import fsio
from hosttune.facts import Cpu
from hosttune.policy import names

from .decoders import ImageDataError
from .hostcpu import live_cpu, local_ranks, rank_workers
from .images import BUNDLED, ImageFolder

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


def image_sets(cfg: Any) -> Tuple[Dataset, Dataset, int]:
    """resnet-tiny's (train set, val set, number of classes) as `image_source` says: synthetic (SeparableImages of
    train/val_samples, num_classes), bundled (the shipped image folder) or folder (the one data_path names), the
    folders decoded by `image_decoder` to image_size. A bad folder or a missing decoder: ImageDataError."""
    if cfg.image_source == "synthetic":
        return (SeparableImages(cfg.train_samples, cfg.num_classes, cfg.image_size, cfg.seed, "train"),
                SeparableImages(cfg.val_samples, cfg.num_classes, cfg.image_size, cfg.seed, "val"), cfg.num_classes)
    root = BUNDLED if cfg.image_source == "bundled" else Path(cfg.data_path)
    train = ImageFolder(root, cfg.image_size, cfg.image_decoder, "train")
    val = ImageFolder(root, cfg.image_size, cfg.image_decoder, "val")
    if val.classes != train.classes:
        raise ImageDataError(f"{root}: val/ has the classes {', '.join(val.classes)[:200]}, train/ has "
                             f"{', '.join(train.classes)[:200]}: they must be the same")
    return train, val, train.num_classes


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
        if len(self.data) <= block_size:  # a window is block_size + 1 characters (inputs, next-character targets)
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
        self.inner: DistributedSampler[int] = DistributedSampler(dataset, num_replicas=world_size, rank=rank,
                                                                 shuffle=shuffle, seed=seed, drop_last=True)
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


def loader_settings(cfg: Any, cuda: bool, env: Optional[Dict[str, str]] = None, cpu: Optional[Cpu] = None
                    ) -> LoaderSettings:
    """Config value if set, else the launcher profile's HOSTTUNE_* variable, else a default for this host.

    Default workers: the planner's rule and count (hostcpu.rank_workers: policy.cpu's dataloader_workers of the
    rank's share of the thread budget, physical cores capped by the quota) on `cpu` (default: this process's,
    read live), so a rank started without `hosttune exec` gets what the profile would have given it. pin_memory
    only ever with CUDA: on CPU it only warns.
    """
    env = dict(os.environ) if env is None else env
    workers = cfg.num_workers if cfg.num_workers is not None else _env_int(env, names.NUM_WORKERS)
    if workers is None:
        workers = rank_workers(cpu if cpu is not None else live_cpu(), local_ranks(env))
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


# ---- exact resume with random augmentation: every batch's RNG derives from its position ----

def batch_seed(seed: int, part: int, epoch: int, pos: int) -> int:
    """The seed of one batch's augmentation: a hash of (run seed, rank or stream part, epoch, position of its first
    sample). Which DataLoader worker fetches the batch, and whether the run was resumed, do not enter it."""
    digest = hashlib.blake2b(f"{seed}:{part}:{epoch}:{pos}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


@contextlib.contextmanager
def seeded_rng(seed: int) -> Iterator[None]:
    """Seed python, numpy and torch's CPU generator for a block, then put the caller's streams back: in the main
    process (num_workers=0) the training RNG (dropout) must not see the data's draws. CUDA streams are untouched."""
    saved = random.getstate(), np.random.get_state(), torch.default_generator.get_state()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.default_generator.manual_seed(seed)
    try:
        yield
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.default_generator.set_state(saved[2])


def collated(batch: Any) -> Any:
    """The DataLoader's collate_fn when the batch was already collated under its seed (SeededFetch, StreamReader):
    a module-level function, so spawned workers can pickle it."""
    return batch


class SeededFetch(Dataset):
    """A map-style dataset fetched in batches of (epoch, position, index) keys, each batch fetched and collated
    under `seeded_rng`, so a randomly augmenting dataset, or a collate that draws (MixUp, CutMix), gives the same
    batch whatever the number of workers and across a resume. The DataLoader's collate_fn is then `collated`."""

    def __init__(self, dataset: Dataset, seed: int, rank: int, collate: Optional[Callable[[List[Any]], Any]] = None):
        self.dataset, self.seed, self.rank = dataset, seed, rank
        self.collate = collate or default_collate

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitems__(self, keys: List[Tuple[int, int, int]]) -> Any:
        epoch, pos, _ = keys[0]
        with seeded_rng(batch_seed(self.seed, self.rank, epoch, pos)):
            return self.collate([self.dataset[i] for _, _, i in keys])

    def __getitem__(self, key: Tuple[int, int, int]) -> Any:
        epoch, pos, i = key
        with seeded_rng(batch_seed(self.seed, self.rank, epoch, pos)):
            return self.dataset[i]


class EpochBatches(Sampler):
    """This rank's micro-batches of one epoch as (epoch, position, index) keys, starting at any sample position.

    The order depends only on (seed, epoch): without `lengths` it is DistributedSampler's shuffled shard; with
    `lengths` (length bucketing) the epoch's shuffled indices are sorted by length within windows of
    BUCKET_WINDOW global batches, cut into global batches (one micro-batch per rank, so ranks of a step see similar
    lengths and finish together), and the global batches are shuffled.
    """

    BUCKET_WINDOW = 16

    def __init__(self, dataset: Dataset, world: int, rank: int, seed: int, micro_batch_size: int,
                 lengths: Optional[Sequence[int]] = None):
        self.inner: DistributedSampler[int] = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True,
                                                                 seed=seed, drop_last=True)
        self.n = len(dataset)  # type: ignore[arg-type]
        self.world, self.rank, self.seed, self.mbs = world, rank, seed, micro_batch_size
        self.lengths = lengths
        self.epoch, self.skip = 0, 0

    @property
    def epoch_len(self) -> int:
        """This rank's samples per epoch (a multiple of the micro-batch with bucketing)."""
        if self.lengths is None:
            return len(self.inner)
        return self.n // (self.mbs * self.world) * self.mbs

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        self.epoch, self.skip = epoch, skip
        self.inner.set_epoch(epoch)

    def order(self) -> List[int]:
        if self.lengths is None:
            return list(self.inner)
        lengths, glob = self.lengths, self.mbs * self.world
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        perm = torch.randperm(self.n, generator=g).tolist()[: self.n // glob * glob]
        window = glob * self.BUCKET_WINDOW
        batches: List[List[int]] = []
        for s in range(0, len(perm), window):
            similar = sorted(perm[s : s + window], key=lambda i: lengths[i])
            batches += [similar[k : k + glob] for k in range(0, len(similar), glob)]
        mine = self.rank * self.mbs
        return [i for b in torch.randperm(len(batches), generator=g).tolist()
                for i in batches[b][mine : mine + self.mbs]]

    def __iter__(self) -> Iterator[List[Tuple[int, int, int]]]:
        order, pos = self.order(), self.skip
        while pos + self.mbs <= len(order):
            yield [(self.epoch, pos, i) for i in order[pos : pos + self.mbs]]
            pos += self.mbs

    def __len__(self) -> int:
        return max(0, self.epoch_len - self.skip) // self.mbs


def dataset_lengths(dataset: Any) -> Optional[List[int]]:
    """Per-sample lengths for bucketing: a `lengths()` method or a `lengths` sequence on the dataset."""
    lengths = getattr(dataset, "lengths", None)
    if callable(lengths):
        lengths = lengths()
    return None if lengths is None else [int(n) for n in lengths]


# ---- variable-length text ----

IGNORE_INDEX = -100  # F.cross_entropy's default: padded targets add nothing to the loss


def pad_collate(batch: List[Tuple[torch.Tensor, torch.Tensor]]) -> Tuple[torch.Tensor, torch.Tensor]:
    """Right-pad (x, y) token sequences to the batch's longest: x with token 0 (a causal model never attends
    forward, so real positions are unaffected), y with IGNORE_INDEX."""
    width = max(len(x) for x, _ in batch)
    xs = torch.zeros(len(batch), width, dtype=torch.long)
    ys = torch.full((len(batch), width), IGNORE_INDEX, dtype=torch.long)
    for k, (x, y) in enumerate(batch):
        xs[k, : len(x)], ys[k, : len(y)] = x, y
    return xs, ys


class CharLines(Dataset):
    """Character-level LM samples of variable length: one sentence of the bundled text each (train 90%, val 10%),
    at most block_size tokens. Batches need `collate` (padding); `lengths()` lets the engine bucket them."""

    collate = staticmethod(pad_collate)

    def __init__(self, block_size: int, split: str = "train", path: Optional[Path] = None):
        text = (path or default_text()).read_text(encoding="utf-8")
        self.chars = sorted(set(text))
        stoi = {c: i for i, c in enumerate(self.chars)}
        cut = int(len(text) * 0.9)
        part = text[:cut] if split == "train" else text[cut:]
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", " ".join(part.split())) if len(s) >= 2]
        self.samples = [torch.tensor([stoi[c] for c in s[: block_size + 1]], dtype=torch.long) for s in sentences]

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def lengths(self) -> List[int]:
        return [len(s) - 1 for s in self.samples]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> Tuple[torch.Tensor, torch.Tensor]:
        s = self.samples[i]
        return s[:-1], s[1:]


# ---- streaming: sharded files, one shard list per rank and worker, resumable at any sample ----

SHARD_INDEX_LIMIT = 1 << 20
SHARD_LIMIT = 1 << 30  # one shard is read whole: shards are the unit that must fit in memory, the set need not


def default_shards() -> Path:
    return DATA_DIR / "tiny-tales.shards.json"


def bundled_shards(out_dir: Path = DATA_DIR) -> Path:
    """The shipped shards: the train split (CharText's first 90%) of the bundled text in 8 shards, with the whole
    text's vocabulary, so a streamed model scores on CharText's val split. Re-create them with
    `python3 -c "from hosttune.engine.data import bundled_shards; bundled_shards()"`."""
    text = default_text().read_text(encoding="utf-8")
    return write_text_shards(text[: int(len(text) * 0.9)], out_dir, "tiny-tales", 8, "".join(sorted(set(text))))


def write_text_shards(text: str, out_dir: Path, name: str, n: int, vocab: Optional[str] = None) -> Path:
    """Cut `text` into `n` shards at line ends (`<name>.shard-NN.txt`) plus `<name>.shards.json` (the vocabulary
    and each shard's length): the format ShardedText reads. Returns the index's path."""
    lines = text.splitlines(keepends=True)
    per = -(-len(text) // n)
    shards: List[str] = []
    cur = ""
    for line in lines:
        cur += line
        if len(cur) >= per and len(shards) < n - 1:
            shards.append(cur)
            cur = ""
    shards.append(cur)
    entries = []
    for k, body in enumerate(shards):
        fname = f"{name}.shard-{k:02d}.txt"
        fsio.atomic_write(out_dir / fname, body)
        entries.append({"file": fname, "chars": len(body)})
    index = out_dir / f"{name}.shards.json"
    meta = {"vocab": vocab or "".join(sorted(set(text))), "shards": entries}
    fsio.atomic_write(index, json.dumps(meta, indent=1) + "\n")
    return index


class ShardedText(IterableDataset):
    """Character windows (block_size + 1, stride 1) streamed from text shards listed in a `.shards.json` index.

    Reader `part` of `parts` (rank * workers + worker of world * workers) reads shards part, part + parts, ...;
    each pass over its shards visits them in order, each shard's windows in a permutation drawn from
    (seed, pass, shard), and passes repeat forever (the engine counts steps, not epochs). `iter_part(..., start)`
    begins at the reader's `start`-th sample without reading the shards before it: the resumable position.
    """

    def __init__(self, index: Path, block_size: int, seed: int = 0):
        try:
            meta = json.loads(fsio.read_bounded(index, SHARD_INDEX_LIMIT))
            self.chars = str(meta["vocab"])
            self.shards = [(index.parent / str(e["file"]), int(e["chars"])) for e in meta["shards"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{index}: not a readable shard index ({exc})") from None
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.block_size, self.seed = block_size, seed

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def windows(self, chars: int) -> int:
        return max(0, chars - self.block_size)

    def _tokens(self, path: Path) -> torch.Tensor:
        text = fsio.read_bounded(path, SHARD_LIMIT).decode("utf-8")
        return torch.tensor([self.stoi[c] for c in text], dtype=torch.long)

    def iter_part(self, part: int, parts: int, start: int = 0) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        mine = [(k, p, self.windows(n)) for k, (p, n) in enumerate(self.shards) if k % parts == part]
        per_pass = sum(w for _, _, w in mine)
        if per_pass == 0:
            raise ValueError(f"reader {part} of {parts} has no samples: {len(self.shards)} shard(s) for {parts} "
                             f"readers (ranks x workers)")
        epoch, skip = divmod(start, per_pass)
        while True:
            for k, path, n in mine:
                if skip >= n:
                    skip -= n
                    continue
                data = self._tokens(path)
                g = torch.Generator().manual_seed(batch_seed(self.seed, k, epoch, -1) >> 1)
                for w in torch.randperm(n, generator=g)[skip:].tolist():
                    chunk = data[w : w + self.block_size + 1]
                    yield chunk[:-1], chunk[1:]
                skip = 0
            epoch += 1

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        info = get_worker_info()
        return self.iter_part(info.id if info else 0, info.num_workers if info else 1)


class StreamReader(IterableDataset):
    """The engine's view of an IterableDataset: this rank's and worker's reader, starting at the rank's stream
    position, yielding collated micro-batches, each drawn and collated under `seeded_rng` (augmentation stays
    exact).

    The DataLoader hands out workers' batches round-robin, so the rank's k-th batch is worker k % workers' batch
    k // workers: from the rank's `start_batches`, each worker knows where its own reader stands. A dataset with
    `iter_part(part, parts, start)` (ShardedText) reads only its shards; any other iterable is read whole by every
    reader, which keeps every parts-th sample (correct for any source, efficient for none) and repeats.
    """

    def __init__(self, dataset: IterableDataset, world: int, rank: int, seed: int, micro_batch_size: int,
                 start_batches: int, collate: Optional[Callable[[List[Any]], Any]] = None):
        self.dataset, self.world, self.rank, self.seed = dataset, world, rank, seed
        self.mbs, self.start_batches = micro_batch_size, start_batches
        self.collate = collate or default_collate

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info else (1, 0)
        part, parts = self.rank * workers + worker, self.world * workers
        mine = max(0, -(-(self.start_batches - worker) // workers))  # batches k < start with k % workers == worker
        pos = mine * self.mbs
        iter_part = getattr(self.dataset, "iter_part", None)
        source = iter_part(part, parts, pos) if callable(iter_part) else _strided(self.dataset, part, parts, pos)
        while True:
            with seeded_rng(batch_seed(self.seed, part, 0, pos)):  # the collate's draws too (MixUp, CutMix)
                batch = self.collate([next(source) for _ in range(self.mbs)])
            yield batch
            pos += self.mbs


def _strided(dataset: Any, part: int, parts: int, start: int) -> Iterator[Any]:
    n = 0
    while True:
        seen = False
        for j, sample in enumerate(dataset):
            if j % parts == part:
                seen = True
                if n >= start:
                    yield sample
                n += 1
        if not seen:
            raise ValueError(f"the dataset yields no sample for reader {part} of {parts} (ranks x workers)")
