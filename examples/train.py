"""Your own model on hosttune's engine: AMP, DDP, checkpoints, resume and metrics from one `fit` call.

    python examples/train.py --steps 200                        # one process
    hosttune exec -- torchrun --nproc_per_node=2 examples/train.py --steps 200 --run-dir runs/spirals

The task: tell two interleaved spirals apart (a classic that a linear model cannot solve).
"""

import argparse
import math

import torch
from torch import nn
from torch.utils.data import TensorDataset

from hosttune.engine.api import fit


def spirals(n: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(n, generator=g) * 2 * math.pi + 0.5
    label = torch.randint(0, 2, (n,), generator=g)
    sign = label.float() * 2 - 1  # the second spiral is the first one rotated by 180 degrees
    xy = torch.stack([sign * t * torch.cos(t), sign * t * torch.sin(t)], dim=1) / (2 * math.pi)
    return TensorDataset(xy + 0.02 * torch.randn(n, 2, generator=g), label)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--run-dir", default="")
    p.add_argument("--amp", default="auto", help="auto | bf16 | fp16 | off")
    p.add_argument("--resume", action="store_true")
    args = p.parse_args()

    torch.manual_seed(0)  # the same initial weights on every rank
    model = nn.Sequential(nn.Linear(2, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 2))
    summary = fit(model, spirals(8192, seed=1), nn.functional.cross_entropy, val_set=spirals(1024, seed=2),
                  accuracy=True, steps=args.steps, micro_batch_size=64, lr=1e-2, min_lr=1e-3,
                  warmup_steps=min(20, args.steps), weight_decay=0.0, log_interval=25, amp=args.amp,
                  run_dir=args.run_dir, resume=args.resume)
    if summary.get("val_accuracy") is not None:
        print(f"spirals: validation accuracy {summary['val_accuracy']:.3f} after {summary['step']} steps")


if __name__ == "__main__":
    main()
