"""A rank that reports what it really got: affinity, memory policy, env, threads, mapped allocator.

Writes one JSON file per start into $PROBE_OUT (rank-<LOCAL_RANK>-<pid>.json). Options:
  --torch         also report torch.get_num_threads() (imports torch: ~2 s)
  --allreduce     init a gloo process group from torchrun's env and all-reduce ones (reports the sum)
  --die-once F    on the first start (file F missing) of local rank 1: create F, report, then SIGKILL itself
  --reset-affinity CPUS   after reporting, set own affinity to CPUS (comma list): a library that resets it
  --sleep S       sleep S seconds before exiting
  --exit N        exit with status N
"""

import json
import os
import signal
import sys
import time


def report(extra):
    status = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            status[key] = value.strip()
    with open("/proc/self/numa_maps") as fh:
        policy = fh.readline().split(" ")[1]
    with open("/proc/self/maps") as fh:
        maps = fh.read()
    out = {
        "pid": os.getpid(),
        "local_rank": os.environ.get("LOCAL_RANK"),
        "hosttune_local_rank": os.environ.get("HOSTTUNE_LOCAL_RANK"),
        "restart_count": os.environ.get("TORCHELASTIC_RESTART_COUNT"),
        "affinity": sorted(os.sched_getaffinity(0)),
        "mems_allowed": status.get("Mems_allowed_list"),
        "mempolicy": policy,
        "env": {k: v for k, v in os.environ.items()
                if k.startswith(("OMP_", "MKL_", "HOSTTUNE_", "MALLOC_", "PYTORCH_"))
                or k in ("LD_PRELOAD", "LOCAL_WORLD_SIZE")},
        "jemalloc_mapped": "libjemalloc" in maps,
        "argv": sys.argv,
        "executable": sys.executable,
    }
    out.update(extra)
    name = f"rank-{os.environ.get('LOCAL_RANK', os.environ.get('HOSTTUNE_LOCAL_RANK', 'x'))}-{os.getpid()}.json"
    path = os.path.join(os.environ["PROBE_OUT"], name)
    with open(path + ".tmp", "w") as fh:
        json.dump(out, fh)
    os.rename(path + ".tmp", path)


def main(argv):
    extra = {}
    die_once = None
    reset = None
    sleep_s = 0.0
    code = 0
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--torch":
            import torch

            extra["torch_threads"] = torch.get_num_threads()
        elif arg == "--allreduce":
            import torch
            import torch.distributed as dist

            dist.init_process_group("gloo")
            t = torch.ones(4)
            dist.all_reduce(t)
            extra["allreduce"] = t.tolist()
            extra["world_size"] = dist.get_world_size()
            dist.destroy_process_group()
        elif arg == "--die-once":
            die_once = argv[i + 1]
            i += 1
        elif arg == "--reset-affinity":
            reset = {int(c) for c in argv[i + 1].split(",")}
            i += 1
        elif arg == "--sleep":
            sleep_s = float(argv[i + 1])
            i += 1
        elif arg == "--exit":
            code = int(argv[i + 1])
            i += 1
        i += 1
    report(extra)
    if die_once and os.environ.get("LOCAL_RANK") == "1" and not os.path.exists(die_once):
        open(die_once, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    if reset is not None:
        os.sched_setaffinity(0, reset)
    time.sleep(sleep_s)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
