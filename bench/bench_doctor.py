#!/usr/bin/env python3
"""`hosttune doctor --json` vs `python -m torch.utils.collect_env`, interleaved, medians, ratio.

collect_env is what PyTorch asks people to paste into bug reports: it prints versions and checks nothing.
doctor detects the host (including the torch probe: one run of the training interpreter) and runs every check.
Both run as fresh processes with the same interpreter, alternating A/B/A/B so that load from other users of the
machine hits both alike. The doctor run is verified to have probed torch, so the comparison is not against a
run that skipped the slow part.

`doctor --deep` (the same checks plus the measured ones: torch for real, CPU matmul/triad/bf16, a gloo or NCCL
all-reduce through torchrun, the GPU measurements on a GPU host, --data reads, /dev/shm) is timed after that, in
its own rounds, against plain doctor's median: its goal is about a minute on an 8-GPU host.

    python3 bench/bench_doctor.py [--rounds N] [--deep-rounds N] [--data PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import List

DOCTOR = [sys.executable, "-m", "hosttune", "doctor", "--json"]
DEEP = DOCTOR + ["--deep"]
COLLECT_ENV = [sys.executable, "-m", "torch.utils.collect_env"]


def timed(argv: List[str]) -> "tuple[float, str]":
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    return time.perf_counter() - start, done.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--deep-rounds", type=int, default=3, help="rounds of doctor --deep (0: skip it)")
    ap.add_argument("--data", action="append", default=[], help="--data PATH for doctor --deep (repeat)")
    args = ap.parse_args()
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    timed(DOCTOR)  # warm the page cache for both before measuring
    timed(COLLECT_ENV)
    doc: List[float] = []
    col: List[float] = []
    checks = 0
    for _ in range(args.rounds):
        t, out = timed(DOCTOR)
        data = json.loads(out)
        by = {f["id"]: f for f in data["findings"]}
        if by["torch.version"]["status"] != "pass":
            print(f"bench_doctor: torch was not probed: {by['torch.version']['actual']}", file=sys.stderr)
            return 1
        checks = len(data["findings"])
        doc.append(t)
        t, out = timed(COLLECT_ENV)
        if "PyTorch version" not in out:
            print("bench_doctor: collect_env printed no report", file=sys.stderr)
            return 1
        col.append(t)
    d, c = statistics.median(doc), statistics.median(col)
    print(f"doctor --json      median {d:.2f} s  ({checks} checks, torch probe included)  runs: "
          + " ".join(f"{x:.2f}" for x in doc))
    print(f"collect_env        median {c:.2f} s  (0 checks)  runs: " + " ".join(f"{x:.2f}" for x in col))
    print(f"ratio collect_env/doctor: x{c / d:.1f} (goal >= 4)   [{args.rounds} interleaved rounds, {env_note}]")
    if args.deep_rounds > 0:
        return bench_deep(args.deep_rounds, args.data, d)
    return 0


def bench_deep(rounds: int, data: List[str], plain: float) -> int:
    """doctor --deep's wall time (the whole command: detection, every check, every measurement) vs plain doctor."""
    argv = DEEP + [a for p in data for a in ("--data", p)]
    runs: List[float] = []
    measured = 0
    for _ in range(rounds):
        t, out = timed(argv)
        findings = json.loads(out)["findings"]
        deep = [f for f in findings if ".deep_" in f["id"]]
        if not deep:
            print("bench_doctor: doctor --deep reported no measured findings", file=sys.stderr)
            return 1
        measured = len([f for f in deep if f["status"] != "skip"])
        runs.append(t)
    m = statistics.median(runs)
    print(f"doctor --deep      median {m:.2f} s  ({measured} measured findings)  runs: "
          + " ".join(f"{x:.2f}" for x in runs))
    print(f"ratio deep/doctor: x{m / plain:.1f} (goal: about a minute in all on an 8-GPU host)   [{rounds} rounds]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
