"""Pins for hosttune/autotune/stats.py from issue 21's mutation run: the decision rules, each on a case where the
rule alone decides (the median of an even count, a winner needs its interval's low end and the sign test and enough
rounds, the geometric mean of the neighbouring defaults, the interval's upper end, widening, fragility, ranking)."""

import math

import pytest

from hosttune.autotune import stats
from hosttune.autotune.stats import Summary


def test_the_median_of_an_even_count_is_the_middle_pair_mean() -> None:
    assert stats.median([4.0, 1.0, 3.0, 2.0]) == 2.5 and stats.median([3.0, 1.0, 2.0]) == 2.0


def test_a_winner_needs_its_intervals_low_end_above_the_gain() -> None:
    s = Summary("a", 8, 1.2, 1.01, 1.3, (1.2,) * 8)
    assert not stats.wins(s, 0.05)
    assert stats.wins(Summary("a", 8, 1.2, 1.06, 1.3, (1.2,) * 8), 0.05)


def test_a_winner_needs_the_sign_test() -> None:
    s = Summary("a", 8, 1.2, 1.1, 1.3, (1.2,) * 4 + (1.0,) * 4)  # half the rounds below the gain
    assert stats.sign_p(4, 8) == pytest.approx(163 / 256)
    assert not stats.wins(s, 0.05)


def test_a_winner_needs_min_rounds_whatever_alpha() -> None:
    s = Summary("a", stats.MIN_ROUNDS - 1, 1.3, 1.2, 1.4, (1.3,) * (stats.MIN_ROUNDS - 1))
    assert not stats.wins(s, 0.05, alpha=0.5)
    ok = Summary("a", stats.MIN_ROUNDS, 1.3, 1.2, 1.4, (1.3,) * stats.MIN_ROUNDS)
    assert stats.wins(ok, 0.05, alpha=0.5)


def test_sign_p_counts_every_round_at_or_above() -> None:
    assert stats.sign_p(8, 8) == 1 / 256 and stats.sign_p(7, 8) == 9 / 256 and stats.sign_p(0, 0) == 1.0


def test_a_candidate_is_compared_with_the_geometric_mean_of_its_neighbouring_defaults() -> None:
    assert stats.adjacent_ratio(2.0, 1.0, 4.0) == pytest.approx(1.0)
    assert stats.adjacent_ratio(2.0, None, 4.0) == pytest.approx(0.5)


def test_the_intervals_upper_end_is_its_percentile_not_the_maximum() -> None:
    lo, hi = stats.bootstrap_ci([1.0] * 9 + [5.0])
    assert (lo, hi) == (1.0, 1.0)


def test_widening_scales_both_ends() -> None:
    w = stats.widen(Summary("a", 5, 1.0, 0.9, 1.1), 2.0)
    assert (w.lo, w.hi) == (0.45, 2.2)
    assert stats.widen(Summary("a", 5, 1.0, 0.9, 1.1), 1.0).lo == 0.9


def test_one_collapsed_busy_round_makes_a_candidate_fragile() -> None:
    assert stats.fragile([1.0, 0.5], [1.0, 1.0])
    assert not stats.fragile([1.0, 0.95], [1.0, 1.0])
    assert math.isclose(stats.floor_of([2.0, 0.5]), 0.5)


def test_ranked_fastest_first() -> None:
    got = stats.ranked([Summary("a", 5, 1.1, 1.0, 1.2), Summary("b", 5, 1.3, 1.2, 1.4), Summary("c", 0, 0, 0, 0)])
    assert [s.name for s in got] == ["b", "a", "c"]
