"""Pins of hosttune/launch/hook.py's pure decisions (issue 21, mutation round 5), in-process: the job's PYTHONPATH
with the hook first, the launcher's pid from the launch id, what is a multiprocessing child, a process's role, which
plan variables a rank sets (a launcher's own choice between hosttune and the rank stays), the CPUs a rank may be
bound inside, a spawn child's share of the job's threads, and the once-per-job note."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from hosttune.launch import hook
from hosttune.launch.handoff import SPAWN_NOTE
from hosttune.policy import names

SELF = sorted(os.sched_getaffinity(0))


def test_job_env_puts_the_hook_first_once_and_keeps_the_rest_in_order() -> None:
    h = hook.HOOK_DIR
    assert hook.job_env({}) == {"PYTHONPATH": h}
    assert hook.job_env({"PYTHONPATH": f"/a{os.pathsep}{h}{os.pathsep}{os.pathsep}/b"}) == {
        "PYTHONPATH": os.pathsep.join([h, "/a", "/b"])}
    assert os.path.isfile(os.path.join(h, "sitecustomize.py"))
    assert hook.THREAD_VARS == ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


@pytest.mark.parametrize("value,pid", [("123-abcd", 123), ("77", 77), ("x1-2", None), ("", None), ("-5-a", None)])
def test_the_launchers_pid_is_the_launch_ids_head(value: str, pid: Optional[int]) -> None:
    assert hook._launcher_pid({names.LAUNCH_ID: value}) == pid
    assert hook._launcher_pid({}) is None


@pytest.mark.parametrize("argv,cmdline,spawn", [
    (["-c", "--multiprocessing-fork"], [], True),
    (["x.py", "--multiprocessing-fork"], [], True),
    (["-c"], ["python3", "-c", "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)"], True),
    (["-c"], ["python3", "-c", "from multiprocessing.forkserver import main; main(3, 4)"], True),
    (["-c"], ["python3", "-c", "print(1)"], False),
    (["train.py"], ["python3", "-c", "from multiprocessing.spawn import spawn_main"], False),  # argv[0] is not -c
    ([], ["python3", "-c", "from multiprocessing.spawn import spawn_main"], False),
])
def test_a_spawn_child_is_told_by_its_flag_or_its_c_line(argv: List[str], cmdline: List[str], spawn: bool) -> None:
    assert hook.is_spawn_child(argv, lambda: cmdline) is spawn


def test_cmdline_is_this_processes_own() -> None:
    assert hook._cmdline() == Path("/proc/self/cmdline").read_bytes().decode().split("\0")[:-1]


def _never() -> Optional[str]:
    raise AssertionError("the handoff's kind was read though the answer did not depend on it")


def test_role_of_the_process_the_launcher_execd_into_is_top() -> None:
    env = {names.LAUNCH_ID: f"{os.getpid()}-ab", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2"}
    assert hook.role(env, _never, ["train.py"]) == "top"


def test_role_with_rank_variables_is_rank_and_a_spawn_child_is_spawn() -> None:
    env = {names.LAUNCH_ID: "1-ab", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    assert hook.role(env, _never, ["train.py"]) == "rank"
    assert hook.role({names.LAUNCH_ID: "1-ab"}, _never, ["-c", "--multiprocessing-fork"]) == "spawn"


@pytest.mark.parametrize("kind,want", [("plain", "top"), ("srun", "top"), ("rank", "top"), ("torchrun", "none"),
                                       ("launcher", "none"), (None, "none")])
def test_role_of_a_child_of_the_launcher_depends_on_the_jobs_kind(kind: Optional[str], want: str) -> None:
    env = {names.LAUNCH_ID: f"{os.getppid()}-ab"}
    assert hook.role(env, lambda: kind, ["run.py"]) == want


def test_role_of_an_unrelated_process_is_none() -> None:
    assert hook.role({names.LAUNCH_ID: "1-ab"}, lambda: "plain", ["run.py"]) == "none"
    assert hook.role({}, _never, ["run.py"]) == "none"


# --- rank_env and _set_env ------------------------------------------------------------------------------------------

def test_rank_env_keeps_a_value_a_launcher_between_hosttune_and_the_rank_chose() -> None:
    plan = {"OMP_NUM_THREADS": "4", "A": "1", "B": "2", "C": "3", "D": "4", "N": 5}
    data = {"top_env": {"OMP_NUM_THREADS": "8", "A": "1", "B": "x", "C": "top"}, "touched": {"C": "users"}}
    environ = {"OMP_NUM_THREADS": "2",  # changed by a launcher in between: neither hosttune's 8 nor the user's: kept
               "A": "9",  # also changed by a launcher: kept
               "B": "x",  # hosttune's value for the top process: the plan's replaces it
               "C": "users",  # the caller's own value: the plan's replaces it
               "D": "zzz"}  # not in top_env: hosttune never set it for the top process, the plan's applies
    assert hook.rank_env(plan, data, environ) == {"B": "2", "C": "3", "D": "4", "N": "5"}
    assert hook.rank_env({"A": "1"}, data, {"A": "1"}) == {"A": "1"}  # already the plan's
    assert hook.rank_env({"A": "1"}, {}, {"A": "9"}) == {"A": "1"}  # no handoff top_env: everything applies
    assert hook.rank_env({"A": "1"}, data, {}) == {"A": "1"}  # unset now: applies


def test_set_env_writes_only_what_differs() -> None:
    class Recorder(dict):  # type: ignore[type-arg]
        writes: List[str] = []

        def __setitem__(self, key: str, value: str) -> None:
            self.writes.append(key)
            super().__setitem__(key, value)

    target = Recorder(A="1", B="2")
    hook._set_env({"A": "1", "B": "3", "C": "4"}, target)
    assert dict(target) == {"A": "1", "B": "3", "C": "4"} and target.writes == ["B", "C"]


# --- _allowed and spawn_share -----------------------------------------------------------------------------------------

def test_allowed_is_the_jobs_cpus_only_when_they_contain_this_processes_mask() -> None:
    from hosttune.cpulist import format_cpulist

    wider = sorted(set(SELF) | {max(SELF) + 1})
    assert hook._allowed({names.JOB_CPUS: format_cpulist(tuple(wider))}) == set(wider)
    assert hook._allowed({names.JOB_CPUS: format_cpulist(tuple(SELF))}) == set(SELF)
    if len(SELF) > 1:
        assert hook._allowed({names.JOB_CPUS: str(SELF[0])}) == set(SELF)  # narrower than our own: ours
    assert hook._allowed({}) == set(SELF)
    assert hook._allowed({names.JOB_CPUS: ""}) == set(SELF)


@pytest.mark.parametrize("top,env,want_job", [
    ({"OMP_NUM_THREADS": "12"}, {"OMP_NUM_THREADS": "3"}, 12),  # the job's top value first
    ({}, {"OMP_NUM_THREADS": "6"}, 6),
    ({"OMP_NUM_THREADS": "abc"}, {"OMP_NUM_THREADS": "6"}, len(SELF)),  # not a count: the CPUs it may use
    ({}, {"OMP_NUM_THREADS": "0"}, len(SELF)),
    ({}, {"OMP_NUM_THREADS": "9999999"}, len(SELF)),  # seven digits: no thread count
    ({}, {"OMP_NUM_THREADS": "999999"}, 999999),
    ({}, {}, len(SELF)),
])
def test_spawn_share_starts_from_the_jobs_thread_count(top: Dict[str, str], env: Dict[str, str],
                                                       want_job: int) -> None:
    share, n, job = hook.spawn_share({"top_env": top}, env)
    assert job == want_job
    assert n >= 1 and share == max(1, job // n)


@pytest.mark.parametrize("hint,n", [("4", 4), ("4:pool", 4), ("x", 1), ("", 1), ("1234567", 1), ("0", 1)])
def test_spawn_share_divides_by_the_announced_process_count(hint: str, n: int) -> None:
    share, got_n, job = hook.spawn_share({"top_env": {"OMP_NUM_THREADS": "16"}}, {names.SPAWN_PROCS: hint})
    assert (got_n, job) == (max(n, got_n), 16)
    if got_n == n:  # no spawn siblings of ours counted on top
        assert share == max(1, 16 // n)


def test_spawn_share_never_gives_less_than_one_thread() -> None:
    share, n, job = hook.spawn_share({"top_env": {"OMP_NUM_THREADS": "2"}}, {names.SPAWN_PROCS: "8"})
    assert (share, n, job) == (1, 8, 2)


def test_spawn_share_counts_spawn_siblings_under_the_same_parent(tmp_path: Path) -> None:
    """A child of a parent with three multiprocessing-spawn children counts three, though nothing announced them."""
    code = r"""
import json, os, subprocess, sys
kids = [subprocess.Popen([sys.executable, "-c", "import sys, time; sys.stdin.read()", "--multiprocessing-fork"],
                         stdin=subprocess.PIPE) for _ in range(3)]
me = subprocess.run([sys.executable, "-c",
    "import json, sys; from hosttune.launch import hook; "
    "print(json.dumps(hook.spawn_share({'top_env': {'OMP_NUM_THREADS': '12'}}, {})))"],
    capture_output=True, text=True)
for k in kids:
    k.stdin.close(); k.wait()
print(me.stdout.strip() or me.stderr)
"""
    repo = str(Path(hook.__file__).resolve().parents[2])
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=repo))
    assert res.stdout.strip() == "[4, 3, 12]", res.stdout + res.stderr


# --- _first_to_say ---------------------------------------------------------------------------------------------------

def test_first_to_say_is_true_once_per_launch_and_sweeps_notes_of_gone_launchers(tmp_path: Path) -> None:
    d = tmp_path / "h"
    d.mkdir(mode=0o700)
    path = str(d / "handoff.json")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (d / f"{SPAWN_NOTE}{gone.pid}-old").write_text("")
    (d / f"{SPAWN_NOTE}{os.getpid()}-live").write_text("")
    (d / "other").write_text("")
    assert hook._first_to_say(path, f"{os.getpid()}-ab/../x") is True
    assert sorted(os.listdir(d)) == sorted([f"{SPAWN_NOTE}{os.getpid()}-live", f"{SPAWN_NOTE}{os.getpid()}-abx",
                                            "other"])
    assert (os.stat(d / f"{SPAWN_NOTE}{os.getpid()}-abx").st_mode & 0o777) == 0o600
    assert hook._first_to_say(path, f"{os.getpid()}-ab/../x") is False
    assert hook._first_to_say(path, "") is True and (d / f"{SPAWN_NOTE}none").exists()
    assert hook._first_to_say(str(tmp_path / "gone" / "handoff.json"), "1-a") is False


class _Plan:
    cpus = (0,)
    mems = ()
    mem_policy = "none"


def test_bind_looks_again_for_threads_started_while_it_rebinds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread started by one not yet rebound (jemalloc's background threads start one another) keeps the old CPUs
    unless _bind looks at the thread list again: every thread any look finds is rebound once; one that ended
    meanwhile (ESRCH) is no note, another refusal is; the looks stop at the first that finds nothing new."""
    import errno as errno_mod

    me = os.getpid()
    looks = [[me, 11], [me, 11, 12], [me, 11, 12, 13], [me, 11, 12, 13], [me, 99]]
    listed: List[int] = []
    bound: List[int] = []

    def listdir(path: str) -> List[str]:
        assert path == "/proc/self/task"
        listed.append(1)
        return [str(t) for t in looks[len(listed) - 1]]

    def setaffinity(tid: int, cpus: object) -> None:
        bound.append(tid)
        if tid == 12:
            raise OSError(errno_mod.ESRCH, "No such process")
        if tid == 13:
            raise OSError(errno_mod.EPERM, "Operation not permitted")

    monkeypatch.setattr(hook.os, "listdir", listdir)
    monkeypatch.setattr(hook.os, "sched_setaffinity", setaffinity)
    monkeypatch.setattr(hook.os, "sched_getaffinity", lambda pid: {0, 1})
    notes = hook._bind(_Plan(), None, {})
    assert bound == [me, 11, 12, 13] and len(listed) == 4  # the fourth look found nothing new: no fifth
    assert notes == ["thread 13 not rebound (Operation not permitted)"]


def test_bind_stops_looking_after_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    me = os.getpid()
    listed: List[int] = []

    def listdir(path: str) -> List[str]:
        listed.append(1)
        return [str(me)] + [str(1000 + i) for i in range(len(listed))]  # a new thread at every look

    monkeypatch.setattr(hook.os, "listdir", listdir)
    monkeypatch.setattr(hook.os, "sched_setaffinity", lambda tid, cpus: None)
    monkeypatch.setattr(hook.os, "sched_getaffinity", lambda pid: {0, 1})
    assert hook._bind(_Plan(), None, {}) == [] and len(listed) == hook._REBIND_LOOKS == 8
