"""Two (or N) ranks of one job started directly, each with the environment torchrun gives a worker, for the engine
tests whose subject is what the ranks do together (gloo collectives, a resume, sharding), not torchrun itself: the
elastic agent is a third interpreter that imports torch (~3 CPU-s a job on these 2-core machines, issue 21).
Behaviours that are about torchrun (--max-restarts after a SIGKILL, a signal to one worker, `hosttune train`'s
exec of it) keep running under real torchrun.

What stands in for the agent: every rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_*,
MASTER_ADDR/MASTER_PORT (a free port: see free_port), TORCHELASTIC_RUN_ID,
TORCHELASTIC_RESTART_COUNT=0 and TORCHELASTIC_MAX_RESTARTS=0; the store is hosted by rank 0, not by an agent
(TORCHELASTIC_USE_AGENT_STORE=False, the engine's other rendezvous path). The ranks share one stdout and one stderr,
as torchrun's workers share the agent's; when one rank fails the others are stopped (torchrun's behaviour without
restarts), so a failure is an exit status, never a hang."""

import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]


# Rank 0 binds the store's port seconds after it was chosen (after it has imported torch). A port from bind(0)
# (torchrun --standalone's way) is an ephemeral one: in that gap the kernel can hand it to anything on the machine
# that connects or binds port 0 (gloo's pairs of another job, an xdist worker's free_port), and the store then fails
# with EADDRINUSE (issue 21). Ports below net.ipv4.ip_local_port_range are never handed out that way, so only
# another explicit choice can take one; ranks() starts a job again on a new port when its store lost the port all
# the same.
_LOWEST = 10000
_ADDRESS_IN_USE = re.compile(r"EADDRINUSE|address already in use", re.IGNORECASE)
_STARTS = 3


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def free_port() -> int:
    """A TCP port free on every IPv4 address now, below the ephemeral range when there is room (else bind(0)'s)."""
    low, draw = _ephemeral_low(), random.SystemRandom()
    for _ in range(200):
        port = draw.randrange(_LOWEST, low) if low > _LOWEST + 1000 else 0
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("", port))
            except OSError:
                continue  # taken: draw again
            return int(s.getsockname()[1])
    raise RuntimeError(f"no free TCP port in {_LOWEST}-{low - 1}")


def rank_env(rank: int, world: int, port: int, run_id: str, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """What torchrun's agent puts in worker `rank`'s environment on a one-node job (torch.distributed.elastic.agent.
    server.local_elastic_agent), over this checkout's environment with one OpenMP thread per rank (as
    tests/conftest.py's torchrun_env)."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    env["OMP_NUM_THREADS"] = "1"  # 2 ranks on 2 cores: one thread each (torchrun's default, minus its warning)
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world),
        "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world),
        "ROLE_NAME": "default", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_USE_AGENT_STORE": "False",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": env.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
    })
    return env


def ranks(args: Sequence[str], cwd: Path, nproc: int = 2, timeout: float = 600,
          env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """`torchrun --standalone --nproc_per_node=NPROC ARGS` without the agent: `python ARGS` once per rank (ARGS as
    torchrun takes them: `-m module ...` or `script.py ...`). Returns the job's exit status (0, or the first failed
    rank's: a signal as 128+N) with the ranks' stdout and stderr. A job whose store found its port taken (EADDRINUSE
    before any rank did work: the store is the first thing a rank binds) is started again on a new port, up to
    _STARTS times in all."""
    for _ in range(_STARTS):
        r = _ranks_once(args, cwd, nproc, timeout, env)
        if r.returncode == 0 or not _ADDRESS_IN_USE.search(r.stderr):
            return r
    return r


def _ranks_once(args: Sequence[str], cwd: Path, nproc: int, timeout: float,
                env: Optional[Dict[str, str]]) -> subprocess.CompletedProcess:
    port, run_id = free_port(), uuid.uuid4().hex[:12]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        procs = [subprocess.Popen([sys.executable, *args], cwd=cwd, env=rank_env(r, nproc, port, run_id, env),
                                  stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
                 for r in range(nproc)]
        status = 0
        deadline = time.monotonic() + timeout
        try:
            while None in [p.poll() for p in procs]:  # a list: every rank polled, not only up to a running one
                if any(p.returncode not in (None, 0) for p in procs):
                    break
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(list(args), timeout)
                time.sleep(0.05)
            failed = [p.returncode for p in procs if p.returncode not in (None, 0)]
            if failed:
                status = failed[0] if failed[0] > 0 else 128 - failed[0]
        finally:
            for p in procs:  # the others of a failed job, or all of them on a timeout
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess([sys.executable, *args], status, out.read(), err.read())


def run_ranks(args: Sequence[str], cwd: Path, nproc: int = 2, timeout: float = 600) -> subprocess.CompletedProcess:
    """ranks() that must succeed (the job's stderr in the failure)."""
    r = ranks(args, cwd, nproc, timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def engine_ranks(engine_args: List[str], cwd: Path, nproc: int = 2) -> subprocess.CompletedProcess:
    """`torchrun --standalone --nproc_per_node=2 -m hosttune.engine ENGINE_ARGS`, agentless, that must succeed."""
    return run_ranks(["-m", "hosttune.engine", *engine_args], cwd, nproc)
