"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/build.py, through fit() in this process (CPU, no
loader workers): an image model trains in channels_last (its conv weights are NHWC after the run) unless the
setting is off, and MFU is the step's FLOPs over the step time and the peak (not the other way round). The
engine's clock (train.time) is frozen except while a micro-batch is fetched, which lasts FETCH seconds on it: the
step time is exact."""

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch")

from test_engine_train_pins6 import FETCH, fetches  # noqa: E402,F401
from torch import nn  # noqa: E402

from hosttune.engine import build  # noqa: E402
from hosttune.engine.api import fit  # noqa: E402


def _rows(run_dir: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _images(n: int = 16):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, 4, 4, generator=g)
    return torch.utils.data.TensorDataset(x, (x[:, 0, 0, 0] > 0).long())


def _conv_model() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Flatten(), nn.Linear(4 * 4 * 4, 2))


@pytest.mark.parametrize("channels_last", [True, False])
def test_an_image_model_trains_channels_last_unless_turned_off(tmp_path: Path, channels_last: bool) -> None:
    model = _conv_model()
    fit(model, _images(), nn.functional.cross_entropy, steps=1, micro_batch_size=4, warmup_steps=0, amp="off",
        device="cpu", num_workers=0, channels_last=channels_last, run_dir=str(tmp_path / "run"))
    start = next(r for r in _rows(tmp_path / "run") if r.get("event") == "start")
    assert start["channels_last"] is channels_last
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last) is channels_last
    assert model[0].weight.is_contiguous() is not channels_last


@pytest.mark.usefixtures("fetches")  # the frozen engine clock (tests/test_engine_train_pins6.py)
def test_mfu_is_the_step_flops_over_step_time_and_peak(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    counted: List[int] = []
    real_count = build.count_step_flops

    def count(*args, **kwargs):
        counted.append(real_count(*args, **kwargs))
        return counted[-1]

    monkeypatch.setattr(build, "count_step_flops", count)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
    data = torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())
    peak = 1e-9  # TFLOP/s: 1000 FLOP/s
    fit(model, data, nn.functional.cross_entropy, steps=2, micro_batch_size=8, grad_accum=2, warmup_steps=0,
        amp="off", device="cpu", num_workers=0, peak_tflops=peak, log_interval=1, run_dir=str(tmp_path / "run"))
    assert len(counted) == 1 and counted[0] > 0
    flops = 2 * counted[0]  # the sample micro-batch's FLOPs, grad_accum of them a step
    logs = [r for r in _rows(tmp_path / "run") if "loss" in r]
    assert [r["step_time_s"] for r in logs] == [2 * FETCH, 2 * FETCH]
    assert [r["mfu"] for r in logs] == [round(flops / (2 * FETCH) / (peak * 1e12), 5)] * 2
    assert all("hfu" not in r for r in logs)


class Switchable(nn.Module):
    """A model with the bundled GPT's checkpointing switches (what build sets from the config)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 2)
        self.activation_checkpointing, self.ac_mode, self.ac_every = False, "full", 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


@pytest.mark.parametrize("on,mode,every", [(True, "selective_layer", 2), (True, "selective_layer", 1),
                                           (True, "full", 1), (False, "full", 1)])
def test_the_models_checkpointing_switches_are_the_configs(tmp_path: Path, on: bool, mode: str, every: int) -> None:
    model = Switchable()
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(0))
    fit(model, torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long()), nn.functional.cross_entropy, steps=1,
        micro_batch_size=4, warmup_steps=0, amp="off", device="cpu", num_workers=0, activation_checkpointing=on,
        ac_mode=mode, ac_every=every, run_dir=str(tmp_path / "run"))
    assert (model.activation_checkpointing, model.ac_mode, model.ac_every) == (on, mode, every)
