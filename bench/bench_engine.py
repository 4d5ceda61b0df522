#!/usr/bin/env python3
"""The engine's overhead against a plain hand-written PyTorch loop, and samples/s per preset at 1 and 2 ranks.

Overhead: the same model (gpt-tiny's shape), data, batch, dtype (fp32 here), optimizer, clipping and LR schedule,
single process. Rounds alternate engine / plain (order flipped every round) so load from other processes hits
both alike; each round's figure is its median step time after a warm-up interval. Goal: engine/plain <= 1.02.

    python3 bench/bench_engine.py                # overhead (5 rounds) + samples/s for both presets at 1 and 2 ranks
    python3 bench/bench_engine.py --rounds 3 --no-ranks
    python3 bench/bench_engine.py --rounds 3 --no-ranks --no-fused   # both loops with the foreach AdamW
    python3 bench/bench_engine.py --rounds 9 --no-ranks --threads 1 --cpu-time   # on a loaded, shared host
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from hosttune.engine import optim  # noqa: E402
from hosttune.engine.config import load_config  # noqa: E402
from hosttune.engine.optim import fused_optimizer_ok, lr_at  # noqa: E402
from hosttune.engine.task import build_preset_task  # noqa: E402
from hosttune.engine.train import run  # noqa: E402

STEPS, INTERVAL = 60, 10  # per round: 6 intervals, the first (warm-up) dropped
FUSED = True  # --no-fused: both loops with the foreach AdamW (what the engine used on CPU before fused)


def cfg_for(run_dir: str):
    return load_config("gpt-tiny", None, [f"steps={STEPS}", f"log_interval={INTERVAL}", "amp=off", "device=cpu",
                                          "num_workers=0", "eval_batches=1"], {"run_dir": run_dir})


def engine_round(tmp: Path, i: int) -> float:
    cfg = cfg_for(str(tmp / f"engine-{i}"))
    torch.manual_seed(cfg.seed)
    run(cfg, build_preset_task(cfg))
    lines = [json.loads(x) for x in (tmp / f"engine-{i}" / "metrics.jsonl").read_text().splitlines()]
    return statistics.median(r["step_time_s"] for r in lines if "step_time_s" in r and r["step"] > INTERVAL)


def plain_round(tmp: Path, i: int) -> float:
    """What a careful user would write by hand for the same work (no metrics, no checkpoints)."""
    cfg = cfg_for(str(tmp / f"plain-{i}"))
    torch.manual_seed(cfg.seed)
    task = build_preset_task(cfg)
    model = task.model
    torch.manual_seed(cfg.seed)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    fused = {"fused": True} if FUSED and fused_optimizer_ok(torch.device("cpu")) else {}  # as the engine does
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": other, "weight_decay": 0.0}], lr=cfg.lr, betas=(cfg.beta1, cfg.beta2),
                            **fused)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_at(s, cfg) / cfg.lr)
    loader = torch.utils.data.DataLoader(task.train_set, batch_size=cfg.micro_batch_size, shuffle=True,
                                         drop_last=True)
    it = iter(loader)
    times, t = [], time.perf_counter()
    model.train()
    for step in range(STEPS):
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        loss = task.loss_fn(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        if (step + 1) % INTERVAL == 0:
            loss.item()  # the same sync the engine does at its log interval
            now = time.perf_counter()
            times.append((now - t) / INTERVAL)
            t = now
    return statistics.median(times[1:])


def ranks_samples_per_s(preset: str, nproc: int, tmp: Path) -> float:
    run_dir = tmp / f"{preset}-{nproc}"
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS=str(max(1, (os.cpu_count() or 2) // nproc)))
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                    "-m", "hosttune.engine", "--preset", preset, "--set", "steps=60", "--set", "log_interval=10",
                    "--run-dir", str(run_dir)], check=True, env=env, capture_output=True)
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return statistics.median(r["samples_per_s"] for r in lines if "samples_per_s" in r and r.get("step", 0) > 10)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-ranks", action="store_true", help="skip the 1-/2-rank samples/s runs")
    ap.add_argument("--no-overhead", action="store_true", help="only the 1-/2-rank samples/s runs")
    ap.add_argument("--threads", type=int, default=0, help="torch threads for the overhead rounds (0 = default)")
    ap.add_argument("--no-fused", action="store_true", help="both loops without fused AdamW (the old CPU default)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time both loops in this process's CPU time, not wall time: on a shared, loaded host the "
                         "wall clock mostly measures the other processes (one thread: CPU time = compute time)")
    args = ap.parse_args()
    if args.cpu_time:
        time.perf_counter = time.process_time  # the engine's and the plain loop's clock alike
    if args.no_fused:
        global FUSED
        FUSED = False
        optim.fused_optimizer_ok = lambda device: device.type == "cuda"  # type: ignore[assignment]
    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as d:
        tmp = Path(d)
        ratios, eng, pla = [], [], []
        for i in range(0 if args.no_overhead else args.rounds):
            order = (engine_round, plain_round) if i % 2 == 0 else (plain_round, engine_round)
            res = {f.__name__: f(tmp, i) for f in order}
            eng.append(res["engine_round"])
            pla.append(res["plain_round"])
            ratios.append(res["engine_round"] / res["plain_round"])
            print(f"round {i}: engine {res['engine_round'] * 1e3:.1f} ms/step, plain {res['plain_round'] * 1e3:.1f} "
                  f"ms/step, ratio {ratios[-1]:.3f}", flush=True)
        out = {"bench": "engine_overhead", "ratio_median": float("nan")} if args.no_overhead else {
               "bench": "engine_overhead", "model": "gpt-tiny fp32 1 rank", "rounds": args.rounds,
               "threads": torch.get_num_threads(), "clock": "cpu" if args.cpu_time else "wall",
               "fused_adamw": FUSED and fused_optimizer_ok(torch.device("cpu")),
               "engine_ms": round(statistics.median(eng) * 1e3, 2), "plain_ms": round(statistics.median(pla) * 1e3, 2),
               "ratio_median": round(statistics.median(ratios), 4), "ratio_min": round(min(ratios), 4),
               "ratio_max": round(max(ratios), 4), "goal": 1.02}
        if not args.no_overhead:
            print(json.dumps(out), flush=True)
        if not args.no_ranks:
            for preset in ("resnet-tiny", "gpt-tiny"):
                sps = {n: ranks_samples_per_s(preset, n, tmp) for n in (1, 2)}
                print(json.dumps({"bench": "engine_samples_per_s", "preset": preset, "ranks_1": sps[1],
                                  "ranks_2": sps[2], "ratio_2_over_1": round(sps[2] / sps[1], 3)}), flush=True)
    return 0 if args.no_overhead or math.isfinite(out["ratio_median"]) else 1


if __name__ == "__main__":
    sys.exit(main())
