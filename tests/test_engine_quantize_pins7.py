"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/quantize.py: what the int8 copy of a model holds
(every state_dict entry, its dtype and shape, nested convs included), what the TorchScript file keeps of it, and the
skipped check's whole record. Small modules on CPU, in-process."""

import io
import warnings
from typing import Dict, Tuple

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine import quantize  # noqa: E402


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, bias=False)),
                         nn.ReLU(), nn.Flatten(), nn.Linear(4 * 2 * 2, 5)).eval()


def _entries(sd: Dict[str, object]) -> Dict[str, Tuple[str, Tuple[int, ...]]]:
    return {k: (str(v.dtype), tuple(v.shape)) for k, v in sd.items() if isinstance(v, torch.Tensor)}


def test_the_int8_copy_holds_int8_weights_and_their_scales_nested_convs_included() -> None:
    model = _model()
    copied, what = quantize.quantize(model)
    assert what == "1 Linear (dynamic int8), 2 Conv2d (int8 weights)"
    assert _entries(copied.state_dict()) == {
        "0.bias": ("torch.float32", (4,)),
        "0.weight_int8": ("torch.int8", (4, 3, 3, 3)),
        "0.weight_scale": ("torch.float32", (4,)),
        "1.0.weight_int8": ("torch.int8", (4, 4, 3, 3)),
        "1.0.weight_scale": ("torch.float32", (4,)),
        "4.scale": ("torch.float32", ()),
        "4.zero_point": ("torch.int64", ()),
    }
    assert isinstance(copied[1][0], quantize.Int8WeightConv2d) and type(model[1][0]) is nn.Conv2d  # untouched


def test_the_torchscript_file_keeps_the_int8_weights_and_scales() -> None:
    copied, _ = quantize.quantize(_model())
    data = quantize.to_torchscript(copied, torch.randn(2, 3, 2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loaded = torch.jit.load(io.BytesIO(data))
    assert sorted(loaded.state_dict()) == ["0.bias", "0.weight_int8", "0.weight_scale", "1.0.weight_int8",
                                           "1.0.weight_scale"]
    x = torch.randn(3, 3, 2, 2)
    with torch.no_grad():
        assert torch.equal(loaded(x), copied(x))


def test_a_skipped_check_record_is_whole() -> None:
    check = quantize.skipped("out/model.int8.pt", "no layer")
    rec = check.record()
    rec.pop("threads")
    assert rec == {"format": "torchscript int8", "path": "out/model.int8.pt", "samples": 0, "rel_error": None,
                   "top1_agreement": None, "tolerance": 0.05, "bytes": 0, "fp32_bytes": 0, "fp32_ms": None,
                   "int8_ms": None, "runs": 0, "batch": 0, "quantized": "nothing",
                   "load": "torch.jit.load(PATH) (torch only)", "skipped": "no layer", "ok": True}
