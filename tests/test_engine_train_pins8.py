"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/train.py's log_interval: the whole metrics
record of an interval on one of two ranks (loss and grad norm averaged over the ranks, samples/s counting every
rank's samples, the step time and data-wait fraction, checkpoint and compile time left out of the rates), the
progress line, and the next interval started afresh; train_loop's result on two ranks (the samples of a step
count every rank's: the summary's samples/s comes from it), its micro-steps and optimizer steps stood in for. The
other rank is a stand-in all_reduce (a real two-rank group needs two processes: tests/test_engine_integration.py);
the clock and the peak memory are fixed."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import train  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.metrics import Metrics  # noqa: E402


def _setup(monkeypatch: pytest.MonkeyPatch, world: int, now: float):
    monkeypatch.setattr(train, "time", SimpleNamespace(perf_counter=lambda: now))
    monkeypatch.setattr(train, "peak_memory_mb", lambda device: 123.456)
    reduced = []

    def all_reduce(t: torch.Tensor) -> None:  # the other rank's loss sum 6 and grad norm 1
        reduced.append(t.tolist())
        t.add_(torch.tensor([6.0, 1.0]))

    rt = SimpleNamespace(world=world, device=torch.device("cpu"), all_reduce=all_reduce)
    tr = SimpleNamespace(state=SimpleNamespace(step=10, epoch=1), flops_per_step=0, peak_tflops=None,
                         hardware_flops_per_step=0, data=SimpleNamespace(padded=False, tokens=0, pad_tokens=0))
    task = SimpleNamespace(tokens_per_sample=0)
    return rt, tr, task, reduced


def _records(run: Path):
    out = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    for r in out:
        assert isinstance(r.pop("time"), float)
    return out


def test_an_interval_on_two_ranks_is_one_whole_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture) -> None:
    rt, tr, task, reduced = _setup(monkeypatch, 2, 104.0)
    cfg = Config(micro_batch_size=4, grad_accum=3, steps=20)
    iv = train.Interval(100.0, torch.tensor(2.0), wait_s=0.5, steps=2)
    metrics = Metrics(tmp_path, True, 20, 8)
    loss = train.log_interval(cfg, task, rt, tr, iv, 0.1, torch.tensor(3.0), metrics)
    metrics.close()
    assert reduced == [[2.0, 3.0]] and loss == 2.0  # (2 + 6) / 2 ranks / 2 steps
    # 2 steps x (4 x 3 x 2 ranks) samples in 4 s
    assert _records(tmp_path) == [{"step": 10, "epoch": 1, "loss": 2.0, "lr": 0.1, "samples_per_s": 12.0,
                                   "step_time_s": 2.0, "data_wait_frac": 0.125, "grad_norm": 2.0,
                                   "peak_mem_mb": 123.5}]
    assert capsys.readouterr().err == "hosttune.engine: step 10/20 loss 2.0000\n"
    assert (iv.t_log, iv.loss_sum.item(), iv.wait_s, iv.ckpt_s, iv.steps, iv.compile_s) == (104.0, 0.0, 0.0, 0.0, 0,
                                                                                          None)


def test_checkpoint_and_compile_time_are_not_training_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt, tr, task, reduced = _setup(monkeypatch, 1, 110.0)
    cfg = Config(micro_batch_size=5, grad_accum=1, steps=20)
    iv = train.Interval(100.0, torch.tensor(9.0), wait_s=1.0, ckpt_s=2.5, steps=3, compile_s=1.5)
    metrics = Metrics(tmp_path, True, 20, 0)
    assert train.log_interval(cfg, task, rt, tr, iv, 0.25, torch.tensor(0.5), metrics) == 3.0
    metrics.close()
    assert reduced == []  # one rank: nothing to average
    # 10 s less 2.5 s of checkpoint and the 1.5 s compiling step: 2 timed steps of 5 samples in 6 s
    assert _records(tmp_path) == [{"step": 10, "epoch": 1, "loss": 3.0, "lr": 0.25, "samples_per_s": 1.67,
                                   "step_time_s": 3.0, "data_wait_frac": 0.1667, "grad_norm": 0.5,
                                   "peak_mem_mb": 123.5, "checkpoint_s": 2.5, "compile_s": 1.5}]


def test_the_loops_result_counts_every_ranks_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt, tr, task, reduced = _setup(monkeypatch, 2, 50.0)
    rt.any_rank = lambda flag: flag
    ticks = iter(range(1000))
    monkeypatch.setattr(train, "time", SimpleNamespace(perf_counter=lambda: float(next(ticks))))
    cfg = Config(micro_batch_size=4, grad_accum=3, steps=6, log_interval=3, ckpt_interval=0)
    tr.state = SimpleNamespace(step=2, epoch=0, ema=None, optimizer=SimpleNamespace(param_groups=[{"lr": 0.5}]))
    tr.model = SimpleNamespace(train=lambda: None)

    def micro_steps(cfg, task, rt, tr, iv) -> None:
        iv.loss_sum += 1.0

    monkeypatch.setattr(train, "micro_steps", micro_steps)
    monkeypatch.setattr(train, "optimizer_step", lambda st, cfg: torch.tensor(1.0))
    metrics = Metrics(tmp_path, True, 6, 2)
    got = train.train_loop(cfg, task, rt, tr, metrics, {"requested": False})
    metrics.close()
    assert (got.start_step, got.samples_per_step, got.compile_s) == (2, 4 * 3 * 2, None) and got.train_s > 0
    assert got.last_loss == 1.5 and tr.state.step == 6  # steps 4-6: (3 + 6 from the other rank) / 2 ranks / 3
    assert [r["step"] for r in _records(tmp_path)] == [3, 6] and len(reduced) == 2
