"""Pins for hosttune/engine/checkpoint.py found by issue 21's mutation run, single process, no training: the rename
of a re-saved step is made durable before the old copy goes, an old copy whose replacement never arrived is put back,
and pruning keeps exactly `keep` checkpoints."""

from pathlib import Path
from typing import Any, List, Tuple

import pytest

torch = pytest.importorskip("torch")

from test_engine_pins import saved_value, shared  # noqa: E402  (the checkpoint pins' state and reader)

from hosttune.engine import checkpoint as ckpt  # noqa: E402


def test_the_old_copy_goes_only_after_the_directory_holding_the_new_one_is_fsynced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "checkpoints"
    ckpt.save(d, 10, 0, lambda: shared(10, 1.0), {}, keep=3)
    events: List[Tuple[str, str]] = []
    real_fsync, real_rmtree = ckpt.fsync_dir, ckpt.shutil.rmtree
    monkeypatch.setattr(ckpt, "fsync_dir", lambda p: (events.append(("fsync", str(p))), real_fsync(p))[-1])

    def rmtree(p: Any, *a: Any, **kw: Any) -> None:
        events.append(("rmtree", Path(p).name))
        real_rmtree(p, *a, **kw)

    real_replace = ckpt.os.replace

    def replace(src: Any, dst: Any) -> None:
        events.append(("replace", Path(dst).name))
        real_replace(src, dst)

    monkeypatch.setattr(ckpt.shutil, "rmtree", rmtree)
    monkeypatch.setattr(ckpt.os, "replace", replace)
    ckpt.save(d, 10, 0, lambda: shared(10, 2.0), {}, keep=3)
    monkeypatch.undo()
    placed = events.index(("replace", "step-0000010"))  # the new copy renamed into place
    gone = events.index(("rmtree", ".replaced-step-0000010"))
    assert ("fsync", str(d)) in events[placed:gone], events
    assert saved_value(d / "step-0000010") == 2.0


def test_an_old_copy_whose_replacement_never_arrived_is_put_back(tmp_path: Path) -> None:
    d = tmp_path / "checkpoints"
    ckpt.save(d, 10, 0, lambda: shared(10, 1.0), {}, keep=3)
    (d / "step-0000010").rename(d / ".replaced-step-0000010")  # a crash between the two renames
    ckpt.save(d, 20, 0, lambda: shared(20, 2.0), {}, keep=3)
    assert saved_value(d / "step-0000010") == 1.0
    assert sorted(p.name for p in d.iterdir()) == ["step-0000010", "step-0000020"]


@pytest.mark.parametrize("keep", [1, 2, 3])
def test_pruning_keeps_exactly_keep_checkpoints(tmp_path: Path, keep: int) -> None:
    d = tmp_path / "checkpoints"
    for step in range(1, 6):
        ckpt.save(d, step, 0, lambda s=step: shared(s, float(s)), {}, keep=keep)
    assert [ckpt.step_of(p) for p in ckpt.list_checkpoints(d)] == list(range(6 - keep, 6))
