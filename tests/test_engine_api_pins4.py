"""Pins (issue 21, round 4) for hosttune/engine/api.py's refusals, each before anything trains (in-process)."""

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import api  # noqa: E402
from hosttune.engine.config import Config, ConfigError  # noqa: E402


def _pieces() -> tuple:
    return torch.nn.Linear(2, 2), [(torch.zeros(2), torch.zeros(2))], torch.nn.functional.mse_loss


@pytest.mark.parametrize("drop, missing", [((0,), "model"), ((1,), "train_set"), ((2,), "loss_fn"),
                                           ((0, 2), "model, loss_fn")])
def test_the_three_pieces_come_together(drop: tuple, missing: str) -> None:
    pieces = list(_pieces())
    for i in drop:
        pieces[i] = None
    with pytest.raises(ConfigError, match=f"^fit\\(\\) needs model, train_set and loss_fn together; missing: "
                                          f"{missing}$"):
        api.fit(*pieces, steps=1)


def test_no_pieces_and_no_preset_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^fit\(\) needs model, train_set and loss_fn, or a config naming a "
                                          r"bundled preset$"):
        api.fit(config=Config(model="custom"))


@pytest.mark.parametrize("config", [None, Config()])
def test_an_unknown_setting_is_a_config_error_not_a_type_error(config: object) -> None:
    model, data, loss = _pieces()
    with pytest.raises(ConfigError, match=r"option: unknown key 'stpes' \(did you mean 'steps'\?\)"):
        api.fit(model, data, loss, config=config, stpes=3)
    with pytest.raises(ConfigError, match="steps must be >= 1, got 0"):
        api.fit(model, data, loss, config=config, steps=0)


def test_the_api_exports() -> None:
    assert api.__all__ == ["Config", "ConfigError", "EngineError", "fit"]
