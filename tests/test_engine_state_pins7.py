"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/state.py: what TrainState.shared_state writes and
load_shared puts back (weights, LR schedule position, step, epoch), the weight EMA included (a resumed run
continues the saved average, not one restarted from the resumed weights). In-process, small modules on CPU."""

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.ema import WeightEMA  # noqa: E402
from hosttune.engine.runtime import Runtime  # noqa: E402
from hosttune.engine.state import TrainState, resume_offset  # noqa: E402


def _state(weight: float, ema: bool = True) -> TrainState:
    model = nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.fill_(weight)
        model.bias.fill_(-weight)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return TrainState(model, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s)),
                      torch.amp.GradScaler("cpu", enabled=False), torch.Generator(),
                      ema=WeightEMA(model, 0.5) if ema else None)


def test_shared_state_round_trips_model_ema_step_and_epoch() -> None:
    saved = _state(1.0)
    with torch.no_grad():
        saved.model.weight.fill_(3.0)
    saved.ema.update(saved.model)  # 0.5 * 1 + 0.5 * 3 = 2 for the weight; the bias stays -1
    saved.step, saved.epoch, saved.samples = 7, 2, 12
    for _ in range(3):
        saved.optimizer.step()
        saved.scheduler.step()
    cfg = Config(micro_batch_size=4)
    shared = saved.shared_state(cfg, 1)
    assert sorted(shared) == ["config", "ema", "epoch", "model", "optimizer", "pos", "samples", "scaler",
                              "scheduler", "shard", "step", "world_size"]
    assert (shared["step"], shared["epoch"], shared["pos"], shared["samples"], shared["world_size"],
            shared["shard"]) == (7, 2, 3, 12, 1, "none")
    assert {k: v.tolist() for k, v in shared["ema"].items()} == {"weight": [[2.0, 2.0]], "bias": [-1.0]}

    resumed = _state(5.0)
    resumed.load_shared(shared)
    assert (resumed.step, resumed.epoch) == (7, 2)
    assert resumed.scheduler.last_epoch == 3 and resumed.scheduler.get_last_lr() == [0.1 / 4]
    assert resumed.optimizer.param_groups[0]["lr"] == 0.1 / 4
    assert resumed.model.weight.tolist() == [[3.0, 3.0]] and resumed.model.bias.tolist() == [-1.0]
    assert {k: v.tolist() for k, v in resumed.ema.state_dict().items()} == {"weight": [[2.0, 2.0]],
                                                                           "bias": [-1.0]}
    resumed.ema.update(resumed.model)  # the average goes on from the saved one
    assert resumed.ema.state_dict()["weight"].tolist() == [[2.5, 2.5]]


def test_a_state_saved_without_ema_loads_the_weights_and_keeps_the_average_it_has() -> None:
    shared = _state(1.0, ema=False).shared_state(Config(), 1)
    assert shared["ema"] is None
    resumed = _state(5.0)
    resumed.load_shared(shared)
    assert resumed.model.weight.tolist() == [[1.0, 1.0]]
    assert resumed.ema.state_dict()["weight"].tolist() == [[5.0, 5.0]]  # load_checkpoint re-bases it (and warns)


@pytest.mark.parametrize("saved_world,world,offset", [(2, 4, 60), (4, 2, 240), (3, 1, 360)])
def test_a_resume_on_another_world_size_says_so_and_rescales_the_position(tmp_path, saved_world: int, world: int,
                                                                          offset: int) -> None:
    # 120 samples consumed by each of saved_world ranks: the same samples in all, shared by `world` ranks now
    said = []
    rt = Runtime(world, 0, 0, torch.device("cpu"), None, False, tmp_path)
    state = {"config": {"micro_batch_size": 4, "grad_accum": 1}, "world_size": saved_world, "samples": 120,
             "pos": 30, "epoch": 1, "rng": None, "rng_problem": None}
    assert resume_offset(state, tmp_path, Config(micro_batch_size=4), rt, _state(1.0), said.append) == offset
    assert said == [f"hosttune.engine: warning: checkpoint was written by {saved_world} rank(s), this run has "
                    f"{world}: data order and RNG streams restart; the effective batch changes from 4 x 1 x "
                    f"{saved_world} = {4 * saved_world} to 4 x 1 x {world} = {4 * world} samples per step (the "
                    f"learning rate and schedule stay as set)" + (f"; grad_accum={saved_world // world} keeps it"
                                                                  if saved_world % world == 0 else "")]
