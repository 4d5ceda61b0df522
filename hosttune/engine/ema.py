"""An exponential moving average of the weights: `ema = decay * ema + (1 - decay) * weights` after every optimizer
step, in fp32 beside the model, checkpointed with the train state and used for the final evaluation."""

from __future__ import annotations

import contextlib
from typing import Dict, Iterator, List

import torch
from torch import nn


class WeightEMA:
    """The EMA of a model's floating-point parameters and buffers (integer buffers, e.g. BatchNorm's counter,
    are left alone). Starts at the weights it is built from."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        self.decay = decay
        self.names = [k for k, v in model.state_dict().items() if v.is_floating_point()]
        tensors = model.state_dict()
        self.shadow: Dict[str, torch.Tensor] = {k: tensors[k].detach().float().clone() for k in self.names}

    def _live(self, model: nn.Module) -> List[torch.Tensor]:
        tensors = model.state_dict(keep_vars=True)
        return [tensors[k].detach() for k in self.names]

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        """One step of the average (after the optimizer step)."""
        shadow = [self.shadow[k] for k in self.names]
        live = [t.float() for t in self._live(model)]
        torch._foreach_lerp_(shadow, live, 1.0 - self.decay)

    def state_dict(self) -> Dict[str, torch.Tensor]:
        return dict(self.shadow)

    def load_state_dict(self, state: Dict[str, torch.Tensor]) -> None:
        """Raises KeyError/RuntimeError when `state` is not this model's average."""
        missing = [k for k in self.names if k not in state]
        if missing or len(state) != len(self.names):
            raise KeyError(f"the saved EMA does not match the model's weights (missing {missing[:3]})")
        for k in self.names:
            if state[k].shape != self.shadow[k].shape:
                raise RuntimeError(f"the saved EMA of {k} has shape {tuple(state[k].shape)}, the model's "
                                   f"{tuple(self.shadow[k].shape)}")
        for k in self.names:
            self.shadow[k].copy_(state[k])

    @contextlib.contextmanager
    def swapped_in(self, model: nn.Module) -> Iterator[None]:
        """The model holds the averaged weights inside the block, its own again after it."""
        live = self._live(model)
        saved = [t.clone() for t in live]
        with torch.no_grad():
            for t, k in zip(live, self.names):
                t.copy_(self.shadow[k])
        try:
            yield
        finally:
            with torch.no_grad():
                for t, s in zip(live, saved):
                    t.copy_(s)
