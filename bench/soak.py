#!/usr/bin/env python3
"""Soak: many consecutive finished 2-rank gloo runs of the smallest preset, through the real launchers, on a busy
machine; every one must exit 0. Counts aborts (a rank killed by a signal: SIGABRT's "terminate called without an
active exception" at interpreter shutdown, issue 21), hangs (no exit within --timeout; the run's process group is
killed) and other failures, and prints a JSON summary (exit status 0 only when every run exited 0).

    python3 bench/soak.py                          # 50 runs, alternating `hosttune train --nproc 2` and torchrun
    python3 bench/soak.py --runs 10 --launcher train
    python3 bench/soak.py --rev 530e61d            # the engine as it was at a commit (git archive), e.g. before a fix
    python3 bench/soak.py --busy 0                 # no busy loops (default: one per CPU)

--rev exports that commit's hosttune/ into a temporary directory and runs it from there, so "before" and "after"
are the real code of each, with no switch in the product.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parents[1]
# resnet-tiny (~0.18M parameters), the smaller preset, cut to a few steps: the run still builds DDP, all-reduces
# gradients, checkpoints, evaluates and tears the group down, which is what the soak is about.
ENGINE_ARGS = ["--preset", "resnet-tiny", "--set", "steps=4", "--set", "log_interval=2", "--set", "eval_batches=1",
               "--set", "device=cpu", "--set", "num_workers=0"]
ABORT_MARKS = ("terminate called", "SIGABRT", "Signal 6", "exitcode  : -6", "Aborted")


def launcher_argv(kind: str, run_dir: str) -> List[str]:
    engine = [*ENGINE_ARGS, "--run-dir", run_dir]
    if kind == "train":
        return [sys.executable, "-m", "hosttune", "train", "--nproc", "2", "--python", sys.executable, *engine]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m",
            "hosttune.engine", *engine]


def busy_loops(n: int) -> List[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
            for _ in range(n)]


def one_run(kind: str, code: Path, work: Path, timeout: float) -> Dict[str, object]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(code)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if kind == "torchrun":
        env["OMP_NUM_THREADS"] = "1"  # what torchrun would set, minus its warning
    run_dir = tempfile.mkdtemp(prefix="run-", dir=work)
    t0 = time.monotonic()
    proc = subprocess.Popen(launcher_argv(kind, run_dir), cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        outcome = "ok" if proc.returncode == 0 else "failed"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher's own session: every rank with it
        out, _ = proc.communicate()
        outcome = "hang"
    except BaseException:  # the soak itself interrupted: no rank outlives it
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    seconds = round(time.monotonic() - t0, 1)
    if outcome == "failed" and (proc.returncode < 0 or any(m in out for m in ABORT_MARKS)):
        outcome = "abort"
    if outcome == "ok" and "terminate called" in out:  # a rank aborted but the launcher said 0: still an abort
        outcome = "abort"
    shutil.rmtree(run_dir, ignore_errors=True)
    return {"launcher": kind, "outcome": outcome, "returncode": proc.returncode, "seconds": seconds,
            "tail": out[-1500:] if outcome != "ok" else ""}


def export_rev(rev: str, into: Path) -> str:
    """The tree of `rev` (hosttune/ and the profiles it reads), unpacked under `into`; returns the commit id."""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                            capture_output=True, text=True)
    if commit.returncode != 0:
        raise SystemExit(f"soak: error: {rev!r} is not a commit of {REPO}")
    # tar.umask=0022: no group-writable files (as root, hosttune refuses a profile others could change).
    archive = subprocess.Popen(["git", "-C", str(REPO), "-c", "tar.umask=0022", "archive", commit.stdout.strip()],
                               stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"soak: error: git archive {rev} failed")
    return commit.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--launcher", choices=("both", "train", "torchrun"), default="both",
                    help="`hosttune train --nproc 2`, torchrun -m hosttune.engine, or alternating (default)")
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 1, help="busy loops kept running (default: CPUs)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before a run counts as a hang")
    ap.add_argument("--rev", help="run the engine of this commit instead of the working tree")
    ap.add_argument("--verbose", action="store_true", help="one line per run on stderr")
    args = ap.parse_args()
    if args.runs < 1 or args.busy < 0 or args.timeout <= 0:
        ap.error("--runs >= 1, --busy >= 0, --timeout > 0")
    kinds = ["train", "torchrun"] if args.launcher == "both" else [args.launcher]
    work = Path(tempfile.mkdtemp(prefix="hosttune-soak-"))
    code, rev = REPO, "working tree"
    loops: List[subprocess.Popen] = []
    results: List[Dict[str, object]] = []
    # SIGTERM/SIGHUP end the soak like Ctrl-C: the busy loops and the temporary directory go with it.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    try:
        if args.rev:
            code = work / "code"
            code.mkdir()
            rev = export_rev(args.rev, code)
        loops = busy_loops(args.busy)
        for i in range(args.runs):
            r = one_run(kinds[i % len(kinds)], code, work, args.timeout)
            results.append(r)
            if args.verbose:
                print(f"soak: run {i + 1}/{args.runs} {r['launcher']}: {r['outcome']} (exit {r['returncode']}, "
                      f"{r['seconds']} s)", file=sys.stderr, flush=True)
    finally:
        for p in loops:
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)
    count = {k: sum(r["outcome"] == k for r in results) for k in ("ok", "abort", "hang", "failed")}
    summary = {"runs": len(results), **count, "rev": rev, "busy_loops": args.busy,
               "by_launcher": {k: {o: sum(r["outcome"] == o for r in results if r["launcher"] == k)
                                   for o in ("ok", "abort", "hang", "failed")} for k in kinds},
               "median_s": statistics.median(float(str(r["seconds"])) for r in results),
               "failures": [r for r in results if r["outcome"] != "ok"][:5]}
    print(json.dumps(summary, indent=1))
    return 0 if count["ok"] == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
