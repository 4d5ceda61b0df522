"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/optim.py's optimizer_step and
hosttune/engine/precision.py's grad_scaler: one step clips, steps, frees the gradients (None, not zeros: the
memory goes) and advances the schedule; the sharded (FSDP) loss scaler only for fp16 under FSDP, a disabled plain
one otherwise. In-process, CPU."""

import math
import warnings

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine import optim, precision  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.state import TrainState  # noqa: E402


def test_a_step_returns_the_norm_frees_the_gradients_and_advances_the_schedule() -> None:
    model = nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.fill_(0.0)
        model.bias.fill_(0.0)
    cfg = Config(lr=0.1, min_lr=0.0, warmup_steps=2, steps=10, grad_clip=0.0)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    st = TrainState(model, opt, optim.lr_scheduler(opt, cfg), torch.amp.GradScaler("cpu", enabled=False),
                    torch.Generator())
    lr_before = opt.param_groups[0]["lr"]
    model(torch.tensor([[3.0, 4.0]])).sum().backward()  # gradients: weight (3, 4), bias 1
    norm = optim.optimizer_step(st, cfg)
    assert math.isclose(float(norm), math.sqrt(26), rel_tol=1e-6)
    assert all(p.grad is None for p in model.parameters())
    assert model.weight.tolist()[0] == pytest.approx([-3 * lr_before, -4 * lr_before])
    assert st.scheduler.last_epoch == 1 and opt.param_groups[0]["lr"] == optim.lr_at(1, cfg)


@pytest.mark.parametrize("dtype", [None, torch.bfloat16])
@pytest.mark.parametrize("fsdp", [False, True])
def test_without_fp16_the_scaler_is_a_disabled_plain_one(dtype, fsdp: bool) -> None:
    scaler = precision.grad_scaler(dtype, torch.device("cpu"), fsdp)
    assert type(scaler) is torch.amp.GradScaler and not scaler.is_enabled()


def test_fp16_under_fsdp_gets_the_sharded_scaler() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no CUDA here: torch says the scaler is disabled
        scaler = precision.grad_scaler(torch.float16, torch.device("cpu"), True)
    assert type(scaler) is not torch.amp.GradScaler and isinstance(scaler, torch.amp.GradScaler)
