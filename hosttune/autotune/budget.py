"""What fits the budget: how many candidates a search can afford so that the finalists' confirmation rounds (the
only rounds that decide) still fit, which candidates are left out, and one line saying so for each.

A search of k candidates runs `total_trials(k)` trials: `WARMUP` default trial(s) first, then `planned_trials(k)`
(the halving rungs, then the two finalists' `confirm` rounds). `make` keeps the first k candidates (the list comes
in `candidates.prioritized` order, so the ones left out are the last: the knobs the default plan least often gets
wrong) for the largest k whose trials, at a given length each, fit the budget. Planned twice: before any trial at
the window's length (an upper bound: the window ends a trial), and again after the default's warm-up and first
trials at the measured length of the second (`estimate`; the first is a cold start: in bench_autotune's GPT job it
took 22.4 s, the trials after it 9-16 s), so a job that ends well within its window fits more candidates than the
window suggests, and one whose trials take the whole window plus the time to stop it fits fewer. The last two
trials are planned at the window (`need`): the search starts a candidate trial only when it and the default trial
closing its ratio would fit even if both ran their whole window, so the budget is never exceeded. A budget that
holds not even one candidate with its confirmation rounds is refused before any trial (`too_small`): a search that
cannot confirm cannot keep anything, whatever it measures.
"""

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

CONFIRM = 8  # with two finalists the sign test needs 8 of 8 rounds above 1 + min_gain (p = 1/256 each)
SLACK = 0.10  # a job that ends by itself: its next trials may run this much longer than the measured one
MIN_WINDOW_S = 3.0  # a trial shorter than this measures start-up, not the job
WARMUP = 1  # default trials before the plan is made again (a cold start: caches, bytecode, imports)


@dataclass(frozen=True)
class Stage:
    label: str
    names: int  # candidates in it
    rounds: int

    @property
    def trials(self) -> int:
        """Each round opens on the default trial that closed the round before (the very first one is extra)."""
        return self.rounds * 2 * self.names


def schedule(n: int, confirm: int = CONFIRM) -> List[Stage]:
    """The stages for n candidates: the halving rungs, then the finalists' confirmation rounds."""
    out: List[Stage] = []
    k, rung = n, 0
    while k > 2:
        out.append(Stage(f"rung {rung}", k, rung + 1))
        k, rung = math.ceil(k / 2), rung + 1
    if k:
        out.append(Stage("confirm", k, confirm))
    return out


def planned_trials(n: int, confirm: int = CONFIRM) -> int:
    return sum(s.trials for s in schedule(n, confirm)) + (1 if n else 0)


def total_trials(k: int, confirm: int = CONFIRM) -> int:
    """Every trial of a planned search of k candidates: the warm-up default trial(s), then the schedule."""
    return WARMUP + planned_trials(k, confirm)


def need(k: int, trial_s: float, confirm: int, bound_s: Optional[float] = None, done: int = 0) -> float:
    """Seconds the trials after the first `done` of a search of k candidates need at `trial_s` a trial, the last two
    at `bound_s` (what a trial may take at most: its window)."""
    trials = max(0, total_trials(k, confirm) - done)
    tail = min(2, trials)
    return (trials - tail) * trial_s + tail * max(trial_s, bound_s or 0.0)


def fit(n: int, budget_s: float, trial_s: float, confirm: int, bound_s: Optional[float] = None,
        spent_s: float = 0.0, done: int = 0) -> int:
    """The most candidates (of n) whose whole search fits `budget_s` at `trial_s` a trial, `done` trials taking
    `spent_s` already; 0: not even one."""
    if not (trial_s > 0 and math.isfinite(trial_s)):
        return 0
    return max((k for k in range(1, n + 1) if spent_s + need(k, trial_s, confirm, bound_s, done) <= budget_s),
               default=0)


def estimate(seconds: float, cut: bool) -> float:
    """A trial's planned length from one measured trial: as long when the window ended it (the next one ends the
    same way), `SLACK` longer when the job ended by itself (the next one may be slower)."""
    return seconds if cut else seconds * (1 + SLACK)


def default_window(budget_s: float, n: int, confirm: int) -> float:
    """The window when --trial is not given: the budget spread over the planned trials of as many candidates as
    leave each trial `MIN_WINDOW_S`, less `SLACK` for starting and stopping each trial (so trials that use their
    whole window still fit the plan made at their measured length)."""
    k = max(1, fit(n, budget_s, MIN_WINDOW_S * (1 + SLACK), confirm)) if n else 0
    return budget_s / ((1 + SLACK) * total_trials(k, confirm)) if k else budget_s


def duration(seconds: float) -> str:
    """600 -> '10m', 90 -> '90s', 7200 -> '2h' (the --budget grammar), rounded up to whole units."""
    s = math.ceil(seconds - 1e-9)
    if s >= 3600 and s % 3600 == 0:
        return f"{s // 3600}h"
    return f"{s // 60}m" if s >= 120 and s % 60 == 0 else f"{s}s"


def smallest_budget(seconds: float) -> str:
    """A --budget of at least `seconds` (whole minutes from two minutes on)."""
    return duration(60 * math.ceil(seconds / 60 - 1e-9) if seconds > 120 else seconds)


def too_small(budget_s: float, window_s: Optional[float], confirm: int) -> Optional[str]:
    """The one line that refuses a budget too small for even one candidate with its confirmation rounds (None: it
    fits), at the given window, else at the shortest window with its start-and-stop slack; or a window too short."""
    trials = total_trials(1, confirm)
    if window_s is not None and not (window_s >= MIN_WINDOW_S and math.isfinite(window_s)):
        return f"--trial {window_s:g}: a trial needs at least {MIN_WINDOW_S:g} s (a shorter one measures start-up)"
    if window_s is not None:
        if trials * window_s <= budget_s:
            return None
        return (f"--budget {duration(budget_s)} holds no candidate with its {confirm} confirmation rounds: one "
                f"candidate is {trials} trials of up to {window_s:g} s (--trial): give --budget "
                f"{smallest_budget(trials * window_s)} or more, or a shorter --trial")
    least = MIN_WINDOW_S * (1 + SLACK)
    if trials * least <= budget_s:
        return None
    return (f"--budget {duration(budget_s)} holds no candidate with its {confirm} confirmation rounds: one candidate "
            f"is {trials} trials of at least {MIN_WINDOW_S:g} s (+{SLACK:.0%} to start and stop each): give --budget "
            f"{smallest_budget(trials * least)} or more")


@dataclass(frozen=True)
class Plan:
    """The candidates a budget holds at `trial_s` a trial (`basis`: "window" before any trial, "measured" after the
    default's second trial, `measured_s` long), and those left out."""

    budget_s: float
    trial_s: float
    basis: str
    kept: Tuple[str, ...]
    left_out: Tuple[str, ...]
    confirm: int
    measured_s: Optional[float] = None
    bound_s: Optional[float] = None  # the most a trial may take (the window), if longer than trial_s
    spent_s: float = 0.0  # the trials run before this plan was made took this long
    done: int = 0  # ... and were this many

    @property
    def of(self) -> int:
        return len(self.kept) + len(self.left_out)

    def trials(self) -> int:
        """Every trial of the planned search, those run before the plan included."""
        return total_trials(len(self.kept), self.confirm) if self.kept else self.done

    def at(self) -> str:
        """How long a trial is planned at, and why."""
        if self.basis == "window":
            return f"{self.trial_s:.3g} s a trial, the window"
        last = f", the last two up to the {self.bound_s:.3g} s window" if self.bound_s is not None else ""
        if self.measured_s is not None and self.trial_s > self.measured_s * 1.0001:
            return (f"{self.trial_s:.3g} s a trial, the default's second trial's {self.measured_s:.3g} s "
                    f"+{SLACK:.0%}{last}")
        return f"{self.trial_s:.3g} s a trial, as long as the default's second{last}"

    def why(self) -> str:
        return f"budget {duration(self.budget_s)} fits {len(self.kept)} of {self.of} candidates at {self.at()}"

    def lines(self) -> List[str]:
        """One line per candidate left out (none when all fit)."""
        return [f"left out: {name} ({self.why()})" for name in self.left_out]

    def too_small_line(self) -> str:
        least = self.spent_s + need(1, self.trial_s, self.confirm, self.bound_s, self.done)
        return (f"the budget holds no candidate with its {self.confirm} confirmation rounds at {self.at()}: "
                f"give --budget {smallest_budget(least)} or more")

    def to_dict(self) -> Dict[str, Any]:
        return {"basis": self.basis, "budget_s": round(self.budget_s, 1), "trial_s": round(self.trial_s, 2),
                "measured_s": None if self.measured_s is None else round(self.measured_s, 2),
                "bound_s": None if self.bound_s is None else round(self.bound_s, 2),
                "fits": len(self.kept), "of": self.of, "planned_trials": self.trials(), "kept": list(self.kept),
                "left_out": list(self.left_out)}


def make(names: Sequence[str], budget_s: float, trial_s: float, confirm: int, basis: str,
         measured_s: Optional[float] = None, bound_s: Optional[float] = None, spent_s: float = 0.0,
         done: int = 0) -> Plan:
    """The first candidates of `names` (priority order) that the budget holds at `trial_s` a trial (the last two
    at `bound_s`), after `done` trials that took `spent_s`."""
    k = fit(len(names), budget_s, trial_s, confirm, bound_s, spent_s, done)
    bound = bound_s if bound_s is not None and bound_s > trial_s else None
    return Plan(budget_s, trial_s, basis, tuple(names[:k]), tuple(names[k:]), confirm, measured_s, bound, spent_s,
                done)
