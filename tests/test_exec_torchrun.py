"""`hosttune exec -- torchrun ...` with real torchrun, real ranks, gloo, and each rank's binding read from /proc.

Every torchrun start costs ~5 s here (its agent imports torch), so this file keeps to the list in issue 4.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest
from _ranks import free_port
from conftest import PROBES, run_cli
from conftest import job_processes as _job_processes

pytestmark = pytest.mark.integration

PROBE = str(PROBES / "probe.py")
PY = sys.executable
TORCHRUN = [PY, "-m", "torch.distributed.run"]  # the same torchrun as `torchrun` on PATH, without a pyenv shim

pytest.importorskip("torch")


def exec_(*command: str, env: Dict[str, str], prefix: List[str] = (), extra: List[str] = (), timeout: float = 120,
          cwd: Any = None) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([*prefix, PY, "-m", "hosttune", "exec", *extra, "--", *command], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


def plan_of(*command: str, env: Dict[str, str], prefix: List[str] = ()) -> Dict[str, Any]:
    """The job's plan (`exec --dry-run --json`): in this process (the CLI in-process: a plan is not about the process
    boundary, and an interpreter start costs ~1 s here), or under `prefix` (taskset) in a real one."""
    if prefix:
        r = exec_(*command, env=env, prefix=prefix, extra=["--dry-run", "--json"])
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)  # type: ignore[no-any-return]
    res = run_cli(["exec", "--dry-run", "--json", "--", *command], env=env)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def reports(env: Dict[str, str]) -> List[Dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(Path(env["PROBE_OUT"]).glob("rank-*.json"))]


def by_rank(reps: List[Dict[str, Any]]) -> Dict[int, Dict[str, Any]]:
    return {int(r["local_rank"]): r for r in reps}


def check_bound(rep: Dict[str, Any], rank: Dict[str, Any]) -> None:
    assert rep["affinity"] == sorted(rank["cpus"])
    assert rep["hosttune_local_rank"] == str(rank["local_rank"])
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "LD_PRELOAD", "MALLOC_CONF"):
        if key in rank["env"]:
            assert rep["env"][key] == rank["env"][key], key


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_two_ranks_disjoint_threads_and_jemalloc(probe_env: Dict[str, str]) -> None:
    cmd = [*TORCHRUN, "--nproc_per_node=2", PROBE, "--torch"]
    plan = plan_of(*cmd, env=probe_env)
    r = exec_(*cmd, env=probe_env, extra=["--verify"])
    assert r.returncode == 0, r.stderr
    reps = by_rank(reports(probe_env))
    assert sorted(reps) == [0, 1]
    allowed = os.sched_getaffinity(0)
    a, b = set(reps[0]["affinity"]), set(reps[1]["affinity"])
    assert a and b and not a & b and a | b <= allowed
    for rank in plan["ranks"]:
        rep = reps[rank["local_rank"]]
        check_bound(rep, rank)
        assert rep["torch_threads"] == int(rank["env"]["OMP_NUM_THREADS"])  # what torch really uses
        assert rep["executable"] == PY  # the interpreter torchrun would have used
        if "jemalloc" in rank["env"].get("LD_PRELOAD", ""):
            assert rep["jemalloc_mapped"]
    assert "MISMATCH" not in r.stderr and r.stderr.count(": ok") == 2, r.stderr


def test_under_taskset_both_ranks_stay_on_one_cpu(probe_env: Dict[str, str]) -> None:
    cpu = str(max(os.sched_getaffinity(0)))
    cmd = [*TORCHRUN, "--nproc-per-node", "2", "--standalone", PROBE]
    plan = plan_of(*cmd, env=probe_env, prefix=["taskset", "-c", cpu])
    assert [r["cpus"] for r in plan["ranks"]] == [[int(cpu)], [int(cpu)]]
    r = exec_(*cmd, env=probe_env, prefix=["taskset", "-c", cpu])
    assert r.returncode == 0, r.stderr
    reps = by_rank(reports(probe_env))
    assert [reps[i]["affinity"] for i in (0, 1)] == [[int(cpu)], [int(cpu)]]
    assert [reps[i]["env"]["OMP_NUM_THREADS"] for i in (0, 1)] == ["1", "1"]


def test_module_and_restarted_rank_is_bound_again(probe_env: Dict[str, str], tmp_path: Path) -> None:
    flag = tmp_path / "died-once"
    cmd = [*TORCHRUN, "--nproc_per_node=2", "--max-restarts=1", "--monitor-interval=0.1", "-m", "probe",
           "--die-once", str(flag)]
    plan = plan_of(*cmd, env=probe_env)
    r = exec_(*cmd, env=probe_env, cwd=str(PROBES))
    assert r.returncode == 0, r.stderr
    assert flag.exists()
    reps = reports(probe_env)
    restarted = [x for x in reps if x["restart_count"] == "1"]
    assert sorted(int(x["local_rank"]) for x in restarted) == [0, 1]  # torchrun restarts the whole group
    for rep in restarted:
        check_bound(rep, plan["ranks"][int(rep["local_rank"])])
        assert rep["argv"][0].endswith("probe.py")  # ran as `python -m probe`


def test_no_python_command_is_bound(probe_env: Dict[str, str]) -> None:
    cmd = [*TORCHRUN, "--nproc_per_node", "2", "--no-python", str(PROBES / "probe.sh"), "--exit", "0"]
    plan = plan_of(*cmd, env=probe_env)
    assert plan["argv"].count("--no-python") == 1
    r = exec_(*cmd, env=probe_env)
    assert r.returncode == 0, r.stderr
    reps = by_rank(reports(probe_env))
    for rank in plan["ranks"]:
        check_bound(reps[rank["local_rank"]], rank)


def test_two_nodes_on_loopback_allreduce(probe_env: Dict[str, str]) -> None:
    port = free_port()
    procs = []
    for node in (0, 1):
        cmd = [PY, "-m", "hosttune", "exec", "--", *TORCHRUN, "--nnodes=2", f"--node-rank={node}",
               "--nproc_per_node=1", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
               f"--rdzv-id=hosttune-test-{port}", PROBE, "--allreduce"]
        procs.append(subprocess.Popen(cmd, env=probe_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=150) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    reps = reports(probe_env)
    assert len(reps) == 2
    assert all(x["allreduce"] == [2.0, 2.0, 2.0, 2.0] and x["world_size"] == 2 for x in reps)
    assert all(x["hosttune_local_rank"] == "0" for x in reps)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])  # SIGINT: what Ctrl-C sends
def test_signal_stops_every_rank(probe_env: Dict[str, str], sig: int) -> None:
    proc = subprocess.Popen([PY, "-m", "hosttune", "exec", "--", *TORCHRUN, "--nproc_per_node=2", PROBE, "--sleep",
                             "120"], env=probe_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while len(reports(probe_env)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert len(reports(probe_env)) == 2, proc.communicate(timeout=5)
    marker = f"PROBE_OUT={probe_env['PROBE_OUT']}"
    assert len(_job_processes(marker)) >= 3  # torchrun + two ranks
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 128 + sig, err
    assert not _job_processes(marker)
    assert not any(Path(f"/proc/{x['pid']}").exists() for x in reports(probe_env))


def test_sigkill_of_hosttune_stops_torchrun_and_every_rank(probe_env: Dict[str, str]) -> None:
    # issue 11 item 13: the job runs in its own process group; the guardian stops it when the launcher is killed
    env = dict(probe_env, HOSTTUNE_STOP_GRACE="10")
    proc = subprocess.Popen([PY, "-m", "hosttune", "exec", "--", *TORCHRUN, "--nproc_per_node=2", PROBE, "--sleep",
                             "120"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    marker = f"PROBE_OUT={probe_env['PROBE_OUT']}"
    try:
        deadline = time.monotonic() + 90
        while len(reports(probe_env)) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert len(reports(probe_env)) == 2
        assert len(_job_processes(marker)) >= 4  # hosttune, its guardian, torchrun, two ranks
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 60
        while _job_processes(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in _job_processes(marker) if _state(p) not in ("Z", "X")]
        assert not any(_state(x["pid"]) not in ("", "Z", "X") for x in reports(probe_env))
    finally:
        for pid in _job_processes(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.stderr:
            proc.stderr.close()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return ""


def test_bash_wrapper_named_torchrun_runs_ranks_with_the_real_python(probe_env: Dict[str, str],
                                                                     tmp_path: Path) -> None:
    # A shell script called torchrun (module loaders, site wrappers) has no Python shebang to read: the shim takes
    # torchrun's interpreter from its parent, and never hands the training script to the shell.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "torchrun"
    wrapper.write_text(f'#!/bin/bash\nexec {PY} -m torch.distributed.run "$@"\n')
    wrapper.chmod(0o755)
    env = dict(probe_env, PATH=f"{bin_dir}:{probe_env['PATH']}")
    r = exec_("torchrun", "--nproc_per_node=1", PROBE, env=env)
    assert r.returncode == 0, r.stderr
    reps = reports(probe_env)
    assert len(reps) == 1 and os.path.realpath(reps[0]["executable"]) == os.path.realpath(PY)
    assert reps[0]["hosttune_local_rank"] == "0"
