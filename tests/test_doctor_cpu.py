"""doctor's cpu.cgroup_limit at its edge: a cgroup that leaves this process even one CPU fewer than the host has (a
cpuset of N-1 CPUs, a cpu.max quota below N, in this cgroup or a parent) warns, with the effective count; exactly
the host's count passes."""

from typing import Optional, Tuple

import pytest

from hosttune import doctor
from hosttune.doctor import Context, Finding, run_checks
from hosttune.facts import Cgroup, Cpu, Facts
from hosttune.profile import Active

N = 8


def cgroup_limit(allowed: Tuple[int, ...] = tuple(range(N)), quota: Optional[float] = None,
                 parent_quota: Optional[float] = None) -> Finding:
    cpu = Cpu(logical=N, physical=N, online=tuple(range(N)), allowed_cpus=allowed, quota_cpus=quota,
              cgroup=Cgroup(version=2, cpuset=allowed if len(allowed) < N else None, quota_cpus=parent_quota))
    ctx = Context(facts=Facts(cpu=cpu), env={}, profile=Active(None, "built-in default"))
    (r,) = run_checks(ctx, checks=[doctor.BY_ID["cpu.cgroup_limit"]]).results
    return Finding(status=r.status, actual=r.actual, expected=r.expected, fix=r.fix)


def test_the_whole_host_passes() -> None:
    f = cgroup_limit()
    assert f.status == "pass" and f.actual == f"{N} of {N} CPUs usable"
    assert cgroup_limit(quota=float(N)).status == "pass"
    assert cgroup_limit(quota=float(2 * N)).status == "pass"


def test_a_cpuset_one_cpu_short_warns() -> None:
    f = cgroup_limit(allowed=tuple(range(N - 1)))
    assert f.status == "warn", f
    assert f"effective {N - 1} of {N} CPUs (cpuset {N - 1} CPUs)" in f.actual
    assert f"OMP_NUM_THREADS={N - 1}" in f.fix


@pytest.mark.parametrize("quota", [N - 1.0, N - 0.5, N - 0.01])
def test_a_quota_below_the_host_warns(quota: float) -> None:
    """Threads a quota sustains are rounded down (policy.cpu.quota_threads): 7.5 CPUs is 7 threads."""
    f = cgroup_limit(quota=quota)
    assert f.status == "warn", f
    assert f"effective {N - 1} of {N} CPUs (cpu.max quota {quota:g} CPUs)" in f.actual


def test_a_parents_quota_one_cpu_short_warns() -> None:
    f = cgroup_limit(parent_quota=N - 1.0)
    assert f.status == "warn" and f"effective {N - 1} of {N}" in f.actual, f
