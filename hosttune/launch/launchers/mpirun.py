"""`mpirun`/`mpiexec`/`orterun`/`prterun` (Open MPI 4/5 orterun/prterun, MPICH Hydra, Intel MPI): the ranks it
starts here, and the binding decided once: Open MPI binds every rank by default, so for Python ranks (which the
per-rank hook binds) hosttune adds `--bind-to none`; a binding the user asks MPI for is MPI's. The job's endpoint
(plan.network) is the MASTER_ADDR it exports or the caller's, else the first host of -H/--hostfile (read through
fsio.read_user_text)."""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune.errors import UserError
from hosttune.launch.launchers.base import KnownLauncher, _count, _last, _Scan, _scan
from hosttune.launch.pythons import is_python

# Options taking values, by name without leading dashes (Open MPI takes `-np` and `--np` alike, Hydra `-np`).
_MPI_VALUED1 = {
    "np": "np", "n": "np", "c": "np", "npernode": "npernode", "N": "npernode", "ppn": "npernode",
    "perhost": "npernode", "npersocket": "npersocket", "map-by": "map_by", "bind-to": "bind_to",
    "rank-by": "rank_by", "cpu-set": "cpu_set", "cpu-list": "cpu_set", "cpus-per-proc": "cpus_per_proc",
    "cpus-per-rank": "cpus_per_proc", "binding": "binding", "rf": "rankfile", "rankfile": "rankfile",
    "H": "host", "host": "host", "hosts": "host", "hostfile": "hostfile", "machinefile": "hostfile",
    "default-hostfile": "hostfile", "f": "hostfile", "x": "export", "am": "am", "wdir": "wdir", "wd": "wdir",
    "path": "path", "prefix": "prefix", "output-filename": "output", "timeout": "timeout", "tune": "tune",
    "launch-agent": "launch_agent", "stdin": "stdin", "personality": "personality", "genvlist": "genvlist",
    "envlist": "envlist", "iface": "iface", "launcher": "launcher", "bootstrap": "launcher",
    "bootstrap-exec": "launcher_exec", "rmk": "rmk", "configfile": "configfile", "errfile-pattern": "errfile",
    "outfile-pattern": "outfile", "preload-files": "preload", "s": "preload_binary", "report-bindings-file": "rbf",
    "display": "display", "output": "output_spec", "runtime-options": "rtos", "pmixmca": "pmixmca",
    "prtemca": "prtemca",
}
_MPI_VALUED2 = {"mca": "mca", "gmca": "mca", "env": "env", "genv": "env"}


def mpi_flavour(program: str, environ: Mapping[str, str]) -> Optional[str]:
    """openmpi | mpich | intel, from where `program` points on $PATH (Debian's alternatives link
    /usr/bin/mpirun -> /usr/bin/orterun or mpirun.mpich); None when it cannot be told."""
    from hosttune import programs

    name = os.path.basename(program)
    if name in ("orterun", "prterun") or "openmpi" in name:
        return "openmpi"
    if "mpich" in name or "hydra" in name:
        return "mpich"
    # the gateway's lookup: as root only PATH directories that pass the trust rule, as the launcher itself is found
    found = program if os.sep in program else programs.trusted_which(program, environ.get("PATH", os.defpath))[0]
    if not found:
        return None
    real = os.path.realpath(found)
    base = os.path.basename(real)
    if base in ("orterun", "prterun") or "openmpi" in real:
        return "openmpi"
    if "intel" in real or "oneapi" in real or environ.get("I_MPI_ROOT"):
        return "intel"
    if "mpich" in real or "hydra" in base:
        return "mpich"
    return None



def _local_ranks(tool: str, scan: _Scan, environ: Mapping[str, str], notes: List[str]) -> Optional[int]:
    """Ranks on this node: -npernode / --map-by ppr:N:node, else -np on a single-node job; None when unknown."""
    np_ = _last(scan, "np")
    np_n = _count(tool, "-np", np_, high=1 << 24) if np_ is not None else None
    per_node: Optional[int] = None
    if _last(scan, "npernode") is not None:
        per_node = _count(tool, "-npernode", _last(scan, "npernode"))
    map_by = (_last(scan, "map_by") or "").lower()
    if map_by.startswith("ppr:"):
        parts = map_by.split(":")
        if len(parts) >= 3 and parts[2].startswith("node"):
            per_node = _count(tool, "--map-by ppr:N:node", parts[1])
    hosts = {h.split(":")[0] for v in scan.values.get("host", []) for h in v.split(",") if h}
    single = not scan.values.get("hostfile") and hosts <= {"localhost", "127.0.0.1"}
    nnodes = environ.get("SLURM_JOB_NUM_NODES") or environ.get("SLURM_NNODES")
    if nnodes and nnodes.strip() != "1":
        single = False
    local: Optional[int] = per_node
    if local is None and np_n is not None and single:
        local = _count(tool, "-np", np_n)
    if local is None:
        notes.append("ranks per node unknown from the command line: each rank plans from OMPI_COMM_WORLD_LOCAL_SIZE "
                     "/ MPI_LOCALNRANKS")
    elif np_n is not None and local > np_n:
        local = np_n
    return local


def _asked(scan: _Scan) -> Tuple[Optional[str], Optional[str]]:
    """(the binding the user asked MPI for, --bind-to's value): --bind-to X, --cpu-set, --rankfile,
    --cpus-per-proc, Hydra's -binding, --map-by ...:PE=n; --bind-to none asks for none."""
    map_by = (_last(scan, "map_by") or "").lower()
    bind_to = _last(scan, "bind_to")
    asked = None
    if bind_to is not None:
        asked = None if bind_to.split(":")[0].lower() == "none" else f"--bind-to {bind_to}"
    for dest, spelled in (("cpu_set", "--cpu-set"), ("rankfile", "--rankfile"), ("cpus_per_proc", "--cpus-per-proc"),
                          ("binding", "-binding")):
        if asked is None and bind_to is None and scan.values.get(dest):
            asked = f"{spelled} {_last(scan, dest)}"
    if asked is None and bind_to is None and ":pe=" in map_by:
        asked = f"--map-by {_last(scan, 'map_by')}"
    return asked, bind_to


def _mpirun(argv: Sequence[str], start: int, environ: Mapping[str, str], flavour: Optional[str]) -> KnownLauncher:
    tool = os.path.basename(argv[0]) if not is_python(argv[0]) else "mpirun"
    table: Dict[str, Tuple[str, int]] = {}
    for bare, dest in _MPI_VALUED1.items():
        table["-" + bare] = table["--" + bare] = (dest, 1)
    for bare, dest in _MPI_VALUED2.items():
        table["-" + bare] = table["--" + bare] = (dest, 2)
    if ":" in argv[start:]:
        return KnownLauncher("mpirun", None, None, None, tuple(argv),
                             ("MPMD (`:`) job: ranks plan from OMPI_COMM_WORLD_LOCAL_RANK/MPI_LOCALRANKID",))
    scan = _scan(tool, argv, start, table, unknown="flag")
    notes: List[str] = []
    local = _local_ranks(tool, scan, environ, notes)
    asked, bind_to = _asked(scan)
    threads = _mpi_threads(tool, scan)
    out = list(argv)
    bound_by: Optional[str] = None
    if asked is not None:
        bound_by = f"{tool} {asked}"
    elif bind_to is not None:
        notes.append("--bind-to none: hosttune binds each rank")
    elif flavour == "openmpi" and not is_python(argv[scan.program] if scan.program < len(argv) else ""):
        # a binary or script rank: the per-rank hook binds Python ranks only, so Open MPI's binding stays
        bound_by = f"{tool} (Open MPI's default binding; the ranks are not Python, which hosttune binds)"
    elif flavour == "openmpi":
        out[start:start] = ["--bind-to", "none"]
        notes.append("Open MPI binds ranks by default (core for np<=2, socket above): hosttune adds --bind-to none "
                     "and binds each rank itself")
    elif flavour == "intel" and environ.get("I_MPI_PIN", "1").lower() not in ("0", "off", "no", "disable"):
        bound_by = f"{tool} (Intel MPI pins ranks by default, I_MPI_PIN)"
    elif flavour == "mpich" and environ.get("HYDRA_BINDING", "none").lower() != "none":
        bound_by = f"{tool} (HYDRA_BINDING={environ['HYDRA_BINDING']})"
    elif flavour is None:
        notes.append("MPI flavour unknown: hosttune binds each rank; if it binds too, add --bind-to none")
    if threads:
        notes.append(f"OMP_NUM_THREADS={threads} exported by the command line: each rank keeps it")
    endpoint = _endpoint(scan, environ, notes)
    return KnownLauncher("mpirun", local, bound_by, threads, tuple(out), tuple(notes), endpoint=endpoint)


def _exported(scan: _Scan, key: str) -> Optional[str]:
    """A variable the command line exports to the ranks (-x K=V, Hydra -env/-genv K V); the last one wins."""
    found: Optional[str] = None
    for value in scan.values.get("export", []):
        k, eq, v = value.partition("=")
        if k == key and eq:
            found = v
    for value in scan.values.get("env", []):
        k, _, v = value.partition("\0")
        if k == key:
            found = v
    return found


def _hosts(scan: _Scan, notes: List[str]) -> Tuple[List[str], str]:
    """The job's hosts in order (-H/--host, else the hostfile's first word per line), and the option they came
    from. Rank 0 runs on the first (mpirun's default mapping fills the first host's slots first). A hostfile
    hosttune cannot read is mpirun's to refuse: a note, and no hosts."""
    from hosttune import fsio

    hosts: List[str] = [h.split(":")[0] for v in scan.values.get("host", []) for h in v.split(",") if h.strip()]
    if hosts:
        return hosts, "mpirun --host"
    path = _last(scan, "hostfile")
    if path is None:
        return [], ""
    try:
        text = fsio.read_user_text(path, "mpirun hostfile", limit=1 << 20)
    except UserError as exc:
        notes.append(f"{exc}: no network interface chosen from it")
        return [], ""
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            hosts.append(words[0].split(":")[0])
    return hosts, "mpirun --hostfile"


def _endpoint(scan: _Scan, environ: Mapping[str, str], notes: List[str]) -> Any:
    """Where the job's torch ranks meet: MASTER_ADDR the command line exports, else (when the caller's own
    MASTER_ADDR, which the planner reads itself, is not set) the first host of -H/--hostfile."""
    from dataclasses import replace

    from hosttune.plan.network import Endpoint, from_environ, host_of

    hosts, source = _hosts(scan, notes)
    nodes = len(dict.fromkeys(hosts)) or None
    addr = _exported(scan, "MASTER_ADDR")
    if addr:
        return Endpoint(host_of(addr), "mpirun -x MASTER_ADDR", nodes)
    yours = from_environ(environ)
    if yours is not None:
        return replace(yours, nodes=nodes or yours.nodes)
    return Endpoint(hosts[0], f"{source} (rank 0's host)", nodes) if hosts else None



def _mpi_threads(tool: str, scan: _Scan) -> Optional[int]:
    """OMP_NUM_THREADS that the command line exports to the ranks (-x K=V, Hydra -env/-genv K V)."""
    found = _exported(scan, "OMP_NUM_THREADS")
    return _count(tool, "OMP_NUM_THREADS", found, high=1 << 16) if found is not None else None

