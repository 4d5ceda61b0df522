"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/quantize.py: writing and checking the int8
file says nothing through Python's warnings (torch.ao.quantization's and torch.jit's deprecations name the engine's
own calls, not anything the user can act on), for a Linear and a Conv2d model; the result is the whole check."""

import warnings

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine import quantize  # noqa: E402


@pytest.mark.parametrize("model,x,what", [
    (nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), (5, 16), "2 Linear (dynamic int8), 0 Conv2d "
     "(int8 weights)"),
    (nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 4, 2)), (2, 3, 6, 6),
     "1 Linear (dynamic int8), 1 Conv2d (int8 weights)"),
])
def test_writing_and_checking_the_int8_file_warns_nothing(tmp_path, monkeypatch: pytest.MonkeyPatch, model, x,
                                                          what) -> None:
    monkeypatch.setattr(quantize, "LATENCY_RUNS", 3)
    monkeypatch.setattr(quantize, "WARMUP_RUNS", 1)
    torch.manual_seed(0)
    model = model.eval()
    batches = [(torch.randn(*x), None), (torch.randn(*x), None)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check = quantize.write(model, batches, tmp_path, model, 1000)
    assert [f"{w.category.__name__}: {w.message}" for w in caught] == []
    assert (check.format, check.path, check.samples, check.fp32_bytes, check.runs, check.batch, check.quantized,
            check.ok, check.skipped) == (quantize.FORMAT, str(tmp_path / quantize.FILE_NAME), 2 * x[0], 1000, 3,
                                         x[0], what, True, "")
