#!/usr/bin/env python3
"""Run every benchmark in bench/ (or the ones named) one after another and print their ratio lines.

Each bench_*.py measures hosttune against a named baseline in the same run and prints its own ratios; this script
only sequences them so that two benchmarks never compete for this machine's cores.

    python3 bench/run.py                 # all
    python3 bench/run.py facts doctor    # bench_facts.py and bench_doctor.py
"""

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list) -> int:
    known = sorted(p.stem[len("bench_") :] for p in HERE.glob("bench_*.py"))
    names = argv or known
    failed = []
    for name in names:
        script = HERE / f"bench_{name}.py"
        if not script.exists():
            print(f"bench/run.py: no benchmark named {name!r} (have: {', '.join(known)})")
            return 2
        print(f"==> {script.name}", flush=True)
        start = time.monotonic()
        rc = subprocess.call([sys.executable, str(script)])
        print(f"<== {script.name}: exit {rc} after {time.monotonic() - start:.0f} s", flush=True)
        if rc:
            failed.append(name)
    if failed:
        print("failed:", " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
