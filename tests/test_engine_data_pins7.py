"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/data.py: write_text_shards' whole output (every
shard file's text, cut at line ends and together the whole text, and the index), and where each loader worker
of a resumed stream starts. In-process."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import data  # noqa: E402
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


class Numbers(torch.utils.data.IterableDataset):
    def __iter__(self):
        return iter(range(120))


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_each_worker_resumes_at_its_first_batch_not_yet_trained(monkeypatch: pytest.MonkeyPatch,
                                                                workers: int) -> None:
    # The DataLoader hands out the workers' batches round-robin: the rank's batch k is worker k % workers' batch
    # k // workers. Resumed at start_batches, worker w starts at its first batch k >= start. The worker's context
    # is what torch's get_worker_info says inside a worker process.
    for worker in range(workers):
        monkeypatch.setattr(data, "get_worker_info", lambda w=worker: SimpleNamespace(num_workers=workers, id=w))
        for start in range(7):
            first = next(iter(data.StreamReader(Numbers(), 1, 0, 0, 2, start))).tolist()
            own_before = len([k for k in range(start) if k % workers == worker])
            assert first == [worker + workers * 2 * own_before, worker + workers * (2 * own_before + 1)], (worker,
                                                                                                          start)
