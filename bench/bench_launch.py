#!/usr/bin/env python3
"""`hosttune exec`: launch overhead and training payoff, each against its plain baseline measured in the same run.

    python3 bench/bench_launch.py            # everything (~4-6 min on a 2-core box)
    python3 bench/bench_launch.py --quick    # fewer rounds, overhead + one workload

1. `hosttune exec -- true` vs `true` (goal: < 50 ms added), and the per-rank shim alone (`python -m hosttune.shim
   true` with a launcher's handoff) vs `true` (goal: < 100 ms per rank).
2. `hosttune exec -- torchrun --nproc_per_node=2 noop.py` vs the same torchrun line.
3. The payoff: a small CNN and a small GPT, 2 ranks, DDP over gloo, synthetic data, under plain `torchrun
   --nproc_per_node=2` vs `hosttune exec -- torchrun --nproc_per_node=2`; samples/s measured inside rank 0 after
   warm-up steps (startup excluded). Rounds are interleaved A/B and reported as medians with every round's ratio:
   the machine is shared and a single pair swings by +-30%.

Python runs with a private bytecode cache (PYTHONPYCACHEPREFIX) as an installed package would; this sandbox sets
PYTHONDONTWRITEBYTECODE, which would otherwise charge every start with compiling hosttune from source.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
TORCHRUN = [PY, "-m", "torch.distributed.run"]
HOSTTUNE = [PY, "-m", "hosttune"]

WORKLOAD = r'''
import json, os, sys, time
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

kind, steps, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dist.init_process_group("gloo")
torch.manual_seed(0)
if kind == "cnn":
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(1024, 10))
    batch = 32
    def sample():
        return torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))
    def loss_of(out, y):
        return F.cross_entropy(out, y)
else:
    vocab, seq, d = 512, 64, 128
    layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(torch.zeros(1, seq, d))
            self.body = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)
        def forward(self, x):
            return self.head(self.body(self.emb(x) + self.pos, mask=self.mask, is_causal=True))
    model = GPT()
    batch = 16
    def sample():
        x = torch.randint(0, vocab, (batch, seq + 1))
        return x[:, :-1], x[:, 1:]
    def loss_of(out, y):
        return F.cross_entropy(out.reshape(-1, vocab), y.reshape(-1))
model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
def step():
    x, y = sample()  # fresh tensors every step: the allocator's work, as with a real DataLoader
    opt.zero_grad(set_to_none=True)
    loss_of(model(x), y).backward()
    opt.step()
for _ in range(warmup):
    step()
dist.barrier()
start = time.perf_counter()
for _ in range(steps):
    step()
dist.barrier()
elapsed = time.perf_counter() - start
if dist.get_rank() == 0:
    print("RESULT " + json.dumps({"samples_per_s": steps * batch * dist.get_world_size() / elapsed,
                                  "threads": torch.get_num_threads(), "affinity": sorted(os.sched_getaffinity(0))}))
dist.destroy_process_group()
'''


def bench_env(cache: str) -> Dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = cache
    for key in ("OMP_NUM_THREADS", "LD_PRELOAD", "MALLOC_CONF", "HOSTTUNE_PROFILE"):
        env.pop(key, None)
    return env


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # every reaped descendant: torchrun's ranks too
    return ru.ru_utime + ru.ru_stime


def timed(argv: Sequence[str], env: Dict[str, str], cwd: str) -> Tuple[float, float]:
    """(wall s, CPU s) of one run. CPU time is the steadier figure on a shared, loaded machine."""
    cpu0, start = _cpu(), time.perf_counter()
    r = subprocess.run(list(argv), env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed, cpu = time.perf_counter() - start, _cpu() - cpu0
    if r.returncode != 0:
        raise SystemExit(f"bench_launch: {' '.join(argv)} failed ({r.returncode}): {r.stderr.decode()[-2000:]}")
    return elapsed, cpu


def interleave(cases: Dict[str, List[str]], rounds: int, env: Dict[str, str], cwd: str,
               envs: Optional[Dict[str, Dict[str, str]]] = None) -> Dict[str, List[Tuple[float, float]]]:
    out: Dict[str, List[Tuple[float, float]]] = {name: [] for name in cases}
    for i in range(rounds):
        names = list(cases) if i % 2 == 0 else list(reversed(cases))  # alternate the order: no position bias
        for name in names:
            out[name].append(timed(cases[name], (envs or {}).get(name, env), cwd))
    return out


def ms(values: List[Tuple[float, float]], which: int = 0) -> float:
    """Median wall (which=0) or CPU (which=1) milliseconds."""
    return statistics.median(v[which] for v in values) * 1000


def overhead(rounds: int, env: Dict[str, str], work: str) -> None:
    true = "/bin/true" if os.path.exists("/bin/true") else "true"
    for warm in ([*HOSTTUNE, "exec", "--", true], [PY, "-m", "hosttune.shim", true]):
        subprocess.run(warm, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # pyc cache
    sys.path.insert(0, str(REPO))
    from hosttune import launch

    job = launch.prepare(["torchrun", "--nproc_per_node=2", "noop.py"])
    handoff = launch.handoff.write(launch.handoff_payload(job, "bench"))
    shim_env = dict(env, HOSTTUNE_HANDOFF=handoff, LOCAL_RANK="1", LOCAL_WORLD_SIZE="2")
    try:
        t = interleave(
            {
                "true": [true],
                "python -c pass": [PY, "-c", "pass"],
                "hosttune exec -- true": [*HOSTTUNE, "exec", "--", true],
                "shim (one rank)": [PY, "-m", "hosttune.shim", true],
            },
            rounds, env, work, envs={"shim (one rank)": shim_env},
        )
    finally:
        os.unlink(handoff)
    print(f"plain command, median of {rounds}, wall ms / CPU ms:")
    for name, values in t.items():
        print(f"  {name:24s} {ms(values):8.1f} / {ms(values, 1):7.1f}")
    base, py = t["true"], t["python -c pass"]
    for name, goal in (("hosttune exec -- true", 50), ("shim (one rank)", 100)):
        wall, cpu = ms(t[name]) - ms(base), ms(t[name], 1) - ms(base, 1)
        print(f"  added by {name}: {wall:.0f} ms wall, {cpu:.0f} ms CPU (goal < {goal} ms); that is "
              f"x{wall / max(ms(py) - ms(base), 1e-9):.1f} the start of a bare `python -c pass` here")


PHASES = r"""
import json, sys, time
from pathlib import Path
t = [time.perf_counter()]
import click, hosttune.cli, hosttune.launch; t.append(time.perf_counter())
from hosttune import detect; t.append(time.perf_counter())
facts = detect.collect(Path("/"), probe_torch=False); t.append(time.perf_counter())
from hosttune import profile; t.append(time.perf_counter())
prof = profile.active(None, facts); t.append(time.perf_counter())
from hosttune import plan; t.append(time.perf_counter())
job = hosttune.launch.prepare(["true"], facts=facts); t.append(time.perf_counter())
names = ["cli+click+launch import", "detect import", "detect.collect", "profile import", "profile.active",
         "plan import", "prepare (resolve, argv)"]
print(json.dumps({n: (b - a) * 1000 for n, a, b in zip(names, t, t[1:])}))
"""


def phases(rounds: int, env: Dict[str, str], work: str) -> None:
    """Where the launcher's time goes, phase by phase in one fresh interpreter (medians)."""
    runs = []
    for _ in range(rounds):
        r = subprocess.run([PY, "-c", PHASES], env=env, cwd=work, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"bench_launch: phase probe failed: {r.stderr[-2000:]}")
        runs.append(json.loads(r.stdout))
    parts = ", ".join(f"{name} {statistics.median(x[name] for x in runs):.0f}" for name in runs[0])
    print(f"  launcher phases, median of {rounds} (ms wall): {parts}")


def torchrun_noop(rounds: int, env: Dict[str, str], work: str) -> None:
    Path(work, "noop.py").write_text("")
    plain = [*TORCHRUN, "--nproc_per_node=2", "noop.py"]
    t = interleave({"plain": plain, "hosttune": [*HOSTTUNE, "exec", "--", *plain]}, rounds, env, work)
    a, b = ms(t["plain"]), ms(t["hosttune"])
    ca, cb = ms(t["plain"], 1), ms(t["hosttune"], 1)
    print(f"torchrun --nproc_per_node=2 noop.py, median of {rounds}: plain {a:.0f} ms wall / {ca:.0f} ms CPU | "
          f"hosttune exec {b:.0f} / {cb:.0f} | added {b - a:.0f} ms wall, {cb - ca:.0f} ms CPU per job "
          f"({(cb - ca) / 2:.0f} ms CPU per rank if all of it were the ranks')")


def train_once(argv: List[str], env: Dict[str, str], work: str) -> Dict[str, float]:
    r = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])  # type: ignore[no-any-return]
    raise SystemExit(f"bench_launch: {' '.join(argv)} gave no result ({r.returncode}): {r.stderr[-3000:]}")


def payoff(kind: str, steps: int, rounds: int, env: Dict[str, str], work: str) -> None:
    Path(work, "workload.py").write_text(WORKLOAD)
    plain = [*TORCHRUN, "--nproc_per_node=2", "workload.py", kind, str(steps), "3"]
    tuned = [*HOSTTUNE, "exec", "--", *plain]
    ratios, a_all, b_all = [], [], []
    for i in range(rounds):
        order = [("plain", plain), ("tuned", tuned)] if i % 2 == 0 else [("tuned", tuned), ("plain", plain)]
        got = {name: train_once(argv, env, work) for name, argv in order}
        a_all.append(got["plain"]["samples_per_s"])
        b_all.append(got["tuned"]["samples_per_s"])
        ratios.append(b_all[-1] / a_all[-1])
        if i == 0:
            print(f"  {kind}: rank 0 plain: threads {got['plain']['threads']} cpus {got['plain']['affinity']}; "
                  f"hosttune: threads {got['tuned']['threads']} cpus {got['tuned']['affinity']}")
    print(f"{kind} 2 ranks gloo, samples/s median of {rounds}: plain torchrun {statistics.median(a_all):.1f} | "
          f"hosttune exec {statistics.median(b_all):.1f} | ratio x{statistics.median(ratios):.2f} "
          f"(rounds: {' '.join(f'{r:.2f}' for r in ratios)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds; overhead and the CNN only")
    ap.add_argument("--rounds", type=int, default=None, help="training rounds per workload (default 3, quick 2)")
    ap.add_argument("--skip-train", action="store_true")
    args = ap.parse_args()
    rounds = args.rounds or (2 if args.quick else 3)
    with tempfile.TemporaryDirectory(prefix="hosttune-bench-") as work:
        env = bench_env(os.path.join(work, "pyc"))
        print(f"host: {os.cpu_count()} CPUs, allowed {sorted(os.sched_getaffinity(0))}, "
              f"load {os.getloadavg()[0]:.2f}")
        overhead(9 if args.quick else 21, env, work)
        phases(5, env, work)
        torchrun_noop(2 if args.quick else 3, env, work)
        if not args.skip_train:
            payoff("cnn", 15, rounds, env, work)
            if not args.quick:
                payoff("gpt", 20, rounds, env, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
