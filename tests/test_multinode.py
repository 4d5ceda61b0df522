"""A two-node job for real (issue 26), and a hang across the two nodes: two "nodes" on this machine, each a network
namespace joined by a veth pair (tests/_nethelp.py) and each held to one CPU of its own (a cgroup cpuset where one
can be made here, else taskset), each running
`hosttune exec -- torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint A:PORT`.

What a user would see: the job all-reduces across the nodes and learns exactly what one job of the same world size
learns; each node's rank is bound inside that node's CPU; the interface hosttune named to gloo is the veth (the
host name of this machine may resolve to loopback: the plan's PET_LOCAL_ADDR then keeps torchrun from handing it to
the other node); and killing one node's `hosttune exec` (SIGKILL: it cannot forward anything) ends the job on both
nodes with an error, not a hang. When one node's rank never reaches a collective, the other node's
`hosttune exec --hang-timeout` names its waiting rank, and both nodes end. Phases are waited for by the files the
ranks write, never by sleeping."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import pytest
from _nethelp import Nodes, in_ns, two_nodes
from conftest import TORCHRUN, torchrun_env

pytestmark = pytest.mark.integration
torch = pytest.importorskip("torch")

PORT = 29400  # each namespace has its own ports: two runs at once never meet
WAIT_S = 240.0  # generous: torchrun start-up on a loaded 2-core machine

SCRIPT = r'''
import json, os, sys, time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

out, hold = sys.argv[1], sys.argv[2] == "hold"
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
ddp = DDP(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1)
X = torch.randn(64, 8, generator=g)
Y = X @ torch.randn(8, 1, generator=g)
losses = []
for step in range(30):
    loss = ((ddp(X[rank::world]) - Y[rank::world]) ** 2).mean()  # each rank its own shard of the batch
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        losses.append(((model(X) - Y) ** 2).mean().item())
info = {"rank": rank, "world": world, "pid": os.getpid(), "local_rank": int(os.environ["LOCAL_RANK"]),
        "local_world": int(os.environ["LOCAL_WORLD_SIZE"]), "allreduce": t.item(), "losses": losses,
        "cpus": sorted(os.sched_getaffinity(0)), "threads": torch.get_num_threads(),
        "env": {k: os.environ.get(k) for k in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "MASTER_ADDR")}}
tmp = os.path.join(out, f".rank{rank}.json")
with open(tmp, "w") as fh:
    json.dump(info, fh)
os.rename(tmp, os.path.join(out, f"rank{rank}.json"))
if hold:  # keep all-reducing until the other node goes away
    while True:
        dist.all_reduce(torch.ones(1))
        time.sleep(0.02)
dist.destroy_process_group()
'''


# ---- one CPU per node ---------------------------------------------------------------------------------------------

def _cpuset_root() -> Tuple[Optional[Path], str]:
    """(directory to make a cpuset cgroup in, how), or (None, why not): cgroup v2 with cpuset enabled at the root,
    else a cgroup v1 cpuset hierarchy; both only where this process may write there."""
    v2 = Path("/sys/fs/cgroup")
    if "cpuset" in _read(v2 / "cgroup.subtree_control").split() and os.access(v2, os.W_OK):
        return v2, "cgroup v2 cpuset"
    for v1 in (Path("/sys/fs/cgroup/cpuset"), Path("/sys/fs/cgroup/cpuset,cpuacct")):
        if (v1 / "cpuset.cpus").exists() and os.access(v1, os.W_OK):
            return v1, "cgroup v1 cpuset"
    return None, "no writable cpuset cgroup here"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@contextmanager
def _one_cpu(cpu: int, tag: str) -> Iterator[List[str]]:
    """The argv prefix that starts a command inside a cpuset of `cpu` alone (removed afterwards), else taskset."""
    base, how = _cpuset_root()
    if base is None:
        if not shutil.which("taskset"):
            pytest.skip(f"{how}, and no taskset")
        yield ["taskset", "-c", str(cpu)]
        return
    group = base / f"hosttune-test-{tag}"
    group.mkdir()
    try:
        (group / "cpuset.cpus").write_text(str(cpu))
        mems = _read(base / "cpuset.mems").strip() or _read(base / "cpuset.mems.effective").strip() or "0"
        (group / "cpuset.mems").write_text(mems.split(",")[0].split("-")[0])
        procs = group / "cgroup.procs"
        # the shell moves itself into the cpuset, then becomes the command: everything it starts stays inside
        yield ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh"]
    finally:
        _rmdir_when_empty(group)


def _rmdir_when_empty(group: Path) -> None:
    deadline = time.monotonic() + 60
    while True:  # a killed job's last processes leave the cgroup as the kernel reaps them
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


# ---- running the nodes --------------------------------------------------------------------------------------------

def _tails(logs: List[Path]) -> str:
    return "\n".join(f"--- {log.name}:\n{log.read_text(errors='replace')[-2500:]}" for log in logs if log.exists())


def _wait_for(paths: List[Path], procs: List["subprocess.Popen[bytes]"], logs: List[Path]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not all(p.exists() for p in paths):
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            raise AssertionError(f"a node ended (status {[p.returncode for p in dead]}) before "
                                 f"{[p.name for p in paths]} appeared\n{_tails(logs)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{[p.name for p in paths if not p.exists()]} not written in {WAIT_S:.0f} s\n"
                                 f"{_tails(logs)}")
        time.sleep(0.1)


def _node_argv(nodes: Nodes, i: int, script: Path, out: Path, run_id: str,
               exec_opts: Tuple[str, ...] = ()) -> List[str]:
    return [sys.executable, "-m", "hosttune", "exec", *exec_opts, "--", *TORCHRUN, "--nnodes", "2", "--nproc-per-node",
            "1", "--node-rank", str(i), "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{nodes.addr[0]}:{PORT}",
            "--rdzv-id", run_id, "--max-restarts", "0", str(script), str(out), "hold"]


def _kill_tree(proc: "subprocess.Popen[bytes]") -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=60)


def _cpus_for_two_nodes() -> Tuple[int, int]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("two nodes of one CPU each need two CPUs")
    return cpus[0], cpus[1]


def test_two_nodes_over_a_veth_pair_train_as_one_and_end_together(tmp_path: Path) -> None:
    script = tmp_path / "train2n.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    out.mkdir()
    cpus = _cpus_for_two_nodes()
    tag = uuid.uuid4().hex[:8]
    env = torchrun_env()
    procs: List[subprocess.Popen[bytes]] = []
    with two_nodes() as nodes, ExitStack() as stack:
        log_paths = [tmp_path / f"node{i}.log" for i in (0, 1)]
        logs = [path.open("wb") for path in log_paths]
        for fh in logs:
            stack.callback(fh.close)
        prefixes = [stack.enter_context(_one_cpu(cpus[i], f"{tag}-{i}")) for i in (0, 1)]
        try:
            for i in (0, 1):
                argv = prefixes[i] + in_ns(nodes.ns[i], _node_argv(nodes, i, script, out, tag))
                procs.append(subprocess.Popen(argv, env=env, stdout=logs[i], stderr=subprocess.STDOUT,
                                              cwd=tmp_path))
            _wait_for([out / "rank0.json", out / "rank1.json"], procs, log_paths)
            ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
            _check_ranks(ranks, nodes, cpus)
            # the job is all-reducing now: kill one node's hosttune exec outright (SIGKILL: nothing is forwarded)
            victim = 1
            assert "hosttune" in Path(f"/proc/{procs[victim].pid}/cmdline").read_bytes().decode(errors="replace")
            os.kill(procs[victim].pid, signal.SIGKILL)
            survivor = procs[1 - victim]
            rc = survivor.wait(timeout=WAIT_S)  # no hang: the other node's job ends on its own
            for r in ranks:
                _wait_gone(r["pid"])  # both nodes' ranks are gone (the killed node's: hosttune's guardian)
        finally:
            for p in procs:
                _kill_tree(p)
        peer = nodes.addr[victim]
    text = (tmp_path / "node0.log").read_text(errors="replace")
    assert rc != 0, text[-3000:]
    # torchrun's failure report, after the rank's gloo error naming the node that went away
    assert "ChildFailedError" in text and f"[{peer}]" in text, text[-3000:]
    _compare_with_one_node(ranks)


def _check_ranks(ranks: List[Dict], nodes: Nodes, cpus: Tuple[int, int]) -> None:
    for r in ranks:
        assert r["world"] == 2 and r["local_world"] == 1 and r["local_rank"] == 0
        assert r["allreduce"] == 3.0  # 1 + 2: both nodes took part
    by_node = {i: next(r for r in ranks if r["env"]["GLOO_SOCKET_IFNAME"] == nodes.ifname[i]) for i in (0, 1)}
    for i in (0, 1):  # each node's rank: its veth named, bound inside its own node's CPU
        assert by_node[i]["env"]["NCCL_SOCKET_IFNAME"] == nodes.ifname[i]
        assert by_node[i]["cpus"] == [cpus[i]]
        assert by_node[i]["threads"] == 1
    assert ranks[0]["losses"] == ranks[1]["losses"]  # one model, kept in step by the all-reduce
    assert ranks[0]["losses"][-1] < 0.5 * ranks[0]["losses"][0]


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while Path(f"/proc/{pid}").exists() and _state(pid) != "Z":
        assert time.monotonic() < deadline, f"rank {pid} still runs {WAIT_S:.0f} s after its node was killed"
        time.sleep(0.1)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def _compare_with_one_node(two_node: List[Dict]) -> None:
    """The two-node run learns exactly what one 2-rank DDP job of SCRIPT learns: the two-node run is one job, not two.
    The reference is that job's arithmetic, done here (issue 21: it was a third torchrun run of SCRIPT, three torch
    start-ups): the same seeds, model and data, each rank's gradient of its own shard's loss, averaged over the two
    ranks as DDP's all-reduce does (each divided by the world size, then summed), then the same SGD step."""
    with torch.random.fork_rng():  # this process's own random state is left as it was
        torch.manual_seed(0)
        model = torch.nn.Linear(8, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(1)
        X = torch.randn(64, 8, generator=g)
        Y = X @ torch.randn(8, 1, generator=g)
        losses = []
        for _step in range(30):
            grads = []
            for rank in (0, 1):
                model.zero_grad()
                ((model(X[rank::2]) - Y[rank::2]) ** 2).mean().backward()
                grads.append([p.grad.clone() for p in model.parameters()])
            for p, g0, g1 in zip(model.parameters(), grads[0], grads[1]):
                p.grad = g0 / 2 + g1 / 2
            opt.step()
            with torch.no_grad():
                losses.append(((model(X) - Y) ** 2).mean().item())
    assert two_node[0]["losses"] == pytest.approx(losses, rel=1e-6, abs=1e-9)


HANG_SCRIPT = r'''
import os, sys, threading, time

# A line a second until both ranks are ready: node 0's 5 s watch is for the hang below, not for a start-up (torch's
# import, the rendezvous) that a busy machine makes longer than 5 s (issue 21: no dependence on the machine's speed).
started = threading.Event()
threading.Thread(target=lambda: [print("starting", flush=True) for _ in iter(lambda: started.wait(1.0), True)],
                 daemon=True).start()
import torch
import torch.distributed as dist

out = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
dist.all_reduce(torch.ones(1))
started.set()
print(f"rank {rank} ready", flush=True)
open(os.path.join(out, f"ready{rank}"), "w").close()


def late_rank():  # the stuck rank: it never reaches the all-reduce the other node's rank waits in, until "go"
    while not os.path.exists(os.path.join(out, "go")):
        time.sleep(0.05)


if rank == 1:
    late_rank()
dist.all_reduce(torch.ones(1))
'''


def test_a_hang_across_two_nodes_is_named_on_the_node_that_waits_and_ends_both(tmp_path: Path) -> None:
    """Issue 26, a hang across nodes: node 1's rank never reaches the all-reduce node 0's rank waits in. Node 0's
    `hosttune exec --hang-timeout` names its rank and the collective, saves the stacks and stops with 124; node 1
    (whose watch is set long, so the order of the two is the test's, not the clock's) then ends with an error when
    its rank reaches the all-reduce with no peer left: no node hangs."""
    script = tmp_path / "hang2n.py"
    script.write_text(HANG_SCRIPT)
    out = tmp_path / "out"
    out.mkdir()
    tag = uuid.uuid4().hex[:8]
    env = torchrun_env()
    procs: List[subprocess.Popen[bytes]] = []
    cwd = [tmp_path / "n0", tmp_path / "n1"]
    log_paths = [tmp_path / f"node{i}.log" for i in (0, 1)]
    with two_nodes() as nodes, ExitStack() as stack:
        logs = [path.open("wb") for path in log_paths]
        for fh in logs:
            stack.callback(fh.close)
        try:
            for i, timeout in ((0, "5s"), (1, "1h")):
                cwd[i].mkdir()
                argv = in_ns(nodes.ns[i], _node_argv(nodes, i, script, out, tag, ("--hang-timeout", timeout)))
                procs.append(subprocess.Popen(argv, env=env, stdout=logs[i], stderr=subprocess.STDOUT, cwd=cwd[i]))
            _wait_for([out / "ready0", out / "ready1"], procs, log_paths)
            rc0 = procs[0].wait(timeout=WAIT_S)  # node 0's watch: 5 s without output, then stacks and a stop
            (out / "go").touch()  # node 1's rank goes on into the all-reduce: node 0 is gone
            rc1 = procs[1].wait(timeout=WAIT_S)
        finally:
            for p in procs:
                _kill_tree(p)
    text0 = log_paths[0].read_text(errors="replace")
    assert rc0 == 124, text0[-3000:]
    hang = [line for line in text0.splitlines() if "hosttune: hang:" in line]
    assert len(hang) == 1 and "rank 0" in hang[0] and "all_reduce" in hang[0], text0[-3000:]
    dirs = list(cwd[0].glob("hosttune-hang-*"))
    assert len(dirs) == 1, text0[-3000:]
    stacks = list(dirs[0].glob("stacks-rank0-*.txt"))
    assert len(stacks) == 1 and "all_reduce" in stacks[0].read_text(), sorted(p.name for p in dirs[0].iterdir())
    assert rc1 != 0 and not list(cwd[1].glob("hosttune-hang-*")), log_paths[1].read_text(errors="replace")[-3000:]
