"""`hosttune facts --json` against `python -m torch.utils.collect_env`, interleaved in one run; prints the ratio.

Both report the host for a PyTorch bug report; collect_env imports torch (about 2 s here) and runs several
tools, while hosttune reads /proc and /sys and runs the target interpreter once without importing torch.

    python3 bench/bench_facts.py [--rounds N] [--python PATH]
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from typing import Dict, List


def _time(argv: List[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--python", default=sys.executable, help="interpreter with torch (for both tools)")
    args = ap.parse_args()
    exe = shutil.which("hosttune")
    facts = [exe, "facts", "--json"] if exe else [sys.executable, "-m", "hosttune", "facts", "--json"]
    facts += ["--python", args.python]
    runs: Dict[str, List[float]] = {"hosttune facts --json": [], "python -m torch.utils.collect_env": []}
    _time(facts)  # warm the page cache for both once, so round 1 is not a cold-start outlier
    _time([args.python, "-m", "torch.utils.collect_env"])
    for i in range(args.rounds):
        # Alternate the order each round so neither always runs right after the other's cache effects.
        order = list(runs) if i % 2 == 0 else list(reversed(runs))
        for name in order:
            argv = facts if name.startswith("hosttune") else [args.python, "-m", "torch.utils.collect_env"]
            runs[name].append(_time(argv))
    med = {name: statistics.median(v) for name, v in runs.items()}
    for name, values in runs.items():
        print(f"{name:36s} median {med[name]:.3f} s  runs {' '.join(f'{v:.2f}' for v in values)}")
    ratio = med["python -m torch.utils.collect_env"] / med["hosttune facts --json"]
    print(f"ratio collect_env / hosttune facts: {ratio:.1f}x (goal >= 10x)")


if __name__ == "__main__":
    main()
