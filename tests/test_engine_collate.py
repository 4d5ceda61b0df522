"""Randomness in a collate function (MixUp, CutMix) and exact resume with loader workers (issue 25, correctness 2).

The engine fetches each micro-batch under a seed of its position (SeededFetch, StreamReader); the collate ran after
that, in the worker, on the worker's own RNG streams, seeded from a generator whose state after a resume never
matched the uninterrupted run's. Now the collate runs under the same per-batch seed, and the workers' base seed comes
from (seed, rank, epoch, position)."""

import random
import shutil
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")  # torch's own dependency: present wherever torch is

from hosttune.engine.api import fit  # noqa: E402


class MixUpData(torch.utils.data.Dataset):
    """24 samples (3 micro-batches of 8: the run crosses an epoch) whose `collate` draws from all three RNG
    streams, as MixUp/CutMix do."""

    def __init__(self) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(24, 8, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> Tuple[Any, Any]:
        return self.x[i], self.y[i]

    @staticmethod
    def collate(batch: List[Tuple[Any, Any]]) -> Tuple[Any, Any]:
        x = torch.stack([b[0] for b in batch])
        y = torch.stack([b[1] for b in batch])
        lam = float(torch.rand(())) * 0.5 + random.random() * 0.25 + float(np.random.rand()) * 0.25
        cut = torch.randperm(x.shape[1])[:2]  # CutMix-like: two features from the flipped batch
        mixed = lam * x + (1 - lam) * x.flip(0)
        mixed[:, cut] = x.flip(0)[:, cut]
        return mixed, y


class Toy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(8, 2)

    def forward(self, x: Any) -> Any:
        return self.fc(x)


def train(run_dir: Path, **extra: Any) -> Dict[str, Any]:
    settings: Dict[str, Any] = dict(steps=5, micro_batch_size=8, device="cpu", amp="off", num_workers=2,
                                    warmup_steps=0, log_interval=1, ckpt_interval=2, keep_checkpoints=5,
                                    eval_batches=1, run_dir=str(run_dir))
    return fit(Toy(), MixUpData(), torch.nn.functional.cross_entropy, **{**settings, **extra})


def weights(run_dir: Path, step: int) -> Dict[str, Any]:
    return torch.load(run_dir / "checkpoints" / f"step-{step:07d}" / "state.pt", weights_only=True)["model"]


def test_resume_with_workers_and_a_random_collate_is_bitwise(tmp_path: Path) -> None:
    whole, part = tmp_path / "whole", tmp_path / "part"
    train(whole)  # 5 steps straight (checkpoints at 2, 4, 5), two persistent workers, an epoch boundary at 3
    (part / "checkpoints").mkdir(parents=True)
    shutil.copytree(whole / "checkpoints" / "step-0000002", part / "checkpoints" / "step-0000002")
    resumed = train(part, resume=True)  # from step 2: new workers, mid-epoch
    assert resumed["steps_this_run"] == 3
    a, b = weights(whole, 5), weights(part, 5)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    # The control: the collate's draws did reach the weights (a plain collate trains to other ones).
    plain = tmp_path / "plain"
    fit(Toy(), torch.utils.data.TensorDataset(MixUpData().x, MixUpData().y), torch.nn.functional.cross_entropy,
        steps=5, micro_batch_size=8, device="cpu", amp="off", num_workers=2, warmup_steps=0, log_interval=1,
        ckpt_interval=2, keep_checkpoints=5, eval_batches=1, run_dir=str(plain))
    assert not torch.equal(weights(plain, 5)["fc.weight"], a["fc.weight"])
