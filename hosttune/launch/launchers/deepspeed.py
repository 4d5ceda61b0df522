"""`deepspeed` (deepspeed/launcher/runner.py parse_args and main; deepspeed 0.1x): its ranks on this node from
--num_gpus, a hostfile or --include/--exclude, and its --bind_cores_to_rank binding."""

import os
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune.errors import UserError
from hosttune.launch.launchers.base import KnownLauncher, _count, _last, _scan

_DEEPSPEED_OPTIONS: Dict[str, Tuple[str, int]] = {
    "-H": ("hostfile", 1), "--hostfile": ("hostfile", 1), "-i": ("include", 1), "--include": ("include", 1),
    "-e": ("exclude", 1), "--exclude": ("exclude", 1), "--num_nodes": ("num_nodes", 1),
    "--min_elastic_nodes": ("min_elastic_nodes", 1), "--max_elastic_nodes": ("max_elastic_nodes", 1),
    "--num_gpus": ("num_gpus", 1), "--num_accelerators": ("num_gpus", 1), "--master_port": ("master_port", 1),
    "--master_addr": ("master_addr", 1), "--node_rank": ("node_rank", 1), "--launcher": ("launcher", 1),
    "--launcher_args": ("launcher_args", 1), "--module": ("module", 0), "--no_python": ("no_python", 0),
    "--no_local_rank": ("no_local_rank", 0), "--no_ssh": ("no_ssh", 0), "--no_ssh_check": ("no_ssh_check", 0),
    "--force_multi": ("force_multi", 0), "--save_pid": ("save_pid", 0),
    "--enable_each_rank_log": ("enable_each_rank_log", 1), "--autotuning": ("autotuning", 1),
    "--elastic_training": ("elastic_training", 0), "--bind_cores_to_rank": ("bind_cores_to_rank", 0),
    "--bind_core_list": ("bind_core_list", 1), "--ssh_port": ("ssh_port", 1), "--comment": ("comment", 1),
    "--venv_script": ("venv_script", 1), "--log_level": ("log_level", 1), "-q": ("quiet", 0),
    "--quiet": ("quiet", 0), "-h": ("help", 0), "--help": ("help", 0),
}
DEEPSPEED_HOSTFILE = "/job/hostfile"  # runner.py DLTS_HOSTFILE: a multi-node job when it exists


def _slots(tool: str, spec: str) -> Dict[str, Optional[List[int]]]:
    """deepspeed's --include/--exclude: `host[:slot,slot]@host...` -> host -> slots (None: the whole host)."""
    out: Dict[str, Optional[List[int]]] = {}
    for part in spec.split("@"):
        host, colon, slots = part.strip().partition(":")
        if not host:
            raise UserError(f"{tool}: bad --include/--exclude entry {part!r}")
        if colon:
            try:
                out[host] = [int(s) for s in slots.split(",") if s.strip()]
            except ValueError:
                raise UserError(f"{tool}: slots in {part!r} must be whole numbers") from None
        else:
            out[host] = None
    return out



def _devices(environ: Mapping[str, str], gpus: Optional[int], numa_nodes: Optional[int]) -> Optional[int]:
    """The devices of this node: GPUs; on a CPU host deepspeed's CPU accelerator counts $LOCAL_SIZE, else the NUMA
    nodes that have cores (deepspeed/accelerator/cpu_accelerator.py device_count)."""
    if gpus:
        return gpus
    if environ.get("LOCAL_SIZE", "").strip().isdigit() and int(environ["LOCAL_SIZE"]) > 0:
        return int(environ["LOCAL_SIZE"])
    return numa_nodes


def _filtered(tool: str, include: str, exclude: str, devices: Optional[int]) -> Optional[int]:
    """Ranks on a single node: deepspeed's pool {"localhost": [0 .. devices-1]}, filtered by --include/--exclude."""
    pool = list(range(devices)) if devices else None
    chosen = pool
    if include:
        inc = _slots(tool, include)
        chosen = None if set(inc) != {"localhost"} else (inc["localhost"] or pool)
    if exclude and chosen is not None:
        exc = _slots(tool, exclude)
        chosen = [] if "localhost" in exc and exc["localhost"] is None else [
            s for s in chosen if s not in (exc.get("localhost") or [])]
    if chosen is not None and not chosen:
        raise UserError(f"{tool}: --include/--exclude leave no rank on this node")
    return len(chosen) if chosen else None


def _deepspeed(argv: Sequence[str], start: int, environ: Mapping[str, str], gpus: Optional[int],
               numa_nodes: Optional[int]) -> KnownLauncher:
    tool = "deepspeed"
    scan = _scan(tool, argv, start, _DEEPSPEED_OPTIONS, unknown="error", abbrev=True)
    notes: List[str] = []
    include, exclude = _last(scan, "include") or "", _last(scan, "exclude") or ""
    raw_gpus, raw_nodes = _last(scan, "num_gpus"), _last(scan, "num_nodes")
    num_gpus = _count(tool, "--num_gpus", raw_gpus) if raw_gpus is not None and raw_gpus.strip() != "-1" else None
    if raw_nodes is not None and raw_nodes.strip() != "-1":
        _count(tool, "--num_nodes", raw_nodes, high=1 << 20)
    if (num_gpus is not None or (raw_nodes or "-1").strip() != "-1") and (include or exclude):
        raise UserError(f"{tool}: --num_gpus/--num_nodes cannot be combined with --include/--exclude "
                        "(deepspeed refuses it too)")
    hostfile = _last(scan, "hostfile") or DEEPSPEED_HOSTFILE
    devices = _devices(environ, gpus, numa_nodes)
    local: Optional[int]
    if num_gpus is not None:
        local = num_gpus  # apply_num_nodes_and_gpus: slots 0..N-1 on every host
    elif os.path.isfile(hostfile):
        local = None
        notes.append(f"hostfile {hostfile}: ranks per node come from it; each rank plans from LOCAL_RANK/LOCAL_SIZE")
    elif include or exclude:
        local = _filtered(tool, include, exclude, devices)
    else:
        local = devices
    if local is not None:
        local = _count(tool, "local ranks", local)
    bound_by = f"{tool} --bind_cores_to_rank" if "bind_cores_to_rank" in scan.flags else None
    threads: Optional[int] = None
    if bound_by:
        core_list = _last(scan, "bind_core_list")
        if core_list and local:
            from hosttune.cpulist import parse_cpulist

            threads = max(len(parse_cpulist(core_list)) // local, 1)
        notes.append("--bind_cores_to_rank: deepspeed also sets each rank's OMP_NUM_THREADS to its cores")
    rank_arg = None if "no_local_rank" in scan.flags else "--local_rank"
    return KnownLauncher(tool, local, bound_by, threads, tuple(argv), tuple(notes), rank_arg)


