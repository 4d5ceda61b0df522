"""Pins (issue 21, round 8 practice) for hosttune/autotune/search.py and contention.py: `fits` plans at the mean
length of the trials after the warm-up (not the longest); a `Meter()` reads this host's PSI, else its load
average, on the monotonic clock, over the CPUs this process may use."""

import os
import time

import pytest

from hosttune.autotune import contention, search
from hosttune.autotune.candidates import DEFAULT as D
from hosttune.autotune.search import Trial


class _Never:
    def run(self, name: str) -> Trial:
        raise AssertionError("fits and room run no trial")


def test_fits_plans_at_the_mean_of_the_trials_after_the_warm_up() -> None:
    s = search._Search(["a"], _Never(), budget_s=100.0, trial_s=10.0, progress=None, seed=1)
    s.res.trials = [Trial(D, 1.0, 40.0), Trial(D, 1.0, 2.0), Trial("a", 1.0, 6.0), Trial(D, 1.0, 4.0)]
    s.res.spent = 52.0
    s.warmup = 1
    s.opened = True
    # the mean after the warm-up is (2 + 6 + 4) / 3 = 4 s: 52 + 2 x 6 x 4 = 100 fits, 7 candidates do not
    assert s.fits(6) and not s.fits(7)
    assert s.fits(3, rounds=2) and not s.fits(4, rounds=2)
    s.warmup = 0  # with the cold start counted: (40 + 2 + 6 + 4) / 4 = 13 s
    assert s.fits(1) and not s.fits(2)


def test_room_is_at_the_window_or_the_longest_trial_and_may_reach_the_budget_exactly() -> None:
    s = search._Search(["a"], _Never(), budget_s=100.0, trial_s=10.0, progress=None, seed=1)
    s.res.trials = [Trial(D, 1.0, 4.0), Trial("a", 1.0, 16.0)]
    s.res.spent = 20.0
    assert s.room(5) and not s.room(6)  # 20 + 5 x 16 = 100


def test_a_default_meter_reads_this_host() -> None:
    m = contention.Meter()
    assert (m.psi, m.load, m.clock, m.job_threads) == (contention.read_psi, contention.read_load, time.monotonic, 0)
    assert m.cpus == len(os.sched_getaffinity(0))
    assert (contention.PSI_CPU, contention.BUSY) == ("/proc/pressure/cpu", 0.10)


class _Flaky:
    """A runner: each candidate scores its own value; `e` scores best once, then crashes on every later trial."""

    SCORES = {D: 100.0, "a": 101.0, "b": 104.0, "c": 99.0, "d": 102.0, "e": 150.0}

    def __init__(self) -> None:
        self.ran: list = []

    def run(self, name: str) -> Trial:
        self.ran.append(name)
        if name == "e" and self.ran.count("e") > 1:
            return Trial(name, None, 1.0, "e crashed")
        return Trial(name, self.SCORES[name], 1.0)


def test_a_candidate_out_is_never_tried_again_even_after_a_good_round() -> None:
    r = _Flaky()
    res = search.search(list("abcde"), r, budget_s=10_000.0, trial_s=1.0, confirm=2, seed=3)
    assert r.ran.count("e") == 2  # its good first round, then the one that put it out
    assert res.dropped == {"e": "e crashed"}
    assert res.finalists == ["b", "d"]
    assert res.ratios["e"] == [pytest.approx(1.5)] and sorted(res.confirm) == ["b", "d"]
    # rung 0: all five; rung 1 (e, b, d): its first round puts e out, leaving two; then two confirmation rounds
    assert [n for n in r.ran if n != D] == ["a", "c", "d", "e", "b", "b", "e", "d", "d", "b", "b", "d"]


def test_a_search_that_does_not_replan_counts_its_first_trial_in_the_mean() -> None:
    s = search._Search(["a"], _Never(), budget_s=100.0, trial_s=10.0, progress=None, seed=1)
    assert (s.warmup, s.opened, s.cut, s.last) == (0, False, False, None)
    s.res.trials = [Trial(D, 1.0, 40.0), Trial("a", 1.0, 2.0)]
    s.res.spent = 42.0
    s.opened = True
    assert s.fits(1) and not s.fits(2)  # at (40 + 2) / 2 = 21 s a trial: 42 + 2 x 21 = 84, 42 + 4 x 21 = 126


def test_a_load_average_of_zero_is_a_quiet_host_not_an_unknown_one() -> None:
    ticks = iter([0.0, 10.0])
    m = contention.Meter(psi=lambda: None, load=lambda: 0.0, clock=lambda: next(ticks), cpus=4, job_threads=2)
    assert m.stop(m.start()) == 0.0
    blind = contention.Meter(psi=lambda: None, load=lambda: None, clock=lambda: 0.0, cpus=4)
    assert blind.stop(blind.start()) is None


class _Rising:
    """Each candidate's own score, except `d`, which scores 102 in its first trial and 110 after."""

    SCORES = {D: 100.0, "a": 101.0, "b": 104.0, "c": 99.0, "d": 102.0, "e": 103.0}

    def __init__(self) -> None:
        self.d = 0

    def run(self, name: str) -> Trial:
        if name == "d":
            self.d += 1
        return Trial(name, 110.0 if name == "d" and self.d > 1 else self.SCORES[name], 1.0)


def test_when_the_budget_stops_a_rung_the_finalists_are_the_best_two_so_far() -> None:
    # rung 0 (11 trials) keeps b, e, d; rung 1's first round (6) runs, its second (6 + the 8 the confirmation
    # rounds need) does not fit 26 s: d (x1.02 then x1.10, median x1.06) is now ahead of e (x1.03)
    res = search.search(list("abcde"), _Rising(), budget_s=26.0, trial_s=1.0, confirm=2, seed=1)
    assert res.stopped == "the budget ran out during the halving rungs"
    assert res.finalists == ["d", "b"]
    assert sorted(res.confirm) == ["b", "d"] and res.spent == 25.0
