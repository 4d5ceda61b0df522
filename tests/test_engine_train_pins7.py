"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/train.py: a metrics line's loss and grad norm (each
in its own field, averaged over the accumulated micro-batches), the progress line's step count, and the profiler's
warm-up (WAIT,WARMUP,ACTIVE in that order: a warm-up of 0 makes torch warn). Small models on CPU, fit() in this
process, no loader workers, amp off (the loss is exact whatever the CPU)."""

import json
import os
import signal
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine.api import fit  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.train import profiler_step, start_profiler  # noqa: E402


def _rows(run_dir: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_loss_and_grad_norm_are_each_in_their_field_and_progress_counts_steps(tmp_path: Path, capsys) -> None:
    # out = 1.25 * 1 + 0.5 for every sample: the loss (out.mean()) is 1.75 at every micro-batch; its gradient is 1
    # for the weight and for the bias whatever the accumulation (each micro-batch adds 1/grad_accum): norm sqrt(2).
    # lr 1e-9: the parameters move by less than the 5 decimals a metrics line keeps.
    model = nn.Linear(1, 1)
    with torch.no_grad():
        model.weight.fill_(1.25)
        model.bias.fill_(0.5)
    data = torch.utils.data.TensorDataset(torch.ones(32, 1), torch.zeros(32))
    summary = fit(model, data, lambda out, y: out.mean(), steps=4, grad_accum=2, micro_batch_size=4, lr=1e-9,
                  min_lr=0.0, warmup_steps=0, weight_decay=0.0, amp="off", log_interval=2, device="cpu",
                  num_workers=0, run_dir=str(tmp_path / "run"))
    assert summary["final_train_loss"] == 1.75 and summary["step"] == 4
    logs = [r for r in _rows(tmp_path / "run") if "loss" in r]
    assert [(r["step"], r["epoch"], r["loss"], r["grad_norm"]) for r in logs] == [(2, 0, 1.75, 1.41421),
                                                                                  (4, 0, 1.75, 1.41421)]
    assert "checkpoint_s" not in logs[0] and "compile_s" not in logs[0]
    err = capsys.readouterr().err.splitlines()
    progress = [line for line in err if line.startswith("hosttune.engine: step ")]
    assert progress == ["hosttune.engine: step 2/4 loss 1.7500", "hosttune.engine: step 4/4 loss 1.7500"]


@pytest.mark.parametrize("schedule", ["0,2,1", "1,1,1", "2,3,2"])
def test_a_schedule_with_a_warmup_starts_the_profiler_without_a_warning(tmp_path: Path, schedule: str) -> None:
    cfg = Config(profile_steps=schedule, steps=sum(int(x) for x in schedule.split(",")))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        prof, end = start_profiler(cfg, SimpleNamespace(run_dir=tmp_path, rank=3, cuda=False), 0)
        assert end == cfg.steps
        step = 0
        while prof is not None:
            step += 1
            prof = profiler_step(prof, end, step)
    assert [str(w.message) for w in seen] == []
    assert step == cfg.steps and (tmp_path / "trace-rank3.json").is_file()


def test_a_run_stopped_while_profiling_writes_its_trace_and_stops_the_profiler(tmp_path: Path) -> None:
    calls = [0]

    def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        if calls[0] == 3:  # in step 3's forward, inside the profiler's active steps (2 to 6): preemption
            os.kill(os.getpid(), signal.SIGTERM)
        return nn.functional.cross_entropy(out, y)

    x = torch.randn(64, 4, generator=torch.Generator().manual_seed(0))
    previous = signal.getsignal(signal.SIGTERM)
    try:
        s = fit(nn.Linear(4, 2), torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long()), loss_fn, steps=8,
                micro_batch_size=8, warmup_steps=0, amp="off", log_interval=10, profile_steps="0,1,5",
                device="cpu", num_workers=0, run_dir=str(tmp_path / "run"))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert s["step"] == 3 and s["stopped_early"] is True
    assert not torch.autograd.profiler._is_profiler_enabled  # nothing left recording in this process
    trace = json.loads((tmp_path / "run" / "trace-rank0.json").read_text())
    assert any(e.get("name") == "ProfilerStep#2" for e in trace["traceEvents"])


@pytest.mark.parametrize("accum", [1, 3])
def test_gradients_are_all_reduced_on_the_last_micro_batch_only(tmp_path: Path, accum: int) -> None:
    # A real DDP over a one-rank gloo group in this process; its communication hook counts the all-reduces (one
    # bucket: one call per synchronised backward).
    import contextlib

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from hosttune.engine import runtime, train

    runtime.import_group_default_modules(False)  # before the group exists (see runtime.GROUP_DEFAULT_MODULES)
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    try:
        model = DDP(nn.Linear(4, 2))
        calls: List[int] = []

        def hook(state, bucket):  # noqa: ANN001 - DDP refuses any annotation but dist.GradBucket
            calls.append(1)
            done: Any = torch.futures.Future()
            done.set_result(bucket.buffer())
            return done

        model.register_comm_hook(None, hook)
        x, y = torch.ones(2, 4), torch.zeros(2, dtype=torch.long)
        tr = SimpleNamespace(model=model, sync_model=model, data=SimpleNamespace(next=lambda state: (x, y)),
                             state=SimpleNamespace(scaler=torch.amp.GradScaler("cpu", enabled=False)))
        iv = train.Interval(0.0, torch.zeros(()))
        train.micro_steps(Config(grad_accum=accum), SimpleNamespace(loss_fn=nn.functional.cross_entropy),
                          SimpleNamespace(autocast=contextlib.nullcontext), tr, iv)
    finally:
        dist.destroy_process_group()
    assert len(calls) == 1
    assert iv.loss_sum.item() == pytest.approx(nn.functional.cross_entropy(model.module(x), y).item())
