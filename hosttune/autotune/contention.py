"""How busy the host was during a trial, measured outside the job: the share of the trial's time some task waited
for a CPU (/proc/pressure/cpu, the `some` line's `total` in microseconds, read before and after), else the 1-minute
load average above the job's own threads, per CPU.

PSI counts every task, the job's own too: a plan that runs more threads than CPUs stalls itself. The search
therefore judges the host by the *default* trials (one fixed plan, so its own part is the same in every one of them,
and nearly nothing for a plan with a thread per CPU), and a plan that oversubscribes on a quiet host can only make
the host look busier than it is, which widens intervals: the careful direction. The readers are injected (tests
give a synthetic pressure source and clock); `Meter()` reads this host.
"""

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Tuple

PSI_CPU = "/proc/pressure/cpu"
BUSY = 0.10  # other work held a CPU the job could use for 10% of the time or more: a busy host


def psi_some_total(text: str) -> Optional[float]:
    """The `some` line's cumulative stall (seconds) from /proc/pressure/cpu's text; None when absent or garbled."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "some":
            for p in parts[1:]:
                if p.startswith("total="):
                    try:
                        return int(p[len("total="):]) / 1e6
                    except ValueError:
                        return None
    return None


def read_psi() -> Optional[float]:
    try:
        with open(PSI_CPU, encoding="ascii", errors="replace") as f:
            return psi_some_total(f.read(4096))
    except OSError:  # no PSI on this kernel (or not enabled): the load average instead
        return None


def read_load() -> Optional[float]:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


Token = Tuple[Optional[float], float]


@dataclass
class Meter:
    """`start()` before a trial, `stop(token)` after it: the trial's contention (0 = quiet), None when unknown."""

    psi: Callable[[], Optional[float]] = read_psi
    load: Callable[[], Optional[float]] = read_load
    clock: Callable[[], float] = time.monotonic
    cpus: int = field(default_factory=lambda: len(os.sched_getaffinity(0)) or 1)
    job_threads: int = 0  # the job's own runnable threads under the default plan (ranks x threads)

    def start(self) -> Token:
        return self.psi(), self.clock()

    def stop(self, token: Token) -> Optional[float]:
        psi0, t0 = token
        seconds = self.clock() - t0
        psi1 = self.psi() if psi0 is not None else None
        if psi0 is not None and psi1 is not None and seconds > 0:
            return max(0.0, (psi1 - psi0) / seconds)
        load = self.load()
        if load is None:
            return None
        return max(0.0, load - self.job_threads) / max(1, self.cpus)
