"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/data.py: pad_collate keeps the batch's own
order (row k is sample k), pads x with 0 and y with IGNORE_INDEX to the longest."""

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine.data import IGNORE_INDEX, pad_collate  # noqa: E402


def test_pad_collate_keeps_the_order_and_pads_to_the_longest() -> None:
    t = torch.tensor
    batch = [(t([1, 2]), t([2, 3])), (t([4, 5, 6, 7]), t([5, 6, 7, 8])), (t([9]), t([10])),
             (t([1, 1, 1]), t([1, 1, 2]))]
    xs, ys = pad_collate(batch)
    n = IGNORE_INDEX
    assert xs.tolist() == [[1, 2, 0, 0], [4, 5, 6, 7], [9, 0, 0, 0], [1, 1, 1, 0]]
    assert ys.tolist() == [[2, 3, n, n], [5, 6, 7, 8], [10, n, n, n], [1, 1, 2, n]]
    assert xs.dtype == ys.dtype == torch.long and IGNORE_INDEX == -100
