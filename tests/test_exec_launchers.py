"""`hosttune exec` in front of real launchers other than torchrun (test_exec_torchrun.py has torchrun): the legacy
`python -m torch.distributed.launch`, `accelerate launch`, a Lightning DDP script that starts its own ranks,
`mpirun` (Open MPI) and `deepspeed`. Each rank is read back from /proc from the outside while it is held after its
report (affinity, memory policy, environment, mapped libraries) and must be disjoint from the others, run as many
threads as it has cores, and have the profile's allocator mapped.

A launcher that is not installed is skipped (the Makefile's `setup` installs all of them); nothing else is.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Sequence, Set

import pytest
from conftest import PROBES, run_cli

pytestmark = pytest.mark.integration

PY = sys.executable
PROBE = str(PROBES / "probe.py")
PROBE_HELD = str(PROBES / "probe_held.py")  # probe.py, then held until the test has read every rank from /proc
# The variables a launcher gives each rank its place on the node by, first match wins (as the per-rank hook reads them)
RANK_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")

pytest.importorskip("torch")


def program(name: str) -> str:
    """A launcher's console script next to this interpreter (not a pyenv shim), else on PATH; skip when missing."""
    here = os.path.join(os.path.dirname(PY), name)
    found = here if os.access(here, os.X_OK) else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (make setup installs it)")
    return found


@dataclass
class Rank:
    pid: int
    local_rank: int
    cpus: Set[int]
    env: Dict[str, str]
    maps: str
    policy: str  # the first mapping's memory policy from numa_maps: default, bind:0, prefer:0, interleave:0-1
    report: Dict[str, Any]


def _read_rank(pid: int, report: Dict[str, Any], only: Any = None) -> Rank:
    """A rank read from /proc; `only`: its local rank when it is the job's only process (no rank variables)."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    env = dict(item.decode().split("=", 1) for item in raw.split(b"\0") if b"=" in item)
    with open(f"/proc/{pid}/numa_maps") as fh:
        policy = fh.readline().split(" ")[1]
    # A rank that learns its place in-process (Lightning's rank 0 sets os.environ["LOCAL_RANK"] itself) does not
    # show it in /proc/PID/environ, which holds the environment the process started with: its report has it.
    local = next((env[k] for k in RANK_VARS if k in env), report.get("local_rank") or only)
    assert local is not None, f"rank {pid} has none of {RANK_VARS}"
    return Rank(pid, int(local), set(os.sched_getaffinity(pid)), env, Path(f"/proc/{pid}/maps").read_text(),
                policy, report)


def exec_(command: Sequence[str], env: Dict[str, str], *extra: str,
          timeout: float = 120) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([PY, "-m", "hosttune", "exec", *extra, "--", *command], env=env, capture_output=True,
                          text=True, timeout=timeout)


def dry_run(command: Sequence[str], env: Dict[str, str], *extra: str) -> Any:
    """`hosttune exec --dry-run [--json]` of `command`, through the CLI in this process (a plan is not about the
    process boundary; an interpreter start costs ~1 s on this shared machine): the plan (`--json`), else the result."""
    res = run_cli(["exec", "--dry-run", *extra, "--", *command], env=env)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout) if "--json" in extra else res


def release(env: Dict[str, str]) -> Path:
    """The file whose creation lets the held ranks (probe_held.py) of the job with this env exit."""
    return Path(env["PROBE_OUT"]).parent / "release"


def held(env: Dict[str, str]) -> List[str]:
    return ["--hold", str(release(env))]


def run_ranks(command: Sequence[str], env: Dict[str, str], n: int, timeout: float = 120) -> List[Rank]:
    """Start `hosttune exec -- command` whose ranks are held after their report (PROBE_HELD with `held(env)`),
    wait for `n` rank reports in $PROBE_OUT, read each reporting process from /proc, release the ranks, then wait
    for the job: it must exit 0."""
    out = Path(env["PROBE_OUT"])
    proc = subprocess.Popen([PY, "-m", "hosttune", "exec", "--", *command], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    ranks: List[Rank] = []
    try:
        deadline = time.monotonic() + timeout
        reports: List[Dict[str, Any]] = []
        while time.monotonic() < deadline and proc.poll() is None:
            reports = [json.loads(p.read_text()) for p in sorted(out.glob("rank-*.json"))]
            if len(reports) >= n:
                break
            time.sleep(0.1)
        assert len(reports) == n, (len(reports), proc.poll(), proc.stderr.read() if proc.poll() is not None else "")
        ranks = [_read_rank(rep["pid"], rep, 0 if n == 1 else None) for rep in reports]
        release(env).touch()
        _, err = proc.communicate(timeout=timeout)
    finally:
        release(env).touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    return sorted(ranks, key=lambda r: r.local_rank)


def physical_cores(cpus: Set[int]) -> int:
    """Cores (SMT siblings counted once) among `cpus`, from sysfs topology."""
    cores = set()
    for cpu in cpus:
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add((topo.joinpath("physical_package_id").read_text().strip(),
                       topo.joinpath("core_id").read_text().strip()))
        except OSError:
            cores.add(("?", str(cpu)))
    return len(cores)


def expected_policy(rank: Dict[str, Any]) -> str:
    mems = ",".join(str(m) for m in rank["mems"])
    return {"bind": f"bind:{mems}", "preferred": f"prefer:{mems}", "interleave": f"interleave:{mems}"}.get(
        rank["mem_policy"], "default")


def check_ranks(ranks: List[Rank], plan: Dict[str, Any], n: int, *, hosttune_binds: bool = True,
                started_with_env: bool = True) -> None:
    """Every rank disjoint, threads equal to its cores, allocator mapped, memory policy as planned."""
    assert [r.local_rank for r in ranks] == list(range(n))
    assert len(plan["ranks"]) == n, plan
    allowed = os.sched_getaffinity(0)
    for i, a in enumerate(ranks):
        assert a.cpus and a.cpus <= allowed
        for b in ranks[i + 1:]:
            assert not a.cpus & b.cpus, (a.local_rank, a.cpus, b.local_rank, b.cpus)
        want = plan["ranks"][a.local_rank]
        if hosttune_binds:
            assert a.cpus == set(want["cpus"])
            assert a.policy == expected_policy(want)
        # The rank's own view (its report) is the environment it runs with now; /proc/PID/environ is the one it
        # started with. They agree when the launcher started the ranks with hosttune's env; a Lightning script
        # is a plain job whose ranks re-plan in-process (rank 0 is the top process itself; the ranks it starts
        # inherit its start environment and apply their plan through the hook), so only the report can tell.
        threads = a.report["env"].get("OMP_NUM_THREADS")
        assert threads == str(physical_cores(a.cpus)), (a.local_rank, a.cpus, a.report["env"])
        if started_with_env:
            assert a.env.get("OMP_NUM_THREADS") == threads, (a.local_rank, a.env.get("OMP_NUM_THREADS"))
        if "torch_threads" in a.report:
            assert a.report["torch_threads"] == physical_cores(a.cpus)
        preload = want["env"].get("LD_PRELOAD", "")
        for lib in filter(None, preload.replace(":", " ").split()):
            assert os.path.realpath(lib) in a.maps or lib in a.maps, (lib, a.local_rank)
        assert preload.split(":")[0] in a.env.get("LD_PRELOAD", ""), a.env.get("LD_PRELOAD")


two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")


# ---- python -m torch.distributed.launch -------------------------------------------------------------------------

@two_cpus
@pytest.mark.parametrize("use_env", [True, False], ids=["use-env", "local-rank-argument"])
def test_torch_distributed_launch(probe_env: Dict[str, str], use_env: bool) -> None:
    # No torch in the ranks (importing it costs seconds here): torch's own thread count from the env is read under
    # torchrun (test_exec_torchrun.py) and in the Lightning ranks below
    cmd = [PY, "-m", "torch.distributed.launch", "--nproc_per_node=2", *(["--use-env"] if use_env else []),
           PROBE_HELD, *held(probe_env)]
    plan = dry_run(cmd, probe_env, "--json")
    assert plan["kind"] != "plain" and len(plan["ranks"]) == 2
    assert all(r["env"]["OMP_NUM_THREADS"] == str(physical_cores(set(r["cpus"]))) for r in plan["ranks"])
    ranks = run_ranks(cmd, probe_env, 2)
    check_ranks(ranks, plan, 2)
    for r in ranks:  # the legacy style still hands each script its rank as an argument
        assert (f"--local-rank={r.local_rank}" in r.report["argv"]) is not use_env


def test_torch_distributed_launch_dry_run_text(probe_env: Dict[str, str]) -> None:
    r = dry_run([PY, "-m", "torch.distributed.launch", "--nproc_per_node=2", "--use-env", "train.py"], probe_env)
    assert "# plain job" not in r.stdout and "rank 1/2" in r.stdout


# ---- accelerate launch ------------------------------------------------------------------------------------------

@two_cpus
def test_accelerate_multi_gpu_two_ranks(probe_env: Dict[str, str]) -> None:
    # No torch in the ranks: the binding and env are read from /proc and the report; torch's own thread count
    # from that env is read under torch.distributed.launch and torchrun (importing torch in a rank costs seconds)
    cmd = [program("accelerate"), "launch", "--multi_gpu", "--num_processes", "2", PROBE_HELD, *held(probe_env)]
    plan = dry_run(cmd, probe_env, "--json")
    ranks = run_ranks(cmd, probe_env, 2)
    check_ranks(ranks, plan, 2)


@two_cpus
def test_accelerate_threads_given_are_kept(probe_env: Dict[str, str]) -> None:
    cmd = [program("accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_cpu_threads_per_process",
           "2", PROBE, "--sleep", "0"]
    plan = dry_run(cmd, probe_env, "--json")
    assert [r["env"]["OMP_NUM_THREADS"] for r in plan["ranks"]] == ["2", "2"]
    r = exec_(cmd, probe_env)
    assert r.returncode == 0, r.stderr
    reps = [json.loads(p.read_text()) for p in Path(probe_env["PROBE_OUT"]).glob("rank-*.json")]
    assert sorted(rep["env"]["OMP_NUM_THREADS"] for rep in reps) == ["2", "2"]


def test_accelerate_cpu_alone_is_one_process(probe_env: Dict[str, str]) -> None:
    cmd = [program("accelerate"), "launch", "--cpu", PROBE_HELD, *held(probe_env)]
    plan = dry_run(cmd, probe_env, "--json")
    assert len(plan["ranks"]) == 1
    (rank,) = run_ranks(cmd, probe_env, 1)
    check_ranks([rank], plan, 1)
    assert rank.cpus == os.sched_getaffinity(0)  # the one process owns every allowed CPU


# ---- a Lightning script that starts its own ranks ---------------------------------------------------------------

LIGHTNING_SCRIPT = """
import os, sys, time
sys.path.insert(0, {probes!r})
import torch
import lightning as L
from torch.utils.data import DataLoader, TensorDataset
from probe import report


class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, i):
        if i == 0:
            report({{"torch_threads": torch.get_num_threads()}})
            while not os.path.exists({hold!r}):  # held until the test has read both ranks from /proc
                time.sleep(0.05)
        return self.layer(batch[0]).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=2)


trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_steps=1, logger=False,
                    enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Tiny())
"""


@two_cpus
def test_lightning_ddp_script(probe_env: Dict[str, str], tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    script = tmp_path / "train_lightning.py"
    script.write_text(LIGHTNING_SCRIPT.format(probes=str(PROBES), hold=str(release(probe_env))))
    ranks = run_ranks([PY, str(script)], probe_env, 2, timeout=180)
    plan = dry_run([PY, "-m", "torch.distributed.run", "--nproc_per_node=2", str(script)], probe_env, "--json")
    check_ranks(ranks, plan, 2, started_with_env=False)


# ---- mpirun (Open MPI) ------------------------------------------------------------------------------------------

def _mpirun() -> List[str]:
    mpirun = program("mpirun")
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return [mpirun, *root, "--oversubscribe"]


@two_cpus
def test_mpirun_two_ranks(probe_env: Dict[str, str]) -> None:
    cmd = [*_mpirun(), "-np", "2", PY, PROBE_HELD, *held(probe_env)]
    plan = dry_run(cmd, probe_env, "--json")
    assert plan["kind"] != "plain" and len(plan["ranks"]) == 2
    assert plan["argv"][1:3] == ["--bind-to", "none"]  # Open MPI would bind each rank to a core by itself
    ranks = run_ranks(cmd, probe_env, 2)
    check_ranks(ranks, plan, 2)
    assert all(r.env.get("OMPI_COMM_WORLD_LOCAL_SIZE") == "2" for r in ranks)


@two_cpus
def test_mpirun_binding_asked_is_mpis(probe_env: Dict[str, str]) -> None:
    cmd = [*_mpirun(), "-np", "2", "--bind-to", "core", PY, PROBE_HELD, *held(probe_env)]
    plan = dry_run(cmd, probe_env, "--json")
    assert "--bind-to" in plan["argv"] and "none" not in plan["argv"]
    ranks = run_ranks(cmd, probe_env, 2)
    check_ranks(ranks, plan, 2, hosttune_binds=False)
    assert all(physical_cores(r.cpus) == 1 for r in ranks)  # Open MPI's own core binding, not hosttune's


# ---- deepspeed --------------------------------------------------------------------------------------------------

@two_cpus
def test_deepspeed_two_ranks(probe_env: Dict[str, str]) -> None:
    cmd = [program("deepspeed"), "--num_gpus", "2", PROBE_HELD, *held(probe_env)]
    plan = dry_run(cmd, probe_env, "--json")
    assert len(plan["ranks"]) == 2
    ranks = run_ranks(cmd, probe_env, 2, timeout=180)
    check_ranks(ranks, plan, 2)
