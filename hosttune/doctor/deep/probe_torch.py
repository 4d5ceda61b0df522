#!/usr/bin/env python3
"""hosttune doctor --deep's measurements, run INSIDE the training interpreter. Self-contained (the standard library
and torch only, Python 3.6+), so it also runs by hand on any GPU machine:

    python3 probe_torch.py                        # torch info, CPU and GPU measurements, human-readable
    python3 probe_torch.py --json --measure info,gpu_compute --seconds 0.3
    torchrun --standalone --nproc_per_node 8 probe_torch.py --json --measure allreduce --backend nccl
    python3 probe_torch.py --json --measure disk --file /data/train   # no torch needed
    python3 probe_torch.py --json --measure shm

With --json every line is one JSON object: {"event": "start", "what": W} before a measurement, {"event": "result",
"what": W, ...} after it, {"event": "error", "what": W, "error": E} when it raised, {"event": "end"} last. hosttune
runs it with a timeout and, when the process has to be killed, names the last W that started and never finished.
Raw numbers only (bytes, seconds, FLOPs): what they should be is decided in hosttune (hosttune.policy).
"""

import argparse
import json
import mmap
import os
import sys
import tempfile
import time

JSON = False
RANK = 0
MiB = 1 << 20


def emit(event, what, **data):
    if RANK != 0 and event != "error":
        return
    rec = {"event": event, "what": what}
    rec.update(data)
    if JSON:
        line = json.dumps(rec, sort_keys=True)
    elif event == "start":
        line = "... " + what
    else:
        line = "{} {}: {}".format(event, what, ", ".join(f"{k}={v}" for k, v in sorted(data.items())))
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def short_error(exc):
    text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:600]


def measure(what, fn, *args):
    """Run one measurement between a start and a result (or error) line."""
    emit("start", what)
    try:
        data = fn(*args)
    except Exception as exc:  # noqa: BLE001 - one measurement failing must not stop the others
        emit("error", what, error=short_error(exc))
        return None
    emit("result", what, **(data or {}))
    return data


def timed_loop(step, seconds, sync=None, min_iters=1):
    """Run `step` until `seconds` have passed (at least `min_iters` times): (iterations, elapsed seconds)."""
    if sync:
        sync()
    start = time.perf_counter()
    iters, batch = 0, 1
    while True:
        for _ in range(batch):
            step()
        iters += batch
        if sync:
            sync()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and iters >= min_iters:
            return iters, elapsed
        batch = min(batch * 2, 64)


# ---- torch works --------------------------------------------------------------------------------------------------
def torch_info():
    start = time.perf_counter()
    import torch  # noqa: F401 - the import is the measurement

    out = {"version": torch.__version__, "cuda": getattr(torch.version, "cuda", None),
           "import_s": round(time.perf_counter() - start, 3), "python": sys.executable,
           "threads": torch.get_num_threads()}
    cpu_cap = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    out["cpu_capability"] = cpu_cap() if cpu_cap else None
    dist = getattr(torch, "distributed", None)
    out["gloo"] = bool(dist and dist.is_available() and dist.is_gloo_available())
    out["nccl"] = bool(dist and dist.is_available() and dist.is_nccl_available())
    out["cuda_available"] = bool(torch.cuda.is_available())
    devices, error = [], None
    if out["cuda"]:
        try:
            # is_available() swallows the reason; init() raises it (driver too old, no permission on /dev/nvidia*,
            # no device visible, MIG without a usable instance).
            torch.cuda.init()
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                d = {"index": i, "name": p.name, "capability": [p.major, p.minor],
                     # bf16 from the capability: is_bf16_supported() also says True on V100/T4 (emulated, slow)
                     "bf16": p.major >= 8, "memory_mb": int(p.total_memory) // MiB}
                bus = getattr(p, "pci_bus_id", None)
                if bus is not None:
                    dom, dev = getattr(p, "pci_domain_id", 0), getattr(p, "pci_device_id", 0)
                    d["pci_bus_id"] = f"{dom:04x}:{bus:02x}:{dev:02x}.0"
                try:
                    torch.zeros(1, device=f"cuda:{i}").add_(1)
                    torch.cuda.synchronize(i)
                except Exception as exc:  # noqa: BLE001 - the device's own error is the finding
                    d["error"] = short_error(exc)
                devices.append(d)
        except Exception as exc:  # noqa: BLE001 - the first CUDA error is the finding
            error = short_error(exc)
    out["devices"] = devices
    out["cuda_error"] = error
    return out


# ---- CPU ----------------------------------------------------------------------------------------------------------
def cpu_matmul(n, seconds):
    import torch

    a, b = torch.randn(n, n), torch.randn(n, n)
    timed_loop(lambda: torch.mm(a, b), seconds / 4, min_iters=3)  # thread pool and kernels warm
    iters, elapsed = timed_loop(lambda: torch.mm(a, b), seconds)
    return {"n": n, "iters": iters, "seconds": elapsed, "flops": 2.0 * n ** 3 * iters,
            "threads": torch.get_num_threads()}


def cpu_triad(elems, seconds):
    """STREAM triad a = b + s*c: 3 arrays of float32 move per element (read b, c; write a)."""
    import torch

    a, b, c = torch.empty(elems), torch.rand(elems), torch.rand(elems)
    torch.add(b, c, alpha=3.0, out=a)
    iters, elapsed = timed_loop(lambda: torch.add(b, c, alpha=3.0, out=a), seconds, min_iters=3)
    return {"elems": elems, "iters": iters, "seconds": elapsed, "bytes": 3.0 * 4 * elems * iters,
            "threads": torch.get_num_threads()}


def cpu_bf16(n, seconds):
    """The same matmul in fp32 and under bf16 autocast: CPUs without avx512_bf16/amx_bf16 emulate bf16, 10-30x
    slower."""
    import torch

    a, b = torch.randn(n, n), torch.randn(n, n)
    timed_loop(lambda: torch.mm(a, b), seconds / 4, min_iters=3)  # thread pool and kernels warm
    f_iters, f_s = timed_loop(lambda: torch.mm(a, b), seconds)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        timed_loop(lambda: torch.mm(a, b), seconds / 4, min_iters=2)
        b_iters, b_s = timed_loop(lambda: torch.mm(a, b), seconds)
    flops = 2.0 * n ** 3
    return {"n": n, "fp32_gflops": flops * f_iters / f_s / 1e9, "bf16_gflops": flops * b_iters / b_s / 1e9}


# ---- GPU ----------------------------------------------------------------------------------------------------------
def gpu_matmul(i, dtype_name, n, seconds):
    import torch

    dev = torch.device("cuda", i)
    torch.cuda.empty_cache()  # the previous measurement's matrices
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[dtype_name]
    torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    for _ in range(3):  # cuBLAS picks its kernel on the first calls
        torch.mm(a, b)
    iters, elapsed = timed_loop(lambda: torch.mm(a, b), seconds, sync=lambda: torch.cuda.synchronize(dev))
    return {"gpu": i, "dtype": dtype_name, "n": n, "iters": iters, "seconds": elapsed,
            "flops": 2.0 * n ** 3 * iters, "name": torch.cuda.get_device_name(i)}


def gpu_copy(i, kind, direction, nbytes, seconds):
    import torch

    dev = torch.device("cuda", i)
    host = torch.empty(nbytes, dtype=torch.uint8)
    if kind == "pinned":
        host = host.pin_memory()
    gpu = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    if direction == "h2d":
        def step():
            gpu.copy_(host, non_blocking=True)
    else:
        def step():
            host.copy_(gpu, non_blocking=True)
    step()
    iters, elapsed = timed_loop(step, seconds, sync=lambda: torch.cuda.synchronize(dev), min_iters=3)
    return {"gpu": i, "kind": kind, "direction": direction, "bytes": float(nbytes) * iters, "seconds": elapsed}


def p2p_matrix():
    import torch

    n = torch.cuda.device_count()
    return {"n": n, "matrix": [[i == j or bool(torch.cuda.can_device_access_peer(i, j)) for j in range(n)]
                               for i in range(n)]}


def p2p_copy(src, dst, nbytes, seconds):
    import torch

    a = torch.empty(nbytes, dtype=torch.uint8, device=torch.device("cuda", src))
    b = torch.empty(nbytes, dtype=torch.uint8, device=torch.device("cuda", dst))

    def sync():
        torch.cuda.synchronize(src)
        torch.cuda.synchronize(dst)

    b.copy_(a)
    iters, elapsed = timed_loop(lambda: b.copy_(a, non_blocking=True), seconds, sync=sync, min_iters=3)
    return {"src": src, "dst": dst, "bytes": float(nbytes) * iters, "seconds": elapsed,
            "peer": bool(torch.cuda.can_device_access_peer(src, dst))}


# ---- collectives (under torchrun) ----------------------------------------------------------------------------------
def allreduce(backend, nbytes, iters, tag=None):
    import datetime

    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = torch.device("cpu")
    if backend == "nccl":
        dev = torch.device("cuda", local)
        torch.cuda.set_device(dev)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=60))
    try:
        world, rank = dist.get_world_size(), dist.get_rank()
        sync = (lambda: torch.cuda.synchronize(dev)) if backend == "nccl" else (lambda: None)
        check = torch.full((1024,), float(rank + 1), device=dev)
        dist.all_reduce(check)
        correct = bool((check == world * (world + 1) / 2.0).all().item())
        tags = None
        if tag is not None:  # what each node says of itself (its address, its interface's MTU), in rank order
            tags = [None] * world
            dist.all_gather_object(tags, tag)
        buf = torch.ones(nbytes // 4, dtype=torch.float32, device=dev)
        for _ in range(2 if backend == "gloo" else 5):
            dist.all_reduce(buf)
        sync()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf)
        sync()
        took = torch.tensor([time.perf_counter() - start], dtype=torch.float64, device=dev)
        dist.all_reduce(took, op=dist.ReduceOp.MAX)  # the slowest rank's time is the collective's time
        return {"backend": backend, "world": world, "bytes": float(buf.numel() * 4), "iters": iters,
                "seconds": float(took.item()) / iters, "correct": correct, **({"tags": tags} if tags else {})}
    finally:
        dist.destroy_process_group()


# ---- storage (no torch) -------------------------------------------------------------------------------------------
def files_to_read(path, limit_bytes, max_entries=5000):
    """The file itself, or the largest regular files under a directory until `limit_bytes` (bounded walk)."""
    if not os.path.isdir(path):
        return [path]
    found, seen = [], 0
    for top, dirs, names in os.walk(path):
        dirs.sort()
        for name in names:
            seen += 1
            if seen > max_entries:
                break
            full = os.path.join(top, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if st.st_size > 0 and (st.st_mode & 0o170000) == 0o100000:
                found.append((st.st_size, full))
        if seen > max_entries:
            break
    found.sort(reverse=True)
    out, total = [], 0
    for size, full in found:
        out.append(full)
        total += size
        if total >= limit_bytes:
            break
    return out


def disk_read(path, limit_bytes, seconds, block=4 * MiB, direct=True):
    """Sequential read bypassing the page cache: O_DIRECT into a page-aligned buffer (mmap); where the file system
    refuses O_DIRECT (tmpfs before Linux 6.6, some FUSE), posix_fadvise(DONTNEED) first, which drops only clean
    cached pages. `direct=False` takes the fallback on purpose (--no-direct)."""
    buf = mmap.mmap(-1, block)
    total, elapsed, methods = 0, 0.0, set()
    files = files_to_read(path, limit_bytes)
    start = time.perf_counter()
    for name in files:
        fd, method = None, "O_DIRECT"
        try:
            if not direct:
                raise OSError("O_DIRECT not asked for")
            fd = os.open(name, os.O_RDONLY | getattr(os, "O_DIRECT", 0) | getattr(os, "O_CLOEXEC", 0))
            try:
                n = os.readv(fd, [buf])
            except OSError:
                os.close(fd)
                fd = None
                raise
        except OSError:
            fd = os.open(name, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            method = "fadvise"
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            n = os.readv(fd, [buf])
        methods.add(method)
        try:
            while n > 0:
                total += n
                elapsed = time.perf_counter() - start
                # a short read is the end of the file (and O_DIRECT refuses the unaligned offset after it)
                if n < block or total >= limit_bytes or elapsed >= seconds:
                    break
                n = os.readv(fd, [buf])
        finally:
            os.close(fd)
        elapsed = time.perf_counter() - start
        if total >= limit_bytes or elapsed >= seconds:
            break
    return {"path": path, "files": len(files), "bytes": float(total), "seconds": elapsed,
            "method": "O_DIRECT" if methods == {"O_DIRECT"} else ("fadvise" if methods == {"fadvise"} else "mixed")}


def shm_speed(nbytes, directory="/dev/shm", block=4 * MiB):
    """Write then read a file in /dev/shm (DataLoader workers hand batches over through it)."""
    chunk = os.urandom(block)
    fd, name = tempfile.mkstemp(prefix="hosttune-deep-", dir=directory)
    try:
        start = time.perf_counter()
        done = 0
        while done < nbytes:
            done += os.write(fd, chunk)
        w = time.perf_counter() - start
        os.lseek(fd, 0, os.SEEK_SET)
        buf = mmap.mmap(-1, block)
        start = time.perf_counter()
        got = 0
        while got < done:
            n = os.readv(fd, [buf])
            if n <= 0:
                break
            got += n
        r = time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(name)
    return {"dir": directory, "bytes": float(done), "write_s": w, "read_s": r}


# ---- main ---------------------------------------------------------------------------------------------------------
def run_torch_groups(groups, args):
    try:
        info = measure("info", torch_info)
    except BaseException as exc:  # noqa: BLE001 - SystemExit/KeyboardInterrupt from a broken torch import
        emit("error", "info", error=short_error(exc))
        return
    if info is None:
        return
    import torch

    small = args.small
    if "cpu" in groups:
        # big enough to keep every thread busy: a 1024^2 matmul cannot fill 96 cores
        threads = torch.get_num_threads()
        n = 256 if small else (1024 if threads <= 8 else 2048 if threads <= 32 else 4096)
        measure("cpu_matmul", cpu_matmul, n, args.seconds)
        measure("cpu_triad", cpu_triad, (1 << 21) if small else (1 << 25), args.seconds)
        measure("cpu_bf16", cpu_bf16, 256 if small else 384, args.seconds)
    ok = [d["index"] for d in info["devices"] if "error" not in d]
    caps = {d["index"]: d["capability"] for d in info["devices"]}
    if "gpu_compute" in groups:
        for i in ok:
            for dt in ("bf16", "fp16", "tf32"):
                if dt != "fp16" and caps[i][0] < 8:
                    emit("result", f"gpu_compute gpu{i} {dt}", gpu=i, dtype=dt, unsupported=True)
                    continue
                measure(f"gpu_compute gpu{i} {dt}", gpu_matmul, i, dt, 2048 if small else 8192,
                        args.seconds)
    if "gpu_copies" in groups:
        nbytes = (32 if small else 256) * MiB
        for i in ok:
            for kind in ("pinned", "pageable"):
                for direction in ("h2d", "d2h"):
                    measure(f"gpu_copies gpu{i} {kind} {direction}", gpu_copy, i, kind, direction, nbytes,
                            args.seconds / 2)
    if "p2p" in groups and len(ok) > 1:
        measure("p2p matrix", p2p_matrix)
        nbytes = (32 if small else 256) * MiB
        for k, i in enumerate(ok):
            j = ok[(k + 1) % len(ok)]
            if len(ok) == 2 and k == 1:
                break
            measure(f"p2p gpu{i}->gpu{j}", p2p_copy, i, j, nbytes, args.seconds / 2)
    del torch


LAUNCH_OPTIONS = ("--torchrun", "--nnodes", "--rdzv-endpoint", "--rdzv-id", "--rdzv-conf", "--local-addr")


def start_torchrun(nproc, argv, args):
    """torchrun from this interpreter (`python -I` ignores PYTHONPATH, so `python -m torch.distributed.run`
    would miss a torch found through --path); its workers rerun this script without the launcher's options.
    With --rdzv-endpoint: one node of a job over --nnodes nodes (c10d rendezvous), else --standalone."""
    rest, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in LAUNCH_OPTIONS:
            skip = True
            continue
        if a.split("=", 1)[0] in LAUNCH_OPTIONS:
            continue
        rest.append(a)
    from torch.distributed.run import main as torchrun_main

    if args.rdzv_endpoint:
        launch = ["--nnodes", str(args.nnodes), "--rdzv-backend", "c10d", "--rdzv-endpoint", args.rdzv_endpoint,
                  "--rdzv-id", args.rdzv_id or "hosttune-doctor", "--max-restarts", "0"]
        launch += ["--rdzv-conf", args.rdzv_conf] if args.rdzv_conf else []
        launch += ["--local-addr", args.local_addr] if args.local_addr else []
    else:
        launch = ["--standalone", "--nnodes", "1"]
    torchrun_main(launch + ["--nproc_per_node", str(nproc), os.path.abspath(__file__)] + rest)
    return 0


def main(argv=None):
    global JSON, RANK
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--measure", default="info,cpu,gpu_compute,gpu_copies,p2p",
                    help="comma-separated: info cpu gpu_compute gpu_copies p2p allreduce disk shm")
    ap.add_argument("--path", action="append", default=[], help="put this directory first on sys.path (repeat)")
    ap.add_argument("--small", action="store_true", help="small sizes (tests)")
    ap.add_argument("--seconds", type=float, default=0.3, help="time per measurement")
    ap.add_argument("--backend", default="gloo", help="allreduce: gloo or nccl")
    ap.add_argument("--bytes", type=int, default=0, help="allreduce/shm/disk size in bytes")
    ap.add_argument("--iters", type=int, default=0, help="allreduce iterations")
    ap.add_argument("--file", action="append", default=[], help="disk: a file or directory to read (repeat)")
    ap.add_argument("--disk-seconds", type=float, default=0.0, help="disk: read for at most this long per path "
                    "(default 2, 0.5 with --small)")
    ap.add_argument("--no-direct", action="store_true", help="disk: drop the page cache with posix_fadvise "
                    "instead of reading with O_DIRECT")
    ap.add_argument("--torchrun", type=int, default=0, metavar="N",
                    help="start N local ranks of this script through torchrun (after applying --path)")
    ap.add_argument("--nnodes", type=int, default=1, help="--torchrun: nodes of the job (with --rdzv-endpoint)")
    ap.add_argument("--rdzv-endpoint", default="", help="--torchrun: HOST:PORT of the c10d rendezvous")
    ap.add_argument("--rdzv-id", default="", help="--torchrun: the job's rendezvous id (the same on every node)")
    ap.add_argument("--rdzv-conf", default="", help="--torchrun: torchrun's --rdzv-conf")
    ap.add_argument("--local-addr", default="", help="--torchrun: the address this node advertises")
    ap.add_argument("--tag", default="", help="allreduce: a JSON object each rank shares with the others")
    args = ap.parse_args(argv)
    JSON = args.json
    RANK = int(os.environ.get("LOCAL_RANK", os.environ.get("RANK", "0")))  # each node's first rank reports
    sys.path[0:0] = [p for i, p in enumerate(args.path) if p and p not in args.path[:i]]
    if args.torchrun:
        return start_torchrun(args.torchrun, sys.argv[1:] if argv is None else list(argv), args)
    groups = set(g.strip() for g in args.measure.split(",") if g.strip())
    if groups & {"info", "cpu", "gpu_compute", "gpu_copies", "p2p"}:
        run_torch_groups(groups, args)
    if "allreduce" in groups:
        nccl = args.backend == "nccl"
        nbytes = args.bytes or ((256 if nccl else 16) * MiB)
        measure("allreduce " + args.backend, allreduce, args.backend, nbytes, args.iters or (20 if nccl else 5),
                json.loads(args.tag) if args.tag else None)
    if "disk" in groups:
        for path in args.file:
            measure("disk " + path, disk_read, path, args.bytes or 512 * MiB,
                    args.disk_seconds or (0.5 if args.small else 2.0), 4 * MiB, not args.no_direct)
    if "shm" in groups:
        measure("shm", shm_speed, args.bytes or 256 * MiB)
    emit("end", "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
