"""Pins of hosttune/launch/verify.py (issue 21, mutation round 5): what `exec --verify` compares of a running rank
(each thread's affinity, Mems_allowed, memory policy, environment) and the exact lines it says, against real child
processes whose state the test sets and the kernel shows in /proc; which processes a pass takes for ranks; and the
final report's wording. Every wait is for a line the child prints or a /proc state, never a sleep for a phase."""

import os
import subprocess
import sys
import time
import types
from typing import Any, Dict, List, Optional

import pytest

from hosttune.launch import verify
from hosttune.launch.procfs import parse_cpulist
from hosttune.launch.verify import RankCheck
from hosttune.policy import names

ALLOWED = sorted(os.sched_getaffinity(0))
needs_two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two allowed CPUs")


def _rank(cpu: Optional[int] = None, thread_cpu: Optional[int] = None, env: Optional[Dict[str, str]] = None,
          grandchild: bool = False, threads: int = 1) -> "subprocess.Popen[str]":
    """A child that pins itself (and, when asked, a second thread elsewhere) and says `ready` once it has."""
    code = "import os, sys, threading, time, subprocess\n"
    if cpu is not None:
        code += f"os.sched_setaffinity(0, {{{cpu}}})\n"
    if thread_cpu is not None:
        code += (f"def t(ev):\n    os.sched_setaffinity(0, {{{thread_cpu}}})\n    ev.set()\n    time.sleep(600)\n"
                 f"for _ in range({threads}):\n    ev = threading.Event()\n"
                 f"    threading.Thread(target=t, args=(ev,), daemon=True).start()\n    ev.wait()\n")
    if grandchild:
        code += ("g = subprocess.Popen([sys.executable, '-c', 'import time; print(1, flush=True); time.sleep(600)'],"
                 " stdout=subprocess.PIPE)\ng.stdout.readline()\nprint('ready', g.pid, flush=True)\n")
    else:
        code += "print('ready', flush=True)\n"
    code += "time.sleep(600)\n"
    full = dict(os.environ)
    full.update(env or {})
    p = subprocess.Popen([sys.executable, "-c", code], env=full, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line.startswith("ready"), line
    p.extra = line.split()[1:]  # type: ignore[attr-defined]
    return p


def _end(*procs: "subprocess.Popen[str]") -> None:
    for p in procs:
        for g in getattr(p, "extra", []):
            try:
                os.kill(int(g), 9)
            except ProcessLookupError:
                pass
        if p.poll() is None:
            p.kill()
        p.wait()
        if p.stdout is not None:
            p.stdout.close()


def _check(pid: int, cpus: Any = (), policy: str = "none", mems: Any = (), env: Any = None) -> RankCheck:
    return RankCheck(pid, 0, 1, tuple(cpus), policy, tuple(mems), dict(env or {}))


def _cl(cpus: List[int]) -> str:
    from hosttune.cpulist import format_cpulist

    return format_cpulist(tuple(cpus))


# --- _exited --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("status,gone", [({}, True), ({"State": "Z (zombie)"}, True), ({"State": "X (dead)"}, True),
                                         ({"State": "S (sleeping)"}, False), ({"State": "R (running)"}, False),
                                         ({"Name": "x"}, False)])
def test_exited_is_a_missing_status_or_a_zombie_or_a_dead_process(status: Dict[str, str], gone: bool) -> None:
    assert verify._exited(status) is gone


# --- check_rank against real processes -------------------------------------------------------------------------------

@needs_two_cpus
def test_a_rank_on_its_planned_cpus_passes_and_one_elsewhere_is_named_with_both_lists() -> None:
    p = _rank(cpu=ALLOWED[0])
    try:
        ok = _check(p.pid, cpus=[ALLOWED[0]])
        assert verify.check_rank(ok) == [] and ok.checks == 1 and ok.last > 0
        bad = _check(p.pid, cpus=ALLOWED)
        assert verify.check_rank(bad) == [f"cpus {ALLOWED[0]}, plan {_cl(ALLOWED)}"]
        assert verify.check_rank(bad) == []  # said once: only new mismatches come back
        assert bad.mismatches == [f"cpus {ALLOWED[0]}, plan {_cl(ALLOWED)}"] and bad.checks == 2
    finally:
        _end(p)


@needs_two_cpus
def test_a_thread_that_moved_is_named_by_its_tid_and_name_and_only_the_first_is_said() -> None:
    p = _rank(cpu=ALLOWED[0], thread_cpu=ALLOWED[1], threads=2)
    try:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{p.pid}/task"))
        moved = [t for t in tids if t != p.pid]
        assert len(moved) == 2
        name = verify.proc_status(p.pid, moved[0])["Name"]
        got = verify.check_rank(_check(p.pid, cpus=[ALLOWED[0]]))
        assert got == [f"cpus thread {moved[0]} ({name}) {ALLOWED[1]}, plan {ALLOWED[0]}"]
        # the main thread is compared first: with the other plan, it is the one named (no thread part)
        got = verify.check_rank(_check(p.pid, cpus=[ALLOWED[1]]))
        assert got == [f"cpus {ALLOWED[0]}, plan {ALLOWED[1]}"]
    finally:
        _end(p)


def test_no_planned_cpus_compares_no_affinity() -> None:
    p = _rank(cpu=ALLOWED[0])
    try:
        assert verify.check_rank(_check(p.pid, cpus=())) == []
    finally:
        _end(p)


def test_the_environment_is_compared_key_by_key_in_order_and_a_missing_key_reads_none() -> None:
    p = _rank(env={"PIN5_A": "1", "PIN5_B": "two"})
    try:
        rc = _check(p.pid, env={"PIN5_B": "2", "PIN5_A": "1", "PIN5_C": "x"})
        assert verify.check_rank(rc) == ["env PIN5_B='two', plan '2'", "env PIN5_C=None, plan 'x'"]
    finally:
        _end(p)


def test_memory_policy_and_mems_allowed_are_compared_only_when_planned() -> None:
    p = _rank()
    mems = parse_cpulist(open(f"/proc/{os.getpid()}/status").read().split("Mems_allowed_list:")[1].split()[0])
    try:
        assert verify.check_rank(_check(p.pid, policy="none", mems=[99])) == []
        got = verify.check_rank(_check(p.pid, policy="bind", mems=[mems[0]]))
        assert got == [f"memory policy none, plan bind:{mems[0]}"]  # the child runs with the default policy
        got = verify.check_rank(_check(p.pid, policy="preferred", mems=[mems[0], 999]))
        assert got[0] == f"Mems_allowed {_cl(list(mems))} lacks plan nodes {mems[0]},999"
        assert got[1] == f"memory policy none, plan preferred:{mems[0]},999"
    finally:
        _end(p)


def test_a_rank_that_ended_is_not_checked_at_all() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    rc = _check(p.pid, cpus=ALLOWED, env={"X": "1"})
    assert verify.check_rank(rc) == [] and rc.checks == 0 and rc.last == 0.0


def test_a_zombie_rank_is_not_checked() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    end = time.monotonic() + 60
    while not verify._exited(verify.proc_status(p.pid)):
        assert time.monotonic() < end
        time.sleep(0.01)
    try:
        rc = _check(p.pid, cpus=ALLOWED, env={"X": "1"})
        assert verify.check_rank(rc) == [] and rc.checks == 0
    finally:
        p.wait()


# --- the report -----------------------------------------------------------------------------------------------------

def test_report_with_no_rank_says_so(capsys: pytest.CaptureFixture) -> None:
    verify.verify_report(None, {})  # type: ignore[arg-type]
    assert capsys.readouterr().err == ("hosttune: verify: no rank was seen running (the job ended before it could be "
                                       "read)\n")


def test_report_lists_ranks_by_local_rank_then_pid_with_plan_and_verdict(capsys: pytest.CaptureFixture) -> None:
    a = RankCheck(30, 1, 2, (2, 3), "bind", (1,), {"A": "1", "B": "2"}, mismatches=["x", "y"])
    b = RankCheck(20, 0, 2, (), "none", (), {})
    c = RankCheck(10, 1, 2, (0, 1, 2, 5), "preferred", (0, 1), {"A": "1"})
    verify.verify_report(None, {30: a, 20: b, 10: c})  # type: ignore[arg-type]
    assert capsys.readouterr().err.splitlines() == [
        "hosttune: verify: rank 0/2 (pid 20): cpus (not bound), mems none:-, 0 env vars: ok",
        "hosttune: verify: rank 1/2 (pid 10): cpus 0-2,5, mems preferred:0-1, 1 env vars: ok",
        "hosttune: verify: rank 1/2 (pid 30): cpus 2-3, mems bind:1, 2 env vars: 2 mismatch(es)",
    ]


# --- which plan a rank is held to -------------------------------------------------------------------------------------

def _plan(local: int, size: int, cpus: Any = (), mem_policy: str = "none", mems: Any = (),
          env: Optional[Dict[str, str]] = None) -> Any:
    return types.SimpleNamespace(local_rank=local, local_world_size=size, cpus=tuple(cpus), mem_policy=mem_policy,
                                 mems=tuple(mems), env=dict(env or {}))


def _launch(kind: str, ranks: List[Any], more: Optional[List[Any]] = None, no_bind: bool = False,
            env: Optional[Dict[str, str]] = None, hook: bool = False) -> Any:
    return types.SimpleNamespace(kind=kind, ranks=ranks, more_plans=more or [], no_bind=no_bind, env=dict(env or {}),
                                 hook=hook)


def test_handed_finds_the_plan_of_the_same_rank_and_world_size_in_ranks_then_more_plans() -> None:
    r0, r1 = _plan(0, 2), _plan(1, 2)
    m1 = _plan(1, 4)
    launch = _launch("torchrun", [r0, r1], [m1, _plan(1, 2)])
    assert verify._handed(launch, 1, 2) is r1
    assert verify._handed(launch, 1, 4) is m1
    assert verify._handed(launch, 0, 4) is None


def test_expected_for_a_plain_job_is_its_one_plan_inside_the_allowed_cpus() -> None:
    plan = _plan(0, 1, cpus=[ALLOWED[0], 4096], env={"OMP_NUM_THREADS": "3"})
    rc = verify.expected_for(_launch("plain", [plan]), 5, 9, {})
    assert (rc.pid, rc.local_rank, rc.local_world_size) == (0, 5, 9)
    assert rc.expected_cpus == (ALLOWED[0],)  # a CPU outside this launcher's allowed set is not expected
    assert (rc.expected_policy, rc.expected_mems) == ("none", ())
    assert rc.expected_env == {"OMP_NUM_THREADS": "3"}


def test_expected_for_no_bind_expects_no_cpus_and_no_policy_but_the_env() -> None:
    plan = _plan(0, 1, cpus=[ALLOWED[0]], mem_policy="bind", mems=[0], env={"K": "v"})
    rc = verify.expected_for(_launch("plain", [plan], no_bind=True), 0, 1, {})
    assert rc.expected_cpus == () and (rc.expected_policy, rc.expected_mems) == ("none", ())
    assert rc.expected_env == {"K": "v"}
    rc = verify.expected_for(_launch("plain", [plan]), 0, 1, {})
    assert rc.expected_cpus == (ALLOWED[0],) and rc.expected_policy == "bind" and rc.expected_mems == (0,)


def test_expected_for_a_hooked_rank_compares_only_what_the_launcher_handed_every_process() -> None:
    plan = _plan(1, 2, env={"SAME": "1", "DIFF": "rank", "OWN": "x"})
    launch = _launch("launcher", [_plan(0, 2), plan], env={"SAME": "1", "DIFF": "job"})
    rc = verify.expected_for(launch, 1, 2, {}, hooked=True)
    assert rc.expected_env == {"SAME": "1"}
    rc = verify.expected_for(_launch("torchrun", [_plan(0, 2), plan], env={"SAME": "1"}), 1, 2, {})
    assert rc.expected_env == {"SAME": "1", "DIFF": "rank", "OWN": "x"}  # a torchrun rank's plan, in full


# --- a pass over a running job ----------------------------------------------------------------------------------------

def _marker_env(local: Optional[str], size: Optional[str] = None) -> Dict[str, str]:
    env: Dict[str, str] = {}
    if local is not None:
        env[names.LOCAL_RANK] = local
    if size is not None:
        env[names.LOCAL_WORLD_SIZE] = size
    return env


def test_a_pass_takes_processes_with_a_local_rank_for_ranks_and_skips_their_children_and_helpers(
        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]  # verify's clock, set by the test: the re-check boundary is exact, whatever the load
    monkeypatch.setattr(verify, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    plan = _plan(0, 1, env={"PIN5_V": "want"})
    launch = _launch("plain", [plan])
    top = _rank(env={**_marker_env("1", "2"), "PIN5_V": "got"}, grandchild=True)
    helper = _rank(env=_marker_env(None))
    bad = _rank(env=_marker_env("one"))
    try:
        checks: Dict[int, RankCheck] = {}
        verify.verify_pass(launch, top.pid, checks, "unused")
        assert list(checks) == [top.pid]  # its child (the grandchild) inherits the rank's binding: not a rank
        rc = checks[top.pid]
        assert (rc.pid, rc.local_rank, rc.local_world_size, rc.last) == (top.pid, 1, 2, 1000.0)
        err = capsys.readouterr().err
        assert err == f"hosttune: verify: rank 1 (pid {top.pid}): MISMATCH env PIN5_V='got', plan 'want'\n"
        for other in (helper, bad):
            verify.verify_pass(launch, other.pid, checks, "unused")
        assert list(checks) == [top.pid]  # no local rank, or one that is not a number: not a rank
        clock[0] = 1001.99
        verify.verify_pass(launch, top.pid, checks, "unused")
        assert rc.checks == 1  # checked again only 2 s after the last look
        clock[0] = 1002.0
        rc.mismatches.clear()
        verify.verify_pass(launch, top.pid, checks, "unused")
        assert rc.checks == 2 and rc.last == 1002.0
        assert capsys.readouterr().err == (f"hosttune: verify: rank 1 (pid {top.pid}): MISMATCH env PIN5_V='got', "
                                           f"plan 'want'\n")
    finally:
        _end(top, helper, bad)


def test_a_rank_without_a_world_size_is_taken_as_one_of_one() -> None:
    top = _rank(env=_marker_env("0"))
    try:
        checks: Dict[int, RankCheck] = {}
        verify.verify_pass(_launch("plain", [_plan(0, 1)]), top.pid, checks, "unused")
        assert (checks[top.pid].local_rank, checks[top.pid].local_world_size) == (0, 1)
    finally:
        _end(top)


def test_hook_timing_constants() -> None:
    assert verify.HOOK_GRACE_S == 1.0 and verify.HOOK_CPU_S == 0.25


def test_past_hook_is_true_for_an_old_sleeping_process_and_age_is_its_time_since_start() -> None:
    p = _rank()
    try:
        end = time.monotonic() + 120
        # wait for it to be old enough and asleep in its own wait (a loaded machine may keep it runnable a while)
        while verify._age(p.pid) < verify.HOOK_GRACE_S or not verify.proc_status(p.pid)["State"].startswith("S"):
            assert time.monotonic() < end
            time.sleep(0.05)
        assert verify._past_hook(p.pid) is True  # blocked by itself (state S) past the grace
        assert verify._age(os.getpid()) > verify._age(p.pid)  # this process started before its child
    finally:
        _end(p)
    assert verify._age(p.pid) == 0.0  # gone: cannot be told
