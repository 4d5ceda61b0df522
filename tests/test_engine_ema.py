"""hosttune/engine/ema.py (issue 25): the EMA of the weights is updated after each optimizer step, checkpointed,
restored bitwise on a resume, used for the final evaluation (and said so), refused under sharding, and off by
default."""

import shutil
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune.engine.config import Config, ConfigError

torch = pytest.importorskip("torch")

from _enginehelp import _Recorded, _Toy, toy_fit  # noqa: E402

from hosttune.engine.api import fit  # noqa: E402
from hosttune.engine.evaluate import summary_line  # noqa: E402

DECAY = 0.75  # far from 1, so every step's weights show in the average
SETTINGS = dict(steps=6, ckpt_interval=1, keep_checkpoints=10, ema_decay=DECAY, lr=0.1, warmup_steps=1)


def _state(run_dir: Path, step: int) -> Dict[str, Any]:
    return torch.load(run_dir / "checkpoints" / f"step-{step:07d}" / "state.pt", weights_only=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    """`a`: 6 steps, a checkpoint after each; `b`: its copy cut back to step 3 and resumed to 6."""
    tmp = tmp_path_factory.mktemp("ema")
    model = _Toy()
    first = toy_fit(tmp / "a", **SETTINGS, val_set=_Recorded(16))
    shutil.copytree(tmp / "a", tmp / "b")
    for step in (4, 5, 6):
        shutil.rmtree(tmp / "b" / "checkpoints" / f"step-{step:07d}")
    # our own model object: after fit() it must hold the trained weights, not the average
    second = fit(model, _Recorded(), torch.nn.functional.cross_entropy, val_set=_Recorded(16), resume=True,
                 run_dir=str(tmp / "b"), micro_batch_size=8, device="cpu", amp="off", num_workers=0,
                 log_interval=1, **SETTINGS)
    return dict(a=tmp / "a", b=tmp / "b", first=first, second=second, model=model)


def test_the_average_moves_after_each_optimizer_step(runs: Dict[str, Any]) -> None:
    prev = _state(runs["a"], 1)["ema"]
    for step in range(2, 7):
        st = _state(runs["a"], step)
        for name, avg in st["ema"].items():
            want = DECAY * prev[name] + (1 - DECAY) * st["model"][name]
            torch.testing.assert_close(avg, want, rtol=1e-6, atol=1e-7)
            assert not torch.equal(avg, st["model"][name])  # an average, not the weights
        prev = st["ema"]


def test_a_resume_restores_the_average_bitwise(runs: Dict[str, Any]) -> None:
    a, b = _state(runs["a"], 6), _state(runs["b"], 6)
    assert a["ema"].keys() == b["ema"].keys() == {"fc.weight", "fc.bias"}
    for name in a["ema"]:
        assert torch.equal(a["ema"][name], b["ema"][name]), name
        assert torch.equal(a["model"][name], b["model"][name]), name
    assert runs["first"]["val_loss"] == runs["second"]["val_loss"]


def test_the_final_evaluation_uses_the_average_and_says_so(runs: Dict[str, Any]) -> None:
    st = _state(runs["b"], 6)
    data = _Recorded(16)
    x, y = data.x, data.y

    def val_loss(weights: Dict[str, Any]) -> float:
        m = _Toy()
        m.load_state_dict(weights)
        with torch.no_grad():
            return round(float(torch.nn.functional.cross_entropy(m(x), y)), 5)

    s = runs["second"]
    assert s["val_loss"] == pytest.approx(val_loss(st["ema"]), abs=2e-5)
    assert val_loss(st["ema"]) != val_loss(st["model"])
    assert s["eval_weights"] == "ema (decay 0.75)"
    assert "with the ema (decay 0.75) weights" in summary_line(s)
    # the model handed to fit() holds the trained weights again afterwards, not the average
    for name, w in runs["model"].state_dict().items():
        assert torch.equal(w, st["model"][name]), name


def test_off_by_default_and_refused_under_sharding(tmp_path: Path) -> None:
    assert Config().ema_decay == 0.0
    s = toy_fit(tmp_path / "off", steps=1, ckpt_interval=1, val_set=_Recorded(16))
    assert "eval_weights" not in s and "with the" not in summary_line(s)
    assert _state(tmp_path / "off", 1)["ema"] is None
    for shard in ("zero1", "fsdp"):
        with pytest.raises(ConfigError, match=f"ema_decay needs shard=none.*shard={shard}"):
            Config(ema_decay=0.999, shard=shard)
    with pytest.raises(ConfigError, match=r"ema_decay must be in \[0, 1\)"):
        Config(ema_decay=1.0)


def test_a_checkpoint_without_an_average_starts_one(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    toy_fit(tmp_path, steps=2, ckpt_interval=2)
    toy_fit(tmp_path, steps=3, ema_decay=DECAY, resume=True)
    assert "the checkpoint has no EMA of the weights (written with ema_decay=0); the average starts from the " \
           "weights of step 2" in capsys.readouterr().err
    two, three = _state(tmp_path, 2), _state(tmp_path, 3)
    for name, avg in three["ema"].items():
        torch.testing.assert_close(avg, DECAY * two["model"][name] + (1 - DECAY) * three["model"][name])
