"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/state.py's effective_batch: the whole
sentence a resume says about the effective batch (micro-batch x accumulation x ranks), kept, grown, shrunk, with the
grad_accum that keeps it when one does."""

import pytest

pytest.importorskip("torch")

from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.state import effective_batch  # noqa: E402

SAME = " samples per step (the learning rate and schedule stay as set)"


@pytest.mark.parametrize("saved,now,line", [
    ((8, 2, 1), (8, 2, 1), "the effective batch stays 16 samples per step (8 x 2 x 1 then, 8 x 2 x 1 now)"),
    ((8, 1, 2), (4, 4, 1), "the effective batch stays 16 samples per step (8 x 1 x 2 then, 4 x 4 x 1 now)"),
    ((8, 1, 2), (8, 1, 1), "the effective batch changes from 8 x 1 x 2 = 16 to 8 x 1 x 1 = 8" + SAME
     + "; grad_accum=2 keeps it"),
    ((8, 2, 1), (16, 2, 1), "the effective batch changes from 8 x 2 x 1 = 16 to 16 x 2 x 1 = 32" + SAME
     + "; grad_accum=1 keeps it"),
    ((4, 3, 1), (8, 1, 1), "the effective batch changes from 4 x 3 x 1 = 12 to 8 x 1 x 1 = 8" + SAME),
    ((2, 1, 1), (4, 1, 1), "the effective batch changes from 2 x 1 x 1 = 2 to 4 x 1 x 1 = 4" + SAME),
    ((6, 2, 4), (6, 1, 2), "the effective batch changes from 6 x 2 x 4 = 48 to 6 x 1 x 2 = 12" + SAME
     + "; grad_accum=4 keeps it"),
])
def test_the_effective_batch_sentence(saved, now, line) -> None:
    cfg = Config(micro_batch_size=now[0], grad_accum=now[1])
    assert effective_batch(*saved, cfg, now[2]) == line
