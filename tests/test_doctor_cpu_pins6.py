"""CPU checks word for word (issue 21): the effective CPU count under a cpuset and a quota, and which of them the
finding names; OMP_NUM_THREADS at the usable-core line, a list value, and values libgomp ignores
(hosttune.doctor.checks.cpu)."""

from typing import Optional, Tuple

import pytest
from _doctorhelp import R, cpu_host, run_one

from hosttune.doctor.checks import cpu as cpu_checks
from hosttune.facts import Cgroup

FIX = ("run training through `hosttune exec` (sizes threads to {n}), or export OMP_NUM_THREADS={n}; or give the "
       "container more CPUs (docker --cpus/--cpuset-cpus, systemd CPUQuota=/AllowedCPUs=)")


@pytest.mark.parametrize("allowed,quota,actual,threads", [
    ((0, 1, 2, 3), 6.0, "effective 4 of 8 CPUs (cpuset 4 CPUs, cpu.max quota 6 CPUs)", 4),
    ((0, 1, 2, 3), 2.5, "effective 2 of 8 CPUs (cpuset 4 CPUs, cpu.max quota 2.5 CPUs)", 2),
    (tuple(range(8)), 2.5, "effective 2 of 8 CPUs (cpu.max quota 2.5 CPUs)", 2),
    ((0, 1, 2, 3), None, "effective 4 of 8 CPUs (cpuset 4 CPUs)", 4),
    (tuple(range(8)), 7.5, "effective 7 of 8 CPUs (cpu.max quota 7.5 CPUs)", 7),
    ((), 3.0, "effective 3 of 8 CPUs (cpu.max quota 3 CPUs)", 3),
])
def test_cgroup_limit_names_each_limit(allowed: Tuple[int, ...], quota: Optional[float], actual: str,
                                       threads: int) -> None:
    f = cpu_host()
    f = R(f, cpu=R(f.cpu, allowed_cpus=allowed, quota_cpus=quota, cgroup=Cgroup(version=2, quota_cpus=quota)))
    got = run_one("cpu.cgroup_limit", f)
    assert (got.status, got.actual, got.expected) == ("warn", actual, f"8 CPUs, or threads sized to {threads}")
    assert got.fix == FIX.format(n=threads)


def test_cgroup_limit_passes_without_a_smaller_limit() -> None:
    f = cpu_host()
    f = R(f, cpu=R(f.cpu, quota_cpus=8.0, cgroup=Cgroup(version=2, quota_cpus=8.0)))
    got = run_one("cpu.cgroup_limit", f)
    assert (got.status, got.actual, got.expected, got.fix) == ("pass", "8 of 8 CPUs usable", "8 (no smaller limit)", "")
    got = run_one("cpu.cgroup_limit", R(f, cpu=R(f.cpu, logical=0)))
    assert (got.status, got.actual) == ("skip", "CPU count not readable")


@pytest.mark.parametrize("raw,status,actual,expected,fix", [
    (None, "pass", "unset (hosttune exec / torchrun decide)", "unset, or matching the plan", ""),
    ("abc", "warn", "OMP_NUM_THREADS='abc' is not a positive integer", "a positive integer",
     "unset OMP_NUM_THREADS (and remove it from ~/.bashrc or /etc/environment)"),
    ("0", "warn", "OMP_NUM_THREADS='0' is not a positive integer", "a positive integer",
     "unset OMP_NUM_THREADS (and remove it from ~/.bashrc or /etc/environment)"),
    ("-2", "warn", "OMP_NUM_THREADS='-2' is not a positive integer", "a positive integer",
     "unset OMP_NUM_THREADS (and remove it from ~/.bashrc or /etc/environment)"),
    ("4,2", "pass", "4 (<= 8 usable cores; no profile to compare with)", "<= 8", ""),
    ("8", "pass", "8 (<= 8 usable cores; no profile to compare with)", "<= 8", ""),
    ("9", "warn", "9 threads for 8 usable cores", "<= 8",
     "export OMP_NUM_THREADS=8   # or unset it and launch with `hosttune exec`"),
])
def test_omp_threads_without_a_profile(raw: Optional[str], status: str, actual: str, expected: str,
                                       fix: str) -> None:
    env = {} if raw is None else {"OMP_NUM_THREADS": raw}
    got = run_one("cpu.omp_threads", cpu_host(), env=env)
    assert (got.status, got.actual, got.expected, got.fix) == (status, actual, expected, fix)
    assert cpu_checks.check_omp_threads.__module__ == "hosttune.doctor.checks.cpu"
