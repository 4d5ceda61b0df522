#!/usr/bin/env python3
"""`hosttune autotune` proven on a real job: tune it with a fixed budget, then measure four arms side by side.

    python3 bench/bench_autotune.py                    # GPT-like job, --budget 20m, 5 rounds of the four arms
    python3 bench/bench_autotune.py --job cnn          # the CNN job instead
    python3 bench/bench_autotune.py --quick            # 1 candidate (unbound), --budget 9m, 2 rounds (~13-17 min)
    python3 bench/bench_autotune.py --candidates unbound,glibc --budget 8m --rounds 4
    python3 bench/bench_autotune.py --job cnn --cotenant 1   # the whole bench beside one spinning co-tenant

The jobs are bench_launch.py's: a small GPT-like transformer or a small CNN, 2 ranks under torchrun, DDP over gloo,
synthetic data, rank 0 printing `RESULT {"samples_per_s": ...}` after its warm-up steps.

1. `hosttune autotune --budget B --metric '"samples_per_s": ([0-9.]+)' --warmup 0 --output W -- torchrun ...`
   (its whole output is shown). W is written only when a candidate provably won; otherwise the default stays and
   the measured arm below is the default plan again (said so). On a busy host autotune adds up to 8 confirmation
   rounds within the budget (its table says how many), so a busy --quick run takes up to the whole 9 minutes.
2. One interleaved measurement of four arms, every round running each arm once (the order reversed every other
   round, so no arm always follows another):
     plain     torchrun --nproc_per_node=2 workload.py ...            (the launcher alone)
     hand      the same, each rank under `taskset -c` on its half of the allowed CPUs, OMP_NUM_THREADS = that half,
               LD_PRELOAD=libjemalloc with its default settings (the usual hand tuning)
     default   hosttune exec -- torchrun ...                         (hosttune's default plan)
     measured  hosttune exec --profile W -- torchrun ...              (the plan autotune measured best)
   Every round's samples/s and ratio to plain is printed, then the medians, and the measured arm against the
   default arm's per-round ratio (the issue's goal: the measured arm is never below the default's interval).

`--cotenant N` runs N spinning processes (no affinity of their own, like another tenant's job) for the whole bench,
autotune and arms alike: a shared host with a steady, reproducible load, where a plan that pins each rank to one
core can lose to one that lets the kernel spread the ranks around the other tenant.

The machine's contention during each round is printed with it (/proc/pressure/cpu avg10 where present, and the
load average): numbers from a shared, busy host are labelled as such, not presented as the job's true speed.

Measured here, busy-machine numbers (2 vCPU VM shared with six other sessions' tests, load 2.7-4.6, CPU pressure
avg10 35-85% during the arms), `--quick` (autotune of the one candidate `unbound`, 17 trials, 266-286 s spent):
GPT: unbound x1.095 [1.032, 1.409] over 8 rounds but not 8 of 8 above 1.01: no winner, the default stays; arms over
2 rounds vs plain: hand x0.67 (0.66 0.68), default x1.14 (1.22 1.07), measured(= default) x0.98 (1.09 0.88).
CNN: unbound x1.032 [0.969, 1.255]: no winner; hand x0.73 (0.67 0.80), default x1.05 (1.10 1.00), measured(=
default) x1.01 (1.25 0.76). The same plan run twice (measured vs default) differed by x0.76-1.14 per round here:
that is the host, which is why autotune decides on adjacent ratios over many rounds and widens on a busy host.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_launch import HOSTTUNE, TORCHRUN, WORKLOAD, bench_env  # noqa: E402

METRIC = r'"samples_per_s": ([0-9.]+)'
STEPS = {"cnn": 15, "gpt": 20}
ARMS = ("plain", "hand", "default", "measured")


def contention() -> str:
    try:
        some = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        psi = "cpu pressure avg10 " + some.split("avg10=")[1].split()[0] + "%"
    except (OSError, IndexError):
        psi = "no /proc/pressure"
    return f"load {os.getloadavg()[0]:.2f}, {psi}"


def jemalloc() -> Optional[str]:
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"):
        p = Path(d, "libjemalloc.so.2")
        if p.exists():
            return str(p)
    return None


HAND = """#!/bin/sh
# one rank, hand-tuned: its half of the CPUs, that many threads, jemalloc with its default settings
cpus=$(python3 -c "import os; c=sorted(os.sched_getaffinity(0)); n=max(1,len(c)//int(os.environ['LOCAL_WORLD_SIZE'])); \
r=int(os.environ['LOCAL_RANK']); print(','.join(map(str,c[r*n:(r+1)*n] or c)))")
export OMP_NUM_THREADS=$(echo "$cpus" | tr ',' '\\n' | wc -l)
{preload}
exec taskset -c "$cpus" "{py}" "$@"
"""


def arms(work: str, job: List[str], profile: Optional[str]) -> Dict[str, List[str]]:
    hand = Path(work, "hand.sh")
    lib = jemalloc()
    hand.write_text(HAND.format(py=sys.executable, preload=f"export LD_PRELOAD={lib}" if lib else ""))
    hand.chmod(0o755)
    plain = [*TORCHRUN, *job]
    measured = [*HOSTTUNE, "exec", *(["--profile", profile] if profile else []), "--", *plain]
    return {"plain": plain, "hand": [*TORCHRUN, "--no-python", str(hand), *job],
            "default": [*HOSTTUNE, "exec", "--", *plain], "measured": measured}


def once(argv: List[str], env: Dict[str, str], work: str) -> Optional[float]:
    r = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return float(json.loads(line[len("RESULT "):])["samples_per_s"])
    print(f"  (a run failed, exit {r.returncode}: {(r.stderr.strip().splitlines() or ['-'])[-1][:200]})", flush=True)
    return None


def autotune(job: List[str], args: argparse.Namespace, env: Dict[str, str], work: str) -> Optional[str]:
    out = os.path.join(work, "measured.yaml")
    only = ["--candidates", args.candidates] if args.candidates else []
    opts = ["--budget", args.budget, "--trial", f"{args.trial:g}", "--metric", METRIC, "--warmup", "0", *only]
    print("$ hosttune autotune", " ".join(opts), "--output measured.yaml -- torchrun ...", flush=True)
    argv = [*HOSTTUNE, "autotune", *opts, "--output", out, "--", *TORCHRUN, *job]
    rc = subprocess.call(argv, env=env, cwd=work)
    if rc != 0:
        raise SystemExit(f"bench_autotune: autotune failed (exit {rc})")
    if not os.path.exists(out):
        print("autotune kept the default plan (no measurable gain): the measured arm is the default plan again")
        return None
    return out


def measure(cases: Dict[str, List[str]], rounds: int, env: Dict[str, str], work: str) -> Dict[str, List[float]]:
    got: Dict[str, List[float]] = {a: [] for a in ARMS}
    for i in range(rounds):
        order = list(ARMS) if i % 2 == 0 else list(reversed(ARMS))
        row = {a: once(cases[a], env, work) for a in order}
        if any(v is None for v in row.values()):
            print(f"round {i + 1}: dropped (a run failed); {contention()}", flush=True)
            continue
        vals = {a: float(row[a] or 0.0) for a in ARMS}
        for a in ARMS:
            got[a].append(vals[a])
        print(f"round {i + 1}: " + "  ".join(f"{a} {vals[a]:.1f}" for a in ARMS) + " samples/s | vs plain: "
              + " ".join(f"{a} x{vals[a] / vals['plain']:.2f}" for a in ARMS[1:])
              + f" | measured/default x{vals['measured'] / vals['default']:.2f} | {contention()}", flush=True)
    return got


def report(got: Dict[str, List[float]]) -> None:
    n = len(got["plain"])
    if not n:
        print("no complete round")
        return
    print(f"medians over {n} round(s), samples/s: " + "  ".join(f"{a} {statistics.median(got[a]):.1f}" for a in ARMS))
    for a in ARMS[1:]:
        r = [x / p for x, p in zip(got[a], got["plain"])]
        print(f"  {a:<8} vs plain: x{statistics.median(r):.2f} (rounds: {' '.join(f'{x:.2f}' for x in r)})")
    md = [m / d for m, d in zip(got["measured"], got["default"])]
    dd = [d / p for d, p in zip(got["default"], got["plain"])]
    print(f"  measured vs default: x{statistics.median(md):.2f} (rounds: {' '.join(f'{x:.2f}' for x in md)}); "
          f"default vs plain ranged {min(dd):.2f}-{max(dd):.2f}")


def cotenant(n: int) -> List[subprocess.Popen]:
    """n spinning processes, started in their own session (killed with the bench, never outliving it)."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True) for _ in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--job", choices=sorted(STEPS), default="gpt")
    ap.add_argument("--quick", action="store_true", help="1 candidate (unbound), --budget 9m, 2 rounds")
    ap.add_argument("--budget", default=None, help="autotune's budget (default 20m, quick 9m)")
    ap.add_argument("--candidates", default=None, help="autotune --candidates (quick: unbound)")
    ap.add_argument("--trial", type=float, default=30.0,
                    help="autotune --trial: a trial's window, seconds (an upper bound: this job ends by itself)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds of the four arms (default 5, quick 2)")
    ap.add_argument("--cotenant", type=int, default=0, metavar="N",
                    help="N spinning processes beside the whole bench (a steady co-tenant)")
    args = ap.parse_args()
    args.budget = args.budget or ("9m" if args.quick else "20m")
    args.candidates = args.candidates or ("unbound" if args.quick else None)
    rounds = args.rounds or (2 if args.quick else 5)
    work = tempfile.mkdtemp(prefix="hosttune-bench-autotune-")
    spinners = cotenant(args.cotenant)
    try:
        env = bench_env(os.path.join(work, "pyc"))
        Path(work, "workload.py").write_text(WORKLOAD)
        job = ["workload.py", args.job, str(STEPS[args.job]), "3"]
        print(f"host: {os.cpu_count()} CPUs, allowed {sorted(os.sched_getaffinity(0))}, {contention()}; "
              f"{args.cotenant} co-tenant spinner(s); command: {' '.join(sys.argv)}", flush=True)
        profile = autotune(job, args, env, work)
        print(f"four arms, {rounds} interleaved round(s), {args.job} job, 2 ranks; {contention()}", flush=True)
        report(measure(arms(work, job, profile), rounds, env, work))
        print(f"at the end: {contention()}")
    finally:
        for p in spinners:
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
