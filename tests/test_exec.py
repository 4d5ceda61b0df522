"""`hosttune exec` without torchrun: argv handling (pure), and real plain/srun jobs read back from /proc; its command
line (unknown options, --nproc_per_node's cap) and Ctrl-C in each phase of its start-up."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from _exechelp import _wait_for
from conftest import PROBES, run_cli
from conftest import job_processes as _job_processes

from hosttune.cpulist import format_cpulist
from hosttune.errors import UserError
from hosttune.launch.binding import effective_cpus
from hosttune.launch.job import prepare
from hosttune.launch.procfs import parse_cpulist, parse_numa_maps_policy, proc_status
from hosttune.launch.slurm import parse_tasks_per_node, slurm_rank
from hosttune.launch.torchrun import (
    MAX_NPROC_PER_NODE,
    parse_torchrun,
    rank_command,
    rewrite_torchrun,
    shim_argv,
    torchrun_python,
)
from hosttune.launch.verify import RankCheck, check_rank
from hosttune.rankplan import TORCHRUN_PYTHON

PROBE = str(PROBES / "probe.py")
PY = sys.executable


def hosttune(*args: str, env: Optional[Dict[str, str]] = None, prefix: List[str] = (), timeout: float = 60,
             **kw: Any) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([*prefix, PY, "-m", "hosttune", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, **kw)


def reports(out: Path) -> List[Dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("rank-*.json"))]


def dry_run(*command: str, env: Optional[Dict[str, str]] = None, extra: List[str] = ()) -> Dict[str, Any]:
    """The plan, in-process (a dry run plans and prints, it starts nothing: issue 21, a `python -m hosttune` each)."""
    r = run_cli(["exec", "--dry-run", "--json", *extra, "--", *command], env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------------------------
# torchrun argv (pure)

ENV: Dict[str, str] = {"PATH": os.environ.get("PATH", "")}


@pytest.mark.parametrize(
    "argv, nproc, mode, script, script_args",
    [
        (["torchrun", "--nproc_per_node=2", "train.py", "--lr", "1"], "2", "python", "train.py", ["--lr", "1"]),
        (["torchrun", "--nproc-per-node", "4", "--standalone", "train.py"], "4", "python", "train.py", []),
        (["torchrun", "--nnodes", "1:2", "--rdzv-backend=c10d", "--rdzv_endpoint", "h:29400", "-m", "pkg.mod", "x"],
         "1", "module", "pkg.mod", ["x"]),
        (["torchrun", "--nproc_per_node", "2", "--no-python", "./run.sh", "-m", "y"], "2", "no_python", "./run.sh",
         ["-m", "y"]),
        (["torchrun", "--max-restarts=1", "--run-path", "t.py"], "1", "run_path", "t.py", []),
        # options after the script belong to the script
        (["torchrun", "t.py", "--nproc_per_node", "8"], "1", "python", "t.py", ["--nproc_per_node", "8"]),
        (["torchrun", "--nproc_per_node=2", "--", "t.py", "--x"], "2", "python", "t.py", ["--x"]),
        (["torchrun", "-r3", "-t", "3", "--nproc", "2", "t.py"], "2", "python", "t.py", []),
        (["python3", "-m", "torch.distributed.run", "--nproc_per_node=2", "t.py"], "2", "python", "t.py", []),
        (["python3", "-u", "-mtorch.distributed.run", "--nnodes=2", "--node-rank", "1", "t.py"], "1", "python",
         "t.py", []),
    ],
)
def test_parse_torchrun_forms(argv: List[str], nproc: str, mode: str, script: str, script_args: List[str]) -> None:
    t = parse_torchrun(argv, ENV)
    assert t is not None
    assert t.value("nproc_per_node", ENV, "1") == nproc
    assert t.mode == mode
    assert t.script == script
    assert list(t.script_args) == script_args
    # the mode flags are consumed: the rewritten argv says --no-python exactly once, before the shim
    out = rewrite_torchrun(t, ENV, "/py")
    assert out.count("--no-python") == 1
    i = out.index("--no-python")
    shim = shim_argv("/py")
    assert out[i + 1 : i + 1 + len(shim)] == shim and shim[0] == "/py" and "-c" in shim
    assert out[: len(t.launcher)] == list(t.launcher)
    assert "-m" not in out[len(t.launcher) : i] and "--module" not in out[:i] and "--run-path" not in out[:i]


def test_rank_commands_follow_torchrun() -> None:
    env = dict(ENV, PYTHON_EXEC="/opt/py/bin/python3")  # torchrun honours $PYTHON_EXEC; so must we
    mod = parse_torchrun(["torchrun", "-m", "pkg.train", "--a"], env)
    assert mod is not None
    assert rank_command(mod, torchrun_python(mod, env)) == [
        "/opt/py/bin/python3", "-u", "-m", "pkg.train", "--a"]
    nop = parse_torchrun(["torchrun", "--no-python", "bash", "x.sh"], env)
    assert nop is not None and rank_command(nop, "/ignored") == ["bash", "x.sh"]


def test_torchrun_python_from_shebang(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake_py = bindir / "python3.9"
    fake_py.write_text("#!/bin/sh\n")
    fake_py.chmod(0o755)
    tr = bindir / "torchrun"
    env = {"PATH": f"{bindir}:/usr/bin:/bin"}
    tr.write_text("#!/usr/bin/env python3.9\nimport sys\n")
    tr.chmod(0o755)
    t = parse_torchrun(["torchrun", "x.py"], env)
    assert t is not None and torchrun_python(t, env) == str(fake_py)
    tr.write_text(f"#!{fake_py} -s\n")
    assert torchrun_python(t, env) == str(fake_py)
    tr.write_text("#!/usr/bin/env bash\nexec pyenv exec torchrun \"$@\"\n")  # a pyenv shim: the shim asks torchrun
    assert torchrun_python(t, env) == TORCHRUN_PYTHON


def test_pet_environment_counts_like_torchrun() -> None:
    env = dict(ENV, PET_NO_PYTHON="1", PET_NPROC_PER_NODE="3")
    t = parse_torchrun(["torchrun", "./job"], env)
    assert t is not None and t.mode == "no_python" and t.value("nproc_per_node", env, "1") == "3"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["torchrun", "--nproc_per_node"], "needs a value"),
        (["torchrun", "--bogus", "t.py"], "unknown option --bogus"),
        (["torchrun", "--nproc_per_node=2"], "no training script"),
        (["torchrun", "-m", "--no-python", "x"], "cannot be combined"),
        (["torchrun", "--standalone=1", "t.py"], "takes no value"),
    ],
)
def test_bad_torchrun_lines(argv: List[str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_torchrun(argv, ENV)


def test_not_torchrun() -> None:
    assert parse_torchrun(["python3", "train.py"], ENV) is None
    assert parse_torchrun(["python3", "-m", "torch.utils.collect_env"], ENV) is None
    assert parse_torchrun(["torchrun", "--help"], ENV) is None
    assert parse_torchrun(["bash", "-c", "torchrun x.py"], ENV) is None


# ---------------------------------------------------------------------------------------------------------------
# srun, cpulists, numa_maps (pure)


def test_tasks_per_node() -> None:
    assert parse_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    assert parse_tasks_per_node("4") == [4]
    env = {"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "2(x3),1", "SLURM_NODEID": "3"}
    assert slurm_rank(env) == (0, 1)
    env = {"SLURM_LOCALID": "1", "SLURM_STEP_TASKS_PER_NODE": "3,2", "SLURM_TASKS_PER_NODE": "8",
           "SLURM_STEP_NODEID": "1"}
    assert slurm_rank(env) == (1, 2)
    assert slurm_rank({"SLURM_LOCALID": "2", "SLURM_NTASKS_PER_NODE": "4"}) == (2, 4)
    assert slurm_rank({}) is None
    with pytest.raises(UserError, match="outside"):
        slurm_rank({"SLURM_LOCALID": "2", "SLURM_NTASKS_PER_NODE": "2"})
    with pytest.raises(UserError, match="SLURM"):
        slurm_rank({"SLURM_LOCALID": "x"})


def test_cpulists_and_numa_maps() -> None:
    assert parse_cpulist("0-2,5,8-12:2\n") == (0, 1, 2, 5, 8, 10, 12)
    assert format_cpulist([5, 0, 1, 2]) == "0-2,5"
    assert effective_cpus((2, 3), {0, 1, 2}) == (2,)
    assert effective_cpus((4,), {0, 1}) == (0, 1)  # never an empty (EINVAL) mask
    p = parse_numa_maps_policy
    assert p("7f00 default file=/usr/bin/python3 mapped=3") == ("none", ())
    assert p("5555 bind:0-1 anon=1") == ("bind", (0, 1))
    assert p("5555 prefer:1 heap") == ("preferred", (1,))
    assert p("5555 prefer (many):0-1 heap") == ("preferred", (0, 1))
    assert p("5555 bind=static:0 anon=1") == ("bind", (0,))


# ---------------------------------------------------------------------------------------------------------------
# plain and srun jobs: real processes


def test_exit_status_is_the_jobs() -> None:
    assert hosttune("exec", "--", PY, "-c", "raise SystemExit(3)").returncode == 3
    # exec'd: a job that dies of a signal is seen as that signal (a shell shows 143)
    r = hosttune("exec", "--", PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    assert r.returncode == -signal.SIGTERM
    # supervised (--verify): the status is mapped the shell's way
    r = hosttune("exec", "--verify", "--", PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    assert r.returncode == 128 + signal.SIGTERM


@pytest.mark.parametrize(
    "args, message",
    [
        (["exec"], "no COMMAND"),
        (["exec", "--", "no-such-command-xyz"], "no-such-command-xyz: command not found"),
        (["exec", "--", "/nonexistent/x"], "no such file"),
        (["exec", "--json", "--", "true"], "--json"),
        (["exec", "--root", "/", "--", "true"], "--root"),
        (["exec", "--profile", "/nonexistent.yaml", "--", "true"], "nonexistent.yaml"),
        (["exec", "--", "torchrun", "--bogus", "x.py"], "--bogus"),
    ],
)
def test_user_errors_are_one_line_exit_2(args: List[str], message: str) -> None:
    """In-process (click's runner: the same command and error handler; issue 21, a `python -m hosttune` start each).
    The real process's one line and exit 2 for exec's errors: test_double_dash_still_runs_a_command_named_like_an_
    option and test_nproc_per_node_is_capped_with_one_line."""
    r = run_cli(args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_plain_job_owns_the_allowed_set(probe_env: Dict[str, str], tmp_path: Path) -> None:
    plan = dry_run(PY, PROBE, env=probe_env)
    assert plan["kind"] == "plain" and len(plan["ranks"]) == 1
    r = hosttune("exec", "--", PY, PROBE, env=probe_env)
    assert r.returncode == 0, r.stderr
    (rep,) = reports(tmp_path / "out")
    allowed = sorted(os.sched_getaffinity(0))
    assert rep["affinity"] == sorted(plan["ranks"][0]["cpus"]) == allowed
    for key, value in plan["ranks"][0]["env"].items():
        if key.startswith(("OMP_", "MKL_", "HOSTTUNE_", "MALLOC_")) or key == "LD_PRELOAD":
            assert rep["env"][key] == value, key
    assert rep["env"]["OMP_NUM_THREADS"] == plan["ranks"][0]["env"]["OMP_NUM_THREADS"]
    if "LD_PRELOAD" in plan["ranks"][0]["env"] and "jemalloc" in plan["ranks"][0]["env"]["LD_PRELOAD"]:
        assert rep["jemalloc_mapped"]


def test_plain_job_stays_inside_taskset(probe_env: Dict[str, str], tmp_path: Path) -> None:
    cpu = max(os.sched_getaffinity(0))
    r = hosttune("exec", "--", PY, PROBE, env=probe_env, prefix=["taskset", "-c", str(cpu)])
    assert r.returncode == 0, r.stderr
    (rep,) = reports(tmp_path / "out")
    assert rep["affinity"] == [cpu]
    assert rep["env"]["OMP_NUM_THREADS"] == "1"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
@pytest.mark.parametrize(
    "slurm",
    [
        {"SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "2"},
        {"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "4,2(x2)", "SLURM_NODEID": "2"},
    ],
)
def test_srun_task_gets_its_slice(probe_env: Dict[str, str], tmp_path: Path, slurm: Dict[str, str]) -> None:
    env = dict(probe_env, **slurm)
    plan = dry_run(PY, PROBE, env=env)
    assert plan["kind"] == "srun"
    (rank,) = plan["ranks"]
    assert (rank["local_rank"], rank["local_world_size"]) == (1, 2)
    others = dry_run(PY, PROBE, env=dict(env, SLURM_LOCALID="0"))["ranks"][0]
    assert rank["cpus"] and not set(rank["cpus"]) & set(others["cpus"])
    r = hosttune("exec", "--", PY, PROBE, env=env)
    assert r.returncode == 0, r.stderr
    (rep,) = reports(tmp_path / "out")
    assert rep["affinity"] == rank["cpus"]
    assert rep["env"]["OMP_NUM_THREADS"] == rank["env"]["OMP_NUM_THREADS"]


def test_memory_policy_and_no_bind(probe_env: Dict[str, str], tmp_path: Path) -> None:
    prof = tmp_path / "bind.yaml"
    prof.write_text("base: throughput\nmemory_policy: bind\n")
    plan = dry_run(PY, PROBE, env=probe_env, extra=["--profile", str(prof)])["ranks"][0]
    assert plan["mem_policy"] == "bind" and plan["mems"]
    r = hosttune("exec", "--profile", str(prof), "--", PY, PROBE, env=probe_env)
    assert r.returncode == 0, r.stderr
    (rep,) = reports(tmp_path / "out")
    # numa_maps shows the task policy the job really runs under (set_mempolicy before exec is inherited)
    assert parse_numa_maps_policy("x " + rep["mempolicy"]) == ("bind", tuple(plan["mems"]))
    for p in (tmp_path / "out").glob("*.json"):
        p.unlink()
    r = hosttune("exec", "--no-bind", "--profile", str(prof), "--", "taskset", "-c", "0", PY, PROBE,
                 env=probe_env)
    assert r.returncode == 0, r.stderr
    (rep,) = reports(tmp_path / "out")
    assert rep["affinity"] == [0] and rep["mempolicy"] == "default"  # --no-bind: env only
    assert rep["env"]["OMP_NUM_THREADS"] == plan["env"]["OMP_NUM_THREADS"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_verify_reports_a_reset_affinity(probe_env: Dict[str, str], tmp_path: Path) -> None:
    r = hosttune("exec", "--verify", "--", PY, PROBE, "--reset-affinity", "0", "--sleep", "3", env=probe_env)
    assert r.returncode == 0, r.stderr
    assert "MISMATCH cpus 0, plan 0-1" in r.stderr, r.stderr
    assert "1 mismatch(es)" in r.stderr
    r = hosttune("exec", "--verify", "--", PY, PROBE, "--sleep", "1", env=probe_env)
    assert r.returncode == 0 and "MISMATCH" not in r.stderr
    assert ": ok" in r.stderr, r.stderr


def test_sigint_reaches_a_supervised_job(probe_env: Dict[str, str], tmp_path: Path) -> None:
    proc = subprocess.Popen([PY, "-m", "hosttune", "exec", "--verify", "--", PY, PROBE, "--sleep", "60"],
                            env=probe_env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not reports(tmp_path / "out") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reports(tmp_path / "out"), "the job did not start"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert not _job_processes(f"PROBE_OUT={probe_env['PROBE_OUT']}")


def test_dry_run_text_and_captured_host(hwloc_tree: Any) -> None:
    r = run_cli(["exec", "--dry-run", "--", "torchrun", "--nproc_per_node=2", "train.py"])
    assert r.returncode == 0, r.stderr
    # Python ranks run as written and apply their plans through the per-rank hook; --no-python ones get the shim
    assert "argv: torchrun --nproc_per_node=2 train.py\n" in r.stdout and "per-rank hook" in r.stdout
    assert "rank 0/2: cpus" in r.stdout and "rank 1/2: cpus" in r.stdout
    r = run_cli(["exec", "--dry-run", "--", "torchrun", "--nproc_per_node=2", "--no-python", "./run.sh"])
    assert r.returncode == 0 and "--no-python" in r.stdout and "hosttune" in r.stdout.split("\n")[1], r.stdout
    root = hwloc_tree("16amd64-8n2c")
    d = dry_run("torchrun", "--nproc_per_node=4", "train.py", extra=["--root", str(root)])
    assert [r["local_rank"] for r in d["ranks"]] == [0, 1, 2, 3]
    sets = [set(r["cpus"]) for r in d["ranks"]]
    assert all(sets) and sum(len(s) for s in sets) == len(set().union(*sets))  # disjoint
    # threads never exceed the rank's CPUs (no oversubscription)
    assert all(0 < int(r["env"]["OMP_NUM_THREADS"]) <= len(r["cpus"]) for r in d["ranks"])


def test_verify_does_not_blame_a_rank_that_just_exited() -> None:
    """A rank that ends between two reads leaves a zombie whose environ reads empty: no mismatch, no check counted;
    the same rank alive with its planned env is ok, and with a different value it is a mismatch."""
    env = {"HOSTTUNE_VERIFY_PROBE": "1", "PATH": os.environ.get("PATH", "")}
    child = subprocess.Popen([sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        # Until the child has exec'd Python, /proc/PID/environ is still the forked parent's (a busy machine made
        # that window long enough to read): wait for the child's own line.
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        alive = RankCheck(child.pid, 0, 1, (), "none", (), {"HOSTTUNE_VERIFY_PROBE": "1"})
        assert check_rank(alive) == [] and alive.checks == 1
        wrong = RankCheck(child.pid, 0, 1, (), "none", (), {"HOSTTUNE_VERIFY_PROBE": "2"})
        assert check_rank(wrong) == ["env HOSTTUNE_VERIFY_PROBE='1', plan '2'"]
        assert child.stdin is not None
        child.stdin.close()
        deadline = time.monotonic() + 60  # not reaped: it stays a zombie until wait()
        while time.monotonic() < deadline and not proc_status(child.pid).get("State", "").startswith("Z"):
            time.sleep(0.02)
        assert proc_status(child.pid)["State"].startswith("Z")
        gone = RankCheck(child.pid, 0, 1, (), "none", (), {"HOSTTUNE_VERIFY_PROBE": "1"})
        assert check_rank(gone) == [] and gone.checks == 0
    finally:
        child.kill()
        child.wait()


def test_dry_run_says_when_the_profile_was_generated_for_other_hardware(hwloc_tree: Any, tmp_path: Path) -> None:
    """issue 17: a profile generated for one captured host (8 NUMA nodes), planned for another (4 sockets): one line
    on stderr naming the fingerprint, with or without --json; the same profile on the host it was made for says
    nothing. In-process (click's runner): a dry run starts nothing."""
    made_for, other = hwloc_tree("16amd64-8n2c"), hwloc_tree("16em64t-4s2c2t")
    prof = tmp_path / "made-elsewhere.yaml"
    r = run_cli(["profile", "generate", "--root", str(made_for), "-o", str(prof)])
    assert r.returncode == 0, r.stderr
    for extra in ([], ["--json"]):
        r = run_cli(["exec", "--dry-run", *extra, "--profile", str(prof), "--root", str(other), "--", "true"])
        assert r.returncode == 0, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "fingerprint" in lines[0] and "made-elsewhere" in lines[0], r.stderr
        if extra:
            json.loads(r.stdout)  # stdout stays the plan alone
    r = run_cli(["exec", "--dry-run", "--profile", str(prof), "--root", str(made_for), "--", "true"])
    assert r.returncode == 0 and r.stderr == "", r.stderr


# ---- the command line and start-up (issue 11, low items) ------------------------------------------------------------


@pytest.mark.parametrize("args", [["--bogus"], ["--bogus", "--", "true"], ["--profile", "x", "--bogus=1", "true"]])
def test_unknown_exec_option_is_one_line_exit_2(args: List[str]) -> None:
    r = hosttune("exec", *args, env=dict(os.environ))
    assert r.returncode == 2, r.stderr
    assert "no such option: --bogus" in r.stderr and "command not found" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_double_dash_still_runs_a_command_named_like_an_option() -> None:
    r = hosttune("exec", "--", "--bogus", env=dict(os.environ))
    assert r.returncode == 2 and "--bogus: command not found" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


# Runs `python -m hosttune ARGS` as -m does (runpy, so hosttune sees itself started as the program) with an audit
# hook that reports every new import after hosttune's first own submodule on fd T_MARK ("N name") and, at import
# number T_AT, blocks reading fd T_GATE: a phase of hosttune's start-up the test can hold the process in.
GATED_MAIN = """import os, runpy, sys
mark, gate, at = int(os.environ.pop("T_MARK")), int(os.environ.pop("T_GATE")), int(os.environ.pop("T_AT"))
os.set_inheritable(mark, False)
os.set_inheritable(gate, False)  # closed when hosttune execs the job: the marker pipe's end of file is that phase
seen = [-1]

def hook(event, args):
    if event != "import":
        return
    name = str(args[0])
    if seen[0] < 0:
        if not name.startswith("hosttune.") or name in ("hosttune.__main__", "hosttune.cli"):
            return
        seen[0] = 0
    n = seen[0]
    seen[0] += 1
    os.write(mark, ("%d %s\\n" % (n, name)).encode())
    if n == at:
        os.read(gate, 1)

sys.addaudithook(hook)
runpy.run_module("hosttune", run_name="__main__", alter_sys=True)
"""


def _start_gated(main: Path, at: int, argv: List[str]) -> "Tuple[subprocess.Popen[str], Any, int]":
    """Start the gated hosttune; returns (process, the marker pipe's reader, the gate's write end)."""
    mark_r, mark_w = os.pipe()
    gate_r, gate_w = os.pipe()
    env = dict(os.environ, T_MARK=str(mark_w), T_GATE=str(gate_r), T_AT=str(at), HOSTTUNE_EXEC_CACHE="0")
    try:
        p = subprocess.Popen([PY, str(main), *argv], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, pass_fds=(mark_w, gate_r),
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    finally:
        os.close(mark_w)
        os.close(gate_r)
    return p, os.fdopen(mark_r, "r"), gate_w


def _job_started(pid: int, argv: List[str]) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() == "\0".join(argv).encode() + b"\0"
    except OSError:
        return False


def test_ctrl_c_while_exec_starts_is_130_without_traceback(tmp_path: Path) -> None:
    # Ctrl-C in each phase of `hosttune exec`'s start-up, reached by waiting for it (never by a time): the process is
    # held at its Nth import after hosttune's first own module (every one after its SIGINT handler is in place),
    # for N spread from the first to the last import before the job starts, and signalled there. hosttune keeps an
    # ignored SIGINT ignored (nohup, `cmd &` in a script), so the child starts with the default action whatever the
    # test runner was started with. A signal before any hosttune code (site, runpy) is Python's to report: not here.
    main = tmp_path / "gated_main.py"
    main.write_text(GATED_MAIN)
    job = ["sleep", "300"]
    argv = ["exec", "--", *job]

    # The last phase first, which also counts the imports: the job itself is running (hosttune exec'd it).
    p, marks, gate = _start_gated(main, -1, argv)
    try:
        imports = marks.read().splitlines()  # end of file: the exec closed the marker pipe
        assert _wait_for(lambda: _job_started(p.pid, job), 60), imports[-5:]
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
        marks.close()
        os.close(gate)
    assert p.returncode in (130, -signal.SIGINT), (p.returncode, err)  # -2: the exec'd job got it
    assert "Traceback" not in err and "Aborted" not in err, err
    assert len(imports) > 4, imports

    n = len(imports)
    for at in sorted({0, n // 4, n // 2, 3 * n // 4, n - 1}):
        p, marks, gate = _start_gated(main, at, argv)
        try:
            reached = marks.readline()
            while reached and not reached.startswith(f"{at} "):
                reached = marks.readline()  # the phase: held at import number `at` until the gate opens
            assert reached.startswith(f"{at} "), (at, reached, imports[at])
            p.send_signal(signal.SIGINT)
            os.close(gate)
            gate = -1
            _, err = p.communicate(timeout=60)
        finally:
            p.kill()
            marks.close()
            if gate >= 0:
                os.close(gate)
        assert p.returncode == 130, (reached, p.returncode, err)
        assert "Traceback" not in err and "Aborted" not in err, (reached, err)


def test_nproc_per_node_is_capped_with_one_line() -> None:
    r = hosttune("exec", "--dry-run", "--", "torchrun", "--nproc_per_node=4000", "t.py", env=dict(os.environ))
    assert r.returncode == 2, r.stderr
    assert "4000" in r.stderr and str(MAX_NPROC_PER_NODE) in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    job = prepare(["torchrun", f"--nproc_per_node={MAX_NPROC_PER_NODE}", "t.py"])
    assert len(job.ranks) == MAX_NPROC_PER_NODE
