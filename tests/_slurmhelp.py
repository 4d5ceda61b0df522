"""What the real-Slurm test modules share (tests/test_slurm_real.py, tests/test_slurm_cgroup_jobs.py): Slurm's
programs from Debian's packages, a free port, this machine's node line, and the processes of a single-node cluster
(munged, slurmctld, slurmd in the foreground, each in a session of its own) with a time budget per test."""

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import List

from _ranks import free_port

SBIN = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
TOOLS = ("munged", "mungekey", "slurmctld", "slurmd", "srun", "scontrol")


def tool(name: str) -> str:
    return shutil.which(name, path=os.pathsep.join(SBIN)) or ""


def missing_tools() -> List[str]:
    return [t for t in TOOLS if not tool(t)]


def node_line() -> str:
    """This machine's node line as slurmd sees it (a mismatch would drain the node for "low socket*core count"),
    RealMemory kept small so it never exceeds what is free."""
    line = subprocess.run([tool("slurmd"), "-C"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
    return re.sub(r"RealMemory=\d+", "RealMemory=500", line) + " NodeAddr=127.0.0.1"


class ClusterBase:
    """The cluster's processes and the test's time budget (a guard against a hang: each wait is for a state)."""

    def __init__(self, base: Path, budget: float, grace: float) -> None:
        self.base = base
        self.conf = base / "slurm.conf"
        self.node = socket.gethostname().split(".")[0]
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.procs: List[subprocess.Popen[bytes]] = []
        self.deadline = time.monotonic() + budget
        self.grace = grace

    def left(self, most: float) -> float:
        """At most `most` seconds, and never past the test's budget."""
        return max(1.0, min(most, self.deadline - time.monotonic()))

    def start(self, argv: List[str], log: str) -> None:
        with open(self.base / log, "wb") as out:
            # its own session: the finalizer kills the whole process group (slurmd's health checks included)
            self.procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                               start_new_session=True, cwd=self.base))

    def make_key(self) -> None:
        subprocess.run([tool("mungekey"), "-c", "-k", str(self.base / "munge.key"), "-b", "1024", "-f"], check=True,
                       capture_output=True, timeout=30)

    def conf_head(self, name: str, proctrack: str) -> str:
        """slurm.conf's first lines: this node as the controller, munge on the test's own socket, the state, spool,
        pid files, logs and two free ports in the test's directory, task/affinity on cores, `proctrack`. The caller
        adds what is its own, the node and the partition."""
        base = self.base
        return f"""ClusterName={name}
SlurmctldHost={self.node}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={base}/munge.sock
CredType=cred/munge
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd.pid
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
ProctrackType={proctrack}
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldLogFile={base}/slurmctld.log
SlurmdLogFile={base}/slurmd.log
"""

    def start_daemons(self) -> None:
        """munged (waited for: its socket), then slurmctld and slurmd in the foreground; the caller waits for the
        node's state."""
        base = self.base
        self.start([tool("munged"), "-F", "--force", f"--key-file={base}/munge.key", f"--socket={base}/munge.sock",
                    f"--pid-file={base}/munged.pid", f"--log-file={base}/munged.log",
                    f"--seed-file={base}/munge.seed"], "munged.out")
        deadline = time.monotonic() + self.left(120)
        while not (base / "munge.sock").exists():
            assert time.monotonic() < deadline, (base / "munged.out").read_text()
            time.sleep(0.1)
        self.start([tool("slurmctld"), "-D", "-i", "-f", str(self.conf)], "slurmctld.out")
        self.start([tool("slurmd"), "-D", "-f", str(self.conf)], "slurmd.out")

    def stop(self) -> None:
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + self.grace
        for p in reversed(self.procs):
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
