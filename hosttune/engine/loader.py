"""The data wiring of a rank: `TrainData` turns the task's dataset into this rank's micro-batches on the device
(sharded per rank, shuffled per epoch, resumable to the sample), with the DataLoader settings of the launcher's
profile; `iterable_batches` splits a streamed validation set between ranks."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, List, Optional, Tuple

import torch
from torch.utils.data import DataLoader, IterableDataset, default_collate

from .config import Config
from .data import (
    IGNORE_INDEX,
    EpochBatches,
    SeededFetch,
    StreamReader,
    batch_seed,
    collated,
    dataset_lengths,
    loader_settings,
    seeded_rng,
)
from .errors import EngineError
from .runtime import Runtime
from .state import TrainState
from .task import Task


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
        self.loader = DataLoader(SeededFetch(self.dataset, cfg.seed, rt.rank, self.collate),
                                 batch_sampler=self.batches, collate_fn=collated, generator=self.loader_gen,
                                 **self.settings.kwargs())

    def to_device(self, x: torch.Tensor) -> torch.Tensor:
        # non_blocking only helps (and is only safe) from pinned memory to a GPU.
        x = x.to(self.device, non_blocking=self.settings.pin_memory)
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last and x.dim() == 4 else x

    def _start(self, state: TrainState) -> Iterator[Any]:
        # The workers' base seed (their python/numpy/torch streams) from the position, not from how many iterators
        # this process made before: a resumed run's workers start from the same seed as the uninterrupted run's
        # workers starting there. The engine's own draws are all under per-batch seeds anyway.
        self.loader_gen.manual_seed(batch_seed(self.cfg.seed, self.rt.rank, state.epoch, state.samples))
        if self.batches is not None:
            self.batches.set_epoch(state.epoch, skip=state.samples)
            return iter(self.loader)
        mbs = self.cfg.micro_batch_size
        reader = StreamReader(self.dataset, self.rt.world, self.rt.rank, self.cfg.seed, mbs,  # type: ignore[arg-type]
                              state.samples // mbs, self.collate)
        kwargs = self.settings.kwargs()
        kwargs["persistent_workers"] = False  # one iterator for the whole run
        # The reader yields whole micro-batches, collated under their seed: no batching here.
        return iter(DataLoader(reader, batch_size=None, collate_fn=collated, generator=self.loader_gen, **kwargs))

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


def iterable_batches(dataset: Iterable[Any], world: int, rank: int, size: int, collate: Callable[[List[Any]], Any]
                     ) -> Iterator[Any]:
    batch: List[Any] = []
    for j, sample in enumerate(dataset):
        if j % world == rank:
            batch.append(sample)
            if len(batch) == size:
                yield collate(batch)
                batch = []
    if batch:
        yield collate(batch)
