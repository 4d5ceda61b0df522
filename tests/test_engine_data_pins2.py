"""Pins (issue 21, second mutation round) for hosttune/engine/data.py's per-batch seeding: two ranks fetching the
batch at the same position draw different augmentations (the rank is in the batch's seed), and a seeded fetch puts
the caller's python, numpy and torch streams back exactly (the training RNG, e.g. dropout, never sees the data's
draws, with or without loader workers)."""

import random
from typing import Any, Tuple

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from hosttune.engine import data  # noqa: E402


class Augmented(torch.utils.data.Dataset):
    """Four samples, each returned with noise from torch's default generator (a random augmentation)."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> Tuple[Any, int]:
        return torch.full((3,), float(i)) + torch.rand(3), i


def test_two_ranks_draw_different_augmentations_at_the_same_position() -> None:
    keys = [(0, 0, 0), (0, 0, 1)]
    rank0 = data.SeededFetch(Augmented(), seed=7, rank=0).__getitems__(keys)
    again = data.SeededFetch(Augmented(), seed=7, rank=0).__getitems__(keys)
    rank1 = data.SeededFetch(Augmented(), seed=7, rank=1).__getitems__(keys)
    assert torch.equal(rank0[0], again[0])  # a function of (seed, rank, epoch, position)
    assert not torch.equal(rank0[0], rank1[0])
    assert data.batch_seed(7, 0, 0, 0) != data.batch_seed(7, 1, 0, 0)


def test_a_seeded_fetch_puts_every_stream_back() -> None:
    random.seed(1)
    np.random.seed(1)
    torch.manual_seed(1)
    before = random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state().clone()
    with data.seeded_rng(data.batch_seed(7, 0, 0, 0)):
        random.random(), np.random.rand(), torch.rand(5)
    assert random.getstate() == before[0]
    assert (np.random.get_state()[1] == before[1]).all()
    assert torch.equal(torch.get_rng_state(), before[2])
