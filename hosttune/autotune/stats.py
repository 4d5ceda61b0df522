"""Ratios to the default in adjacent runs, their median and a bootstrap interval over rounds, and the decision.

A round of a candidate is one trial of it between two trials of the default; its ratio is the candidate's score
over the geometric mean of the two default scores next to it (one, when the other default trial was dropped), so
drift on the machine hits both sides alike and absolute speeds never meet across rounds. The interval is the
percentile bootstrap of the median over rounds (seeded: the same ratios give the same interval). A candidate wins
only with at least `MIN_ROUNDS` confirmation rounds, an interval whose lower end clears 1 + `min_gain`, and a sign
test: so many of its rounds clear 1 + `min_gain` that a coin (no gain, noise alone) would do it with a chance of
at most `SIGN_ALPHA` over the finalists (the bootstrap of a median over six rounds is too coarse to hold its level
alone: with it only, noise won 1-5% of simulated no-gain searches).

On a busy host (contention.py) the bootstrap, which takes rounds as independent, is too narrow: other tenants come
and go in bursts that span trials. There `widen` stretches each interval by the default's own `swing`, the median
of |log(D_next / D_prev)| over the pairs of default trials around each candidate trial (the same plan twice in a
row: whatever separates them is the host, not a plan). And a plan must degrade gracefully: one whose worst round
under contention fell more than `DEGRADE` below the default's worst swing against itself in busy rounds is
`fragile` and never the winner (hard pinning lost up to x0.53 in one contended round on a 2-core VM).
"""

import dataclasses
import math
import random
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

BOOTSTRAP = 4000
LEVEL = 0.95
SIGN_ALPHA = 0.01  # the chance a no-gain candidate may win, over all finalists together
MIN_ROUNDS = 5
DEGRADE = 0.10  # a candidate's worst busy round may fall at most 10% below the default's worst swing
SEED = 24  # the number: a fixed seed, so an interval is a function of its ratios


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return math.nan
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def adjacent_ratio(score: Optional[float], before: Optional[float], after: Optional[float]) -> Optional[float]:
    """The candidate's score over its neighbouring default scores (geometric mean); None without either side."""
    sides = [d for d in (before, after) if d is not None and d > 0]
    if score is None or score <= 0 or not sides:
        return None
    return score / math.exp(sum(math.log(d) for d in sides) / len(sides))


def bootstrap_ci(ratios: Sequence[float], level: float = LEVEL, n: int = BOOTSTRAP,
                 seed: int = SEED) -> Tuple[float, float]:
    """The percentile bootstrap interval of the median of `ratios` (nan, nan) when empty."""
    if not ratios:
        return math.nan, math.nan
    if len(ratios) == 1:
        return ratios[0], ratios[0]
    rng = random.Random(seed)
    k = len(ratios)
    meds = sorted(median([ratios[rng.randrange(k)] for _ in range(k)]) for _ in range(n))
    lo = meds[int(math.floor((1 - level) / 2 * (n - 1)))]
    hi = meds[int(math.ceil((1 + level) / 2 * (n - 1)))]
    return lo, hi


@dataclass(frozen=True)
class Summary:
    name: str
    rounds: int
    median: float
    lo: float
    hi: float
    ratios: Tuple[float, ...] = ()

    def to_dict(self) -> dict:
        return {"candidate": self.name, "rounds": self.rounds, "median_ratio": _r(self.median),
                "ci_low": _r(self.lo), "ci_high": _r(self.hi)}


def _r(x: float) -> Optional[float]:
    return None if math.isnan(x) else round(x, 4)


def summarize(name: str, ratios: Sequence[float], level: float = LEVEL) -> Summary:
    lo, hi = bootstrap_ci(ratios, level)
    return Summary(name, len(ratios), median(ratios), lo, hi, tuple(ratios))


def quick(name: str, ratios: Sequence[float]) -> Summary:
    """The median alone (ranking between rungs needs no interval)."""
    return Summary(name, len(ratios), median(ratios), math.nan, math.nan, tuple(ratios))


def sign_p(above: int, n: int) -> float:
    """P(at least `above` of `n` fair coin flips come up heads): the chance noise alone does as well."""
    return sum(math.comb(n, k) for k in range(above, n + 1)) / 2 ** n if n else 1.0


def wins(s: Summary, min_gain: float, alpha: float = SIGN_ALPHA) -> bool:
    """Provably faster than the default: enough rounds, the whole interval above 1 + min_gain, and a sign test."""
    above = sum(1 for r in s.ratios if r > 1.0 + min_gain)
    return s.rounds >= MIN_ROUNDS and s.lo > 1.0 + min_gain and sign_p(above, s.rounds) <= alpha


def ranked(summaries: Sequence[Summary]) -> List[Summary]:
    """Best first by median ratio (a candidate without rounds last)."""
    return sorted(summaries, key=lambda s: (s.rounds == 0, -(s.median if s.rounds else 0.0), s.name))


def swing(pairs: Sequence[float]) -> float:
    """exp(median |log p|) over the default-vs-default pairs p = D_next / D_prev: the factor by which the same plan
    typically differs from itself one trial later (1.0 without pairs)."""
    logs = [abs(math.log(p)) for p in pairs if p > 0]
    return math.exp(median(logs)) if logs else 1.0


def widen(s: Summary, factor: float) -> Summary:
    """The interval stretched by `factor` on both sides (the median stays)."""
    if factor <= 1.0 or not s.rounds:
        return s
    return dataclasses.replace(s, lo=s.lo / factor, hi=s.hi * factor)


def floor_of(pairs: Sequence[float]) -> float:
    """The default's worst round against itself: exp(-max |log p|) over its adjacent pairs (1.0 without pairs)."""
    logs = [abs(math.log(p)) for p in pairs if p > 0]
    return math.exp(-max(logs)) if logs else 1.0


def fragile(busy_ratios: Sequence[float], busy_pairs: Sequence[float], degrade: float = DEGRADE) -> bool:
    """Whether a candidate's worst round under contention fell more than `degrade` below the default's worst."""
    return bool(busy_ratios) and min(busy_ratios) < floor_of(busy_pairs) * (1.0 - degrade)
