"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/float8.py's refusal: every line a user sees
when float8=true cannot run, word for word (the capability, the GPU's own, the way out), and None where it runs."""

import pytest

pytest.importorskip("torch")

from hosttune.engine.float8 import refusal  # noqa: E402

_OLD_GPU = ("float8=true needs compute capability 8.9 or newer (float8 tensor cores: Ada, Hopper, Blackwell); "
            "this GPU is {}: drop float8 (amp=auto trains in bf16/fp16 here)")


@pytest.mark.parametrize("device,capability,torchao,amp,offload,line", [
    ("cpu", None, True, "auto", "none",
     "float8=true needs a CUDA GPU of compute capability 8.9 or newer (L4/L40, H100/H200, B200); this run is on "
     "cpu: drop float8"),
    ("mps", (9, 0), True, "bf16", "none",
     "float8=true needs a CUDA GPU of compute capability 8.9 or newer (L4/L40, H100/H200, B200); this run is on "
     "mps: drop float8"),
    ("cuda", (8, 0), True, "auto", "none", _OLD_GPU.format("8.0")),
    ("cuda", (8, 8), True, "auto", "none", _OLD_GPU.format("8.8")),
    ("cuda", None, True, "auto", "none", _OLD_GPU.format("unknown")),
    ("cuda", (9, 0), False, "auto", "none",
     "float8=true needs torchao in the training python: python -m pip install torchao"),
    ("cuda", (9, 0), True, "fp16", "none",
     "float8=true trains with bf16 or fp32 around the float8 matmuls, not amp=fp16: use amp=bf16 or auto"),
    ("cuda", (9, 0), True, "bf16", "cpu",
     "float8=true with offload=cpu is not supported: the float8 casts read the weights on the GPU"),
    ("cuda", (8, 0), False, "fp16", "cpu", _OLD_GPU.format("8.0")),  # the first reason is the one said
    ("cuda", (9, 0), False, "fp16", "cpu",
     "float8=true needs torchao in the training python: python -m pip install torchao"),
    ("cuda", (9, 0), True, "fp16", "cpu",
     "float8=true trains with bf16 or fp32 around the float8 matmuls, not amp=fp16: use amp=bf16 or auto"),
    ("cuda", (8, 9), True, "auto", "none", None),
    ("cuda", (9, 0), True, "bf16", "none", None),
    ("cuda", (10, 0), True, "off", "none", None),
    ("cuda", (12, 0), True, "auto", "none", None),
])
def test_the_refusal_line_word_for_word(device, capability, torchao, amp, offload, line) -> None:
    assert refusal(device, capability, torchao, amp, offload) == line
