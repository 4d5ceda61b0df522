"""policy.cpu is the one CPU-count unit: on SMT, quota and cpuset fixture hosts the planner's threads and workers,
doctor's quoted count (cpu.omp_threads, cpu.cgroup_limit, the deep checks' cores) and policy.cpu agree.

Threads = physical cores of the allowed set (SMT siblings once), capped by the cgroup quota rounded down. Before,
doctor quoted logical CPUs: on the 8-core SMT2 fixture exec planned 8 threads and doctor said 16."""

import dataclasses
import json
from pathlib import Path
from typing import Any, List, Tuple

import pytest
from _synthhost import cpu_files
from conftest import build_tree as build
from conftest import run_cli

from hosttune import doctor, plan, profile
from hosttune.doctor import Context, run_checks
from hosttune.doctor.deep import checks as deep_checks
from hosttune.facts import Cpu, Facts
from hosttune.policy import cpu as cpu_policy
from hosttune.policy import names
from hosttune.profile import Active

SMT = "16em64t-4s2c2t"  # 4 sockets x 2 cores x 2 threads: 16 PUs, 8 cores


def _hosts(hwloc_tree: Any) -> List[Tuple[str, Facts]]:
    from hosttune.detect import collect

    smt = collect(hwloc_tree(SMT), probe_torch=False)
    c = smt.cpu
    assert c.logical == 16 and len(cpu_policy.allowed_cores(c)) == 8
    # a cpuset with both siblings of cores 0-1 and one PU of cores 2-3: 6 PUs, 4 cores
    cores = cpu_policy.allowed_cores(c)
    part = tuple(sorted([*cores[0], *cores[1], cores[2][0], cores[3][0]]))
    return [
        (SMT, smt),
        ("smt+quota 5.5", dataclasses.replace(smt, cpu=dataclasses.replace(c, quota_cpus=5.5))),
        ("smt+quota 12", dataclasses.replace(smt, cpu=dataclasses.replace(c, quota_cpus=12.0))),
        ("smt+cpuset", dataclasses.replace(smt, cpu=dataclasses.replace(c, allowed_cpus=part))),
        ("cpuset", collect(hwloc_tree("16amd64-8n2c-cpusets"), probe_torch=False)),
        ("cgroup2", collect(hwloc_tree("32amd64-4s2n4c-cgroup2"), probe_torch=False)),
        ("hybrid", collect(hwloc_tree("20em64t-hybrid-1p6c2t+2ca4co1t"), probe_torch=False)),
    ]


EXPECTED = {SMT: 8, "smt+quota 5.5": 5, "smt+quota 12": 8, "smt+cpuset": 4, "cpuset": 10, "cgroup2": 6,
            "hybrid": 14}


def _doctor(facts: Facts, check: str, env: Any) -> Any:
    ctx = Context(facts=facts, env=env, profile=Active(None, "built-in default"))
    (r,) = run_checks(ctx, checks=[doctor.BY_ID[check]]).results
    return r


def test_planner_doctor_and_policy_count_the_same_threads_and_workers(hwloc_tree: Any) -> None:
    prof = profile.load("throughput")
    for name, facts in _hosts(hwloc_tree):
        budget = cpu_policy.thread_budget(facts.cpu)
        assert budget == EXPECTED[name], name
        workers = cpu_policy.workers(facts.cpu)
        assert workers == cpu_policy.dataloader_workers(budget)[0]
        one = plan.resolve(facts, prof, 0, 1, environ={})
        assert one.threads == budget and one.env["OMP_NUM_THREADS"] == str(budget), name
        assert one.env[names.NUM_WORKERS] == str(workers), name
        # doctor without a profile: OMP_NUM_THREADS above the budget is oversubscription, at it is fine
        over = _doctor(facts, "cpu.omp_threads", {"OMP_NUM_THREADS": str(budget + 1)})
        assert over.status == "warn" and over.expected == f"<= {budget}", (name, over)
        assert f"OMP_NUM_THREADS={budget}" in over.fix
        assert _doctor(facts, "cpu.omp_threads", {"OMP_NUM_THREADS": str(budget)}).status == "pass", name
        limit = _doctor(facts, "cpu.cgroup_limit", {})
        if limit.status == "warn":
            assert f"sizes threads to {budget})" in limit.fix and f"OMP_NUM_THREADS={budget};" in limit.fix, name
        assert deep_checks._cores(Context(facts=facts, env={}), None) == budget, name


def test_an_smt_host_without_limits_is_not_a_cgroup_limit(hwloc_tree: Any) -> None:
    """cpu.cgroup_limit asks whether a cgroup limits the CPUs (logical): SMT alone is no limit."""
    from hosttune.detect import collect

    facts = collect(hwloc_tree(SMT), probe_torch=False)
    r = _doctor(facts, "cpu.cgroup_limit", {})
    assert r.status == "pass" and "16 of 16 CPUs usable" in r.actual, r


@pytest.mark.parametrize("n", [2, 3, 4])
def test_each_ranks_workers_follow_its_threads(hwloc_tree: Any, n: int) -> None:
    from hosttune.detect import collect

    facts = collect(hwloc_tree(SMT), probe_torch=False)
    for rp in plan.resolve_all(facts, profile.load("throughput"), n, environ={}):
        assert rp.threads is not None
        assert rp.env[names.NUM_WORKERS] == str(cpu_policy.dataloader_workers(rp.threads)[0])


def test_the_budget_without_cpu_ids_and_the_usable_count() -> None:
    assert cpu_policy.thread_budget(Cpu(logical=8, physical=4)) == 4
    assert cpu_policy.thread_budget(Cpu(logical=8)) == 8 and cpu_policy.thread_budget(Cpu()) is None
    smt = Cpu(logical=4, physical=2, online=(0, 1, 2, 3), allowed_cpus=(0, 1, 2, 3), cores=((0, 2), (1, 3)))
    assert cpu_policy.thread_budget(smt) == 2 and cpu_policy.usable_cpus(smt) == 4
    assert cpu_policy.thread_budget(dataclasses.replace(smt, quota_cpus=1.5)) == 1
    assert cpu_policy.usable_cpus(dataclasses.replace(smt, quota_cpus=1.5)) == 1
    assert cpu_policy.allowed_cores(dataclasses.replace(smt, allowed_cpus=(0, 1, 2))) == [(0, 2), (1,)]


# ---- pinned before the issue-17 rebuild: through `hosttune env` ------------------------------------------------------
def test_a_2_5_cpu_quota_gives_2_threads_not_3(tmp_path: Path) -> None:
    """Rounding a fractional quota up oversubscribes it: 3 threads on 2.5 CPUs are throttled every period."""
    files = cpu_files(8)
    files.update({
        "/proc/self/cgroup": "0::/job\n",
        "/proc/self/mountinfo": "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "/sys/fs/cgroup/job/cpu.max": "250000 100000\n",
    })
    root = build(tmp_path / "host", files)
    done = run_cli(["env", "--root", str(root), "--json"])  # a built tree: in-process (issue 21)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["env"]["OMP_NUM_THREADS"] == "2", plan
    # two ranks share the same 2 CPUs' worth of quota: one thread each, never 2 + 1 or 2 + 2
    threads = []
    for rank in (0, 1):
        done = run_cli(["env", "--root", str(root), "--json", "--local-rank", str(rank), "--local-world-size", "2"])
        assert done.returncode == 0, done.stderr
        threads.append(int(json.loads(done.stdout)["env"]["OMP_NUM_THREADS"]))
    assert sum(threads) <= 2, threads
