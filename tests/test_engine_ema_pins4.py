"""Pins (issue 21, round 4) for hosttune/engine/ema.py on a tiny module, in-process: the exact arithmetic of one
update, which tensors are averaged, the load checks, and the swap that restores the live weights even on error."""

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from hosttune.engine.ema import WeightEMA  # noqa: E402


def tiny() -> nn.Module:
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    with torch.no_grad():
        for p in m.parameters():
            p.fill_(1.0)
    return m


def test_it_starts_at_the_weights_and_averages_floating_tensors_only() -> None:
    m = tiny()
    ema = WeightEMA(m, 0.9)
    assert ema.names == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var"]
    assert "1.num_batches_tracked" not in ema.shadow  # an integer buffer is left alone
    assert torch.equal(ema.shadow["0.weight"], torch.ones(2, 2))
    with torch.no_grad():
        m[0].weight.fill_(5.0)
    assert torch.equal(ema.shadow["0.weight"], torch.ones(2, 2))  # a copy, not the live tensor


def test_one_update_is_decay_times_the_average_plus_the_rest_times_the_weights() -> None:
    m = tiny()
    ema = WeightEMA(m, 0.75)
    with torch.no_grad():
        m[0].weight.fill_(5.0)
    ema.update(m)
    assert torch.allclose(ema.shadow["0.weight"], torch.full((2, 2), 0.75 * 1.0 + 0.25 * 5.0))
    assert torch.equal(ema.shadow["0.bias"], torch.ones(2))  # unchanged weights: unchanged average
    ema.update(m)
    assert torch.allclose(ema.shadow["0.weight"], torch.full((2, 2), 0.75 * 2.0 + 0.25 * 5.0))
    assert torch.equal(m[0].weight, torch.full((2, 2), 5.0))  # the model is never touched


def test_the_average_is_fp32_beside_a_bf16_model() -> None:
    m = tiny().to(torch.bfloat16)
    ema = WeightEMA(m, 0.5)
    assert ema.shadow["0.weight"].dtype == torch.float32
    ema.update(m)
    assert ema.shadow["0.weight"].dtype == torch.float32


def test_state_round_trip_and_the_checks_on_load() -> None:
    m = tiny()
    ema = WeightEMA(m, 0.5)
    state = {k: v + 1 for k, v in ema.state_dict().items()}
    other = WeightEMA(tiny(), 0.5)
    other.load_state_dict(state)
    assert torch.equal(other.shadow["0.weight"], torch.full((2, 2), 2.0))
    assert set(ema.state_dict()) == set(ema.names)
    missing = dict(state)
    del missing["1.bias"]
    with pytest.raises(KeyError, match=r"missing \['1.bias'\]"):
        other.load_state_dict(missing)
    with pytest.raises(KeyError, match=r"missing \[\]"):
        other.load_state_dict({**state, "extra": torch.zeros(1)})
    with pytest.raises(RuntimeError, match=r"the saved EMA of 0.weight has shape \(3, 2\), the model's \(2, 2\)"):
        other.load_state_dict({**state, "0.weight": torch.zeros(3, 2)})
    # a refused state changes nothing
    assert torch.equal(other.shadow["0.weight"], torch.full((2, 2), 2.0))


def test_swapped_in_holds_the_average_inside_and_the_weights_after_even_on_error() -> None:
    m = tiny()
    ema = WeightEMA(m, 0.0)
    with torch.no_grad():
        m[0].weight.fill_(3.0)
    seen = []
    with ema.swapped_in(m):
        seen.append(m[0].weight.detach().clone())
    assert torch.equal(seen[0], torch.ones(2, 2))
    assert torch.equal(m[0].weight, torch.full((2, 2), 3.0))
    with pytest.raises(ValueError):
        with ema.swapped_in(m):
            raise ValueError("boom")
    assert torch.equal(m[0].weight, torch.full((2, 2), 3.0))
    ema.update(m)  # decay 0: the average is the weights
    assert torch.equal(ema.shadow["0.weight"], torch.full((2, 2), 3.0))
