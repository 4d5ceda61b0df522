"""`python -m torch.distributed.launch` (torch/distributed/launch.py: torchrun's parser plus --use-env)."""

import os
from typing import List, Mapping, Optional, Sequence

from hosttune.errors import UserError
from hosttune.launch.launchers.base import KnownLauncher, _count, _last, _scan
from hosttune.launch.torchrun import TORCHRUN_OPTIONS


def _torch_launch(argv: Sequence[str], start: int, environ: Mapping[str, str],
                  gpus: Optional[int]) -> KnownLauncher:
    tool = "torch.distributed.launch"
    table = {name: (opt.dest, 1 if opt.takes_value else 0) for name, opt in TORCHRUN_OPTIONS.items()}
    table.update({"--use-env": ("use_env", 0), "--use_env": ("use_env", 0)})
    scan = _scan(tool, argv, start, table, unknown="error", attached_short=True, abbrev=True)
    if scan.program >= len(argv) and "help" not in scan.flags:
        raise UserError(f"{tool}: no training script given ({tool} [OPTIONS] SCRIPT [ARGS...])")
    if "no_python" in scan.flags and "use_env" not in scan.flags:
        raise UserError(f"{tool}: --no-python needs --use-env (a program cannot take --local-rank; torch refuses it "
                        "too)")
    notes: List[str] = []
    raw = _last(scan, "nproc_per_node") or environ.get("PET_NPROC_PER_NODE") or "1"
    n: Optional[int]
    if raw in ("gpu", "auto") and gpus is None:
        n = None
        notes.append(f"--nproc-per-node={raw}: counted when the launcher starts; each rank plans from LOCAL_RANK")
    elif raw == "gpu":
        if not gpus:
            raise UserError(f"{tool}: --nproc-per-node=gpu but this host has no GPU")
        n = gpus
    elif raw in ("cpu", "auto"):
        n = gpus if raw == "auto" and gpus else _count(tool, "--nproc-per-node", os.cpu_count() or 1)
    else:
        n = _count(tool, "--nproc-per-node", raw)
    mode = _last(scan, "numa_binding") or environ.get("PET_NUMA_BINDING")
    bound_by = f"{tool} --numa-binding={mode}" if mode else None
    rank_arg = None
    if "use_env" not in scan.flags:
        rank_arg = "--local-rank"
        notes.append("without --use-env each rank also gets --local-rank=N as an argument (LOCAL_RANK is set too)")
    return KnownLauncher(tool, n, bound_by, None, tuple(argv), tuple(notes), rank_arg)

