"""Pins of mutation round 6 (issue 21) on hosttune/engine/export.py (bench/mutants.py r6b-engine-export-step):
export.json's `step` is the exported checkpoint's step, not the run's configured step count. The run here was
configured for 10 steps and stopped after its checkpoint at step 4 (written by the engine's own checkpoint writer,
no training needed); `--export` of it reports step 4 on stderr and in export.json, with the config's steps: 10 beside
it. In-process, CPU, a one-layer gpt-tiny; the ONNX export (the slowest part, and not what this pins) is skipped the
way a host without onnxscript skips it."""

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import export  # noqa: E402
from hosttune.engine.__main__ import main  # noqa: E402
from hosttune.engine.config import load_config  # noqa: E402
from hosttune.engine.runtime import Runtime  # noqa: E402
from hosttune.engine.state import TrainState, save_checkpoint  # noqa: E402
from hosttune.engine.task import build_preset_task  # noqa: E402

SETS = ["n_layer=1", "n_embd=16", "n_head=2", "block_size=8", "micro_batch_size=2", "steps=10", "device=cpu",
        "amp=off"]


def _stopped_run(run_dir: Path, step: int) -> None:
    """A gpt-tiny run (steps=10) whose last checkpoint is at `step`: a run stopped part way."""
    cfg = load_config("gpt-tiny", sets=SETS)
    model = build_preset_task(cfg).model
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    st = TrainState(model, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0),
                    torch.amp.GradScaler("cpu", enabled=False), torch.Generator().manual_seed(0), step=step)
    save_checkpoint(st, cfg, Runtime(1, 0, 0, torch.device("cpu"), None, False, run_dir))


def test_export_json_gives_the_exported_checkpoints_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture) -> None:
    run = tmp_path / "run"
    _stopped_run(run, 4)
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["step-0000004"]
    monkeypatch.setattr(export, "_missing_onnx_modules", lambda: ["onnxscript"])
    assert main(["--export", str(tmp_path / "out"), "--run-dir", str(run)]) == 0
    assert "step-0000004 (step 4) -> " in capsys.readouterr().err
    report = json.loads((tmp_path / "out" / "export.json").read_text())
    assert report["step"] == 4 and report["config"]["steps"] == 10
    assert report["checkpoint"].endswith("step-0000004")
