"""Pins for hosttune.doctor.checks.cpu (issue 21, practice round HDOC8): a cpuset of SMT siblings gives the thread
budget (physical cores of the allowed set) in the fix, not the usable CPU count; the whole finding."""

from _doctorhelp import R, cpu_host

from hosttune.doctor.checks import cpu as cpu_checks
from hosttune.doctor.context import Context
from hosttune.doctor.model import Finding


def test_cgroup_fix_sizes_threads_to_the_cores_of_the_cpuset() -> None:
    base = cpu_host()
    smt = R(base.cpu, logical=16, physical=8, online=tuple(range(16)), smt=True,
            cores=tuple((i, i + 8) for i in range(8)), allowed_cpus=(0, 1, 2, 3, 8, 9, 10, 11))
    f = cpu_checks.check_cgroup(Context(facts=R(base, cpu=smt), env={}))
    assert f == Finding(
        status="warn", actual="effective 8 of 16 CPUs (cpuset 8 CPUs)", expected="16 CPUs, or threads sized to 8",
        fix="run training through `hosttune exec` (sizes threads to 4), or export OMP_NUM_THREADS=4; or give the "
            "container more CPUs (docker --cpus/--cpuset-cpus, systemd CPUQuota=/AllowedCPUs=)")
