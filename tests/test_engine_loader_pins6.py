"""Pins of mutation round 5 (issue 21) on hosttune/engine/loader.py (bench/mutants.py r5a-engine-loader-streaming):
an IterableDataset given to the engine streams, in its own order, with or without a __len__, and resumes at the
rank's position in the stream; it is never shuffled or indexed like a map-style dataset. In-process, CPU, no
loader workers."""

from pathlib import Path
from typing import List

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.utils.data import IterableDataset  # noqa: E402

from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.errors import EngineError  # noqa: E402
from hosttune.engine.loader import TrainData, iterable_batches  # noqa: E402
from hosttune.engine.runtime import Runtime  # noqa: E402
from hosttune.engine.state import TrainState  # noqa: E402
from hosttune.engine.task import Task  # noqa: E402

CPU = torch.device("cpu")


class Stream(IterableDataset):
    """Samples 0..n-1 in order: x = [i], y = i."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield torch.tensor([float(i)]), torch.tensor(i)


class SizedStream(Stream):
    """A stream that also says its length (many users' IterableDatasets do): still a stream, not indexable."""

    def __len__(self) -> int:
        return self.n


def _state() -> TrainState:
    model = nn.Linear(1, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return TrainState(model, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0),
                      torch.amp.GradScaler("cpu", enabled=False), torch.Generator())


def _data(dataset, tmp_path: Path, **cfg) -> TrainData:
    task = Task(nn.Linear(1, 2), dataset, nn.functional.cross_entropy)
    cfg = {"micro_batch_size": 4, "num_workers": 0, **cfg}
    return TrainData(task, Config(**cfg), Runtime(1, 0, 0, CPU, None, False, tmp_path), False)


def _targets(data: TrainData, state: TrainState, batches: int) -> List[List[int]]:
    return [data.next(state)[1].tolist() for _ in range(batches)]


@pytest.mark.parametrize("kind", [Stream, SizedStream])
def test_an_iterable_dataset_streams_in_order_and_repeats(kind, tmp_path: Path) -> None:
    data = _data(kind(10), tmp_path)
    assert data.streaming and data.epoch_len is None and data.batches is None
    state = _state()
    assert _targets(data, state, 3) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]  # the stream repeats
    assert (state.epoch, state.samples) == (0, 12)  # no epochs: samples counts the rank's whole stream


def test_a_resumed_stream_continues_at_the_ranks_position(tmp_path: Path) -> None:
    state = _state()
    state.samples = 8  # a checkpoint after two micro-batches
    assert _targets(_data(SizedStream(10), tmp_path), state, 2) == [[8, 9, 0, 1], [2, 3, 4, 5]]
    assert state.samples == 16


def test_a_sample_batch_of_a_stream_is_its_first_samples(tmp_path: Path) -> None:
    data = _data(SizedStream(10), tmp_path)
    x, y = data.sample_batch()
    assert y.tolist() == [0, 1, 2, 3] and x.shape == (4, 1)


def test_length_bucketing_is_refused_for_a_stream(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="length_bucketing needs a map-style dataset"):
        _data(SizedStream(10), tmp_path, length_bucketing=True)


def test_a_stream_with_fewer_shards_than_readers_is_refused(tmp_path: Path) -> None:
    class Sharded(SizedStream):
        shards = ["only-one"]

    with pytest.raises(EngineError, match=r"1 shard\(s\) for 2 readers \(1 rank\(s\) x 2 loader worker"):
        _data(Sharded(10), tmp_path, num_workers=2)


# ---- map-style datasets: epochs, resume, the refusals -------------------------------------------------------------


class Indexed(torch.utils.data.Dataset):
    """Sample i is x = [i], y = i; `noisy` adds a random draw to x (augmentation)."""

    def __init__(self, n: int, noisy: bool = False) -> None:
        self.n, self.noisy = n, noisy

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        x = torch.tensor([float(i)])
        return (x + torch.rand(1) if self.noisy else x), torch.tensor(i)


def test_each_epoch_is_a_new_shuffle_of_distinct_samples(tmp_path: Path) -> None:
    data, state = _data(Indexed(10), tmp_path), _state()
    assert data.epoch_len == 10 and not data.streaming
    batches = _targets(data, state, 4)
    epoch0, epoch1 = batches[0] + batches[1], batches[2] + batches[3]
    # 10 samples, micro-batches of 4: two per epoch, then the next epoch (the 2 left over are not padded in)
    assert (state.epoch, state.samples) == (1, 8)
    assert len(set(epoch0)) == 8 and len(set(epoch1)) == 8 and set(epoch0) <= set(range(10))
    assert epoch0 != epoch1  # reshuffled
    assert _targets(_data(Indexed(10), tmp_path), _state(), 4) == batches  # the same on every run (seeded)


def test_a_resumed_map_style_run_continues_with_the_same_batches(tmp_path: Path) -> None:
    whole, state = _data(Indexed(10, noisy=True), tmp_path), _state()
    ref = [whole.next(state) for _ in range(4)]
    resumed = _state()
    resumed.epoch, resumed.samples = 1, 4  # a checkpoint after the third micro-batch
    torch.manual_seed(12345)  # the resuming process's RNG is elsewhere: augmentation is seeded by position
    x, y = _data(Indexed(10, noisy=True), tmp_path).next(resumed)
    assert torch.equal(y, ref[3][1]) and torch.equal(x, ref[3][0])
    assert (resumed.epoch, resumed.samples) == (1, 8)


def test_too_few_samples_for_a_micro_batch_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="has 3 samples: too few for micro_batch_size=4 on 1 rank"):
        _data(Indexed(3), tmp_path)


def test_a_dataset_without_len_is_refused(tmp_path: Path) -> None:
    class NoLen(torch.utils.data.Dataset):
        def __getitem__(self, i: int):
            return torch.zeros(1), torch.tensor(0)

    with pytest.raises(EngineError, match=r"the training set \(NoLen\) has no len\(\) and is not an IterableDataset"):
        _data(NoLen(), tmp_path)


def test_length_bucketing_needs_one_length_per_sample(tmp_path: Path) -> None:
    class Lengths(Indexed):
        def lengths(self) -> List[int]:
            return [1] * (self.n - 1)

    with pytest.raises(EngineError, match="length_bucketing needs the dataset to give each sample's length"):
        _data(Lengths(10), tmp_path, length_bucketing=True)
    with pytest.raises(EngineError, match="length_bucketing needs the dataset to give each sample's length"):
        _data(Indexed(10), tmp_path, length_bucketing=True)


def test_padded_targets_are_counted_per_interval(tmp_path: Path) -> None:
    class Padded(Indexed):
        @staticmethod
        def collate(items):
            xs, ys = zip(*items)
            y = torch.stack(ys).view(-1, 1).repeat(1, 3)
            y[:, 2] = -100  # one padded position in three
            return torch.stack(xs), y

    data, state = _data(Padded(10), tmp_path), _state()
    assert data.padded
    data.next(state)
    data.next(state)
    assert (data.pad_tokens, data.tokens) == (8, 24)


def test_channels_last_applies_to_4d_inputs_only(tmp_path: Path) -> None:
    task = Task(nn.Linear(1, 2), Indexed(10), nn.functional.cross_entropy)
    data = TrainData(task, Config(micro_batch_size=4, num_workers=0), Runtime(1, 0, 0, CPU, None, False, tmp_path),
                     True)
    image = data.to_device(torch.zeros(2, 3, 4, 5))
    assert image.is_contiguous(memory_format=torch.channels_last) and not image.is_contiguous()
    assert data.to_device(torch.zeros(2, 3)).is_contiguous()


def test_a_streamed_validation_set_is_split_between_ranks_to_its_last_sample() -> None:
    def collate(batch: List[int]) -> List[int]:
        return list(batch)

    assert list(iterable_batches(range(7), 2, 0, 2, collate)) == [[0, 2], [4, 6]]
    assert list(iterable_batches(range(7), 2, 1, 2, collate)) == [[1, 3], [5]]  # the short last batch is kept
    assert list(iterable_batches(range(3), 1, 0, 5, collate)) == [[0, 1, 2]]
    assert list(iterable_batches([], 1, 0, 5, collate)) == []


def test_an_epoch_that_divides_into_micro_batches_uses_every_sample(tmp_path: Path) -> None:
    data, state = _data(Indexed(8), tmp_path), _state()
    first = _targets(data, state, 2)
    assert sorted(first[0] + first[1]) == list(range(8)) and (state.epoch, state.samples) == (0, 8)
    data.next(state)
    assert (state.epoch, state.samples) == (1, 4)
