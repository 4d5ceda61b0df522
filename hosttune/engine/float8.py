"""float8 training through torchao (`float8=true`): the decision (where it can run, one clear line where it
cannot), the module filter, and the swap of nn.Linear for torchao's Float8Linear.

Where: float8 tensor cores start with compute capability 8.9 (Ada: L4, L40, RTX 40xx; Hopper: H100/H200 9.0;
Blackwell 10.0+). Elsewhere torch has no float8 GEMM (`torch._scaled_mm` raises), so the run is refused at start
rather than failing in the first step: on CPU, on an older GPU, without torchao, with amp=fp16 (torchao's recipes
keep bf16 or fp32 around the float8 matmuls; a GradScaler is not part of them) and with FSDP's CPU offload (the
float8 casts read the weights on the GPU every step).

Which layers (torchao's convert_to_float8_training docs and torchtitan's float8 converter): nn.Linear whose
in_features and out_features are multiples of 16 (the float8 GEMM's alignment; others would need padding), never
the output head (the last Linear: the logits are the most sensitive to the reduced range, and torchtitan leaves
its "output" out too), nor any fully qualified name in `skip`.

Order: convert the bare model, then compile, DDP or FSDP (torchtitan converts the model before it applies
parallelism and compile, so the wrappers see Float8Linear modules). Without compile each cast runs as separate
kernels, and float8 is then often slower than bf16: the start line says so.
"""

from __future__ import annotations

import importlib.util
from typing import Callable, List, Optional, Sequence, Tuple

from torch import nn

from .errors import EngineError

MIN_CAPABILITY = (8, 9)
ALIGN = 16


def refusal(device_type: str, capability: Optional[Tuple[int, int]], have_torchao: bool, amp: str,
            offload: str) -> Optional[str]:
    """Why float8=true cannot run here (one line), or None."""
    if device_type != "cuda":
        return (f"float8=true needs a CUDA GPU of compute capability {MIN_CAPABILITY[0]}.{MIN_CAPABILITY[1]} or "
                f"newer (L4/L40, H100/H200, B200); this run is on {device_type}: drop float8")
    if capability is None or tuple(capability) < MIN_CAPABILITY:
        have = "unknown" if capability is None else f"{capability[0]}.{capability[1]}"
        return (f"float8=true needs compute capability {MIN_CAPABILITY[0]}.{MIN_CAPABILITY[1]} or newer (float8 "
                f"tensor cores: Ada, Hopper, Blackwell); this GPU is {have}: drop float8 (amp=auto trains in "
                f"bf16/fp16 here)")
    if not have_torchao:
        return "float8=true needs torchao in the training python: python -m pip install torchao"
    if amp == "fp16":
        return "float8=true trains with bf16 or fp32 around the float8 matmuls, not amp=fp16: use amp=bf16 or auto"
    if offload != "none":
        return "float8=true with offload=cpu is not supported: the float8 casts read the weights on the GPU"
    return None


def torchao_available() -> bool:
    return importlib.util.find_spec("torchao") is not None


def output_head(model: nn.Module) -> str:
    """The fully qualified name of the last nn.Linear registered: the output head ("" when there is none)."""
    last = ""
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear):
            last = name
    return last


def module_filter(model: nn.Module, skip: Sequence[str] = ()) -> Callable[[nn.Module, str], bool]:
    """torchao's module_filter_fn(module, fqn): Linear layers with both dimensions multiples of 16, never the
    output head nor a name in `skip`."""
    head = output_head(model)
    leave = set(skip) | ({head} if head else set())

    def keep(mod: nn.Module, fqn: str) -> bool:
        if fqn in leave or not isinstance(mod, nn.Linear):
            return False
        return mod.in_features % ALIGN == 0 and mod.out_features % ALIGN == 0

    return keep


def convert(model: nn.Module, skip: Sequence[str] = (), emulate: bool = False) -> List[str]:
    """Swap the filtered Linear layers for torchao's Float8Linear in place; returns their names. `emulate` runs
    the float8 GEMM in higher precision (torchao's own switch: how the swap is tested on CPU)."""
    try:
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    except ImportError as exc:
        raise EngineError(f"float8=true needs torchao in the training python ({exc}): "
                          f"python -m pip install torchao") from None
    keep = module_filter(model, skip)
    chosen = [name for name, m in model.named_modules() if keep(m, name)]
    if not chosen:
        raise EngineError(f"float8=true: no Linear layer with both dimensions multiples of {ALIGN} besides the "
                          f"output head; nothing would train in float8")
    convert_to_float8_training(model, module_filter_fn=keep, config=Float8LinearConfig(emulate=emulate))
    return chosen


def start_line(chosen: Sequence[str], compiled: bool) -> str:
    shown = ", ".join(chosen[:4]) + (f" and {len(chosen) - 4} more" if len(chosen) > 4 else "")
    note = "" if compiled else "; without compile=true the casts are not fused and float8 is often slower than bf16"
    return f"hosttune.engine: float8: {len(chosen)} Linear layer(s) through torchao ({shown}){note}"
