"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/shapes.py: the whole warning line, each odd
dimension in the layer's own order (in before out, rows before width, a later convolution's input channels before
its output channels; the first convolution's input is the image's, never named), the cut after SHOWN layers."""

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine.shapes import odd_shapes, shape_warning  # noqa: E402

HEAD = ("hosttune.engine: warning: not multiples of 8, so tensor cores run them slower (NVIDIA's Deep Learning "
        "Performance guide: 16-bit GEMM dimensions should be multiples of 8): ")
TAIL = "; pad the vocabulary and choose sizes that are multiples of 8"


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 12, 3)  # input 3: the image's, not named
        self.body = nn.Conv2d(12, 20, 3)
        self.emb = nn.Embedding(65, 36)
        self.fc = nn.Linear(36, 10)
        self.ok = nn.Linear(16, 8)


def test_every_odd_dimension_in_the_layers_own_order() -> None:
    assert odd_shapes(Net(), 12) == ["stem (out_channels 12)", "body (in_channels 12, out_channels 20)",
                                     "emb (num_embeddings 65, embedding_dim 36)",
                                     "fc (in_features 36, out_features 10)", "micro_batch_size 12"]
    assert odd_shapes(Net(), 16)[-1] == "fc (in_features 36, out_features 10)"


def test_the_whole_warning_line() -> None:
    assert shape_warning(Net(), 12, "cuda", True) == (
        HEAD + "stem (out_channels 12); body (in_channels 12, out_channels 20); emb (num_embeddings 65, "
        "embedding_dim 36); fc (in_features 36, out_features 10); micro_batch_size 12" + TAIL)
    assert shape_warning(nn.Linear(9, 5), 8, "cuda", True) == HEAD + "Linear (in_features 9, out_features 5)" + TAIL


def test_six_layers_are_named_and_the_rest_counted() -> None:
    seven = nn.Sequential(*[nn.Linear(16, 16 + k) for k in range(1, 8)])
    line = shape_warning(seven, 3, "cuda", True)
    named = "; ".join(f"{k - 1} (out_features {16 + k})" for k in range(1, 7))
    assert line == HEAD + named + "; and 2 more" + TAIL  # the 7th layer and the micro-batch
    six = nn.Sequential(*[nn.Linear(16, 16 + k) for k in range(1, 7)])
    assert shape_warning(six, 8, "cuda", True) == HEAD + named + TAIL
