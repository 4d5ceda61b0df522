"""The per-rank hook (hosttune/launch/hook.py): Python ranks started by any launcher apply their own plan at
interpreter start. Real processes; each rank's affinity, memory policy and environment read back from /proc."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import pytest
from conftest import REPO, run_cli

from hosttune.cpulist import format_cpulist
from hosttune.errors import UserError
from hosttune.launch import handoff, hook, procfs, rankvars
from hosttune.launch.binding import effective_cpus, effective_mems
from hosttune.launch.job import prepare
from hosttune.launch.procfs import parse_cpulist
from hosttune.launch.rank import handed

PY = sys.executable
TWO_CPUS = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")

# An unknown launcher: ten lines that start two Pythons with LOCAL_RANK/LOCAL_WORLD_SIZE and wait for them.
LAUNCHER = """\
import os, subprocess, sys
rank_script = sys.argv[1]
procs = []
for rank in range(2):
    env = dict(os.environ, LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2")
    procs.append(subprocess.Popen([sys.executable, rank_script], env=env))
codes = [p.wait() for p in procs]
sys.exit(max(codes))
"""

# A rank: reports what it sees from inside, then waits (bounded) until the test has read it from /proc.
RANK = """\
import json, os, sys, time
out = os.environ["RANK_OUT"]
me = {"pid": os.getpid(), "env": dict(os.environ), "sys_path": sys.path,
      "modules": sorted(m for m in sys.modules if m == "hosttune" or m.startswith("hosttune.")),
      "sitecustomize": getattr(sys.modules.get("sitecustomize"), "__file__", None)}
tmp = os.path.join(out, f"rank-{os.getpid()}.tmp")
with open(tmp, "w") as fh:
    json.dump(me, fh)
os.rename(tmp, os.path.join(out, f"rank-{os.getpid()}.json"))
end = time.monotonic() + 60
while not os.path.exists(os.path.join(out, "go")) and time.monotonic() < end:
    time.sleep(0.02)
"""


@pytest.fixture
def job(tmp_path: Path) -> Dict[str, Any]:
    """Scripts and an environment for a job whose ranks report into $RANK_OUT."""
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "launcher.py").write_text(LAUNCHER)
    (tmp_path / "rank.py").write_text(RANK)
    env = dict(os.environ)
    env["RANK_OUT"] = str(out)
    env["PYTHONPATH"] = str(REPO)  # `python -m hosttune` from here, whatever is installed
    return {"dir": tmp_path, "out": out, "env": env}


def start(job: Dict[str, Any], *command: str, env: Optional[Dict[str, str]] = None) -> "subprocess.Popen[str]":
    return subprocess.Popen([PY, "-m", "hosttune", "exec", "--", *command], env=env or job["env"],
                            cwd=str(job["dir"]), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_reports(job: Dict[str, Any], n: int, proc: "subprocess.Popen[str]") -> List[Dict[str, Any]]:
    end = time.monotonic() + 90
    while time.monotonic() < end and proc.poll() is None:
        found = sorted(job["out"].glob("rank-*.json"))
        if len(found) >= n:
            return [json.loads(p.read_text()) for p in found]
        time.sleep(0.05)
    out, err = proc.communicate(timeout=10)
    raise AssertionError(f"{n} ranks did not report (rc {proc.returncode}): {err}")


def finish(job: Dict[str, Any], proc: "subprocess.Popen[str]") -> "subprocess.CompletedProcess[str]":
    (job["out"] / "go").touch()
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def from_proc(pid: int) -> Dict[str, Any]:
    """What the kernel says of a running rank: every thread's CPUs, the memory policy, the environment it started
    with."""
    cpus = {procfs.parse_cpulist(procfs.proc_status(pid, int(t))["Cpus_allowed_list"])
            for t in os.listdir(f"/proc/{pid}/task")}
    assert len(cpus) == 1, cpus  # every thread bound alike
    return {"cpus": cpus.pop(), "mempolicy": procfs.proc_mempolicy(pid), "environ": procfs.proc_environ(pid) or {}}


# ---- where a rank comes from (rankvars: the one table) ---------------------------------------------------------


@pytest.mark.parametrize("env, place", [
    ({"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}, (1, 4, "LOCAL_RANK")),  # torchrun, accelerate, DeepSpeed
    ({"LOCAL_RANK": "1", "WORLD_SIZE": "2", "NODE_RANK": "0"}, (1, 2, "LOCAL_RANK")),  # Lightning's own children
    ({"LOCAL_RANK": "2"}, (2, 3, "LOCAL_RANK")),
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "OMPI_COMM_WORLD_RANK": "5"},
     (1, 2, "OMPI_COMM_WORLD_LOCAL_RANK")),
    ({"MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "3", "PMI_RANK": "6"}, (0, 3, "MPI_LOCALRANKID")),  # MPICH/Intel
    ({"PMIX_LOCAL_RANK": "3", "PMIX_LOCAL_SIZE": "4"}, (3, 4, "PMIX_LOCAL_RANK")),
    ({"PMI_LOCAL_RANK": "1", "PMI_LOCAL_SIZE": "2"}, (1, 2, "PMI_LOCAL_RANK")),
    ({"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "4,2(x2)", "SLURM_NODEID": "2"}, (1, 2, "SLURM_LOCALID")),
    # the launcher closest to the rank wins: torchrun under srun; Open MPI's daemons are srun tasks themselves
    ({"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "SLURM_LOCALID": "0", "SLURM_NTASKS_PER_NODE": "1"},
     (1, 2, "LOCAL_RANK")),
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "SLURM_LOCALID": "0"},
     (1, 2, "OMPI_COMM_WORLD_LOCAL_RANK")),
    ({}, None),
    ({"RANK": "3", "WORLD_SIZE": "4"}, None),  # global ranks only: no place on the node
])
def test_each_launchers_variables_give_the_local_place(env: Dict[str, str], place: Any) -> None:
    found = rankvars.place(env)
    assert (tuple(found) if found else None) == place
    assert rankvars.has_rank(env) == (place is not None)


@pytest.mark.parametrize("env, message", [
    ({"LOCAL_RANK": "zero"}, "LOCAL_RANK='zero' is not an integer"),
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, "outside"),
])
def test_bad_rank_variables_are_one_line(env: Dict[str, str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        rankvars.place(env)


def test_a_value_a_launcher_changed_on_the_way_is_kept() -> None:
    data = {"top_env": {"OMP_NUM_THREADS": "2", "MALLOC_CONF": "x"}, "touched": {"OMP_NUM_THREADS": None}}
    plan_env = {"OMP_NUM_THREADS": "1", "MALLOC_CONF": "x", "HOSTTUNE_NUM_WORKERS": "0"}
    # as hosttune gave it to the top process: the rank's own plan replaces it
    assert hook.rank_env(plan_env, data, {"OMP_NUM_THREADS": "2"})["OMP_NUM_THREADS"] == "1"
    # `accelerate launch --num_cpu_threads_per_process 4`, `mpirun -x OMP_NUM_THREADS=4`: the launcher's choice
    assert "OMP_NUM_THREADS" not in hook.rank_env(plan_env, data, {"OMP_NUM_THREADS": "4"})


def test_multiprocessing_children_are_recognised() -> None:
    assert hook.is_spawn_child(["-c", "--multiprocessing-fork"])
    forkserver = [PY, "-c", "from multiprocessing.forkserver import main; main(3, 4, ['__main__'])"]
    assert hook.is_spawn_child(["-c"], cmdline=lambda: forkserver)
    tracker = [PY, "-c", "from multiprocessing.resource_tracker import main;main(5)"]
    assert not hook.is_spawn_child(["-c"], cmdline=lambda: tracker)
    assert not hook.is_spawn_child(["train.py", "--multiprocessing"])


# ---- real jobs ---------------------------------------------------------------------------------------------------


@TWO_CPUS
def test_unknown_launcher_ranks_get_disjoint_plans_with_threads_equal_to_cores(job: Dict[str, Any]) -> None:
    proc = start(job, PY, "launcher.py", "rank.py")
    try:
        reps = wait_reports(job, 2, proc)
        kernel = {rep["pid"]: from_proc(rep["pid"]) for rep in reps}
    finally:
        r = finish(job, proc)
    assert r.returncode == 0, r.stderr
    assert "hosttune" not in r.stderr, r.stderr  # nothing to warn about
    by_rank = {int(rep["env"]["LOCAL_RANK"]): rep for rep in reps}
    assert sorted(by_rank) == [0, 1]
    cpus = {rank: kernel[rep["pid"]]["cpus"] for rank, rep in by_rank.items()}
    allowed = set(os.sched_getaffinity(0))
    assert cpus[0] and cpus[1] and not set(cpus[0]) & set(cpus[1]) and set(cpus[0]) | set(cpus[1]) <= allowed
    if len(allowed) == 2:
        assert [len(cpus[0]), len(cpus[1])] == [1, 1]  # this 2-core machine: one CPU each
    for rank, rep in by_rank.items():
        k = kernel[rep["pid"]]
        assert rep["env"]["OMP_NUM_THREADS"] == rep["env"]["MKL_NUM_THREADS"] == str(len(cpus[rank]))
        assert rep["env"]["HOSTTUNE_LOCAL_RANK"] == str(rank) and rep["env"]["HOSTTUNE_LOCAL_WORLD_SIZE"] == "2"
        plan = handed(handoff.read(rep["env"]) or {}, rank, 2)  # what the launcher planned for it
        assert plan is not None
        assert cpus[rank] == effective_cpus(plan.cpus, allowed)
        assert k["mempolicy"] in (None, effective_mems(plan)), k["mempolicy"]
        # what the launcher handed every process is in the environment the rank started with
        assert k["environ"]["HOSTTUNE_HANDOFF"] == rep["env"]["HOSTTUNE_HANDOFF"]
        assert k["environ"]["PYTHONPATH"].split(os.pathsep)[0] == hook.HOOK_DIR
        for key in ("LD_PRELOAD", "MALLOC_CONF"):
            assert k["environ"].get(key) == rep["env"].get(key), key
        # and nothing of the hook is left in the interpreter
        assert hook.HOOK_DIR not in rep["sys_path"] and rep["modules"] == []


@TWO_CPUS
def test_a_users_sitecustomize_on_pythonpath_still_runs(job: Dict[str, Any]) -> None:
    mine = job["dir"] / "mine"
    mine.mkdir()
    (mine / "sitecustomize.py").write_text(
        "import os\nopen(os.path.join(os.environ['RANK_OUT'], f'user-site-{os.getpid()}'), 'w').close()\n")
    env = dict(job["env"], PYTHONPATH=f"{mine}{os.pathsep}{job['env']['PYTHONPATH']}")
    proc = start(job, PY, "launcher.py", "rank.py", env=env)
    try:
        reps = wait_reports(job, 2, proc)
        kernel = {rep["pid"]: from_proc(rep["pid"]) for rep in reps}
    finally:
        r = finish(job, proc)
    assert r.returncode == 0, r.stderr
    for rep in reps:
        assert (job["out"] / f"user-site-{rep['pid']}").exists()  # the user's own ran in every rank
        assert rep["sitecustomize"] == str(mine / "sitecustomize.py")
        assert len(kernel[rep["pid"]]["cpus"]) == 1  # and the rank was still bound


def _rank_python(job: Dict[str, Any], env: Mapping[str, str], code: str = "print('job ran')"
                 ) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([PY, "-c", code], env=dict(env), capture_output=True, text=True, timeout=60,
                          cwd=str(job["dir"]))


def _hook_env(base: Mapping[str, str], path: str, **extra: str) -> Dict[str, str]:
    env = dict(base)
    env.update(hook.job_env(base))
    env.update({"HOSTTUNE_HANDOFF": path, "HOSTTUNE_LAUNCH_ID": "1-abcd"}, **extra)
    return env


@TWO_CPUS
def test_a_plan_outside_the_allowed_cpus_is_one_warning_and_the_rank_runs(job: Dict[str, Any]) -> None:
    real = prepare(["python3", "x.py"])
    content = handoff.payload(real, "m")
    content["plans"]["2"][1]["cpus"] = [4093]  # no such CPU here
    path = handoff.write(content)
    try:
        show = "import os; print(sorted(os.sched_getaffinity(0)), os.environ['HOSTTUNE_LOCAL_RANK'])"
        r = _rank_python(job, _hook_env(job["env"], path, LOCAL_RANK="1", LOCAL_WORLD_SIZE="2"), show)
    finally:
        handoff.remove(path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "1"  # the rest of the plan applied
    (line,) = r.stderr.splitlines()
    assert line.startswith("hosttune: rank 1/2") and "4093" in line and "narrowed" in line


def test_a_python_with_no_plan_has_no_trace(job: Dict[str, Any]) -> None:
    real = prepare(["python3", "x.py"])
    path = handoff.write(handoff.payload(real, "m"))
    show = ("import json, os, sys; print(json.dumps([dict(os.environ), sys.path, sorted(m for m in sys.modules "
            "if m.startswith('hosttune')), sorted(os.sched_getaffinity(0))]))")
    try:
        for env in (dict(job["env"], **hook.job_env(job["env"])),  # the hook's directory without a handoff
                    _hook_env(job["env"], path)):  # a helper Python of a job: no rank variables, not the top
            r = _rank_python(job, env, show)
            assert r.returncode == 0 and r.stderr == "", r.stderr
            seen, path_, modules, cpus = json.loads(r.stdout)
            assert seen == env  # no variable set, changed or removed
            assert hook.HOOK_DIR not in path_ and modules == []
            assert cpus == sorted(os.sched_getaffinity(0))
    finally:
        handoff.remove(path)


MP_SPAWN = """\
import json, os, sys
import torch
import torch.multiprocessing as mp

def work(i, out):
    with open(os.path.join(out, f"child-{i}.json"), "w") as fh:
        json.dump({"pid": os.getpid(), "omp": os.environ.get("OMP_NUM_THREADS"),
                   "threads": torch.get_num_threads(), "cpus": sorted(os.sched_getaffinity(0))}, fh)

if __name__ == "__main__":
    mp.spawn(work, args=(os.environ["RANK_OUT"],), nprocs=2)
"""


@pytest.mark.integration
@TWO_CPUS
def test_mp_spawn_children_warned_once_and_get_an_even_share(job: Dict[str, Any]) -> None:
    pytest.importorskip("torch")
    (job["dir"] / "spawn.py").write_text(MP_SPAWN)
    r = subprocess.run([PY, "-m", "hosttune", "exec", "--", PY, "spawn.py"], env=job["env"], cwd=str(job["dir"]),
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    warned = [line for line in r.stderr.splitlines() if line.startswith("hosttune:")]
    assert len(warned) == 1, r.stderr  # once per job, not once per child
    assert "torch.multiprocessing.spawn started 2 ranks" in warned[0] and "torchrun" in warned[0]
    kids = [json.loads(p.read_text()) for p in sorted(job["out"].glob("child-*.json"))]
    assert len(kids) == 2
    job_threads = len(os.sched_getaffinity(0))  # physical cores here (no SMT on this machine's vCPUs)
    for kid in kids:
        assert kid["threads"] == int(kid["omp"]) == max(1, job_threads // 2)  # what torch really uses
    assert sum(k["threads"] for k in kids) <= job_threads  # never more threads than cores


@TWO_CPUS
def test_verify_reads_hook_planned_ranks_back(job: Dict[str, Any]) -> None:
    (job["dir"] / "sleep.py").write_text("import time\ntime.sleep(3)\n")
    r = subprocess.run([PY, "-m", "hosttune", "exec", "--verify", "--", PY, "launcher.py", "sleep.py"],
                       env=job["env"], cwd=str(job["dir"]), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "MISMATCH" not in r.stderr, r.stderr
    oks = [line for line in r.stderr.splitlines() if line.endswith(": ok")]
    assert len(oks) == 3, r.stderr  # the launcher (the job's top process) and its two ranks
    assert any("rank 0/2" in line for line in oks) and any("rank 1/2" in line for line in oks)


# What Lightning's Trainer(strategy="ddp") does in a plain `python train.py` (lightning/fabric/strategies/launchers/
# subprocess_script.py, _call_children_scripts): the running process sets LOCAL_RANK=0 and WORLD_SIZE in its own
# environment, then starts the script again for ranks 1..N-1 with LOCAL_RANK=i and no LOCAL_WORLD_SIZE.
SELF_LAUNCHING = """\
import json, os, subprocess, sys, threading, time
if os.environ.get("LOCAL_RANK") is None:
    worker = threading.Thread(target=time.sleep, args=(2,))  # a thread that exists before the ranks start
    worker.start()
    os.environ["LOCAL_RANK"] = "0"
    os.environ["WORLD_SIZE"] = "2"
    child = subprocess.Popen([sys.executable, sys.argv[0]], env=dict(os.environ, LOCAL_RANK="1"))
    tids = os.listdir("/proc/self/task")
    cpus = {t: open(f"/proc/self/task/{t}/status").read().split("Cpus_allowed_list:")[1].split()[0] for t in tids}
    me = {"pid": os.getpid(), "rank": 0, "threads": cpus, "omp": os.environ.get("OMP_NUM_THREADS")}
    print(json.dumps(me), flush=True)
    sys.exit(child.wait())
print(json.dumps({"pid": os.getpid(), "rank": 1, "threads": {"main": sorted(os.sched_getaffinity(0))},
                  "omp": os.environ.get("OMP_NUM_THREADS")}), flush=True)
"""


@TWO_CPUS
def test_a_program_that_starts_its_own_ranks_rebinds_itself_as_rank_0(job: Dict[str, Any]) -> None:
    (job["dir"] / "selfrun.py").write_text(SELF_LAUNCHING)
    r = subprocess.run([PY, "-m", "hosttune", "exec", "--", PY, "selfrun.py"], env=job["env"], cwd=str(job["dir"]),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "hosttune" not in r.stderr, r.stderr
    reps = {rep["rank"]: rep for rep in map(json.loads, r.stdout.splitlines())}
    allowed = sorted(os.sched_getaffinity(0))
    plans = prepare([PY, "selfrun.py"], environ=job["env"]).more_plans
    want = {p.local_rank: effective_cpus(p.cpus, allowed) for p in plans if p.local_world_size == 2}
    # rank 0: every thread moved to its own slice (the one started before, too); rank 1: its slice, not rank 0's
    assert {format_cpulist(parse_cpulist(c)) for c in reps[0]["threads"].values()} == {
        format_cpulist(want[0])}
    assert tuple(reps[1]["threads"]["main"]) == want[1] and not set(want[0]) & set(want[1])
    assert reps[0]["omp"] == str(len(want[0])) and reps[1]["omp"] == str(len(want[1]))


def test_as_root_the_hook_directory_must_pass_the_trust_rule(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the root trust rule")
    loose = tmp_path / "rankhook"
    loose.mkdir()
    os.chmod(loose, 0o777)  # anybody could plant a sitecustomize.py here
    monkeypatch.setattr(hook, "HOOK_DIR", str(loose))
    assert hook.job_env({"PYTHONPATH": "/x"}) == {}
    job = prepare(["torchrun", "--nproc_per_node=2", "t.py"])
    assert not job.hook and "--no-python" in job.argv  # the ranks keep the shim
    os.chmod(loose, 0o755)
    os.chmod(tmp_path, 0o755)
    (loose / "sitecustomize.py").write_text("")
    os.chmod(loose / "sitecustomize.py", 0o666)  # the directory is fine, the file anybody's to rewrite
    assert hook.job_env({"PYTHONPATH": "/x"}) == {}
    os.chmod(loose / "sitecustomize.py", 0o644)
    assert hook.job_env({"PYTHONPATH": "/x"}) == {"PYTHONPATH": f"{loose}{os.pathsep}/x"}


def test_as_root_a_refused_hook_directory_is_said_once_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    """The launcher asks twice for a torchrun job (prepare, then run): one line, naming the file and the fix."""
    if os.geteuid() != 0:
        pytest.skip("the root trust rule")
    loose = tmp_path / "rankhook"
    loose.mkdir()
    (loose / "sitecustomize.py").write_text("")
    os.chmod(loose, 0o775)
    monkeypatch.setattr(hook, "HOOK_DIR", str(loose))
    monkeypatch.setattr(hook, "_REFUSED", set())
    assert hook.job_env({}) == {} and hook.job_env({}) == {}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(loose) in err and f"fix: chmod go-w {loose}" in err, err
    assert err.startswith("hosttune: refusing the per-rank hook directory") and "runs without" in err


def test_as_root_an_untrusted_hook_directory_is_one_line_and_the_job_runs(tmp_path: Path) -> None:
    """Issue 22 (low): exec used to drop the hook silently. A hosttune whose rankhook directory others can write
    (a copy of the package, made group/other-writable) says so in one line and runs the job without it."""
    if os.geteuid() != 0:
        pytest.skip("the root trust rule")
    import shutil

    src = tmp_path / "src"
    shutil.copytree(REPO / "hosttune", src / "hosttune", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "profiles", src / "hosttune" / "profiles")  # where an installed package has them
    rankhook = src / "hosttune" / "launch" / "rankhook"
    os.chmod(rankhook, 0o777)
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1", HOSTTUNE_EXEC_CACHE="0")
    r = subprocess.run([PY, "-m", "hosttune", "exec", "--", "sh", "-c", 'echo "PYTHONPATH=$PYTHONPATH"'], env=env,
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert str(rankhook) in lines[0] and f"fix: chmod go-w {rankhook}" in lines[0]
    assert r.stdout.strip() == f"PYTHONPATH={src}"  # the job ran, without the hook on its path


def test_the_hook_imports_nothing_from_the_ranks_working_directory(job: Dict[str, Any], tmp_path: Path) -> None:
    # site runs before Python puts the script's directory (or '' for -c/-m) on sys.path: what the hook imports comes
    # from the standard library and the launcher's hosttune, never from a module planted where the rank starts.
    real = prepare(["python3", "x.py"])
    path = handoff.write(handoff.payload(real, "m"))
    planted = tmp_path / "planted"
    planted.mkdir()
    for name in ("json", "tempfile", "hosttune", "typing", "ctypes", "stat"):
        (planted / f"{name}.py").write_text(f"open({str(planted / (name + '.ran'))!r}, 'w').close()\n")
    try:
        env = _hook_env(job["env"], path, LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
        r = subprocess.run([PY, "-c", "import os; print(os.environ['HOSTTUNE_LOCAL_RANK'])"], env=env, cwd=str(planted),
                           capture_output=True, text=True, timeout=60)
    finally:
        handoff.remove(path)
    assert r.returncode == 0 and r.stdout == "0\n", r.stderr  # the plan was applied
    assert sorted(p.name for p in planted.glob("*.ran")) == []


@TWO_CPUS
def test_hosttune_started_as_one_rank_of_any_launcher_plans_that_rank(job: Dict[str, Any]) -> None:
    # `mpirun -np 2 hosttune exec -- python train.py`: hosttune itself is the rank (as under srun)
    env = dict(job["env"], OMPI_COMM_WORLD_LOCAL_RANK="1", OMPI_COMM_WORLD_LOCAL_SIZE="2")
    show = "import json, os; print(json.dumps([sorted(os.sched_getaffinity(0)), os.environ['OMP_NUM_THREADS']]))"
    dry = run_cli(["exec", "--dry-run", "--json", "--", PY, "-c", show], env=env)  # the plan: in this process
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["kind"] == "rank" and [(r["local_rank"], r["local_world_size"]) for r in plan["ranks"]] == [(1, 2)]
    r = subprocess.run([PY, "-m", "hosttune", "exec", "--", PY, "-c", show], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    cpus, threads = json.loads(r.stdout)
    assert tuple(cpus) == effective_cpus(plan["ranks"][0]["cpus"], os.sched_getaffinity(0))
    assert len(cpus) < len(os.sched_getaffinity(0)) and threads == str(len(cpus))


def test_the_hooks_bootstrap_spells_the_handoff_variable_as_names_does() -> None:
    # sitecustomize.py checks $HOSTTUNE_HANDOFF before it loads any of hosttune (a process with no plan imports
    # nothing), so it spells the name itself: it must stay the one in policy/names.py.
    from hosttune.policy import names

    text = (Path(hook.HOOK_DIR) / "sitecustomize.py").read_text()
    assert f'os.environ.get("{names.HANDOFF}")' in text
    assert sorted(os.listdir(hook.HOOK_DIR)) in (["sitecustomize.py"], ["__pycache__", "sitecustomize.py"])


POOL = """\
import multiprocessing as mp, os

def threads(_):
    return os.environ.get("OMP_NUM_THREADS")

if __name__ == "__main__":
    with mp.get_context("spawn").Pool(2) as pool:
        print(",".join(pool.map(threads, range(4))))
"""


@TWO_CPUS
def test_a_spawn_pools_workers_get_an_even_share_without_a_warning(job: Dict[str, Any]) -> None:
    (job["dir"] / "pool.py").write_text(POOL)
    r = subprocess.run([PY, "-m", "hosttune", "exec", "--", PY, "pool.py"], env=job["env"], cwd=str(job["dir"]),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "hosttune" not in r.stderr, r.stderr  # workers, not ranks: nothing to fix
    job_threads = len(os.sched_getaffinity(0))
    assert set(r.stdout.strip().split(",")) == {str(max(1, job_threads // 2))}
