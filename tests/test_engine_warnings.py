"""Resume warnings that say what changed (issue 25, correctness 4): a world-size change names the effective
batch's change, a micro-batch change says the batch changes only when the product does, and a checkpoint written
with bf16 (no loss scaler) resumes under fp16 with a warning instead of "does not fit this model"."""

from pathlib import Path
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import state  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.metrics import Metrics  # noqa: E402
from hosttune.engine.runtime import Runtime  # noqa: E402

CPU = torch.device("cpu")


def train_state(scaler: Any = None) -> "state.TrainState":
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    return state.TrainState(model, optimizer, scheduler, scaler or torch.amp.GradScaler("cpu", enabled=False),
                            torch.Generator().manual_seed(0))


def resume_warnings(saved_mbs: int, saved_accum: int, saved_world: int, world: int, **now: Any) -> List[str]:
    """What resume_offset says for a checkpoint written with those settings, resumed with `now` on `world` ranks."""
    said: List[str] = []
    st = train_state()
    saved: Dict[str, Any] = {"config": {"micro_batch_size": saved_mbs, "grad_accum": saved_accum},
                             "world_size": saved_world, "samples": 96, "pos": 96 // saved_mbs, "epoch": 0,
                             "rng": st.rank_state(False), "rng_problem": ""}
    rt = Runtime(world, 0, 0, CPU, None, False)
    state.resume_offset(saved, Path("step-0000003"), Config(model="custom", **now), rt, st, said.append)
    return said


def test_a_world_size_change_says_the_effective_batch_changed() -> None:
    said = resume_warnings(8, 1, 2, 1, micro_batch_size=8, grad_accum=1)
    assert len(said) == 1 and "this run has 1" in said[0]
    assert "effective batch changes from 8 x 1 x 2 = 16 to 8 x 1 x 1 = 8 samples per step" in said[0]
    assert "grad_accum=2 keeps it" in said[0]


def test_a_micro_batch_change_with_the_same_product_says_the_batch_stays() -> None:
    said = resume_warnings(8, 2, 1, 1, micro_batch_size=16, grad_accum=1)
    assert len(said) == 1 and "micro_batch_size changed from 8 (checkpoint) to 16" in said[0]
    assert "changes from 8" not in said[0]
    assert "effective batch stays 16 samples per step" in said[0]
    said = resume_warnings(8, 2, 1, 1, micro_batch_size=16, grad_accum=2)  # the product does change here
    assert "effective batch changes from 8 x 2 x 1 = 16 to 16 x 2 x 1 = 32" in said[0]


def test_an_unchanged_batch_resumes_without_a_warning() -> None:
    assert resume_warnings(8, 2, 1, 1, micro_batch_size=8, grad_accum=2) == []


def test_a_bf16_checkpoint_resumes_under_fp16_with_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture
                                                             ) -> None:
    rt = Runtime(1, 0, 0, CPU, None, False, run_dir=tmp_path)
    written = train_state()  # bf16 or fp32: the scaler is disabled, its state {}
    state.save_checkpoint(written, Config(model="custom", amp="bf16"), rt)
    resumed = train_state(torch.amp.GradScaler("cpu", init_scale=1024.0))  # fp16's scaler
    metrics = Metrics(tmp_path, True, 4, 0)
    try:
        step = state.load_checkpoint(resumed, Config(model="custom", resume=True), rt, metrics, None)
    finally:
        metrics.close()
    err = capsys.readouterr().err
    assert step == 0 and "does not fit" not in err
    assert "written without fp16's loss scaler (amp='bf16')" in err and "starts at 1024" in err
    assert resumed.scaler.get_scale() == 1024.0
    # And back: an fp16 checkpoint resumed without fp16 drops its scale, with a line saying so.
    fp16_dir = tmp_path / "fp16"
    rt16 = Runtime(1, 0, 0, CPU, None, False, run_dir=fp16_dir)
    fp16 = train_state(torch.amp.GradScaler("cpu", init_scale=512.0))
    fp16.scaler.scale(torch.ones(()))  # the scale exists once used
    state.save_checkpoint(fp16, Config(model="custom", amp="fp16"), rt16)
    metrics = Metrics(fp16_dir, True, 4, 0)
    try:
        state.load_checkpoint(train_state(), Config(model="custom", resume=True), rt16, metrics, None)
    finally:
        metrics.close()
    assert "written with fp16 (amp='fp16')" in capsys.readouterr().err
