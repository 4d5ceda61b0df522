"""The search: successive halving over the candidates, every trial of one between two trials of the default.

`schedule` is the plan (pure, shown by --dry-run): rung r runs r+1 rounds of the candidates still in, then keeps
the better half by median ratio, until two are left; the two finalists then get `confirm` fresh rounds, and only
those rounds decide (the rungs picked them, so their earlier rounds are the luckiest: counting them would reward
noise). A round of n candidates is D c1 D c2 ... cn D, the candidates in a new seeded order each round; its first D
is the last D of the round before, so a round costs 2n trials (the search's very first default trial is extra).

`search` follows the schedule on a `Runner` (anything with `run(name) -> Trial`; the real one is runner.py, tests
use a fake) while the budget lasts. With `replan` (the session's searches) the names come in priority order and the
search first runs two default trials (a warm-up: the first is a cold start), then keeps only the candidates the
budget holds at the second's measured length (budget.py: the plan, and one line per candidate left out), so the
confirmation rounds, which decide, always fit the plan. Before each round after the first it checks that the round,
at the mean trial length seen so far, still fits beside what the confirmation rounds need (rungs are cut first when
trials run longer than planned), and no candidate trial starts unless it and the default trial that closes its
ratio would fit even if both ran their whole window (`trial_s`, or the longest trial so far if longer): the budget
is never exceeded (the plan leaves room for that). A candidate whose trial fails is out, with the reason; a default
trial that fails only costs its neighbours one side of their ratio, but a first default trial that fails ends the
search (`DefaultFailed`): nothing can be compared to it.

Each trial may carry how busy the host was during it (`Trial.busy`, contention.py). When the default trials ran on
a busy host (median contention >= `contention.BUSY`), `Result` says so in one line (`contention_line`), widens
every interval by the default's own swing between adjacent trials (`stats.widen`), never declares a candidate
whose worst round under contention fell well below the default's (`stats.fragile`) the winner, and before deciding
gives the finalists up to `extra` (default: `confirm`) more confirmation rounds, as many as the budget still holds
(`Result.extra_rounds`; the line says how many): the bursts of other tenants span trials, so more rounds are what
averages them out.
"""

import math
import random
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from hosttune.autotune import budget, contention, stats
from hosttune.autotune.budget import CONFIRM, schedule
from hosttune.autotune.candidates import DEFAULT


@dataclass(frozen=True)
class Trial:
    name: str
    score: Optional[float]  # greater is faster; None: dropped
    seconds: float  # how long it took (budget accounting)
    why: str = ""  # why it was dropped
    busy: Optional[float] = None  # contention during it (contention.Meter: 0 = quiet), None: not measured
    cut: bool = False  # its window ended it (the job did not end by itself)


class Runner(Protocol):
    def run(self, name: str) -> Trial: ...


class DefaultFailed(Exception):
    """The default plan's first trial gave no metric: nothing to compare to."""


@dataclass
class Result:
    candidates: List[str]
    ratios: Dict[str, List[float]] = field(default_factory=dict)  # every round of each candidate
    confirm: Dict[str, List[float]] = field(default_factory=dict)  # the finalists' confirmation rounds
    dropped: Dict[str, str] = field(default_factory=dict)  # candidate -> why it is out
    trials: List[Trial] = field(default_factory=list)
    spent: float = 0.0
    stopped: str = ""  # why the search ended before its schedule did ("" when it ran it all)
    finalists: List[str] = field(default_factory=list)
    busy_ratios: Dict[str, List[float]] = field(default_factory=dict)  # rounds whose candidate trial was busy
    extra_rounds: int = 0  # confirmation rounds added because the host was busy
    extra_planned: int = 0  # how many a busy host asks for (0: the host was quiet)
    plan: Optional[budget.Plan] = None  # what the budget held at the default's second trial's length
    window_plan: Optional[budget.Plan] = None  # what it held at the window's length, before any trial

    def budget_lines(self) -> List[str]:
        """What the budget held: one line for the plan, one per candidate left out."""
        if self.plan is None:
            return []
        head = [f"plan: {self.plan.why()}: {self.plan.trials()} trials"]
        w = self.window_plan
        if w is not None and len(w.kept) != len(self.plan.kept):
            head[0] += f" (at the window's {w.trial_s:.3g} s: {len(w.kept)})"
        return head + self.plan.lines()

    def budget_dict(self) -> Dict[str, object]:
        return {"window": None if self.window_plan is None else self.window_plan.to_dict(),
                "measured": None if self.plan is None else self.plan.to_dict(),
                "left_out": list(self.plan.left_out) if self.plan is not None else []}

    def summaries(self) -> List[stats.Summary]:
        w = self.widening()
        return stats.ranked([stats.widen(stats.summarize(n, self.ratios.get(n, [])), w) for n in self.candidates])

    def confirmed(self) -> List[stats.Summary]:
        """The finalists' confirmation rounds, each interval at 1 - 5%/finalists (Bonferroni: two finalists tested
        at once must not double the chance that noise wins)."""
        level = 1 - (1 - stats.LEVEL) / max(1, len(self.finalists))
        w = self.widening()
        return stats.ranked([stats.widen(stats.summarize(n, self.confirm.get(n, []), level), w)
                             for n in self.finalists])

    def winner(self, min_gain: float) -> Optional[stats.Summary]:
        alpha = stats.SIGN_ALPHA / max(1, len(self.finalists))
        out = self.fragile()
        best = [s for s in self.confirmed() if stats.wins(s, min_gain, alpha) and s.name not in out]
        return best[0] if best else None

    def default_pairs(self, busy_only: bool = False) -> List[float]:
        """D_next / D_prev over consecutive default trials that both gave a score (busy_only: either was busy)."""
        ds = [t for t in self.trials if t.name == DEFAULT]
        return [b.score / a.score for a, b in zip(ds, ds[1:])
                if a.score and b.score and (not busy_only or _busy(a) or _busy(b))]

    def busy_share(self) -> Optional[float]:
        """The median contention over the default trials (None: not measured)."""
        xs = [t.busy for t in self.trials if t.name == DEFAULT and t.busy is not None]
        return stats.median(xs) if xs else None

    def busy(self) -> bool:
        share = self.busy_share()
        return share is not None and share >= contention.BUSY

    def widening(self) -> float:
        """The factor every interval is stretched by: the default's swing on a busy host, 1.0 on a quiet one."""
        return stats.swing(self.default_pairs()) if self.busy() else 1.0

    def fragile(self) -> Dict[str, float]:
        """Finalist -> its worst ratio under contention, for those that fell well below the default's worst (a slow
        candidate the rungs dropped is not news)."""
        pairs = self.default_pairs(busy_only=True)
        return {n: min(r) for n, r in self.busy_ratios.items() if n in self.finalists and stats.fragile(r, pairs)}

    def contention_line(self) -> str:
        """One line when the host was busy during the trials ("" when quiet or not measured)."""
        share = self.busy_share()
        out = self.fragile()
        if not self.busy() and not out:
            return ""
        text = (f"busy host: other work wanted the CPUs {share or 0:.0%} of the default trials' time; every interval"
                f" widened by x{self.widening():.3f} (the default's own swing between adjacent trials)")
        floor = stats.floor_of(self.default_pairs(busy_only=True))
        if self.extra_planned:
            text += (f"; {self.extra_rounds} extra confirmation round(s) run before deciding (of {self.extra_planned}"
                     f"{'' if self.extra_rounds >= self.extra_planned else '; the budget held no more'})")
        for name, worst in sorted(out.items()):
            text += f"; {name} not kept: x{worst:.2f} in a contended round (the default's worst: x{floor:.2f})"
        return text

    def contention_dict(self) -> Dict[str, object]:
        share = self.busy_share()
        return {"busy": self.busy(), "busy_share": None if share is None else round(share, 4),
                "widened_by": round(self.widening(), 4), "extra_rounds": self.extra_rounds,
                "fragile": {n: round(r, 4) for n, r in sorted(self.fragile().items())}}


def _busy(t: Trial) -> bool:
    return t.busy is not None and t.busy >= contention.BUSY


class _Search:
    def __init__(self, names: Sequence[str], runner: Runner, budget_s: float, trial_s: float,
                 progress: Optional[Callable[[Trial, "Result"], None]], seed: int):
        self.runner, self.budget, self.trial_s, self.progress = runner, budget_s, trial_s, progress
        self.rng = random.Random(seed)
        self.res = Result(list(names), ratios={n: [] for n in names})
        self.last: Optional[float] = None  # the default trial that closed the last round (opens the next)
        self.opened = False
        self.cut = False  # a round ended early: its next candidate and closing default would pass the budget
        self.warmup = 0  # the first trials, a cold start, that the mean trial length leaves out

    def _trial(self, name: str) -> Trial:
        t = self.runner.run(name)
        self.res.trials.append(t)
        self.res.spent += max(0.0, t.seconds)
        if self.progress is not None:
            self.progress(t, self.res)
        return t

    def fits(self, n: int, rounds: int = 1, reserve: int = 0) -> bool:
        """Whether the next round (and `reserve` trials after it) fit the budget at the mean trial length seen so
        far, the warm-up's cold start left out. The first round always runs: the window is only an upper bound, most
        jobs end sooner."""
        done = self.res.trials[self.warmup:] or self.res.trials
        if not done:
            return True
        each = sum(t.seconds for t in done) / len(done)
        first = 0 if self.opened else 1
        return self.res.spent + (rounds * 2 * n + first + reserve) * each <= self.budget

    def room(self, trials: int) -> bool:
        """Whether `trials` more trials stay within the budget even if each runs its whole window (or as long as the
        longest so far, stopping included): the guard that keeps the search from ever running past the budget."""
        longest = max((t.seconds for t in self.res.trials), default=0.0)
        return self.res.spent + trials * max(self.trial_s, longest) <= self.budget

    def round(self, names: List[str], into: Dict[str, List[float]]) -> None:
        order = list(names)
        self.rng.shuffle(order)
        before = self.last if self.opened else self._default()
        self.opened = True
        for name in order:
            if not self.room(2):  # the candidate and the default that closes its ratio
                self.cut = True
                break
            t = self._trial(name)
            after = self._default()
            if t.score is None:
                self.res.dropped[name] = t.why or "no metric"
            else:
                self._keep(name, stats.adjacent_ratio(t.score, before, after), into, _busy(t))
            before = after
        self.last = before

    def _keep(self, name: str, ratio: Optional[float], into: Dict[str, List[float]], busy: bool) -> None:
        if ratio is None:
            return
        into.setdefault(name, []).append(ratio)
        if busy:
            self.res.busy_ratios.setdefault(name, []).append(ratio)
        if into is not self.res.ratios:
            self.res.ratios.setdefault(name, []).append(ratio)

    def _default(self) -> Optional[float]:
        t = self._trial(DEFAULT)
        if t.score is None and all(x.score is None for x in self.res.trials if x.name == DEFAULT):
            raise DefaultFailed(t.why or "no metric")
        return t.score

    def alive(self, names: List[str]) -> List[str]:
        return [n for n in names if n not in self.res.dropped]


def search(names: Sequence[str], runner: Runner, budget_s: float, trial_s: float, *, confirm: int = CONFIRM,
           progress: Optional[Callable[[Trial, Result], None]] = None, seed: int = stats.SEED,
           extra: Optional[int] = None, replan: bool = False) -> Result:
    """Run the schedule for `names` (the default is not one of them) within `budget_s` seconds of trials; on a busy
    host up to `extra` (default: `confirm`) more confirmation rounds as the budget allows. `replan`: `names` are in
    priority order, and after two default trials only the first that the budget holds at the second's length
    are searched (`Result.plan`; the rest are left out)."""
    s = _Search(names, runner, budget_s, trial_s, progress, seed)
    res = s.res
    alive = _replan(s, list(names), confirm) if replan and names else list(names)
    if res.stopped:
        return res
    reserve = confirm * 2 * min(2, len(alive))
    for stage in schedule(len(alive), confirm)[:-1]:
        for _ in range(stage.rounds):
            if len(alive) <= 2:
                break
            if not s.fits(len(alive), reserve=reserve) or s.cut:
                res.stopped = "the budget ran out during the halving rungs"
                break
            s.round(alive, res.ratios)
            alive = s.alive(alive)
        if res.stopped:
            break
        alive = [x.name for x in stats.ranked([stats.quick(n, res.ratios[n]) for n in alive])]
        alive = alive[:max(2, math.ceil(len(alive) / 2))] if len(alive) > 2 else alive
    res.finalists = _top(s, alive, 2)
    for _ in range(confirm):
        finalists = s.alive(res.finalists)
        if not finalists:
            break
        if not s.fits(len(finalists)) or s.cut:
            res.stopped = res.stopped or "the budget ran out during the confirmation rounds"
            break
        s.round(finalists, res.confirm)
    if s.cut and not res.stopped:
        res.stopped = "the budget ran out during the last confirmation round"
    _more_if_busy(s, confirm if extra is None else extra)
    return res


def _replan(s: _Search, names: List[str], confirm: int) -> List[str]:
    """The default's warm-up trial (a cold start) and its second (which opens the first round), then the first of
    `names` that the budget holds at the second's measured length; none (and the search stops, said why) when not
    even one candidate fits."""
    for _ in range(budget.WARMUP):
        s._default()
    s.warmup = budget.WARMUP
    s.last, s.opened = s._default(), True
    warm = s.res.trials[-1]
    longest = max(t.seconds for t in s.res.trials)
    plan = budget.make(names, s.budget, budget.estimate(warm.seconds, warm.cut), confirm, "measured",
                       measured_s=warm.seconds, bound_s=max(s.trial_s, longest), spent_s=s.res.spent,
                       done=len(s.res.trials))
    s.res.plan = plan
    s.res.candidates = list(plan.kept)
    s.res.ratios = {n: [] for n in plan.kept}
    if not plan.kept:
        s.res.stopped = plan.too_small_line()
    return list(plan.kept)


def _more_if_busy(s: _Search, extra: int) -> None:
    """On a busy host, more confirmation rounds for the finalists, while the budget holds them."""
    res = s.res
    if extra <= 0 or not res.busy() or not s.alive(res.finalists):
        return
    res.extra_planned = extra
    if res.stopped:  # the budget did not even hold the planned rounds: the line says none could be added
        return
    for _ in range(extra):
        finalists = s.alive(res.finalists)
        # a whole round, even at the window's length: an extra round the budget cuts short is no round
        if not finalists or not s.fits(len(finalists)) or not s.room(2 * len(finalists)) or s.cut:
            return
        s.round(finalists, res.confirm)
        res.extra_rounds += 1


def _top(s: _Search, names: List[str], k: int) -> List[str]:
    ranked = stats.ranked([stats.quick(n, s.res.ratios.get(n, [])) for n in s.alive(names)])
    return [x.name for x in ranked if x.rounds][:k] or [x.name for x in ranked][:k]


def summary_rows(res: Result) -> List[Tuple[stats.Summary, Optional[stats.Summary], str]]:
    """(all rounds, confirmation rounds or None, why dropped) per candidate, best first."""
    conf = {s.name: s for s in res.confirmed()}
    return [(s, conf.get(s.name), res.dropped.get(s.name, "")) for s in res.summaries()]
