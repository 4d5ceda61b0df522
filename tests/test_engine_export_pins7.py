"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/export.py: a preset that cannot be built is an
ExportError (the CLI's one-line error, exit 2), not the engine's own error; and the model and validation set of a
resnet-tiny run trained on an image folder come from that folder, not from the current directory. In-process."""

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.export import ExportError, build_model, main  # noqa: E402


def test_a_preset_that_cannot_be_built_is_an_export_error() -> None:
    with pytest.raises(ExportError) as got:
        build_model(Config(model="custom"))
    assert type(got.value) is ExportError
    assert str(got.value) == "model=custom needs the Python API (hosttune.engine.api.fit) with your own model"


def test_the_cli_says_a_missing_run_directory_in_one_line(tmp_path: Path, capsys) -> None:
    assert main(str(tmp_path / "nope"), str(tmp_path / "out")) == 2
    assert capsys.readouterr().err == f"hosttune.engine: error: {tmp_path / 'nope'}: no such run directory\n"
    assert not (tmp_path / "out").exists()


def test_an_image_folder_run_exports_with_its_own_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed (the images extra)")
    root = tmp_path / "imgs"
    for name, colour in (("cat", (200, 0, 0)), ("dog", (0, 0, 200)), ("owl", (0, 200, 0))):
        (root / name).mkdir(parents=True)
        for k in range(5):
            Image.fromarray(np.full((8, 8, 3), colour, np.uint8), "RGB").save(root / name / f"{k}.png")
    elsewhere = tmp_path / "cwd"
    (elsewhere / "not-a-class").mkdir(parents=True)
    (elsewhere / "notes.txt").write_text("x")
    monkeypatch.chdir(elsewhere)
    cfg = Config(model="resnet-tiny", image_source="folder", data_path=str(root), image_size=8, width=8)
    model, val = build_model(cfg)
    assert os.getcwd() == str(elsewhere)
    assert model.head.out_features == 3  # the folder's three classes
    assert val.classes == ["cat", "dog", "owl"] and len(val) == 3  # one in five of each class is validation


def _linear(weight: float, bias: float) -> "torch.nn.Module":
    m = torch.nn.Linear(2, 1)
    with torch.no_grad():
        m.weight.fill_(weight)
        m.bias.fill_(bias)
    return m.eval()


def _onnx_linear(weight: float, bias: float) -> bytes:
    """An ONNX file of Linear(2, 1) with these weights and a dynamic batch, written with onnx.helper (ms, not the
    seconds torch.onnx.export takes)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W", "B"], ["y"], transB=1)], "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1])],
        [helper.make_tensor("W", TensorProto.FLOAT, [1, 2], [weight, weight]),
         helper.make_tensor("B", TensorProto.FLOAT, [1], [bias])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def test_the_onnx_check_compares_every_batch() -> None:
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from hosttune.engine.export import Check, check_onnx

    data = _onnx_linear(1.0, 0.5)
    # the same bias, another weight: the first batch (zeros) agrees, the second (ones) is 2 x 0.25 off
    batches = [(torch.zeros(3, 2), None), (torch.ones(4, 2), None)]
    assert check_onnx(data, "out/model.onnx", _linear(1.25, 0.5), batches, 0.1) == Check(
        "onnx", "out/model.onnx", 7, 0.5, 0.1)
    assert check_onnx(data, "out/model.onnx", _linear(1.0, 0.5), batches, 0.1) == Check(
        "onnx", "out/model.onnx", 7, 0.0, 0.1)


@pytest.mark.parametrize("size,cuts", [(2, [1, 1]), (3, [2, 1]), (6, [4, 2]), (9, [6, 3])])
def test_validation_batches_are_two_the_second_a_third(size: int, cuts: list) -> None:
    from hosttune.engine.export import validation_batches

    val = torch.utils.data.TensorDataset(torch.arange(size).float().view(-1, 1), torch.arange(size))
    batches = validation_batches(val, 100)
    assert [len(x) for x, _ in batches] == cuts
    assert torch.cat([y for _, y in batches]).tolist() == list(range(size))


@pytest.mark.parametrize("size", [0, 1])
def test_fewer_than_two_validation_samples_is_an_export_error(size: int) -> None:
    from hosttune.engine.export import validation_batches

    val = torch.utils.data.TensorDataset(torch.zeros(size, 1), torch.zeros(size))
    with pytest.raises(ExportError, match="^the validation set has fewer than 2 samples: nothing to compare the "
                                          "export on$"):
        validation_batches(val, 100)
    with pytest.raises(ExportError, match="^the run has no validation set to compare the exported model on$"):
        validation_batches(None, 100)
