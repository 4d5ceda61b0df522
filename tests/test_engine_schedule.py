"""hosttune/engine/optim.py's LR schedules (issue 25): lr(step) for each `lr_schedule` against hand values at the
edges (step 0, the end of the warmup, the start of the decay, the last step), the default unchanged, bad settings
refused with one line, and a resume continuing the schedule where it was."""

import json
import math
import shutil
from pathlib import Path
from typing import Any, List

import pytest

from hosttune.engine.config import Config, ConfigError

torch = pytest.importorskip("torch")

from _enginehelp import _Recorded, toy_fit  # noqa: E402

from hosttune.engine.optim import lr_at  # noqa: E402


def cfg(**kw: Any) -> Config:
    # lr 1.0 -> min_lr 0.1 over 10 steps, 2 of them warmup: (step + 1) / 2 while warming up
    return Config(**{**dict(lr=1.0, min_lr=0.1, steps=10, warmup_steps=2), **kw})


# (settings, {step: lr}) worked by hand; the decays run over steps 2..9 (progress (step - 2) / 8) unless wsd
HAND = [
    (dict(lr_schedule="cosine"), {0: 0.5, 1: 1.0, 2: 1.0, 6: 0.55, 9: 0.1 + 0.45 * (1 + math.cos(7 * math.pi / 8))}),
    (dict(lr_schedule="linear"), {0: 0.5, 1: 1.0, 2: 1.0, 6: 0.55, 9: 0.1 + 0.9 / 8}),
    (dict(lr_schedule="sqrt"), {0: 0.5, 1: 1.0, 2: 1.0, 4: 0.55, 9: 0.1 + 0.9 * (1 - math.sqrt(7 / 8))}),
    (dict(lr_schedule="constant"), {0: 0.5, 1: 1.0, 2: 1.0, 9: 1.0}),
    # wsd, decay_frac 0.3: stable through step 6, the decay over steps 7, 8, 9 (progress 0, 1/3, 2/3)
    (dict(lr_schedule="wsd", decay_frac=0.3, decay_shape="linear"), {0: 0.5, 1: 1.0, 2: 1.0, 6: 1.0, 7: 1.0,
                                                                       8: 0.7, 9: 0.4}),
    (dict(lr_schedule="wsd", decay_frac=0.3, decay_shape="sqrt"), {6: 1.0, 7: 1.0,
                                                                     9: 0.1 + 0.9 * (1 - math.sqrt(2 / 3))}),
    (dict(lr_schedule="wsd", decay_frac=0.3, decay_shape="cosine"), {6: 1.0, 7: 1.0, 8: 0.1 + 0.45 * 1.5, 9: 0.325}),
    (dict(lr_schedule="linear", warmup_steps=0), {0: 1.0, 9: 0.1 + 0.9 / 10}),
]


@pytest.mark.parametrize("settings,want", HAND, ids=[f"{h[0]}" for h in HAND])
def test_lr_at_the_edges_of_each_schedule(settings: dict, want: dict) -> None:
    c = cfg(**settings)
    for step, lr in want.items():
        assert lr_at(step, c) == pytest.approx(lr, abs=1e-12), (step, settings)


def test_the_default_is_the_old_warmup_and_cosine() -> None:
    c = Config(preset="gpt-tiny")
    assert c.lr_schedule == "cosine"

    def old(step: int) -> float:  # the formula before lr_schedule existed
        if step < c.warmup_steps:
            return c.lr * (step + 1) / c.warmup_steps
        progress = (step - c.warmup_steps) / max(1, c.steps - c.warmup_steps)
        return c.min_lr + 0.5 * (c.lr - c.min_lr) * (1 + math.cos(math.pi * min(1.0, progress)))

    assert [lr_at(s, c) for s in range(c.steps + 1)] == [old(s) for s in range(c.steps + 1)]


@pytest.mark.parametrize("settings,needle", [
    (dict(lr_schedule="step"), "lr_schedule must be one of cosine, linear, sqrt, wsd, constant, got 'step'"),
    (dict(lr_schedule="wsd", decay_shape="exp"), "decay_shape must be one of"),
    (dict(lr_schedule="wsd", decay_frac=0.0), "decay_frac must be in (0, 1]"),
    (dict(lr_schedule="wsd", decay_frac=0.9), "overlaps the warmup"),
])
def test_bad_schedule_settings_are_one_line(settings: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as exc:
        cfg(**settings)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def _lrs(run_dir: Path, after_resume: bool = False) -> List[float]:
    recs = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    if after_resume:
        recs = recs[max(i for i, r in enumerate(recs) if r.get("event") == "resume"):]
    return [r["lr"] for r in recs if "loss" in r]


def test_a_resume_keeps_the_schedules_position(tmp_path: Path) -> None:
    settings = dict(steps=6, warmup_steps=1, lr=1.0, min_lr=0.1, lr_schedule="wsd", decay_frac=0.5,
                    decay_shape="linear", ckpt_interval=3, data=_Recorded())
    toy_fit(tmp_path / "a", **settings)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    shutil.rmtree(tmp_path / "b" / "checkpoints" / "step-0000006")
    toy_fit(tmp_path / "b", resume=True, **{**settings, "data": _Recorded()})
    c = Config(**{k: v for k, v in settings.items() if k != "data"})
    want = [lr_at(s, c) for s in range(6)]
    # warmup 1 step, stable to step 2, the decay over steps 3, 4, 5 (progress 0, 1/3, 2/3)
    assert want == pytest.approx([1.0, 1.0, 1.0, 1.0, 0.7, 0.4], abs=1e-12)
    assert _lrs(tmp_path / "a") == want
    assert _lrs(tmp_path / "b", after_resume=True) == want[3:]  # the resumed steps' lr, not the schedule's start
