"""Pins for mutation round 4's engine survivors (issue 21): a symlinked step directory is not a checkpoint, and a
text shard is tokenised to its last character."""
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import checkpoint as ckpt  # noqa: E402
from hosttune.engine.data import ShardedText, write_text_shards  # noqa: E402


def test_a_symlinked_step_directory_is_not_taken_as_a_checkpoint(tmp_path: Path) -> None:
    d = tmp_path / "ckpt"
    (d / "step-1").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (d / "step-9").symlink_to(elsewhere, target_is_directory=True)  # planted: the newest-looking step
    assert ckpt.list_checkpoints(d) == [d / "step-1"]


def test_a_shards_windows_reach_its_last_character(tmp_path: Path) -> None:
    text = "abcdefgh\nijklmnopz"  # one shard; 'z' appears only as its last character
    index = write_text_shards(text, tmp_path, "t", 1)
    ds = ShardedText(index, block_size=4)
    n = ds.windows(len(text))
    got = [(x, y) for _, (x, y) in zip(range(n), ds.iter_part(0, 1))]  # one pass: every window once
    assert all(len(x) == 4 and len(y) == 4 for x, y in got)
    last = ds.stoi["z"]
    assert any(int(y[-1]) == last for _, y in got)
