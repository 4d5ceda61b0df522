#!/usr/bin/env python3
"""Decoded images/s per backend on the bundled JPEGs (hosttune/engine/data/images/, 48 x 128x128), as ratios
against PIL full measured in the same run, plus the absolute numbers.

Backends: PIL full (Image.open + convert("RGB")), PIL draft (Image.draft to the target: libjpeg's DCT scaling),
turbojpeg full and turbojpeg scaled (PyTurboJPEG's scaling_factor: the smallest that still covers the target),
through the engine's own decoders (hosttune/engine/decoders.py). The files are read into memory first: this
measures decoding, not the disk. One process, one thread. Rounds alternate the backends (the order rotates every
round) so load from other processes hits them alike; each backend's figure is its median round.

    python3 bench/bench_decode.py                  # target 16 px (resnet-tiny's image_size), 7 rounds
    python3 bench/bench_decode.py --size 64 --rounds 9 --cpu-time   # on a loaded, shared host
    python3 bench/bench_decode.py --json
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hosttune import fsio  # noqa: E402
from hosttune.engine.decoders import ImageDataError, make_decoder  # noqa: E402

BUNDLED = REPO / "hosttune" / "engine" / "data" / "images"
BACKENDS = (("PIL full", "pil", False), ("PIL draft", "pil", True), ("turbojpeg full", "turbojpeg", False),
            ("turbojpeg scaled", "turbojpeg", True))


def load(folder: Path) -> List[Tuple[str, bytes]]:
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg") and p.is_file())
    return [(str(p), fsio.read_bounded(p, 64 << 20, nofollow=True)) for p in files]


def runner(decoder: str, reduce: bool, size: int, images: List[Tuple[str, bytes]]) -> Callable[[], Tuple[int, str]]:
    dec = make_decoder(decoder)

    def one_pass() -> Tuple[int, str]:
        shape = ""
        for where, data in images:
            out = dec.decode(data, where, size, reduce)
            shape = f"{out.shape[1]}x{out.shape[0]}"
        return len(images), shape  # the last image's decoded size

    return one_pass


def measure(runs: Dict[str, Callable[[], Tuple[int, str]]], rounds: int, repeat: int, cpu_time: bool
            ) -> Dict[str, Dict[str, Any]]:
    clock = time.process_time if cpu_time else time.perf_counter
    names = list(runs)
    rates: Dict[str, List[float]] = {n: [] for n in names}
    decoded: Dict[str, str] = {}
    for n in names:  # warm-up: imports, first-call costs
        decoded[n] = runs[n]()[1]
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for n in order:
            t0 = clock()
            count = sum(runs[n]()[0] for _ in range(repeat))
            rates[n].append(count / max(clock() - t0, 1e-9))
    return {n: {"images_per_s": statistics.median(rates[n]), "decoded_to": decoded[n]} for n in names}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=16, help="target side in pixels (default 16: resnet-tiny)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=5, help="passes over the images per round")
    ap.add_argument("--cpu-time", action="store_true", help="process CPU time instead of wall time")
    ap.add_argument("--folder", type=Path, default=BUNDLED)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    images = load(args.folder)
    if not images:
        print(f"bench_decode: no JPEG files under {args.folder}", file=sys.stderr)
        return 2
    runs: Dict[str, Callable[[], Tuple[int, str]]] = {}
    missing: Dict[str, str] = {}
    for label, decoder, reduce in BACKENDS:
        try:
            runs[label] = runner(decoder, reduce, args.size, images)
        except ImageDataError as exc:
            missing[label] = str(exc)
    if "PIL full" not in runs:
        print(f"bench_decode: {missing['PIL full']}", file=sys.stderr)
        return 2
    res = measure(runs, args.rounds, args.repeat, args.cpu_time)
    base = res["PIL full"]["images_per_s"]
    for r in res.values():
        r["vs_pil_full"] = round(r["images_per_s"] / base, 2)
        r["images_per_s"] = round(r["images_per_s"], 1)
    if args.json:
        print(json.dumps({"images": len(images), "size": args.size, "results": res, "missing": missing}, indent=1))
        return 0
    clock = "CPU time" if args.cpu_time else "wall time"
    print(f"{len(images)} JPEGs from {args.folder}, target {args.size}px, median of {args.rounds} rounds x "
          f"{args.repeat} passes ({clock}, one thread)")
    print(f"{'backend':<18}{'images/s':>10}{'vs PIL full':>13}{'decoded to':>13}")
    for label, r in res.items():
        print(f"{label:<18}{r['images_per_s']:>10.1f}{r['vs_pil_full']:>12.2f}x{r['decoded_to']:>13}")
    for label, why in missing.items():
        print(f"{label:<18}{'n/a':>10}  {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
