"""`srun` (Slurm's srun(1); its tasks are ranks with SLURM_LOCALID, see launch/slurm.py)."""

from typing import Dict, Mapping, Optional, Sequence, Tuple

from hosttune.launch.launchers.base import KnownLauncher, _count, _last, _scan

_SRUN_VALUED_SHORT = "AbBcCdDeiJLmnNopqrStTwWxGM"
_SRUN_FLAGS = frozenset({
    "--overlap", "--label", "--unbuffered", "--pty", "--quiet", "--verbose", "--no-kill", "--overcommit",
    "--oversubscribe", "--multi-prog", "--exact", "--whole", "--help", "--usage", "--test-only", "--disable-status",
    "--no-allocate", "--spread-job", "--use-min-nodes", "--contiguous", "--reboot", "--exclusive", "--immediate",
    "--kill-on-bad-exit", "--propagate", "--version", "--nodes-per-node", "--send-libs", "--preserve-env", "-E",
    "-h", "-H", "-I", "-k", "-K", "-l", "-O", "-Q", "-s", "-u", "-v", "-V", "-X", "-Z",
})


def _srun(argv: Sequence[str], start: int, environ: Mapping[str, str]) -> KnownLauncher:
    tool = "srun"
    table: Dict[str, Tuple[str, int]] = {f"-{c}": (f"-{c}", 1) for c in _SRUN_VALUED_SHORT}
    table.update({name: (name, 0) for name in _SRUN_FLAGS})
    table.update({"-n": ("ntasks", 1), "--ntasks": ("ntasks", 1), "-N": ("nodes", 1), "--nodes": ("nodes", 1),
                  "--ntasks-per-node": ("per_node", 1), "--cpu-bind": ("cpu_bind", 1), "--cpu_bind": ("cpu_bind", 1)})
    scan = _scan(tool, argv, start, table, unknown="value", attached_short=True)
    notes = ["srun tasks may run on other nodes: run `srun hosttune exec -- ...` so each node plans from its own "
             "hardware; here each task plans from SLURM_LOCALID"]
    local: Optional[int] = None
    if _last(scan, "per_node") is not None:
        local = _count(tool, "--ntasks-per-node", _last(scan, "per_node"))
    else:
        nodes = _last(scan, "nodes") or environ.get("SLURM_JOB_NUM_NODES") or environ.get("SLURM_NNODES")
        ntasks = _last(scan, "ntasks")
        if ntasks is not None and nodes is not None and nodes.split("-")[-1].strip() == "1":
            local = _count(tool, "--ntasks", ntasks)
        elif ntasks is not None:
            _count(tool, "--ntasks", ntasks, high=1 << 24)
    bind = _last(scan, "cpu_bind") or environ.get("SLURM_CPU_BIND") or ""
    kinds = [k.strip().lower() for k in bind.split(",") if k.strip()]
    binds = any(k.split(":")[0] not in ("none", "no", "verbose", "quiet", "v", "q") for k in kinds)
    return KnownLauncher(tool, local, f"{tool} --cpu-bind={bind}" if binds else None, None, tuple(argv), tuple(notes))

