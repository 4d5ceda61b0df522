"""The final evaluation counts samples, not batches (issue 25, correctness 3): the same validation samples are
evaluated whatever the micro-batch size, so val_loss is comparable between runs that differ in it."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine.config import ConfigError, load_config  # noqa: E402
from hosttune.engine.evaluate import evaluate  # noqa: E402
from hosttune.engine.runtime import Runtime  # noqa: E402
from hosttune.engine.task import Task  # noqa: E402

CPU = torch.device("cpu")


def val_result(tmp_path: Path, *sets: str) -> dict:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(40, 4, generator=g)
    val = torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())
    task = Task(model, val, torch.nn.functional.cross_entropy, val, accuracy=True)
    cfg = load_config(None, None, ["model=custom", "device=cpu", *sets])
    return evaluate(model, task, cfg, Runtime(1, 0, 0, CPU, None, False, run_dir=tmp_path), lambda t: t)


def test_the_same_samples_are_evaluated_whatever_the_micro_batch(tmp_path: Path) -> None:
    small = val_result(tmp_path, "micro_batch_size=8", "eval_samples=20")
    large = val_result(tmp_path, "micro_batch_size=16", "eval_samples=20")
    assert small["val_samples"] == large["val_samples"] == 20  # 2.5 and 1.25 micro-batches: cut at the sample
    assert small["val_loss"] == pytest.approx(large["val_loss"], abs=2e-5)
    assert small["val_accuracy"] == large["val_accuracy"]
    assert val_result(tmp_path, "micro_batch_size=16")["val_samples"] == 40  # the default 512: the whole set
    assert val_result(tmp_path, "micro_batch_size=8", "eval_batches=2")["val_samples"] == 16  # a batch cap too


def test_eval_settings_are_checked() -> None:
    for bad in ("eval_samples=0", "eval_batches=0"):
        with pytest.raises(ConfigError, match=bad.split("=")[0]):
            load_config(None, None, [bad])
