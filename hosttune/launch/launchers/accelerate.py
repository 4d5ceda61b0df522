"""`accelerate launch` (accelerate/commands/launch.py, _validate_launch_command; accelerate 1.x): the ranks it
starts here from its options and its config file (read bounded, through yamlio), and whether it binds them."""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from hosttune.errors import UserError
from hosttune.launch.launchers.base import KnownLauncher, _count, _last, _Scan, _scan
from hosttune.launch.torchrun import MAX_NPROC_PER_NODE

# accelerate's config is a few hundred bytes; a runaway file is refused, not read.
ACCELERATE_CONFIG_LIMIT = 1 << 20

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



def _config(tool: str, scan: _Scan, environ: Mapping[str, str],
            cpu: bool) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """(accelerate's config, its path): --config_file, else the default file unless --cpu; (None, None) if none."""
    config_path = _last(scan, "config_file")
    if config_path is not None:
        if not os.path.isfile(config_path):
            from hosttune.term import printable

            raise UserError(f"{tool}: --config_file {printable(config_path)}: no such file")
        return read_accelerate_config(config_path), config_path
    if not cpu:
        default = accelerate_default_config(environ)
        if os.path.isfile(default):
            return read_accelerate_config(default), default
    return None, None


def _paradigm(flags: Set[str], cfg: Optional[Dict[str, Any]], dist: str) -> Set[str]:
    """The launch mode the flags name, else the one the config's distributed_type picks."""
    paradigm = {"multi_gpu", "tpu", "use_deepspeed", "use_fsdp", "use_megatron_lm"} & flags
    if cfg is not None and not paradigm:  # the config's distributed_type picks the launcher
        paradigm = {"multi_gpu"} if dist in _ACCELERATE_MULTI else {
            "DEEPSPEED": {"use_deepspeed"}, "FSDP": {"use_fsdp"}, "MEGATRON_LM": {"use_megatron_lm"},
            "XLA": {"tpu"}}.get(dist, set())
    return paradigm


def _binding(tool: str, flags: Set[str], cfg: Optional[Dict[str, Any]], gpus: Optional[int],
             notes: List[str]) -> Optional[str]:
    """Who binds the ranks: accelerate with --enable_cpu_affinity on a GPU host, else hosttune (None)."""
    affinity = "enable_cpu_affinity" in flags or bool((cfg or {}).get("enable_cpu_affinity"))
    # accelerate's own binding (utils/environment.py override_numa_affinity) puts each rank on its GPU's NUMA node,
    # and only when torch sees CUDA: on a host without GPUs nothing would bind, so hosttune does.
    if affinity and gpus == 0:
        notes.append("--enable_cpu_affinity binds only on GPU hosts (accelerate's override_numa_affinity); this one "
                     "has none, so hosttune binds each rank")
    return f"{tool} --enable_cpu_affinity" if affinity and gpus != 0 else None


def _local_ranks(tool: str, paradigm: Set[str], cpu: bool, cfg: Optional[Dict[str, Any]], nprocs: Optional[int],
                 machines: int, bound_by: Optional[str], notes: List[str]) -> Tuple[Optional[int], Optional[str]]:
    """(ranks started on this node, who binds them) for the launch mode."""
    if paradigm & {"multi_gpu", "use_deepspeed", "use_fsdp", "use_megatron_lm"} and not cpu:
        local = nprocs // machines if nprocs else None
        if local is None:
            notes.append("--num_processes not given: accelerate counts GPUs when it starts; ranks plan from LOCAL_RANK")
        elif local < 1:
            raise UserError(f"{tool}: --num_processes {nprocs} over --num_machines {machines} leaves no rank here")
        return local, bound_by
    if "tpu" in paradigm and not cpu:
        notes.append("TPU launch: hosttune plans the ranks from their own variables")
        return None, bound_by
    mpi = (cfg or {}).get("mpirun_config") or {}
    if isinstance(mpi, dict) and mpi.get("mpirun_hostfile"):
        return max((nprocs or 1) // machines, 1), f"{tool} (mpirun_config: mpirun --bind-to socket)"
    if nprocs and nprocs > 1:
        notes.append("accelerate runs one process here (--cpu/no multi-process mode); for CPU ranks use "
                     "--multi_gpu --num_processes N")
    return 1, bound_by


def _accelerate(argv: Sequence[str], start: int, environ: Mapping[str, str], gpus: Optional[int]) -> KnownLauncher:
    tool = "accelerate launch"
    table = {name: (name.lstrip("-"), 0) for name in _ACCELERATE_FLAGS}
    table.update({"-m": ("module", 0), "-h": ("help", 0), "-q": ("quiet", 0), "-t": ("tee", 1)})
    scan = _scan(tool, argv, start, table, unknown="value", canon=_accelerate_canon)
    flags = scan.flags
    notes: List[str] = []
    cfg, config_path = _config(tool, scan, environ, "cpu" in flags)
    dist = str((cfg or {}).get("distributed_type") or "NO").upper()
    paradigm = _paradigm(flags, cfg, dist)
    # accelerate picks its launcher from --cpu alone (commands/launch.py: `args.multi_gpu and not args.cpu`); a
    # config's use_cpu only reaches args.use_cpu, which puts the ranks on the CPU but starts as many of them
    cpu = "cpu" in flags

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
    bound_by = _binding(tool, flags, cfg, gpus, notes)
    if config_path is not None:
        from hosttune.term import printable

        notes.append(f"accelerate config {printable(config_path)} (distributed_type {dist})")
    local, bound_by = _local_ranks(tool, paradigm, cpu, cfg, nprocs, machines, bound_by, notes)
    return KnownLauncher(tool, local, bound_by, threads, tuple(argv), tuple(notes))
