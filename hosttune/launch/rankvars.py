"""Where a process learns its place on the node: the variables each launcher sets for its ranks, in one table.

Read by the per-rank hook (hook.py: every Python rank, whatever started it) and by the shim (non-Python ranks), so
a launcher hosttune has never heard of works as long as it sets one of these. Cheap to import: no plan, no facts.
"""

from typing import Mapping, NamedTuple, Optional, Tuple

from hosttune.errors import UserError


class Place(NamedTuple):
    local_rank: int
    local_world_size: int
    source: str  # the variable the local rank came from


# (local rank variable, local size variable), first match wins. LOCAL_RANK comes first: the launcher closest to the
# rank sets it (torchrun under srun, accelerate under mpirun). MPI's own variables beat Slurm's, because Open MPI
# under an allocation starts its daemons as srun tasks and every rank inherits the daemon's SLURM_LOCALID=0.
RANK_VARIABLES: Tuple[Tuple[str, str], ...] = (
    ("LOCAL_RANK", "LOCAL_WORLD_SIZE"),  # torchrun, torch.distributed.launch, accelerate, DeepSpeed, Lightning
    ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),  # Open MPI mpirun/mpiexec
    ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),  # MPICH and Intel MPI (Hydra)
    ("PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"),  # PMIx launchers (prterun, srun --mpi=pmix)
    ("PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"),  # PMI launchers (Cray PMI)
)
SLURM_RANK = "SLURM_LOCALID"  # srun: its task count comes from SLURM_[STEP_]TASKS_PER_NODE (slurm.py)


def _int(environ: Mapping[str, str], key: str) -> Optional[int]:
    raw = environ.get(key)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise UserError(f"{key}={raw!r} is not an integer") from None


def has_rank(environ: Mapping[str, str]) -> bool:
    """Any launcher's local-rank variable is set (cheap: no parsing)."""
    return any(environ.get(rank) for rank, _ in RANK_VARIABLES) or bool(environ.get(SLURM_RANK))


def place(environ: Mapping[str, str]) -> Optional[Place]:
    """(local rank, local world size, source) from the first launcher's variables found; None when none is set.
    UserError when a value is not an integer or the rank lies outside the size.

    LOCAL_RANK without LOCAL_WORLD_SIZE (Lightning's own children, which get WORLD_SIZE): the size is WORLD_SIZE when
    that covers the rank. That is exact on one node; across nodes it is too big, so ranks get smaller slices and
    some cores stay idle, never more threads than cores."""
    for rank_key, size_key in RANK_VARIABLES:
        rank = _int(environ, rank_key)
        if rank is None:
            continue
        size = _int(environ, size_key)
        if size is None and rank_key == "LOCAL_RANK":
            world = _int(environ, "WORLD_SIZE")
            size = world if world is not None and world > rank else None
        return _checked(rank, rank + 1 if size is None else size, rank_key, size_key)
    if environ.get(SLURM_RANK):
        from hosttune.launch.slurm import slurm_rank

        found = slurm_rank(environ)
        if found is not None:
            return Place(found[0], found[1], SLURM_RANK)
    return None


def _checked(rank: int, size: int, rank_key: str, size_key: str) -> Place:
    if size < 1 or not 0 <= rank < size:
        raise UserError(f"{rank_key}={rank} is outside the {size_key}={size} local ranks its launcher set")
    return Place(rank, size, rank_key)


__all__ = ["Place", "RANK_VARIABLES", "SLURM_RANK", "has_rank", "place"]
