#!/usr/bin/env python3
"""`hosttune doctor --json` vs `python -m torch.utils.collect_env`, interleaved, medians, ratio.

collect_env is what PyTorch asks people to paste into bug reports: it prints versions and checks nothing.
doctor detects the host (including the torch probe: one run of the training interpreter) and runs every check.
Both run as fresh processes with the same interpreter, alternating A/B/A/B so that load from other users of the
machine hits both alike. The doctor run is verified to have probed torch, so the comparison is not against a
run that skipped the slow part.

    python3 bench/bench_doctor.py [--rounds N]
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
COLLECT_ENV = [sys.executable, "-m", "torch.utils.collect_env"]


def timed(argv: List[str]) -> "tuple[float, str]":
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    return time.perf_counter() - start, done.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
