"""Pins of mutation round 3 (issue 21) on hosttune/engine/float8.py (bench/mutants.py r3-float8-*): the output head
stays out of float8 even when its shape would fit the float8 GEMM. Modules only: no device, no torchao."""

import pytest

pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine import float8  # noqa: E402


def test_an_aligned_output_head_is_still_left_out() -> None:
    # a vocabulary padded to a multiple of 16 (as the shape warning asks): the head aligns, and is still the head
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64), nn.Linear(64, 256))
    assert float8.output_head(model) == "3"
    keep = float8.module_filter(model)
    assert [n for n, m in model.named_modules() if keep(m, n)] == ["0", "2"]
    keep = float8.module_filter(model, skip=("0",))
    assert [n for n, m in model.named_modules() if keep(m, n)] == ["2"]
