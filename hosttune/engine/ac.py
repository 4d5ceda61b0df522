"""Activation checkpointing of the transformer's blocks, in torchtitan's three modes
(torchtitan/distributed/activation_checkpoint.py):

- full: every block's activations are dropped in forward and the whole block runs again in backward;
- selective_layer: only every `every`-th block is checkpointed (the every-th, 2*every-th, ... as torchtitan
  counts), the others keep their activations;
- selective_op: every block, but per op (torch.utils.checkpoint.create_selective_checkpoint_contexts): the outputs
  of attention and of every other matmul are kept, the rest (norms, GELU, residual adds, the other matmuls) is
  recomputed. torchtitan keeps every other matmul rather than all of them: keeping all of them keeps most of the
  activation memory, recomputing all of them is the full mode's cost.

Every mode is exact: what is recomputed is the same ops on the same inputs, and checkpoint restores the RNG
streams before recomputing, so dropout draws the same masks again. For that, selective_op never keeps the output of
an op that draws random numbers (dropout, attention with dropout_p > 0): kept, it would not draw again, and every
random op after it would draw different numbers than in forward. (Keeping an in-place draw such as CPU dropout's
bernoulli_ also fails outright: the kept tensor is scaled in place right after.) The FLOP counter
(metrics.count_step_flops) runs the same checkpointing, so hardware FLOPs (HFU) count exactly what the chosen mode
recomputes.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from .errors import EngineError

aten = torch.ops.aten

# The matmuls of the blocks' Linear layers (addmm with a bias, mm without); their outputs are kept alternately.
MATMUL_OPS = frozenset({aten.mm.default, aten.addmm.default})
# Attention is the most expensive op to recompute per byte kept: always kept. The fused kernels, and the batched
# matmuls of the math kernel (CPU with dropout, or where no fused kernel applies).
ATTENTION_OPS = frozenset(getattr(aten, name).default for name in (
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu", "bmm",
) if hasattr(aten, name))


def checkpointed(mode: str, every: int, index: int) -> bool:
    """Whether block `index` (0-based) is checkpointed in `mode`."""
    return mode != "selective_layer" or (index + 1) % every == 0


def draws_random(func: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> bool:
    """Whether this call of `func` draws random numbers. Ops tagged nondeterministic_seeded do, except a fused
    attention kernel (tagged because it can apply dropout) called with dropout_p 0."""
    if torch.Tag.nondeterministic_seeded not in getattr(func, "tags", ()):
        return False
    if func not in ATTENTION_OPS:
        return True
    names = [a.name for a in func._schema.arguments]
    at = names.index("dropout_p") if "dropout_p" in names else None
    p = kwargs.get("dropout_p", args[at] if at is not None and at < len(args) else 0.0)
    return bool(p)


def op_policy() -> Callable[..., Any]:
    """A fresh per-op policy for one checkpointed block call (the matmul count restarts with each block)."""
    from torch.utils.checkpoint import CheckpointPolicy

    # Counted apart in forward and recompute: torch before 2.6 also asks the policy while recomputing.
    matmuls: Dict[bool, int] = {False: 0, True: 0}

    def policy(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
        if draws_random(func, args, kwargs):
            return CheckpointPolicy.PREFER_RECOMPUTE  # drawn again from the restored RNG stream
        if func in ATTENTION_OPS:
            return CheckpointPolicy.MUST_SAVE
        if func in MATMUL_OPS:
            phase = bool(getattr(ctx, "is_recompute", False))
            matmuls[phase] += 1
            return CheckpointPolicy.MUST_SAVE if matmuls[phase] % 2 == 1 else CheckpointPolicy.PREFER_RECOMPUTE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def op_contexts() -> Tuple[Any, Any]:
    """checkpoint's context_fn for selective_op: the forward context records what to keep, the recompute
    context hands the kept outputs back instead of running their ops again."""
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    return create_selective_checkpoint_contexts(op_policy())  # type: ignore[no-any-return]


def run_block(block: nn.Module, x: torch.Tensor, mode: str) -> torch.Tensor:
    """`block(x)` with its activations checkpointed in `mode` (full/selective_layer: the whole block)."""
    if mode == "selective_op":
        return checkpoint(block, x, use_reentrant=False, context_fn=op_contexts)  # type: ignore[no-any-return]
    return checkpoint(block, x, use_reentrant=False)  # type: ignore[no-any-return]


def configure(model: nn.Module, on: bool, mode: str, every: int) -> None:
    """Set a model's checkpointing switches (the bundled GPT has them; a model without them is left alone)."""
    if on and mode == "selective_op" and not hasattr(torch.utils.checkpoint, "create_selective_checkpoint_contexts"):
        raise EngineError(f"ac_mode=selective_op needs torch >= 2.4 (per-op checkpointing), this is torch "
                          f"{torch.__version__}: use ac_mode=full or selective_layer")
    if hasattr(model, "activation_checkpointing"):
        model.activation_checkpointing = on  # type: ignore[assignment]
        if hasattr(model, "ac_mode"):
            model.ac_mode, model.ac_every = mode, every  # type: ignore[assignment]
