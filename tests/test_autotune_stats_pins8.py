"""Pins (issue 21, round 8 practice) for hosttune/autotune/stats.py and candidates.py: the bootstrap interval is
the (1-level)/2 and (1+level)/2 percentiles of the seeded resampled medians, lower index rounded down and upper
rounded up (the interval never narrower than its level); the floor of the default's busy pairs is its worst pair;
and a Host as nothing was detected on."""

import math
import random
from typing import List

import pytest

from hosttune.autotune import candidates as cands
from hosttune.autotune import stats

R = [1.1, 0.9, 1.3, 1.0, 1.2, 0.95]


def _medians(ratios: List[float], n: int) -> List[float]:
    rng = random.Random(stats.SEED)
    k = len(ratios)
    return sorted(stats.median([ratios[rng.randrange(k)] for _ in range(k)]) for _ in range(n))


def test_bootstrap_interval_small_and_exact() -> None:
    assert _medians(R, 4) == [0.925, 0.95, 0.975, 1.05]
    assert stats.bootstrap_ci(R, 0.5, 4) == (0.925, 1.05)  # indices floor(0.75) = 0 and ceil(2.25) = 3


@pytest.mark.parametrize("level,n", [(0.5, 4), (0.8, 11), (0.9, 21), (0.95, 401)])
def test_bootstrap_interval_indices_round_outwards(level: float, n: int) -> None:
    meds = _medians(R, n)
    lo = meds[math.floor((1 - level) / 2 * (n - 1))]
    hi = meds[math.ceil((1 + level) / 2 * (n - 1))]
    assert stats.bootstrap_ci(R, level, n) == (lo, hi)


def test_floor_is_the_worst_pair_either_way() -> None:
    assert stats.floor_of([1.0, 0.9, 1.25]) == pytest.approx(0.8)  # 1.25 up is as bad as 0.8 down
    assert stats.floor_of([1.0, 0.7, 1.25]) == pytest.approx(0.7)
    assert stats.floor_of([]) == 1.0 and stats.floor_of([0.0, -1.0]) == 1.0


def test_a_host_with_nothing_detected() -> None:
    assert cands.Host() == cands.Host(jemalloc=False, tcmalloc=False, threads=None, logical_per_rank=None,
                                      engine=False, gpus=False, engine_sets=())
