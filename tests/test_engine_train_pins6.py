"""Pins of mutation round 5 (issue 21) on hosttune/engine/train.py (bench/mutants.py r5a-engine-wait-accum), and the
rates of a metrics line: data_wait_frac counts the wait for every micro-batch of a step, not only the last one's,
when grad_accum > 1; samples/s, step time, tokens/s and the padding fraction are the interval's.

The engine's clock (train.time) is frozen except while a micro-batch is fetched, which lasts FETCH seconds on it:
every rate is then exact (no real sleep, nothing depends on this machine's speed). Small models on CPU, fit() in
this process, no loader workers."""

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine import loader, train  # noqa: E402
from hosttune.engine.api import fit  # noqa: E402
from hosttune.engine.data import IGNORE_INDEX  # noqa: E402
from hosttune.engine.errors import EngineError  # noqa: E402

FETCH = 0.5  # seconds each micro-batch's fetch lasts on the engine's clock; nothing else takes any time there


def _toy(n: int = 64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=g)
    return torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())


def _logs(run_dir: Path) -> List[Dict[str, Any]]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if "loss" in r and "event" not in r]


@pytest.fixture
def fetches(monkeypatch: pytest.MonkeyPatch) -> List[int]:
    """The number of micro-batches fetched; the engine's clock advances by FETCH in each fetch, and only there."""
    now = [1000.0]
    fetched = [0]

    class EngineClock:
        def __getattr__(self, name: str):
            return getattr(time, name)

        def perf_counter(self) -> float:
            return now[0]

    real_next = loader.TrainData.next

    def slow_next(self, state):
        now[0] += FETCH
        fetched[0] += 1
        return real_next(self, state)

    monkeypatch.setattr(loader.TrainData, "next", slow_next)
    monkeypatch.setattr(train, "time", EngineClock())
    return fetched


@pytest.mark.parametrize("accum", [1, 3])
def test_data_wait_counts_every_micro_batch_of_a_step(accum: int, fetches: List[int], tmp_path: Path) -> None:
    fit(nn.Linear(4, 2), _toy(), nn.functional.cross_entropy, steps=4, grad_accum=accum, micro_batch_size=8,
        warmup_steps=1, log_interval=2, device="cpu", num_workers=0, run_dir=str(tmp_path / "run"))
    assert fetches[0] == 4 * accum
    logs = _logs(tmp_path / "run")
    assert [r["step"] for r in logs] == [2, 4]
    for r in logs:
        assert r["data_wait_frac"] == 1.0, r  # all of the step's time was waiting for its accum micro-batches
        assert r["step_time_s"] == accum * FETCH, r
        assert r["samples_per_s"] == 8 * accum / (accum * FETCH), r
        assert "tokens_per_s" not in r and "padding_frac" not in r


class Padded(torch.utils.data.Dataset):
    """Token sequences of 3, padded by their collate to 4 (one padded target in four)."""

    def __len__(self) -> int:
        return 32

    def __getitem__(self, i: int):
        x = torch.tensor([i % 7, (i + 1) % 7, (i + 2) % 7])
        return x, (x + 1) % 7

    @staticmethod
    def collate(items):
        xs = torch.zeros(len(items), 4, dtype=torch.long)
        ys = torch.full((len(items), 4), IGNORE_INDEX, dtype=torch.long)
        for k, (x, y) in enumerate(items):
            xs[k, :3], ys[k, :3] = x, y
        return xs, ys


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb, self.head = nn.Embedding(7, 8), nn.Linear(8, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.emb(x))


def lm_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())  # IGNORE_INDEX targets add nothing


def test_padded_data_reports_real_tokens_per_second_and_the_padding(fetches: List[int], tmp_path: Path) -> None:
    # tokens_per_sample=4 would claim 4 tokens a sample; the padding counted in the batches says 3 are real
    fit(TinyLM(), Padded(), lm_loss, tokens_per_sample=4, steps=4, grad_accum=2, micro_batch_size=4,
        warmup_steps=1, log_interval=1, device="cpu", num_workers=0, run_dir=str(tmp_path / "run"))
    logs = _logs(tmp_path / "run")
    assert [r["step"] for r in logs] == [1, 2, 3, 4]
    for r in logs:  # each interval: 2 micro-batches of 4 samples, 12 real tokens of 16 each, in 2 x FETCH seconds
        assert r["padding_frac"] == 0.25, r
        assert r["tokens_per_s"] == 2 * 12 / (2 * FETCH), r  # counted afresh in every interval
        assert r["samples_per_s"] == 8 / (2 * FETCH), r


def test_unpadded_tokens_per_second_is_samples_times_tokens_per_sample(fetches: List[int], tmp_path: Path) -> None:
    fit(nn.Linear(4, 2), _toy(), nn.functional.cross_entropy, tokens_per_sample=16, steps=2, micro_batch_size=8,
        warmup_steps=1, log_interval=1, device="cpu", num_workers=0, run_dir=str(tmp_path / "run"))
    logs = _logs(tmp_path / "run")
    assert [r["tokens_per_s"] for r in logs] == [8 / FETCH * 16] * 2
    assert all("padding_frac" not in r for r in logs)


# ---- stopping on SIGTERM, a run from another thread, metrics files that cannot be written ---------------------------


def test_sigterm_finishes_the_step_checkpoints_it_and_restores_the_handler(tmp_path: Path) -> None:
    calls = [0]
    got: List[int] = []

    def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        if calls[0] == 3:  # in step 3's forward: preemption
            os.kill(os.getpid(), signal.SIGTERM)
        return nn.functional.cross_entropy(out, y)

    def ours(*_: Any) -> None:
        got.append(1)

    previous = signal.signal(signal.SIGTERM, ours)
    try:
        s = fit(nn.Linear(4, 2), _toy(), loss_fn, steps=50, micro_batch_size=8, warmup_steps=1, log_interval=10,
                device="cpu", num_workers=0, run_dir=str(tmp_path / "run"))
        after = signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert got == [] and after is ours  # the engine's handler took it; ours is back afterwards
    assert s["step"] == 3 and calls[0] == 3
    assert [r["step"] for r in _logs(tmp_path / "run")] == [3]  # the interrupted interval is still logged
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir()) == ["step-0000003"]


def test_fit_runs_in_a_thread_other_than_the_main_one(tmp_path: Path) -> None:
    out: Dict[str, Any] = {}

    def work() -> None:
        try:
            out["summary"] = fit(nn.Linear(4, 2), _toy(), nn.functional.cross_entropy, steps=2, micro_batch_size=8,
                                 warmup_steps=1, device="cpu", num_workers=0, run_dir=str(tmp_path / "run"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            out["error"] = exc

    before = signal.getsignal(signal.SIGTERM)
    t = threading.Thread(target=work)
    t.start()
    t.join(600)  # a hang guard only
    assert "error" not in out, out.get("error")
    assert out["summary"]["step"] == 2 and signal.getsignal(signal.SIGTERM) is before


def test_a_metrics_csv_that_cannot_be_written_is_one_error_before_training(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "elsewhere.csv").write_text("")
    (run / "metrics.csv").symlink_to(tmp_path / "elsewhere.csv")  # never followed
    calls = [0]

    def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        return nn.functional.cross_entropy(out, y)

    with pytest.raises(EngineError, match="metrics.csv: cannot continue the metrics CSV: Too many levels of symbolic"):
        fit(nn.Linear(4, 2), _toy(), loss_fn, steps=2, micro_batch_size=8, warmup_steps=1, metrics_csv=True,
            device="cpu", num_workers=0, run_dir=str(run))
    assert calls[0] == 0 and (tmp_path / "elsewhere.csv").read_text() == ""
