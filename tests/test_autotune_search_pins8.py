"""Pins (issue 21, round 8 practice) for hosttune/autotune/search.py and contention.py: `fits` plans at the mean
length of the trials after the warm-up (not the longest); a `Meter()` reads this host's PSI, else its load
average, on the monotonic clock, over the CPUs this process may use."""

import os
import time

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
