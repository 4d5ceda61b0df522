"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/export.py's dynamic_shapes: the exported
program takes any batch from 1 (a single sample is the most common inference call) to 65536, and a model with a
block_size any sequence length from 1 up to it, for token inputs only."""

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine.export import dynamic_shapes  # noqa: E402
from hosttune.engine.models import GPT  # noqa: E402


def _dims(shapes):
    (dims,) = shapes
    return {k: (d.__name__, d.min, d.max) for k, d in dims.items()}


def test_the_batch_is_dynamic_from_one() -> None:
    assert _dims(dynamic_shapes(nn.Linear(4, 2), torch.zeros(3, 4))) == {0: ("batch", 1, 65536)}


def test_a_models_block_size_bounds_the_sequence() -> None:
    gpt = GPT(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16)
    assert _dims(dynamic_shapes(gpt, torch.zeros(2, 8, dtype=torch.long))) == {0: ("batch", 1, 65536),
                                                                              1: ("seq", 1, 8)}
    assert _dims(dynamic_shapes(gpt, torch.zeros(2, 3, 8))) == {0: ("batch", 1, 65536)}  # not token ids
    one = nn.Linear(4, 2)
    one.block_size = 1  # type: ignore[assignment]
    assert _dims(dynamic_shapes(one, torch.zeros(2, 4))) == {0: ("batch", 1, 65536)}
