"""Pins (issue 21, session 9, mutation round 7) on hosttune/engine/export.py's ONNX size limit: onnx_bytes, the
function that decides, gives a model the ONNX file unless its weights reach 1.5 GiB (ONNX_SINGLE_FILE_LIMIT), where
export_run prints only the note that the model is too large. A model of exactly 1.5 MiB of weights gets its file
(with the weights inside it); a model of exactly 1.5 GiB gets none, made of one float expanded (stride 0) so that
nothing of that size is ever allocated or serialized. In-process: the first torch.onnx export costs a few seconds."""

import importlib.util

import pytest

torch = pytest.importorskip("torch")
if not (importlib.util.find_spec("onnx") and importlib.util.find_spec("onnxscript")):
    pytest.skip("the ONNX export needs onnx and onnxscript (the dev extras)", allow_module_level=True)

from torch import nn  # noqa: E402

from hosttune.engine import export  # noqa: E402

MIB = 1 << 20


class _Expanded(nn.Module):
    """Weights of `size` bytes as far as the export's count goes (numel * element size), held in 4 bytes."""

    def __init__(self, size: int) -> None:
        super().__init__()
        assert size % 4 == 0
        self.w = nn.Parameter(torch.zeros(1).expand(size // 4), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.w[:1]


def _onnx(model: nn.Module, example: torch.Tensor):
    model.eval()
    return export.onnx_bytes(model, example, export.dynamic_shapes(model, example))


def test_a_model_of_one_and_a_half_mib_of_weights_gets_its_onnx_file_with_the_weights_in_it() -> None:
    import onnx

    model = nn.Linear(768, 512, bias=False)  # 768 * 512 fp32 weights: 1.5 MiB exactly
    assert sum(p.numel() * p.element_size() for p in model.parameters()) == 1536 << 10
    data = _onnx(model, torch.randn(3, 768))
    assert data is not None, "a 1.5 MiB model was given only the too-large note, no ONNX file"
    assert len(data) > 1536 << 10  # one file, the weights inside it (no external-data side file)
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto)
    (weights,) = [t for t in proto.graph.initializer if list(t.dims) == [512, 768]]
    assert not weights.external_data
    got = torch.from_numpy(onnx.numpy_helper.to_array(weights).copy())
    assert torch.equal(got, model.weight.detach())


def test_a_model_of_one_and_a_half_gib_of_weights_gets_only_the_note() -> None:
    assert _onnx(_Expanded(1536 * MIB), torch.zeros(2, 3)) is None

