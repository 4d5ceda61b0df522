"""Pins of mutation round 6 (issue 21) on hosttune/engine/data.py (bench/mutants.py
r6a-engine-chartext-short-split): a CharText split of exactly block_size characters holds no whole window (a window
is block_size + 1 characters: the input and its next-character targets), so it is refused with the block_size
error naming the split, not accepted as an empty dataset (which would train or evaluate on nothing). In-process."""

from pathlib import Path

import pytest

pytest.importorskip("torch")

from hosttune.engine.data import CharText, default_text  # noqa: E402

# 100 characters: the train split is the first 90, the val split the last 10.
TEXT = ("abcdefghij" * 10)


@pytest.mark.parametrize("split,size", [("train", 90), ("val", 10)])
def test_a_split_of_exactly_block_size_chars_is_refused(tmp_path: Path, split: str, size: int) -> None:
    path = tmp_path / "text.txt"
    path.write_text(TEXT, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^block_size {size} is too large for the {split} split \({size} chars\)$"):
        CharText(size, split, path)
    # One character shorter: exactly one window, the whole split (it was refused too, one short of the rule).
    one = CharText(size - 1, split, path)
    assert len(one) == 1 and one[0][0].tolist() + one[0][1][-1:].tolist() == one.data.tolist()
    # The control: a block two characters shorter leaves whole windows of block_size inputs and targets.
    ok = CharText(size - 2, split, path)
    assert len(ok) >= 1
    x, y = ok[len(ok) - 1]
    assert len(x) == len(y) == size - 2 and x[1:].tolist() == y[:-1].tolist()


def test_block_size_the_length_of_the_bundled_val_split_is_refused() -> None:
    """What `--set block_size=N` meets with gpt-tiny: the bundled text's val split is the last 10 %."""
    text = default_text().read_text(encoding="utf-8")
    val_chars = len(text) - int(len(text) * 0.9)
    with pytest.raises(ValueError, match=rf"block_size {val_chars} is too large for the val split \({val_chars} chars"):
        CharText(val_chars, "val")
