"""What MFU is measured against and what it counts (issue 25, correctness 3): a MIG slice's peak is its share of
the GPU's, activation checkpointing's recompute is hardware FLOPs (HFU) and not model FLOPs (MFU), and attention is
counted on CPU too. The CUDA parts go through pure functions with the device's name and multiprocessor count
handed in (not run on a GPU here)."""

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import metrics  # noqa: E402
from hosttune.engine.api import fit  # noqa: E402
from hosttune.engine.config import load_config  # noqa: E402
from hosttune.engine.models import GPT, lm_loss  # noqa: E402

CUDA0 = torch.device("cuda", 0)  # only a name here: nothing touches a GPU


def no_autocast() -> Any:
    return torch.autocast("cpu", enabled=False)


# ---- the peak of a MIG slice ----

@pytest.mark.parametrize("name, sms, whole", [
    ("NVIDIA A100-SXM4-40GB MIG 3g.20gb", 42, 108),
    ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", 16, 132),
    ("NVIDIA H200 MIG 2g.35gb", 32, 132),
])
def test_a_mig_slice_gets_its_share_of_the_gpu_peak(name: str, sms: int, whole: int) -> None:
    full = metrics.peak_tflops(0.0, CUDA0, "bf16", device_name=name.split(" MIG ")[0], sm_count=whole)
    assert full is not None and full > 100
    assert metrics.peak_tflops(0.0, CUDA0, "bf16", device_name=name, sm_count=sms) == pytest.approx(
        full * sms / whole)


def test_a_mig_slice_of_a_gpu_without_a_known_sm_count_has_no_mfu() -> None:
    # The L40S is in the peak table but has no MIG and no SM count here: a "MIG" name cannot be scaled, so MFU is
    # unknown rather than measured against the whole GPU.
    assert metrics.peak_tflops(0.0, CUDA0, "bf16", device_name="NVIDIA L40S MIG 1g.12gb", sm_count=20) is None
    assert metrics.peak_tflops(0.0, CUDA0, "bf16", device_name="NVIDIA L40S", sm_count=142) == pytest.approx(362.05)
    assert metrics.peak_tflops(7.5, CUDA0, "bf16", device_name="NVIDIA L40S MIG 1g.12gb", sm_count=20) == 7.5


# ---- what is counted ----

def test_model_flops_leave_out_the_activation_checkpointing_recompute() -> None:
    torch.manual_seed(0)
    plain = GPT(64, 16, 2, 2, 32, 0.0)
    checkpointed = GPT(64, 16, 2, 2, 32, 0.0)
    checkpointed.activation_checkpointing = True
    x = torch.randint(0, 64, (2, 16))
    model_flops = metrics.count_step_flops(plain, (x, x), lm_loss, no_autocast)
    assert metrics.count_step_flops(checkpointed, (x, x), lm_loss, no_autocast) == model_flops
    hardware = metrics.count_step_flops(checkpointed, (x, x), lm_loss, no_autocast, recompute=True)
    assert model_flops < hardware < 1.5 * model_flops  # one more forward of the blocks, not of the head
    assert checkpointed.activation_checkpointing  # the real model keeps its switch


class Attention(torch.nn.Module):
    def __init__(self, c: int, heads: int, attend: bool) -> None:
        super().__init__()
        self.qkv, self.heads, self.attend = torch.nn.Linear(c, 3 * c), heads, attend

    def forward(self, x: Any) -> Any:
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) if self.attend else v


def test_attention_flops_are_counted_on_cpu() -> None:
    b, t, c, heads = 2, 32, 16, 2
    x = torch.randn(b, t, c)

    def loss(out: Any, _: Any) -> Any:
        return out.float().pow(2).mean()

    with_attention = metrics.count_step_flops(Attention(c, heads, True), (x, x), loss, no_autocast)
    without = metrics.count_step_flops(Attention(c, heads, False), (x, x), loss, no_autocast)
    # Two (t x t) matmuls per head forward, twice that backward: 12 * b * heads * t^2 * head_dim.
    assert with_attention - without == 12 * b * heads * t * t * (c // heads)


def test_a_run_with_activation_checkpointing_reports_mfu_and_hfu_apart(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cfg = load_config("gpt-tiny", None, ["n_layer=2", "n_embd=32", "n_head=2", "block_size=16", "micro_batch_size=4",
                                         "steps=2", "eval_batches=1", "log_interval=1", "warmup_steps=0", "amp=off",
                                         "device=cpu", "num_workers=0", "activation_checkpointing=true",
                                         "peak_tflops=0.001", f"run_dir={run}"])
    fit(config=cfg)
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in steps if "step_time_s" in r]
    assert len(steps) == 2
    for rec in steps:
        # Both over the same step time and peak: their ratio is the FLOPs' (recompute of 2 blocks, not the head).
        assert rec["hfu"] > rec["mfu"] > 0
        assert 1.05 < rec["hfu"] / rec["mfu"] < 1.5
