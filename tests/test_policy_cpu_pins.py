"""Pins for hosttune/policy/cpu.py from issue 21's mutation run: a quota of zero or less is no quota (not one
thread), a fractional quota rounds down, the quota caps the thread budget, and a cpuset narrower than the host
counts."""

import pytest

from hosttune.facts import Cgroup, Cpu
from hosttune.policy import cpu as cpu_policy


@pytest.mark.parametrize("q", [0.0, -1.0])
def test_a_quota_of_zero_or_less_is_no_quota(q: float) -> None:
    for cpu in (Cpu(logical=8, quota_cpus=q), Cpu(logical=8, cgroup=Cgroup(quota_cpus=q))):
        assert cpu_policy.quota(cpu) is None
        assert cpu_policy.thread_budget(cpu) == 8 and cpu_policy.usable_cpus(cpu) == 8


@pytest.mark.parametrize("q, threads", [(2.5, 2), (2.0, 2), (1.99, 1), (0.3, 1), (7.999999999999, 8)])
def test_a_fractional_quota_rounds_down(q: float, threads: int) -> None:
    assert cpu_policy.quota_threads(q) == threads
    assert cpu_policy.thread_budget(Cpu(logical=16, quota_cpus=q)) == threads


def test_a_cpuset_narrower_than_the_host_counts() -> None:
    cpu = Cpu(logical=8, allowed_cpus=(0, 1, 2))
    assert cpu_policy.usable_cpus(cpu) == 3
    assert cpu_policy.usable_cpus(Cpu(logical=8)) == 8
