"""Which job a GPU works for, from a real Slurm job's cgroup: a single-node Slurm from Debian's packages (munge,
slurmctld, slurmd in the foreground on localhost, started and stopped here) with ProctrackType=proctrack/cgroup, so
slurmstepd puts each step's processes in the cgroups it makes (`/slurm/uid_0/job_N/step_0/...` in each v1
controller it uses). A process started by `srun` is given to the fake NVML by its real pid; the monitor labels the
GPU with that Slurm job id, read from the cgroup Slurm made; and `hosttune exec` inside the same step records its
job, which the monitor confirms from that cgroup too (not a claim of $SLURM_JOB_ID).

Needs root, `apt-get install munge slurmctld slurmd slurm-client` (Makefile TEST_APT) and cgroup v1 hierarchies
Slurm can write (freezer at least); skipped otherwise.
"""

import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
from _slurmhelp import ClusterBase, missing_tools
from _slurmhelp import node_line as _node_line
from _slurmhelp import tool as _tool
from conftest import a100

from hosttune.monitor import jobs
from hosttune.monitor.config import MonitorConfig
from hosttune.monitor.daemon import Monitor

REPO = Path(__file__).resolve().parents[1]
BUDGET = 600  # seconds per test, cluster start included: a guard against a hang, each wait is for a state
FREEZER = Path("/sys/fs/cgroup/freezer")

pytestmark = pytest.mark.integration


missing = missing_tools()
if os.geteuid() != 0 or missing:
    pytest.skip(f"needs root and {', '.join(missing) or 'root'} (apt-get install munge slurmctld slurmd slurm-client)",
                allow_module_level=True)
if not os.access(FREEZER, os.W_OK):
    pytest.skip(f"Slurm's proctrack/cgroup (cgroup v1 here) needs a writable {FREEZER}", allow_module_level=True)


class Cluster(ClusterBase):
    def __init__(self, base: Path) -> None:
        super().__init__(base, BUDGET, grace=10)

    def logs(self) -> str:
        return "\n".join(f"--- {n}\n{(self.base / n).read_text(errors='replace')[-3000:]}"
                         for n in ("slurmd.log", "slurmctld.log", "slurmd.out") if (self.base / n).exists())

    def state(self) -> str:
        out = subprocess.run([_tool("scontrol"), "-o", "show", "node", self.node], capture_output=True, text=True,
                             env=self.env, timeout=15)
        m = re.search(r"\bState=(\S+)", out.stdout)
        return m.group(1) if m else ""


def _write_conf(c: Cluster) -> None:
    base = c.base
    # A first job id of its own: two test runs on one machine share the cgroup tree Slurm makes (/slurm/uid_0/...).
    first = random.randrange(1_000, 60_000_000)  # MaxJobId defaults to 67043328
    c.conf.write_text(c.conf_head("hosttune-cg", "proctrack/cgroup") + f"""FirstJobId={first}
SlurmdDebug=debug
{_node_line()}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
    # slurmd reads cgroup.conf beside slurm.conf. cgroup v1 here (/sys/fs/cgroup is a tmpfs of v1 hierarchies);
    # nothing constrained: only proctrack's cgroups are wanted.
    (base / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n"
                                      "CgroupAutomount=no\nConstrainCores=no\nConstrainRAMSpace=no\n"
                                      "ConstrainDevices=no\n")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="ht-slcg-", dir="/tmp"))  # short: munge's socket must fit in sun_path
    base.chmod(0o755)
    c = Cluster(base)
    try:
        for sub in ("state", "spool", "out"):
            (base / sub).mkdir()
        c.make_key()
        _write_conf(c)
        c.start_daemons()
        deadline = time.monotonic() + c.left(300)
        while not c.state().startswith("IDLE"):
            assert c.procs[-1].poll() is None, f"slurmd exited\n{c.logs()}"
            assert time.monotonic() < deadline, f"slurmd never registered\n{c.logs()}"
            time.sleep(0.3)
        yield c
    finally:
        c.stop()
        shutil.rmtree(base, ignore_errors=True)


# The step's task: writes its pid and $SLURM_JOB_ID, then waits until the test lets it go.
TASK = ("import os, sys, time\n"
        "out, go = sys.argv[1:3]\n"
        "open(out + '.tmp', 'w').write(f\"{os.getpid()} {os.environ['SLURM_JOB_ID']}\")\n"
        "os.rename(out + '.tmp', out)\n"
        "while not os.path.exists(go):\n"
        "    time.sleep(0.05)\n")


def _wait(cluster: Cluster, path: Path, srun: "subprocess.Popen[bytes]") -> List[str]:
    deadline = time.monotonic() + cluster.left(300)
    while not path.exists():
        assert srun.poll() is None, f"srun ended: {srun.returncode}\n{cluster.logs()}"
        assert time.monotonic() < deadline, f"the step never started\n{cluster.logs()}"
        time.sleep(0.1)
    return path.read_text().split()


def test_the_monitor_names_a_real_slurm_jobs_gpu_from_the_cgroup_slurm_made(
        cluster: Cluster, fake_nvml: Callable[[Any], Dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    out, go = cluster.base / "out" / "task", cluster.base / "out" / "go"
    # hosttune exec inside the step (its record: GPU 1, as CUDA_VISIBLE_DEVICES says), the task under it
    env = dict(cluster.env, PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES="1", CUDA_DEVICE_ORDER="PCI_BUS_ID")
    srun = subprocess.Popen([_tool("srun"), "-n", "1", sys.executable, "-m", "hosttune", "exec", "--",
                             sys.executable, "-c", TASK, str(out), str(go)], env=env, cwd=cluster.base,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pid_s, job = _wait(cluster, out, srun)
        pid = int(pid_s)
        cgroup = Path(f"/proc/{pid}/cgroup").read_text()
        assert re.search(rf":/slurm[^/:]*/uid_0/job_{job}/step_0", cgroup), cgroup  # Slurm's own cgroup
        # NVML lists the task on GPU 0 only; GPU 1 has no process list, only exec's record
        fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
                   "devices": [a100(0, "3B", processes=[{"pid": pid, "used_memory_mb": 1024}]), a100(1, "5E")]})
        mon = Monitor(MonitorConfig(log_dir=str(cluster.base / "log"), textfile_dir=""), root=cluster.base)
        mon.open_sources()
        try:
            rec = mon.take()
        finally:
            mon.close()
        records = jobs.Records().read()
    finally:
        go.touch()
        try:
            srun.communicate(timeout=cluster.left(120))
        finally:
            if srun.poll() is None:
                srun.kill()
                srun.wait()
    g0, g1 = rec["gpus"]
    assert g0["processes"][0]["job"] == job and g0["processes"][0]["kind"] == "slurm", g0
    assert g0["jobs"] == [{"job": job, "kind": "slurm", "user": "root"}]
    assert g1["jobs"] == [{"job": job, "kind": "slurm", "user": "root"}]
    # exec's record names the task's process; its job is the cgroup's word, not the $SLURM_JOB_ID it also carries
    assert [(r["pid"], r["job"], r["claimed"]) for r in records] == [(pid, job, False)]
    assert srun.returncode == 0
