"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/task.py's build_preset_task: the whole
`notes` of each preset (what the summary gains): chance accuracy and, for an image folder, the decoder that reads
it; the unigram entropy of the bundled text's train split (the first 90 %), counted here independently."""

import math
from collections import Counter

import pytest

pytest.importorskip("torch")

from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.data import default_text  # noqa: E402
from hosttune.engine.images import ImageFolder  # noqa: E402
from hosttune.engine.task import build_preset_task  # noqa: E402


def test_resnet_notes_synthetic_and_bundled() -> None:
    t = build_preset_task(Config(model="resnet-tiny", num_classes=4, train_samples=8, val_samples=4, image_size=8))
    assert t.notes == {"chance_accuracy": 0.25}
    t = build_preset_task(Config(model="resnet-tiny", image_source="bundled", image_decoder="pil", image_size=8))
    assert isinstance(t.train_set, ImageFolder)
    assert t.notes == {"chance_accuracy": round(1 / len(t.train_set.classes), 4), "image_decoder": "pil"}


def test_gpt_notes_are_the_train_splits_unigram_entropy() -> None:
    text = default_text().read_text(encoding="utf-8")
    counts = Counter(text[: int(len(text) * 0.9)])
    n = sum(counts.values())
    want = round(-sum(c / n * math.log(c / n) for c in counts.values()), 4)
    assert build_preset_task(Config(n_layer=1, n_embd=32, n_head=2)).notes == {"unigram_entropy": want}
