"""Launchers other than torchrun, recognised from their command line: how many ranks each starts on this node,
whether it binds them itself, and the per-rank thread count it was told to use.

`identify(argv, environ)` knows `python -m torch.distributed.launch`, `accelerate launch`, `deepspeed`,
`mpirun`/`mpiexec`/`orterun`/`prterun` (Open MPI, MPICH/Hydra, Intel MPI spellings) and `srun`, behind an optional
interpreter (`python3.11 -m ...`, `/usr/bin/python3 /usr/local/bin/accelerate launch ...`). torchrun itself is
torchrun.py's. Parsing only: the one file read is accelerate's config file (bounded, through yamlio), and an MPI's
flavour comes from where its `mpirun` link points. Each option table cites the launcher source it was read from;
an option a launcher would refuse, or a count that is not a whole number, is a UserError of one line.

MPI binding, decided once: Open MPI binds every rank by default (to a core for np <= 2, to a socket above), so when
the user gives no binding option and the ranks are Python (which the per-rank hook binds), hosttune adds
`--bind-to none` and binds each rank itself (ranks that are binaries keep Open MPI's binding); when the user asks MPI
to bind (`--bind-to X`, `--cpu-set`, `--rankfile`, `--map-by ...:PE=n`, Hydra's `-bind-to`/`-binding`, Intel MPI's
default pinning), MPI binds and hosttune sets threads and environment only, and says so.

One module per launcher (torch_launch, accelerate, deepspeed, mpirun, srun), each a function
(argv, start, environ, host) -> KnownLauncher in `_REGISTRY`; `base` holds KnownLauncher and the option scanner.
"""

import os
from typing import Callable, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple

from hosttune.launch.launchers.accelerate import (
    _ACCELERATE_FLAGS,
    _ACCELERATE_MULTI,
    ACCELERATE_CONFIG_LIMIT,
    _accelerate,
    _accelerate_canon,
    accelerate_default_config,
    read_accelerate_config,
)
from hosttune.launch.launchers.base import KnownLauncher, _count, _last, _Scan, _scan
from hosttune.launch.launchers.deepspeed import _DEEPSPEED_OPTIONS, DEEPSPEED_HOSTFILE, _deepspeed, _slots
from hosttune.launch.launchers.mpirun import _MPI_VALUED1, _MPI_VALUED2, _mpi_threads, _mpirun, mpi_flavour
from hosttune.launch.launchers.srun import _SRUN_FLAGS, _SRUN_VALUED_SHORT, _srun
from hosttune.launch.launchers.torch_launch import _torch_launch
from hosttune.launch.pythons import is_python
from hosttune.launch.torchrun import _python_module_target

__all__ = ["ACCELERATE_CONFIG_LIMIT", "DEEPSPEED_HOSTFILE", "KnownLauncher", "accelerate_default_config",
           "identify", "mpi_flavour", "read_accelerate_config"]
# the option tables and helpers tests compare with the launchers' own parsers (kept importable from here)
_PRIVATE = (_ACCELERATE_FLAGS, _ACCELERATE_MULTI, _accelerate_canon, _DEEPSPEED_OPTIONS, _MPI_VALUED1, _MPI_VALUED2,
            _SRUN_FLAGS, _SRUN_VALUED_SHORT, _Scan, _count, _last, _mpi_threads, _scan, _slots)


class Host(NamedTuple):
    """What `identify` knows about this host for launchers whose defaults depend on it."""

    gpus: Optional[int]
    numa_nodes: Optional[int]
    mpi: Optional[str]


Launcher = Callable[[Sequence[str], int, Mapping[str, str], Host], KnownLauncher]

# launcher name (as `_locate` finds it) -> the module's reader of its command line
_REGISTRY: Dict[str, Launcher] = {
    "torch.distributed.launch": lambda argv, start, environ, host: _torch_launch(argv, start, environ, host.gpus),
    "accelerate launch": lambda argv, start, environ, host: _accelerate(argv, start, environ, host.gpus),
    "deepspeed": lambda argv, start, environ, host: _deepspeed(argv, start, environ, host.gpus, host.numa_nodes),
    "mpirun": lambda argv, start, environ, host: _mpirun(
        argv, start, environ, host.mpi if host.mpi is not None else mpi_flavour(argv[0], environ)),
    "srun": lambda argv, start, environ, host: _srun(argv, start, environ),
}


# ---- where the launcher sits in argv ----------------------------------------------------------------------------

_MODULES = {  # python -m MODULE
    "torch.distributed.launch": "torch.distributed.launch",
    "accelerate.commands.launch": "accelerate launch",
    "accelerate.commands.accelerate_cli": "accelerate",  # needs its `launch` subcommand
    "deepspeed.launcher.runner": "deepspeed",
}
_PROGRAMS = {  # console scripts and binaries, by basename
    "accelerate": "accelerate", "accelerate-launch": "accelerate launch",
    "deepspeed": "deepspeed", "ds": "deepspeed",
    "mpirun": "mpirun", "mpiexec": "mpirun", "orterun": "mpirun", "prterun": "mpirun",
    "mpirun.openmpi": "mpirun", "mpiexec.openmpi": "mpirun", "mpirun.mpich": "mpirun", "mpiexec.mpich": "mpirun",
    "mpiexec.hydra": "mpirun", "mpirun.hydra": "mpirun",
    "srun": "srun",
}
_PY_VALUED = ("-W", "-X", "-Q")


def _script_index(argv: Sequence[str]) -> Optional[int]:
    """For `python [opts] SCRIPT args`: the index of SCRIPT (None for -c/-m/stdin)."""
    i = 1
    while i < len(argv):
        tok = argv[i]
        if tok in _PY_VALUED:
            i += 2
            continue
        if tok in ("-c", "-m", "-") or tok.startswith(("-c", "-m")):
            return None
        if not tok.startswith("-"):
            return i
        i += 1
    return None


def _locate(argv: Sequence[str]) -> Optional[Tuple[str, int]]:
    """(launcher name, index of its first own argument), or None for anything else."""
    if not argv:
        return None
    kind: Optional[str] = None
    start = 1
    if is_python(argv[0]):
        target = _python_module_target(argv)
        if target is not None:
            start, mod = target
            kind = _MODULES.get(mod)
        else:
            at = _script_index(argv)
            if at is None:
                return None
            kind = _PROGRAMS.get(os.path.basename(argv[at]))
            start = at + 1
    else:
        kind = _PROGRAMS.get(os.path.basename(argv[0]))
    if kind == "accelerate":  # `accelerate launch ...`; `accelerate config`/`env` start no ranks
        if start < len(argv) and argv[start] == "launch":
            return "accelerate launch", start + 1
        return None
    return (kind, start) if kind else None



def identify(argv: Sequence[str], environ: Mapping[str, str], *, gpus: Optional[int] = None,
             numa_nodes: Optional[int] = None, mpi: Optional[str] = None) -> Optional[KnownLauncher]:
    """The launcher `argv` runs, or None (torchrun, a plain program, an unknown launcher).

    `gpus`/`numa_nodes`: this host's counts, for launchers whose default rank count depends on them (None:
    unknown, and so is such a count). `mpi`: openmpi | mpich | intel, else found from where `mpirun` points."""
    found = _locate(argv)
    if found is None:
        return None
    kind, start = found
    return _REGISTRY[kind](argv, start, environ, Host(gpus, numa_nodes, mpi))
