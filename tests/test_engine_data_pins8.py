"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/data.py: pad_collate keeps the batch's own
order (row k is sample k), pads x with 0 and y with IGNORE_INDEX to the longest; ShardedText resumed at any
position (several passes in, mid-shard, for each of several readers) yields exactly what reading from its start
would have yielded from there (each pass's shuffle is drawn from its pass number), and passes differ."""

from itertools import islice
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine.data import IGNORE_INDEX, ShardedText, pad_collate, write_text_shards  # noqa: E402


def test_pad_collate_keeps_the_order_and_pads_to_the_longest() -> None:
    t = torch.tensor
    batch = [(t([1, 2]), t([2, 3])), (t([4, 5, 6, 7]), t([5, 6, 7, 8])), (t([9]), t([10])),
             (t([1, 1, 1]), t([1, 1, 2]))]
    xs, ys = pad_collate(batch)
    n = IGNORE_INDEX
    assert xs.tolist() == [[1, 2, 0, 0], [4, 5, 6, 7], [9, 0, 0, 0], [1, 1, 1, 0]]
    assert ys.tolist() == [[2, 3, n, n], [5, 6, 7, 8], [10, n, n, n], [1, 1, 2, n]]
    assert xs.dtype == ys.dtype == torch.long and IGNORE_INDEX == -100


def _take(it, n):
    return [(x.tolist(), y.tolist()) for x, y in islice(it, n)]


@pytest.mark.parametrize("part,parts", [(0, 1), (1, 2)])
def test_a_stream_resumed_anywhere_continues_the_same_sequence(tmp_path: Path, part: int, parts: int) -> None:
    text = "".join(f"line {k} of the tale {chr(97 + k % 26) * (k % 5)}\n" for k in range(24))
    ds = ShardedText(write_text_shards(text, tmp_path, "t", 4), block_size=6, seed=3)
    per_pass = sum(ds.windows(n) for k, (_, n) in enumerate(ds.shards) if k % parts == part)
    whole = _take(ds.iter_part(part, parts), 3 * per_pass + 5)
    assert whole[:per_pass] != whole[per_pass:2 * per_pass]  # each pass its own order
    assert sorted(whole[:per_pass]) == sorted(whole[per_pass:2 * per_pass])  # of the same windows
    for start in (1, per_pass - 1, per_pass, per_pass + 7, 2 * per_pass + 3, 3 * per_pass):
        assert _take(ds.iter_part(part, parts, start), 5) == whole[start:start + 5], start
