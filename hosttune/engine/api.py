"""The Python API: train your own model with the engine's loop (AMP, DDP, checkpoints, metrics, resume).

    from hosttune.engine.api import fit
    summary = fit(model, train_set, loss_fn, val_set=val_set, steps=500, micro_batch_size=64, run_dir="runs/me")

Run the script alone or under `torchrun` / `hosttune exec -- torchrun`: the process group comes from torchrun's
environment exactly as for the bundled presets. Datasets yield `(input, target)` pairs; map-style ones are shuffled
and sharded per epoch, IterableDatasets stream.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Union

import torch
from torch import nn
from torch.utils.data import Dataset

from .config import Config, ConfigError, load_config
from .errors import EngineError
from .task import Task, build_preset_task
from .train import run

__all__ = ["Config", "ConfigError", "EngineError", "fit"]


def fit(model: Optional[nn.Module] = None, train_set: Optional[Dataset] = None,
        loss_fn: Optional[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = None, *,
        val_set: Optional[Dataset] = None, accuracy: bool = False, tokens_per_sample: int = 0,
        config: Union[Config, str, None] = None, **settings: Any) -> Dict[str, Any]:
    """Train `model` on `train_set` minimising `loss_fn(model(x), y)`; returns the run summary.

    `config` is a Config, or the path of a YAML/JSON config file; keyword `settings` override single fields
    (`steps=500, amp="bf16", ckpt_interval=100, resume=True`, ...). Unknown or ill-typed settings raise
    ConfigError before anything runs. Without model, train_set and loss_fn, `config` must name a bundled preset
    (`fit(config="gpt.yaml")`). `train_set` may be an IterableDataset: it streams (see the README for how it is
    split between ranks and workers and resumed).
    """
    own = (model, train_set, loss_fn)
    if all(x is None for x in own):  # the config's own preset
        cfg = load_config(None, None, None, {**config.to_dict(), **settings}) if isinstance(config, Config) \
            else load_config(None, config, None, settings)
        if cfg.model == "custom":
            raise ConfigError("fit() needs model, train_set and loss_fn, or a config naming a bundled preset")
        return run(cfg, build_preset_task(cfg))
    if any(x is None for x in own):
        missing = ", ".join(n for n, x in zip(("model", "train_set", "loss_fn"), own) if x is None)
        raise ConfigError(f"fit() needs model, train_set and loss_fn together; missing: {missing}")
    if isinstance(config, Config):  # through load_config: an unknown key is a ConfigError, not a TypeError
        cfg = load_config(None, None, None, {**config.to_dict(), **settings, "model": "custom"})
    else:
        cfg = load_config(None, config, None, {**settings, "model": "custom"})
    assert model is not None and train_set is not None and loss_fn is not None
    task = Task(model, train_set, loss_fn, val_set, accuracy=accuracy, tokens_per_sample=tokens_per_sample)
    return run(cfg, task)
