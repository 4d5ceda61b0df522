"""Helpers shared by the engine's test files (tests/test_engine_checkpoint.py, test_engine_config.py,
test_engine_shard.py): the engine as a subprocess, a one-line error check, a tiny gpt and a toy model for fit()."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import torch

from hosttune.engine.api import fit

REPO = Path(__file__).resolve().parents[1]
CPU = torch.device("cpu")
# gpt-tiny shrunk to seconds: 2 steps, a checkpoint after each.
TINY = ["--preset", "gpt-tiny", "--set", "n_layer=1", "--set", "n_embd=32", "--set", "n_head=2", "--set",
        "block_size=16", "--set", "micro_batch_size=4", "--set", "steps=2", "--set", "ckpt_interval=1", "--set",
        "eval_batches=1", "--set", "log_interval=1", "--set", "warmup_steps=0", "--set", "amp=off", "--set",
        "device=cpu", "--set", "num_workers=0"]


def engine(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hosttune.engine", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})


def assert_one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hosttune.engine: error: "), r.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]



class _Toy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x: Any) -> Any:
        return self.fc(x)


class _Recorded(torch.utils.data.Dataset):
    """Remembers every index the loader asked for (num_workers=0: in this process)."""

    def __init__(self, n: int = 64) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 8, generator=g)
        self.y = (self.x[:, 0] > 0).long()
        self.seen: List[int] = []

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> Any:
        self.seen.append(int(i))
        return self.x[i], self.y[i]


def toy_fit(run_dir: Path, **settings: Any) -> Dict[str, Any]:
    data = settings.pop("data", None) or _Recorded()
    base = dict(steps=2, micro_batch_size=8, device="cpu", amp="off", num_workers=0, warmup_steps=0,
                log_interval=1, run_dir=str(run_dir))
    return fit(_Toy(), data, torch.nn.functional.cross_entropy, **{**base, **settings})
