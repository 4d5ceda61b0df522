"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/data.py: write_text_shards' whole output (every
shard file's text, cut at line ends and together the whole text, and the index). In-process, no torch needed for
the files but the module imports it."""

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from hosttune.engine.data import write_text_shards  # noqa: E402


def test_shards_are_cut_at_line_ends_and_keep_every_character(tmp_path: Path) -> None:
    out = tmp_path / "shards"
    out.mkdir()
    index = write_text_shards("ab\ncd\nef\ngh\nij", out, "t", 3)
    assert index == out / "t.shards.json"
    assert sorted(p.name for p in out.iterdir()) == ["t.shard-00.txt", "t.shard-01.txt", "t.shard-02.txt",
                                                          "t.shards.json"]
    bodies = [(out / f"t.shard-{k:02d}.txt").read_text() for k in range(3)]
    assert bodies == ["ab\ncd\n", "ef\ngh\n", "ij"]  # 5 characters a shard at least (14 / 3, rounded up)
    assert json.loads(index.read_text()) == {"vocab": "\nabcdefghij", "shards": [
        {"file": "t.shard-00.txt", "chars": 6}, {"file": "t.shard-01.txt", "chars": 6},
        {"file": "t.shard-02.txt", "chars": 2}]}


def test_the_last_shard_takes_the_rest_and_a_given_vocabulary_is_kept(tmp_path: Path) -> None:
    index = write_text_shards("a\nb\nc\nd\n", tmp_path, "v", 2, vocab="\nabcdz")
    assert [(tmp_path / f"v.shard-{k:02d}.txt").read_text() for k in range(2)] == ["a\nb\n", "c\nd\n"]
    meta = json.loads(index.read_text())
    assert meta["vocab"] == "\nabcdz" and [s["chars"] for s in meta["shards"]] == [4, 4]
