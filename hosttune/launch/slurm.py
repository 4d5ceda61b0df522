"""An srun task's place on its node: local rank and the node's task count from Slurm's environment.

Used by the launcher (an srun task is one rank) and by the shim (a torchrun rank without LOCAL_WORLD_SIZE).
"""

from typing import List, Mapping, Optional, Tuple

from hosttune.errors import UserError


def parse_tasks_per_node(text: str) -> List[int]:
    """Expand Slurm's compressed task counts: "2(x3),1" -> [2, 2, 2, 1]."""
    out: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "(x" in part and part.endswith(")"):
            count, _, reps = part[:-1].partition("(x")
            out.extend([int(count)] * int(reps))
        else:
            out.append(int(part))
    return out


def slurm_rank(environ: Mapping[str, str]) -> Optional[Tuple[int, int]]:
    """(local rank, tasks on this node) for an srun task; None outside srun. UserError when the values disagree."""
    if "SLURM_LOCALID" not in environ:
        return None
    try:
        local = int(environ["SLURM_LOCALID"])
        node = int(environ.get("SLURM_STEP_NODEID", environ.get("SLURM_NODEID", "0")) or 0)
        size: Optional[int] = None
        for key in ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"):
            if environ.get(key):
                counts = parse_tasks_per_node(environ[key])
                if counts:
                    size = counts[node] if node < len(counts) else counts[-1]
                    break
        if size is None:
            for key in ("SLURM_NTASKS_PER_NODE", "SLURM_LOCAL_WORLD_SIZE"):
                if environ.get(key):
                    size = parse_tasks_per_node(environ[key])[0]
                    break
    except (ValueError, IndexError) as exc:
        raise UserError(f"cannot read this srun task's rank from the SLURM_* environment: {exc}") from None
    if size is None:
        size = local + 1
        # No task count at all: the rank still gets a disjoint slice as if it were the last task.
    if not 0 <= local < size:
        raise UserError(f"SLURM_LOCALID={local} is outside this node's {size} task(s)")
    return local, size
