"""fp16 with shard=fsdp (issue 25, correctness 1): the ShardedGradScaler's overflow finding meets the fused AdamW
step. Every V100/T4 run with `shard=fsdp` takes this path (`amp=auto` picks fp16 below Ampere); it crashed at the
first step ("output with shape [] doesn't match the broadcast shape [1]").

Run here on CPU: 2 gloo ranks (started as torchrun starts them, tests/_ranks.py), the engine's own loop with fp16
autocast on CPU and the CPU ShardedGradScaler (the engine refuses fp16 on CPU, so the rank script hands the runtime
fp16 itself), fused AdamW (torch's CPU fused kernel, as the engine picks it). The first step's loss is made
infinite: both ranks must skip it and halve the scale; the later steps must step."""

import json
from pathlib import Path

import pytest
from _ranks import run_ranks

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.integration

RANK_SCRIPT = r'''
import os
import sys
import torch
from hosttune.engine import optim, runtime
from hosttune.engine.config import load_config
from hosttune.engine.task import build_preset_task
from hosttune.engine.train import run

runtime.resolve_amp = lambda amp, device: torch.float16  # what amp=auto gives on a V100/T4; CPU autocast has fp16
fused = []
build_optimizer = optim.build_optimizer
def recording(*args, **kwargs):
    opt = build_optimizer(*args, **kwargs)
    fused.append(bool(opt.defaults.get("fused")))
    return opt
optim.build_optimizer = recording
import hosttune.engine.build as build
build.build_optimizer = recording

cfg = load_config("gpt-tiny", None, ["n_layer=1", "n_embd=32", "n_head=2", "block_size=16", "micro_batch_size=4",
                                     "steps=3", "eval_batches=1", "log_interval=1", "warmup_steps=0", "num_workers=0",
                                     "shard=fsdp", "run_dir=" + sys.argv[1]])
task = build_preset_task(cfg)
loss_fn, calls = task.loss_fn, []
def overflow_first(out, y):
    calls.append(1)
    loss = loss_fn(out, y)
    return loss * float("inf") if len(calls) == 1 else loss
task.loss_fn = overflow_first
summary = run(cfg, task)
with open(f"{sys.argv[1]}.rank{os.environ['RANK']}", "w") as f:
    f.write(f"{summary['step']} {fused[0]} {summary['val_loss']}")
'''


def test_fp16_with_fsdp_steps_with_the_fused_optimizer_and_skips_an_overflow_on_every_rank(tmp_path: Path) -> None:
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    run_dir = tmp_path / "run"
    run_ranks([str(script), str(run_dir)], tmp_path)  # the 2 ranks as torchrun starts them, without its agent
    for rank in (0, 1):  # both ranks: 3 steps, fused AdamW, and weights that are still numbers
        step, fused, val_loss = (tmp_path / f"run.rank{rank}").read_text().split()
        assert (step, fused) == ("3", "True") and val_loss != "nan", (rank, step, fused, val_loss)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert records[0]["amp"] == "float16"
    steps = [rec for rec in records if "step" in rec and "loss" in rec]
    assert [rec["step"] for rec in steps] == [1, 2, 3]
    assert steps[0]["grad_norm"] is None and "grad_norm" in steps[0]["nonfinite"]  # the overflow, seen
    assert all(rec["loss"] is not None and rec["grad_norm"] is not None for rec in steps[1:])
    state = torch.load(run_dir / "checkpoints" / "step-0000003" / "state.pt", weights_only=True)
    # One overflow: the step was skipped and the scale halved once, on the scaler every rank shares.
    assert state["scaler"]["scale"] == 65536.0 / 2
