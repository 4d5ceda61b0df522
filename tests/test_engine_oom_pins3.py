"""Pins of mutation round 3 (issue 21) on hosttune/engine/oom.py: the OOM advice keeps the effective batch
(bench/mutants.py r3-oom-*). Configs only: no model, no device."""

import re

import pytest

pytest.importorskip("torch")

from hosttune.engine import oom  # noqa: E402
from hosttune.engine.config import load_config  # noqa: E402


@pytest.mark.parametrize("micro, accum, half, want_accum", [
    (3, 2, 1, 6),  # an odd micro-batch: halved to 1, grad_accum x3
    (4, 3, 2, 6),
    (8, 1, 4, 2),
    (5, 1, 1, 5),  # an odd micro-batch above 3: 2 x 2 would be 4 samples, not 5
    (9, 2, 3, 6),
])
def test_halving_the_micro_batch_keeps_the_effective_batch(micro: int, accum: int, half: int,
                                                           want_accum: int) -> None:
    cfg = load_config("gpt-tiny", None, [f"micro_batch_size={micro}", f"grad_accum={accum}"])
    (line,) = [a for a in oom.oom_advice(cfg) if "micro_batch_size=" in a]
    got = re.search(r"--set micro_batch_size=(\d+) --set grad_accum=(\d+)", line)
    assert got is not None, line
    assert (int(got.group(1)), int(got.group(2))) == (half, want_accum)
    assert int(got.group(1)) * int(got.group(2)) == micro * accum  # what "keep the effective batch" promises


def test_a_micro_batch_of_one_is_not_halved() -> None:
    cfg = load_config("gpt-tiny", None, ["micro_batch_size=1", "grad_accum=4"])
    assert not [a for a in oom.oom_advice(cfg) if "micro_batch_size=" in a]
