"""doctor's cpu checks (hosttune/doctor/checks/cpu.py; cpu.nofile and cpu.memlock are checks/tunables.py's): the
group's table of cases, OMP_NUM_THREADS against the plan exec uses, the effective CPUs as the shared thread budget,
and cpu.cgroup_limit at its edge: a cgroup that leaves this process even one CPU fewer than the host has (a cpuset of
N-1 CPUs, a cpu.max quota below N, in this cgroup or a parent) warns, with the effective count; exactly the host's
count passes."""

import json
from pathlib import Path
from typing import Optional, Tuple

import pytest
from _doctorhelp import R, cpu_host, doctor_json, hosttune, in_use, profile_env, run_one, same, table_test

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


# ---- the cpu group's cases (checks/cpu.py; cpu.nofile and cpu.memlock are checks/tunables.py's) ----------------------
# (check id, host builder, change, context kwargs, expected status, text that must be in actual or fix)
CASES = [
    ("cpu.cgroup_limit", cpu_host, same, {}, "pass", "8 of 8"),
    ("cpu.cgroup_limit", cpu_host, lambda f: R(f, cpu=R(f.cpu, quota_cpus=2.5)), {}, "warn", "effective 2 of 8"),
    ("cpu.cgroup_limit", cpu_host, lambda f: R(f, cpu=R(f.cpu, allowed_cpus=(0, 1), cgroup=Cgroup(cpuset=(0, 1)))),
     {}, "warn", "OMP_NUM_THREADS=2"),
    ("cpu.omp_threads", cpu_host, same, {}, "pass", "unset"),
    ("cpu.omp_threads", cpu_host, same, {"env": {"OMP_NUM_THREADS": "4"}}, "pass", "4"),
    ("cpu.omp_threads", cpu_host, same, {"env": {"OMP_NUM_THREADS": "32"}}, "warn", "32 threads for 8"),
    ("cpu.omp_threads", cpu_host, same, {"env": {"OMP_NUM_THREADS": "four"}}, "warn", "not a positive integer"),
    ("cpu.nofile", cpu_host, same, {}, "pass", "1048576"),
    ("cpu.nofile", cpu_host, lambda f: R(f, limits=R(f.limits, nofile_soft=1024)), {}, "warn", "ulimit -n 65536"),
    ("cpu.nofile", cpu_host, lambda f: R(f, limits=R(f.limits, nofile_soft=1024, nofile_hard=4096)), {}, "warn",
     "hard nofile 1048576"),
    ("cpu.memlock", cpu_host, same, {}, "pass", "not relevant"),
    ("cpu.memlock", cpu_host, lambda f: R(f, limits=R(f.limits, rdma_devices=2)), {}, "pass", "unlimited"),
    ("cpu.memlock", cpu_host, lambda f: R(f, limits=R(f.limits, rdma_devices=2, memlock_soft=65536)), {}, "warn",
     "memlock unlimited"),
]


test_check = table_test(CASES)  # one case per row: status, and the text in actual/fix/expected


def test_omp_threads_compared_with_the_plan(tmp_path: Path) -> None:
    from hosttune import plan, profile

    facts = cpu_host()
    prof = profile.generate(facts)
    path = profile.write(prof, tmp_path / "profile.yaml", force=True)
    want = plan.resolve(facts, profile.load(str(path)), 0, 1, {}).env.get("OMP_NUM_THREADS")
    assert want
    ok = run_one("cpu.omp_threads", facts, env={"OMP_NUM_THREADS": want}, profile=in_use(path))
    assert ok.status == "pass" and "matches the plan" in ok.actual
    other = str(int(want) - 1 or 3)
    bad = run_one("cpu.omp_threads", facts, env={"OMP_NUM_THREADS": other}, profile=in_use(path))
    assert bad.status == "warn" and f"plan from {path} says {want}" in bad.actual


# ---- issue 17: one source of truth (through the CLI) -----------------------------------------------------------------
def test_omp_threads_is_compared_with_the_plan_exec_uses(tmp_path: Path) -> None:
    env = profile_env(tmp_path)  # the user's generated profile plans 2 threads
    mine = tmp_path / "one-thread.yaml"
    mine.write_text("threads: 1\n")
    env["HOSTTUNE_PROFILE"] = str(mine)  # ... but $HOSTTUNE_PROFILE wins for exec/env
    planned = json.loads(hosttune("env", "--json", env=env).stdout)["env"]["OMP_NUM_THREADS"]
    assert planned == "1"
    env["OMP_NUM_THREADS"] = planned
    f = doctor_json("--only", "cpu", env=env)["cpu.omp_threads"]
    assert f["status"] == "pass" and "matches the plan" in f["actual"], f
    env["OMP_NUM_THREADS"] = "2"  # what the shadowed generated profile would say
    f = doctor_json("--only", "cpu", env=env)["cpu.omp_threads"]
    assert f["status"] == "warn" and f"plan from {mine} says 1" in f["actual"], f


def test_effective_cpus_are_the_shared_thread_budget() -> None:
    from hosttune.policy import cpu as cpu_policy

    for over in ({"quota_cpus": 2.5}, {"quota_cpus": 0.5}, {"allowed_cpus": (0, 1, 2)}, {}):
        facts = cpu_host(cpu=R(cpu_host().cpu, **over))
        budget = cpu_policy.thread_budget(facts.cpu)
        f = run_one("cpu.cgroup_limit", facts)
        assert f"{budget} of 8" in f.actual, (over, f)
