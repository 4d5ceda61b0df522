"""A real single-node Slurm from Debian's packages (munge, slurmctld, slurmd in the foreground on localhost, started
and stopped here; task/affinity, no cgroups): `srun -n 2 hosttune exec` gives each task its own core inside the one
Slurm gave it, and `hosttune doctor --slurm` as HealthCheckProgram drains the node with the failing check as the
reason, resumes it when fixed, and leaves an admin's drain alone.

Needs root and `apt-get install munge slurmctld slurmd slurm-client` (Makefile TEST_APT); skipped otherwise.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, Iterator

import pytest
from _slurmhelp import ClusterBase, missing_tools
from _slurmhelp import node_line as _node_line
from _slurmhelp import tool as _tool

REPO = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).resolve().parent / "probes" / "probe.py"
INTERVAL = 2  # HealthCheckInterval, seconds
# Seconds per test, cluster start included: every wait below is cut to what is left of it. A guard against a
# hang, never a speed test: each wait is for a state (a socket, the node's state, a count of health checks), and a
# busy machine (load 10 on 2 cores) may take minutes to reach it.
BUDGET = 900

pytestmark = pytest.mark.integration


missing = missing_tools()
if os.geteuid() != 0 or missing:
    pytest.skip(f"needs root and {', '.join(missing) or 'root'} (apt-get install munge slurmctld slurmd slurm-client)",
                allow_module_level=True)


class Cluster(ClusterBase):
    def __init__(self, base: Path) -> None:
        super().__init__(base, BUDGET, grace=5)
        self.profile = base / "profile.yaml"

    def scontrol(self, *args: str) -> str:
        return subprocess.run([_tool("scontrol"), *args], capture_output=True, text=True, env=self.env,
                              timeout=15, check=True).stdout

    def show(self) -> Dict[str, str]:
        line = self.scontrol("-o", "show", "node", self.node)
        state = re.search(r"\bState=(\S+)", line)
        reason = re.search(r"\bReason=(.*?)(?: \[[^\]]*\])?\s*$", line)
        return {"state": state.group(1) if state else "", "reason": reason.group(1) if reason else ""}

    def wait_for(self, what: str, ok: Callable[[Dict[str, str]], bool], seconds: float = 300) -> Dict[str, str]:
        deadline = time.monotonic() + self.left(seconds)
        node = self.show()
        while not ok(node):
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {n}\n{(self.base / n).read_text(errors='replace')[-1500:]}"
                                 for n in ("hc.out", "slurmd.log", "slurmctld.log") if (self.base / n).exists())
                raise AssertionError(f"node never {what}: {node}\n{logs}")
            time.sleep(0.3)
            node = self.show()
        return node

    def health_runs(self) -> int:
        runs = self.base / "hc.runs"
        return len(runs.read_text().splitlines()) if runs.exists() else 0


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    # a short path: munge's socket must fit in sun_path (108 bytes)
    base = Path(tempfile.mkdtemp(prefix="ht-slurm-", dir="/tmp"))
    base.chmod(0o755)  # munged wants its socket directory searchable by all
    c = Cluster(base)
    try:
        for sub in ("state", "spool", "etc", "config", "out"):
            (base / sub).mkdir()
        c.profile.write_text("threads: 1\n")
        c.make_key()
        hc = base / "healthcheck"
        # slurmd runs HealthCheckProgram with no arguments and a bare environment (SLURMD_NODENAME only): a
        # wrapper names the options, and here the test's slurm.conf and a profile the test breaks and fixes, and
        # hosttune's directories of the test's own (never the host's /etc, /run, /var/lib, /var/log hosttune).
        hc.write_text(f"""#!/bin/sh
echo run >> {base}/hc.runs
export SLURM_CONF={c.conf} PATH=/usr/sbin:/usr/bin:/sbin:/bin PYTHONPATH={REPO}
export HOSTTUNE_PROFILE={c.profile} HOSTTUNE_ETC_DIR={base}/etc XDG_CONFIG_HOME={base}/config HOME={base}
export HOSTTUNE_RUNTIME_DIR={base}/run HOSTTUNE_STATE_DIR={base}/state-hosttune HOSTTUNE_LOG_DIR={base}/log
exec {sys.executable} -m hosttune doctor --slurm --only hosttune >> {base}/hc.out 2>&1
""")
        hc.chmod(0o755)
        c.conf.write_text(c.conf_head("hosttune-test", "proctrack/linuxproc") + f"""HealthCheckProgram={hc}
HealthCheckInterval={INTERVAL}
HealthCheckNodeState=ANY
{_node_line()}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        c.start_daemons()
        deadline = time.monotonic() + c.left(300)
        while True:
            try:
                if c.show()["state"].startswith("IDLE"):
                    break
            except subprocess.CalledProcessError:
                pass
            assert time.monotonic() < deadline, "slurmd never registered"
            time.sleep(0.3)
        yield c
    finally:
        c.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_srun_tasks_get_their_own_cores_inside_slurms(cluster: Cluster) -> None:
    ntasks = 2
    env = dict(cluster.env, PYTHONPATH=str(REPO), PROBE_OUT=str(cluster.base / "out"))
    srun = [_tool("srun"), "-n", str(ntasks), "--cpu-bind=cores"]
    given = subprocess.run(srun + [sys.executable, "-c", "import os; print(os.environ['SLURM_PROCID'], "
                                   "','.join(map(str, sorted(os.sched_getaffinity(0)))))"],
                           capture_output=True, text=True, env=env, timeout=cluster.left(300), cwd=cluster.base)
    assert given.returncode == 0, given.stderr
    slurm_cpus = {int(r): {int(c) for c in cpus.split(",")} for r, cpus in (ln.split() for ln in
                                                                           given.stdout.splitlines())}
    assert len(slurm_cpus) == ntasks
    done = subprocess.run(srun + [sys.executable, "-m", "hosttune", "exec", "--", sys.executable, str(PROBE)],
                          capture_output=True, text=True, env=env, timeout=cluster.left(300), cwd=cluster.base)
    assert done.returncode == 0, done.stderr
    reports = [json.loads(p.read_text()) for p in sorted((cluster.base / "out").glob("rank-*.json"))]
    assert len(reports) == ntasks, done.stderr
    mine = {int(r["hosttune_local_rank"]): set(r["affinity"]) for r in reports}
    assert sorted(mine) == list(range(ntasks))
    for rank, cpus in mine.items():
        assert cpus and cpus <= slurm_cpus[rank], (rank, cpus, slurm_cpus)
    for r in reports:  # the plan was made inside Slurm's mask: one thread per core the task was given
        assert r["env"]["OMP_NUM_THREADS"] == str(len(slurm_cpus[int(r["hosttune_local_rank"])])), r["env"]
    assert not set.intersection(*mine.values())  # no two tasks share a core


def test_healthcheck_drains_with_the_failing_check_and_resumes(cluster: Cluster) -> None:
    cluster.wait_for("ran the health check", lambda n: cluster.health_runs() >= 1)
    assert "DRAIN" not in cluster.show()["state"]

    cluster.profile.write_text("threads: many\n")  # hosttune.profile now fails
    node = cluster.wait_for("drained", lambda n: "DRAIN" in n["state"])
    assert node["reason"].startswith(f"hosttune: hosttune.profile: {cluster.profile}"), node

    cluster.profile.write_text("threads: 1\n")
    node = cluster.wait_for("resumed", lambda n: "DRAIN" not in n["state"])
    assert node["state"].startswith("IDLE") and not node["reason"], node

    # an admin's drain survives passing and failing health checks
    cluster.scontrol("update", f"nodename={cluster.node}", "state=drain", "reason=admin: disk swap")
    for profile in ("threads: 1\n", "threads: many\n"):
        cluster.profile.write_text(profile)
        runs = cluster.health_runs()
        cluster.wait_for("checked twice more", lambda n, r=runs: cluster.health_runs() >= r + 2)
        node = cluster.show()
        assert "DRAIN" in node["state"] and node["reason"] == "admin: disk swap", node
    assert "left alone" in (cluster.base / "hc.out").read_text()
