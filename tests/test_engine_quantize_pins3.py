"""Pins of mutation round 3 (issue 21) on hosttune/engine/quantize.py, the int8 export's pieces
(bench/mutants.py r3-int8-*): the check's verdict on NaN, which convolutions are swapped, the top-1 agreement of a
sequence model. Small modules on CPU: no run, no export."""

import math

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine import quantize  # noqa: E402


def _check(rel_error: float, skipped: str = "") -> quantize.Int8Check:
    return quantize.Int8Check(quantize.FORMAT, "x", 8, rel_error, 1.0, quantize.INT8_TOLERANCE, 10, 20, 1.0, 1.0,
                              3, 1, 8, "1 Linear", skipped=skipped)


def test_a_nan_error_fails_the_check_and_is_null_in_the_record() -> None:
    # "NaN fails too": the verdict is `error <= tolerance`, never `not error > tolerance`
    bad = _check(float("nan"))
    assert not bad.ok and "FAILED" in bad.line()
    assert bad.record()["ok"] is False and bad.record()["rel_error"] is None
    assert _check(0.01).ok and not _check(float("inf")).ok
    assert _check(float("nan"), skipped="no layer").ok  # a skipped check is no failure


@pytest.mark.parametrize("padding_mode", ["reflect", "replicate", "circular"])
def test_a_conv_that_does_not_pad_with_zeros_is_left_as_it_is(padding_mode: str) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, padding_mode=padding_mode), nn.Flatten(),
                          nn.Linear(8 * 6 * 6, 4))
    q, what = quantize.quantize(model)
    assert "0 Conv2d" in what and isinstance(q[0], nn.Conv2d)
    x = torch.randn(2, 3, 6, 6) * 3 + 1  # borders that zero padding would change
    with torch.no_grad():
        conv_out = q[0](x)
        ref = model[0](x)
    assert torch.equal(conv_out, ref)


def test_top1_agreement_is_the_share_of_rows_of_logits() -> None:
    torch.manual_seed(0)

    class Seq(nn.Module):  # (batch, time) -> (batch, time, vocab), like the GPT presets
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(11, 7)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.emb(x)

    model = Seq().eval()
    x = torch.randint(0, 11, (3, 5))
    rel, top1, n = quantize.compare(model, model, [(x, None)])
    assert (rel, top1, n) == (0.0, 1.0, 3)

    def flipped(t: torch.Tensor) -> torch.Tensor:  # every row's argmax moved in the first 2 of 5 positions
        out = model(t).clone()
        out[:, :2] = -out[:, :2]
        return out

    rel, top1, n = quantize.compare(flipped, model, [(x, None)])
    assert n == 3 and rel > 0 and math.isclose(top1, 3 / 5)  # 9 of 15 rows agree


def test_the_relative_error_is_the_l2_norm_ratio_not_its_square() -> None:
    ref = torch.ones(2, 4, 3)
    rel, top1, n = quantize.compare(lambda x: ref * 1.1, lambda x: ref, [(torch.zeros(2, 1), None)])
    assert math.isclose(rel, 0.1, rel_tol=1e-5) and n == 2  # ||1.1 r - r|| / ||r||: 10 % off reads 0.1, never 0.01
    rel, _, _ = quantize.compare(lambda x: ref * 1.2, lambda x: ref, [(torch.zeros(2, 1), None)])
    assert rel > quantize.INT8_TOLERANCE  # 20 % off fails the 5 % bound
