"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/evaluate.py: the run's summary line, whole, for
each field it may carry (a val accuracy of 0 is shown: it is a result, not a missing one)."""

import pytest

pytest.importorskip("torch")

from hosttune.engine.evaluate import summary_line  # noqa: E402

BASE = {"model": "resnet-tiny", "step": 30, "world_size": 2, "train_s": 12.5, "final_train_loss": 1.23456,
        "stopped_early": False}


@pytest.mark.parametrize("extra,tail", [
    ({}, ""),
    ({"samples_per_s": 250.5}, ", 250.5 samples/s"),
    ({"compile_s": 3.25, "samples_per_s": 250.5}, ", 3.25s of it compiling (the first step), 250.5 samples/s after it"),
    ({"val_loss": 2.0, "eval_weights": "EMA"}, ", val loss 2.0000 with the EMA weights"),
    ({"val_loss": 2.0, "unigram_entropy": 3.14159}, ", val loss 2.0000, unigram entropy 3.1416 nats"),
    ({"val_accuracy": 0.0, "chance_accuracy": 0.1}, ", val accuracy 0.000 (chance 0.100)"),
    ({"val_accuracy": 0.5}, ", val accuracy 0.500"),
])
def test_the_summary_line(extra: dict, tail: str) -> None:
    head = "hosttune.engine: done: resnet-tiny step 30 on 2 rank(s) in 12.5s"
    train = ", train loss 1.2346"
    line = summary_line({**BASE, **extra})
    if "samples_per_s" in extra:  # before the losses
        assert line == head + tail + train
    else:
        assert line == head + train + tail


def test_a_stopped_run_says_how_to_continue() -> None:
    assert summary_line({**BASE, "stopped_early": True}) == (
        "hosttune.engine: stopped: resnet-tiny step 30 on 2 rank(s) in 12.5s, train loss 1.2346, checkpoint saved; "
        "run again with --resume to continue")
