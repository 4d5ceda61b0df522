"""Pins (issue 21, round 4) for hosttune/engine/task.py in-process: what each preset builds (model, data, the
accuracy and tokens/s switches, the notes), the vocabulary padding, the seeded weights and the custom refusal."""

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import task  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.data import CharLines, CharText  # noqa: E402
from hosttune.engine.errors import EngineError  # noqa: E402
from hosttune.engine.models import GPT, TinyResNet, classification_loss, lm_loss  # noqa: E402


@pytest.mark.parametrize("n, k, want", [(1, 64, 64), (62, 64, 64), (64, 64, 64), (65, 64, 128), (0, 8, 0),
                                        (7, 1, 7)])
def test_pad_to_multiple(n: int, k: int, want: int) -> None:
    assert task.pad_to_multiple(n, k) == want


def test_resnet_tiny_is_a_classification_task_with_accuracy() -> None:
    cfg = Config(model="resnet-tiny", num_classes=4, train_samples=8, val_samples=4, width=8, image_size=8)
    t = task.build_preset_task(cfg)
    assert isinstance(t.model, TinyResNet) and t.loss_fn is classification_loss
    assert t.accuracy is True and t.tokens_per_sample == 0 and t.val_set is not None
    assert t.notes["chance_accuracy"] == 0.25
    assert len(t.train_set) == 8 and len(t.val_set) == 4


def test_gpt_tiny_windows_pad_the_vocabulary_and_count_tokens() -> None:
    cfg = Config(model="gpt-tiny", block_size=16, n_layer=1, n_head=2, n_embd=16)
    t = task.build_preset_task(cfg)
    assert isinstance(t.model, GPT) and t.loss_fn is lm_loss and t.accuracy is False
    assert isinstance(t.train_set, CharText) and isinstance(t.val_set, CharText)
    assert t.tokens_per_sample == 16
    vocab = t.train_set.vocab_size
    rows = t.model.tok.num_embeddings
    assert rows == task.pad_to_multiple(vocab, 64) and rows % 64 == 0 and rows >= vocab
    assert t.notes["unigram_entropy"] == round(t.train_set.unigram_entropy(), 4) and t.notes["unigram_entropy"] > 0


def test_gpt_tiny_lines_has_no_fixed_token_count() -> None:
    t = task.build_preset_task(Config(model="gpt-tiny", data="lines", block_size=16, n_layer=1, n_head=2, n_embd=16))
    assert isinstance(t.train_set, CharLines) and isinstance(t.val_set, CharLines)
    assert t.tokens_per_sample == 0


def test_the_seed_gives_the_same_weights_and_another_seed_others() -> None:
    cfg = dict(model="gpt-tiny", block_size=16, n_layer=1, n_head=2, n_embd=16)
    a = task.build_preset_task(Config(seed=1, **cfg)).model.state_dict()
    torch.manual_seed(999)  # whatever the RNG held before
    b = task.build_preset_task(Config(seed=1, **cfg)).model.state_dict()
    c = task.build_preset_task(Config(seed=2, **cfg)).model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_custom_needs_the_python_api() -> None:
    with pytest.raises(EngineError, match=r"model=custom needs the Python API \(hosttune.engine.api.fit\)"):
        task.build_preset_task(Config(model="custom"))
