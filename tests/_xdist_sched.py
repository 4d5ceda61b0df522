"""Longest-first scheduling of test scopes over pytest-xdist workers (issue 21: `make test` and `make check` time).

`--dist loadscope` keeps a module (or a test class) whole on one worker, so its module fixtures (a 2-rank training,
built packages, a Slurm cluster) are made once. Stock xdist hands the scopes out in order of their test count, and
the heavy modules have few tests (a handful of 2-rank trainings each): they came last, and the pass ended with one
worker on a 4-minute module while the other sat idle. This scheduler hands out the scopes by their expected seconds,
heaviest first (longest-processing-time-first, a 4/3-approximation of the best split), from the table below; the
rest (most modules, a few seconds each) keep the random order pytest-random-order gave them, after the heavy ones.
The order of tests inside every scope stays random, and the seed printed by make replays the whole schedule.

A worker also gets its next scope only when its current one is down to its last test (stock: two), so a worker
still busy for minutes with a heavy module's last tests does not hold the next heavy module while the other one
idles.

The weights: tests/_xdist_weights.txt, seconds per test function (each parametrized case of it costs that much) on
a quiet 2-core machine, setup + call + teardown, written from `pytest --durations=0` output by
`python3 tests/_xdist_sched.py LOG...` (a module fixture's cost lands on whichever test asked for it first: the
module's sum is what counts). Only tests over 2 s are listed; every other test counts DEFAULT_S. A test missing from
the table (renamed, new) only makes the schedule less good, never wrong.
"""

import re
import sys
from collections import OrderedDict, defaultdict
from pathlib import Path
from typing import Any, Dict, List

from xdist.scheduler import LoadScopeScheduling

DEFAULT_S = 0.05
LIGHT_S = 10.0  # a scope expected to take no longer than this keeps its random place, after the heavy ones
TABLE = Path(__file__).resolve().parent / "_xdist_weights.txt"


def load_weights(path: Path = TABLE) -> Dict[str, float]:
    """`SECONDS NODEID` lines (NODEID without its parametrize id), `#` comments; no table: no weights."""
    weights: Dict[str, float] = {}
    try:
        text = path.read_text()
    except OSError:
        return weights
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            seconds, nodeid = line.split(None, 1)
            weights[nodeid.strip()] = float(seconds)
    return weights


WEIGHTS: Dict[str, float] = load_weights()


def expected_seconds(nodeid: str) -> float:
    """Expected seconds of one collected test, from its node id (the parametrize id dropped)."""
    return WEIGHTS.get(nodeid.split("[", 1)[0], DEFAULT_S)


_DURATION = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)")


def table_from_durations(lines: List[str], floor_s: float = 2.0) -> str:
    """The weights table from `pytest --durations=0` lines: per test function, the mean over its parametrized cases."""
    total: Dict[str, float] = defaultdict(float)
    cases: Dict[str, set] = defaultdict(set)
    for line in lines:
        m = _DURATION.match(line)
        if m:
            nodeid = m.group(3)
            total[nodeid.split("[", 1)[0]] += float(m.group(1))
            cases[nodeid.split("[", 1)[0]].add(nodeid)
    rows = sorted((key, total[key] / len(cases[key])) for key in total)
    return "".join(f"{seconds:.1f} {key}\n" for key, seconds in rows if seconds >= floor_s)


class LongestFirstScheduling(LoadScopeScheduling):
    """LoadScopeScheduling with the heaviest scopes handed out first and no prefetch of a second scope."""

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._ordered = False

    def _order_workqueue(self) -> None:
        scopes: Dict[str, Dict[str, bool]] = OrderedDict()
        for nodeid in self.collection or []:  # collection order: the random one
            scope = self._split_scope(nodeid)
            scopes.setdefault(scope, self.workqueue.get(scope, {}))
        weight = {scope: sum(expected_seconds(n) for n in tests) for scope, tests in scopes.items()}
        heavy = sorted((s for s in scopes if weight[s] > LIGHT_S), key=lambda s: -weight[s])
        rest = [s for s in scopes if weight[s] <= LIGHT_S]
        self.workqueue = OrderedDict((s, scopes[s]) for s in heavy + rest)

    def _assign_work_unit(self, node: Any) -> None:
        if not self._ordered:  # the first assignment, right after schedule() built the (count-sorted) workqueue
            self._ordered = True
            self._order_workqueue()
        super()._assign_work_unit(node)

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        # The worker blocks before its last pending test until it knows the next one: hand over the next scope then,
        # not while 2 tests (possibly minutes) are still to run.
        if self._pending_of(self.assigned_work[node]) > 1:
            return
        self._assign_work_unit(node)


if __name__ == "__main__":  # python3 tests/_xdist_sched.py LOG... > tests/_xdist_weights.txt (then keep the header)
    sys.stdout.write(table_from_durations([line for log in sys.argv[1:] for line in open(log, errors="replace")]))
