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
"""

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from hosttune.errors import UserError
from hosttune.launch.handoff import is_python
from hosttune.launch.torchrun import MAX_NPROC_PER_NODE, TORCHRUN_OPTIONS, _python_module_target

# accelerate's config is a few hundred bytes; a runaway file is refused, not read.
ACCELERATE_CONFIG_LIMIT = 1 << 20


@dataclass(frozen=True)
class KnownLauncher:
    """What a launcher's command line says about the ranks it starts on this node."""

    name: str  # torch.distributed.launch | accelerate launch | deepspeed | mpirun | srun
    local_ranks: Optional[int]  # ranks started on this node, when the command line (and config) tell
    bound_by: Optional[str]  # who binds the ranks instead of hosttune ("mpirun --bind-to core"); None: hosttune
    threads: Optional[int]  # the per-rank thread count the user gave the launcher (hosttune keeps it)
    argv: Tuple[str, ...]  # the command to run (mpirun: with `--bind-to none` when hosttune binds instead)
    notes: Tuple[str, ...] = field(default=())  # one line each, for --dry-run
    rank_arg: Optional[str] = None  # the argument each rank also gets its local rank as (`--local-rank`)

    @property
    def binds(self) -> bool:
        """The launcher binds its ranks itself: hosttune binds none of them (plan.resolve bound_by=)."""
        return self.bound_by is not None

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "local_ranks": self.local_ranks, "bound_by": self.bound_by,
                "threads": self.threads, "argv": list(self.argv), "notes": list(self.notes),
                "rank_arg": self.rank_arg}


# ---- a small argparse/getopt-like scanner ---------------------------------------------------------------------

@dataclass
class _Scan:
    values: Dict[str, List[str]]  # dest -> every value given, in order (the last one wins, as in argparse)
    flags: Set[str]
    program: int  # index of the program / training script (len(argv) when there is none)


def _scan(tool: str, argv: Sequence[str], start: int, table: Mapping[str, Tuple[str, int]], *,
          unknown: str, attached_short: bool = False, abbrev: bool = False,
          canon: Any = None) -> _Scan:
    """Options from argv[start:] up to the program. `table`: option -> (dest, number of values: 0, 1 or 2).
    `unknown`: what an option not in the table is: "error", "flag" or "value"."""
    values: Dict[str, List[str]] = {}
    flags: Set[str] = set()
    i = start
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return _Scan(values, flags, i + 1)
        if not tok.startswith("-") or tok == "-":
            break
        name, eq, inline = tok.partition("=") if tok.startswith("--") else (tok, "", "")
        if canon is not None:
            name = canon(name)
        spec = table.get(name)
        if spec is None and attached_short and not tok.startswith("--") and len(tok) > 2:
            short = table.get(tok[:2])
            if short is not None and short[1] == 1:  # -n2, -r3
                spec, eq, inline = short, "=", tok[2:]
        if spec is None and abbrev and name.startswith("--"):
            hits = {table[full] for full in table if full.startswith(name)}
            if len(hits) == 1:
                spec = hits.pop()
            elif len(hits) > 1:
                raise UserError(f"{tool}: ambiguous option {name}")
        if spec is None:
            if unknown == "error":
                raise UserError(f"{tool}: unknown option {name}")
            spec = (name.lstrip("-"), 1 if eq or unknown == "value" else 0)
        dest, nvalues = spec
        if nvalues == 0:
            if eq:
                raise UserError(f"{tool}: option {name} takes no value")
            flags.add(dest)
            i += 1
            continue
        got: List[str] = [inline] if eq else []
        j = i + 1
        while len(got) < nvalues:
            if j >= len(argv):
                raise UserError(f"{tool}: option {name} needs {'a value' if nvalues == 1 else f'{nvalues} values'}")
            got.append(argv[j])
            j += 1
        values.setdefault(dest, []).append(" ".join(got) if nvalues == 1 else "\0".join(got))
        i = j
    return _Scan(values, flags, i)


def _last(scan: _Scan, dest: str) -> Optional[str]:
    got = scan.values.get(dest)
    return got[-1] if got else None


def _count(tool: str, option: str, raw: Any, *, low: int = 1, high: int = MAX_NPROC_PER_NODE) -> int:
    """A rank/thread/node count: a whole number in [low, high], else one UserError line."""
    try:
        n = int(str(raw).strip())
    except ValueError:
        raise UserError(f"{tool}: {option} must be a whole number, got {str(raw)[:40]!r}") from None
    if n < low:
        raise UserError(f"{tool}: {option} must be at least {low}, got {n}")
    if n > high:
        raise UserError(f"{tool}: {option}={n} is more than the {high} local ranks hosttune plans for")
    return n


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
    if kind == "torch.distributed.launch":
        return _torch_launch(argv, start, environ, gpus)
    if kind == "accelerate launch":
        return _accelerate(argv, start, environ, gpus)
    if kind == "deepspeed":
        return _deepspeed(argv, start, environ, gpus, numa_nodes)
    if kind == "mpirun":
        return _mpirun(argv, start, environ, mpi if mpi is not None else mpi_flavour(argv[0], environ))
    return _srun(argv, start, environ)


# ---- torch.distributed.launch (torch/distributed/launch.py: torchrun's parser plus --use-env) ------------------

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


# ---- accelerate launch (accelerate/commands/launch.py, _validate_launch_command; accelerate 1.x) ---------------

# Its flags (store_true/store_false), from launch_command_parser(); every other option takes one value. The parser
# takes `--num-processes` and `--num_processes` alike and allows no abbreviations.
_ACCELERATE_FLAGS = frozenset({
    "--cpu", "--debug", "--downcast_bf16", "--dynamo_use_dynamic", "--dynamo_use_fullgraph",
    "--dynamo_use_regional_compilation", "--enable_cpu_affinity", "--fp8_use_autocast_during_eval", "--help",
    "--module", "--multi_gpu", "--no_python", "--no_tpu_cluster", "--quiet", "--same_network", "--tpu",
    "--tpu_cluster", "--tpu_use_sudo", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm",
    "--use_parallelism_config", "-h", "-m", "-q",
})
_ACCELERATE_MULTI = ("MULTI_GPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA", "MULTI_XPU", "MULTI_HPU",
                     "MULTI_NEURON")


def _accelerate_canon(name: str) -> str:
    return "--" + name[2:].replace("-", "_") if name.startswith("--") else name


def accelerate_default_config(environ: Mapping[str, str]) -> str:
    """accelerate's default config file: $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface."""
    home = environ.get("HF_HOME") or os.path.join(environ.get("XDG_CACHE_HOME") or
                                                  os.path.join(environ.get("HOME") or os.path.expanduser("~"),
                                                               ".cache"), "huggingface")
    return os.path.join(os.path.expanduser(home), "accelerate", "default_config.yaml")


def read_accelerate_config(path: str) -> Dict[str, Any]:
    """An accelerate config file (YAML, or JSON when it ends in .json), read bounded; UserError naming the file."""
    import json

    from hosttune.fsio import read_bounded
    from hosttune.term import printable

    try:
        text = read_bounded(path, ACCELERATE_CONFIG_LIMIT).decode("utf-8", "replace")
    except OSError as exc:
        raise UserError(f"accelerate launch: cannot read its config {printable(path)}: "
                        f"{exc.strerror or exc}") from None
    if path.endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UserError(f"{printable(path)}: not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise UserError(f"{printable(path)}: an accelerate config must be a mapping of settings")
        return data
    from hosttune import yamlio

    return yamlio.load_mapping(text, printable(path), "an accelerate config")[0]


def _accelerate(argv: Sequence[str], start: int, environ: Mapping[str, str], gpus: Optional[int]) -> KnownLauncher:
    tool = "accelerate launch"
    table = {name: (name.lstrip("-"), 0) for name in _ACCELERATE_FLAGS}
    table.update({"-m": ("module", 0), "-h": ("help", 0), "-q": ("quiet", 0), "-t": ("tee", 1)})
    scan = _scan(tool, argv, start, table, unknown="value", canon=_accelerate_canon)
    flags = scan.flags
    notes: List[str] = []
    cpu = "cpu" in flags
    config_path = _last(scan, "config_file")
    cfg: Optional[Dict[str, Any]] = None
    if config_path is not None:
        if not os.path.isfile(config_path):
            from hosttune.term import printable

            raise UserError(f"{tool}: --config_file {printable(config_path)}: no such file")
        cfg = read_accelerate_config(config_path)
    elif not cpu:
        default = accelerate_default_config(environ)
        if os.path.isfile(default):
            cfg = read_accelerate_config(default)
            config_path = default
    paradigm = {"multi_gpu", "tpu", "use_deepspeed", "use_fsdp", "use_megatron_lm"} & flags
    dist = str((cfg or {}).get("distributed_type") or "NO").upper()
    if cfg is not None and not paradigm:  # the config's distributed_type picks the launcher
        paradigm = {"multi_gpu"} if dist in _ACCELERATE_MULTI else {
            "DEEPSPEED": {"use_deepspeed"}, "FSDP": {"use_fsdp"}, "MEGATRON_LM": {"use_megatron_lm"},
            "XLA": {"tpu"}}.get(dist, set())
    cpu = cpu or bool((cfg or {}).get("use_cpu"))

    def setting(dest: str) -> Any:
        given = _last(scan, dest)
        return given if given is not None else (cfg or {}).get(dest)

    raw = setting("num_processes")
    nprocs: Optional[int] = None
    if raw is not None and str(raw).strip() != "-1":
        nprocs = _count(tool, "--num_processes", raw, high=MAX_NPROC_PER_NODE * 1024)
    elif cfg is None and gpus is not None:
        nprocs = gpus  # accelerate's default: torch.cuda.device_count()
    raw_machines = setting("num_machines")
    machines = _count(tool, "--num_machines", raw_machines, high=1 << 20) if raw_machines is not None else 1
    if cfg is None and not paradigm and nprocs and nprocs > 1 and gpus and gpus > 1:
        paradigm = {"multi_gpu"}  # accelerate turns multi-GPU on by itself when it sees more than one GPU
    raw_threads = _last(scan, "num_cpu_threads_per_process")
    threads = _count(tool, "--num_cpu_threads_per_process", raw_threads, high=1 << 16) if raw_threads else None
    if threads:
        notes.append(f"--num_cpu_threads_per_process {threads}: each rank keeps OMP_NUM_THREADS={threads}")
    affinity = "enable_cpu_affinity" in flags or bool((cfg or {}).get("enable_cpu_affinity"))
    # accelerate's own binding (utils/environment.py override_numa_affinity) puts each rank on its GPU's NUMA node,
    # and only when torch sees CUDA: on a host without GPUs nothing would bind, so hosttune does.
    bound_by = f"{tool} --enable_cpu_affinity" if affinity and gpus != 0 else None
    if affinity and gpus == 0:
        notes.append("--enable_cpu_affinity binds only on GPU hosts (accelerate's override_numa_affinity); this one "
                     "has none, so hosttune binds each rank")
    if config_path is not None:
        from hosttune.term import printable

        notes.append(f"accelerate config {printable(config_path)} (distributed_type {dist})")
    local: Optional[int]
    if paradigm & {"multi_gpu", "use_deepspeed", "use_fsdp", "use_megatron_lm"} and not cpu:
        local = nprocs // machines if nprocs else None
        if local is None:
            notes.append("--num_processes not given: accelerate counts GPUs when it starts; ranks plan from LOCAL_RANK")
        elif local < 1:
            raise UserError(f"{tool}: --num_processes {nprocs} over --num_machines {machines} leaves no rank here")
    elif "tpu" in paradigm and not cpu:
        local = None
        notes.append("TPU launch: hosttune plans the ranks from their own variables")
    else:
        mpi = (cfg or {}).get("mpirun_config") or {}
        if isinstance(mpi, dict) and mpi.get("mpirun_hostfile"):
            local = max((nprocs or 1) // machines, 1)
            bound_by = f"{tool} (mpirun_config: mpirun --bind-to socket)"
        else:
            local = 1
            if nprocs and nprocs > 1:
                notes.append("accelerate runs one process here (--cpu/no multi-process mode); for CPU ranks use "
                             "--multi_gpu --num_processes N")
    return KnownLauncher(tool, local, bound_by, threads, tuple(argv), tuple(notes))


# ---- deepspeed (deepspeed/launcher/runner.py parse_args and main; deepspeed 0.1x) ------------------------------

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
    multi = os.path.isfile(hostfile)
    # The devices of this node: GPUs; on a CPU host deepspeed's CPU accelerator counts $LOCAL_SIZE, else the NUMA
    # nodes that have cores (deepspeed/accelerator/cpu_accelerator.py device_count).
    if gpus:
        devices: Optional[int] = gpus
    elif environ.get("LOCAL_SIZE", "").strip().isdigit() and int(environ["LOCAL_SIZE"]) > 0:
        devices = int(environ["LOCAL_SIZE"])
    else:
        devices = numa_nodes
    local: Optional[int]
    if num_gpus is not None:
        local = num_gpus  # apply_num_nodes_and_gpus: slots 0..N-1 on every host
    elif multi:
        local = None
        notes.append(f"hostfile {hostfile}: ranks per node come from it; each rank plans from LOCAL_RANK/LOCAL_SIZE")
    elif include or exclude:
        # single node: deepspeed's pool is {"localhost": [0 .. devices-1]}, filtered by --include/--exclude
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
        local = len(chosen) if chosen else None
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


# ---- mpirun / mpiexec (Open MPI 4/5 orterun/prterun, MPICH Hydra, Intel MPI) ------------------------------------

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
    import shutil

    name = os.path.basename(program)
    if name in ("orterun", "prterun") or "openmpi" in name:
        return "openmpi"
    if "mpich" in name or "hydra" in name:
        return "mpich"
    found = program if os.sep in program else shutil.which(program, path=environ.get("PATH", os.defpath))
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
    # What the user asked MPI to do about binding.
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
    return KnownLauncher("mpirun", local, bound_by, threads, tuple(out), tuple(notes))


def _mpi_threads(tool: str, scan: _Scan) -> Optional[int]:
    """OMP_NUM_THREADS that the command line exports to the ranks (-x K=V, Hydra -env/-genv K V)."""
    found: Optional[str] = None
    for value in scan.values.get("export", []):
        key, eq, val = value.partition("=")
        if key == "OMP_NUM_THREADS" and eq:
            found = val
    for value in scan.values.get("env", []):
        key, _, val = value.partition("\0")
        if key == "OMP_NUM_THREADS":
            found = val
    return _count(tool, "OMP_NUM_THREADS", found, high=1 << 16) if found is not None else None


# ---- srun (Slurm's srun(1); its tasks are ranks with SLURM_LOCALID, see slurm.py) --------------------------------

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
        if ntasks is not None and nodes is not None and nodes.split("-")[0].strip() == "1":
            local = _count(tool, "--ntasks", ntasks)
        elif ntasks is not None:
            _count(tool, "--ntasks", ntasks, high=1 << 24)
    bind = _last(scan, "cpu_bind") or environ.get("SLURM_CPU_BIND") or ""
    kinds = [k.strip().lower() for k in bind.split(",") if k.strip()]
    binds = any(k.split(":")[0] not in ("none", "no", "verbose", "quiet", "v", "q") for k in kinds)
    return KnownLauncher(tool, local, f"{tool} --cpu-bind={bind}" if binds else None, None, tuple(argv), tuple(notes))


__all__ = ["KnownLauncher", "identify", "mpi_flavour", "accelerate_default_config", "read_accelerate_config",
           "DEEPSPEED_HOSTFILE", "ACCELERATE_CONFIG_LIMIT"]
