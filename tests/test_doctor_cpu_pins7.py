"""Pins for hosttune.doctor.checks.cpu (issue 21, practice round HDOC): OMP_NUM_THREADS is held to the thread
budget (physical cores of the allowed set, capped by the quota), not to the usable logical CPU count."""

from typing import Optional

import pytest
from _doctorhelp import R, cpu_host, run_one

from hosttune.doctor.checks import cpu as cpu_checks
from hosttune.facts import Cgroup


def smt_host(quota: Optional[float] = None):  # type: ignore[no-untyped-def]
    f = cpu_host()
    return R(f, cpu=R(f.cpu, logical=16, physical=8, online=tuple(range(16)), allowed_cpus=tuple(range(16)),
                      smt=True, smt_control="on",
                      cores=tuple((i, i + 8) for i in range(8)), quota_cpus=quota,
                      cgroup=Cgroup(version=2, quota_cpus=quota)))


@pytest.mark.parametrize("raw,quota,status,actual,expected,fix", [
    ("12", None, "warn", "12 threads for 8 usable cores", "<= 8",
     "export OMP_NUM_THREADS=8   # or unset it and launch with `hosttune exec`"),
    ("9", None, "warn", "9 threads for 8 usable cores", "<= 8",
     "export OMP_NUM_THREADS=8   # or unset it and launch with `hosttune exec`"),
    ("8", None, "pass", "8 (<= 8 usable cores; no profile to compare with)", "<= 8", ""),
    ("6", 4.5, "warn", "6 threads for 4 usable cores", "<= 4",
     "export OMP_NUM_THREADS=4   # or unset it and launch with `hosttune exec`"),
    ("4", 4.5, "pass", "4 (<= 4 usable cores; no profile to compare with)", "<= 4", ""),
])
def test_omp_threads_against_the_thread_budget_on_an_smt_host(raw: str, quota: Optional[float], status: str,
                                                              actual: str, expected: str, fix: str) -> None:
    got = run_one("cpu.omp_threads", smt_host(quota), env={"OMP_NUM_THREADS": raw})
    assert (got.status, got.actual, got.expected, got.fix) == (status, actual, expected, fix)
    assert cpu_checks.check_omp_threads.__module__ == "hosttune.doctor.checks.cpu"
