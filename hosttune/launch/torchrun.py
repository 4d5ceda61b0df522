"""torchrun's command line: taken apart as torchrun's own parser does, and, for ranks that are not Python
(`--no-python`) or when the per-rank hook cannot be used, rewritten so that every rank (and every restart of a
rank) starts through hosttune's shim (Python ranks otherwise apply their plan through the hook: job.py).

The rewritten argv uses torchrun's `--no-python` mode: `torchrun [opts] --no-python <python> [-I] -c <bootstrap>
<rank command>`, where the rank command is what torchrun itself would have started (see rank_command). Pure apart
from reading a launcher script's `#!` line and searching PATH; no torch import.
"""

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from hosttune.errors import UserError
from hosttune.launch.pythons import is_python
from hosttune.rankplan import TORCHRUN_PYTHON

if TYPE_CHECKING:
    from hosttune.plan.network import Endpoint

# Local ranks per node hosttune plans for: far above any real node (one rank per GPU or per core), low enough that
# a typo (4000) is one clear line instead of thousands of plans, shims and a multi-megabyte handoff.
MAX_NPROC_PER_NODE = 1024

@dataclass(frozen=True)
class _Opt:
    dest: str
    takes_value: bool


def _torchrun_options() -> Dict[str, _Opt]:
    """torchrun's options as its argparse parser declares them (torch/distributed/run.py, torch 2.1 - 2.13)."""
    valued = {
        "nnodes": ["--nnodes"],
        "nproc_per_node": ["--nproc-per-node", "--nproc_per_node"],
        "rdzv_backend": ["--rdzv-backend", "--rdzv_backend"],
        "rdzv_endpoint": ["--rdzv-endpoint", "--rdzv_endpoint"],
        "rdzv_id": ["--rdzv-id", "--rdzv_id"],
        "rdzv_conf": ["--rdzv-conf", "--rdzv_conf"],
        "max_restarts": ["--max-restarts", "--max_restarts"],
        "monitor_interval": ["--monitor-interval", "--monitor_interval"],
        "start_method": ["--start-method", "--start_method"],
        "event_log_handler": ["--event-log-handler", "--event_log_handler"],
        "role": ["--role"],
        "log_dir": ["--log-dir", "--log_dir"],
        "redirects": ["-r", "--redirects"],
        "tee": ["-t", "--tee"],
        "local_ranks_filter": ["--local-ranks-filter", "--local_ranks_filter"],
        "duplicate_stdout_filters": ["--duplicate-stdout-filters", "--duplicate_stdout_filters"],
        "duplicate_stderr_filters": ["--duplicate-stderr-filters", "--duplicate_stderr_filters"],
        "node_rank": ["--node-rank", "--node_rank"],
        "master_addr": ["--master-addr", "--master_addr"],
        "master_port": ["--master-port", "--master_port"],
        "local_addr": ["--local-addr", "--local_addr"],
        "logs_specs": ["--logs-specs", "--logs_specs"],
        "numa_binding": ["--numa-binding", "--numa_binding"],
        "signals_to_handle": ["--signals-to-handle", "--signals_to_handle"],
        "shutdown_timeout": ["--shutdown-timeout", "--shutdown_timeout"],
    }
    flags = {
        "standalone": ["--standalone"],
        "module": ["-m", "--module"],
        "no_python": ["--no-python", "--no_python"],
        "run_path": ["--run-path", "--run_path"],
        "virtual_local_rank": ["--virtual-local-rank", "--virtual_local_rank"],
        "help": ["-h", "--help"],
    }
    table: Dict[str, _Opt] = {}
    for dest, names in valued.items():
        for name in names:
            table[name] = _Opt(dest, True)
    for dest, names in flags.items():
        for name in names:
            table[name] = _Opt(dest, False)
    return table


TORCHRUN_OPTIONS = _torchrun_options()
_MODE_FLAGS = ("module", "no_python", "run_path")  # consumed here: the rewritten argv always uses --no-python


@dataclass(frozen=True)
class TorchrunArgv:
    """A torchrun command line taken apart the way torchrun's argparse parser takes it apart."""

    launcher: Tuple[str, ...]  # ("torchrun",) or ("python3", "-m", "torch.distributed.run")
    options: Tuple[str, ...]  # torchrun's options as given, minus -m/--no-python/--run-path
    values: Mapping[str, str]  # dest -> value for valued options (last one wins, as in argparse)
    flags: FrozenSet[str]  # dests of flags given (or set through PET_* variables)
    script: str  # training script, module, or command
    script_args: Tuple[str, ...]
    launcher_python: Optional[str]  # the interpreter of `python -m torch.distributed.run`

    @property
    def mode(self) -> str:
        """python | module | no_python | run_path (torchrun refuses -m together with --no-python)."""
        if "no_python" in self.flags:
            return "no_python"
        if "run_path" in self.flags:
            return "run_path"
        if "module" in self.flags:
            return "module"
        return "python"

    def value(self, dest: str, environ: Mapping[str, str], default: str) -> str:
        """An option's value with torchrun's precedence: command line, then PET_<DEST>, then the default."""
        if dest in self.values:
            return self.values[dest]
        return environ.get(f"PET_{dest.upper()}", default)


def _python_module_target(argv: Sequence[str]) -> Optional[Tuple[int, str]]:
    """For `python [opts] -m MOD args`: (index of the first argument after MOD, MOD); None if not `-m`."""
    i = 1
    while i < len(argv):
        tok = argv[i]
        if tok == "-m":
            return (i + 2, argv[i + 1]) if i + 1 < len(argv) else None
        if tok.startswith("-m") and len(tok) > 2:
            return i + 1, tok[2:]
        if tok in ("-W", "-X"):
            i += 2
            continue
        if tok == "-c" or tok == "-" or not tok.startswith("-"):
            return None
        i += 1
    return None


def parse_torchrun(argv: Sequence[str], environ: Mapping[str, str]) -> Optional[TorchrunArgv]:
    """Split a torchrun command line; None when `argv` does not run torchrun.

    Raises UserError for a torchrun command line that torchrun itself would refuse (unknown option, missing value,
    no training script), so the user hears about it before anything starts.
    """
    launcher = _launcher(argv)
    if launcher is None:
        return None
    split = _split_options(argv, len(launcher))
    if "help" in split.flags:
        return None  # `torchrun --help`: nothing to launch; run it as it is
    if split.script is None:
        raise UserError("torchrun: no training script given (torchrun [OPTIONS] SCRIPT [ARGS...])")
    flags = split.flags | _pet_mode_flags(environ)
    if "no_python" in flags and "module" in flags:
        raise UserError("torchrun: -m/--module cannot be combined with --no-python (torchrun refuses it too)")
    return TorchrunArgv(
        launcher=launcher,
        options=tuple(split.options),
        values=split.values,
        flags=frozenset(flags),
        script=split.script,
        script_args=tuple(argv[split.rest:]),
        launcher_python=argv[0] if len(launcher) > 1 else None,
    )


def _launcher(argv: Sequence[str]) -> Optional[Tuple[str, ...]]:
    """`("torchrun",)` or `("python3", ..., "-m", "torch.distributed.run")`: what starts torchrun; None if neither."""
    if not argv:
        return None
    if os.path.basename(argv[0]) == "torchrun":
        return (argv[0],)
    if is_python(argv[0]):
        target = _python_module_target(argv)
        if target is not None and target[1] == "torch.distributed.run":
            return tuple(argv[:target[0]])
    return None


@dataclass
class _Split:
    """torchrun's own part of a command line, as its argparse parser reads it."""

    options: List[str] = field(default_factory=list)  # as given, minus the mode flags
    values: Dict[str, str] = field(default_factory=dict)
    flags: Set[str] = field(default_factory=set)
    script: Optional[str] = None
    rest: int = 0  # where the script's arguments start


def _split_options(argv: Sequence[str], start: int) -> _Split:
    """Options from argv[start] to the script: the first word not an option, or the one after `--`."""
    split = _Split()
    i = start
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            split.script = argv[i + 1] if i + 1 < len(argv) else None
            split.rest = min(i + 2, len(argv))
            return split
        if not tok.startswith("-") or tok == "-":
            split.script, split.rest = tok, i + 1
            return split
        i = _take_option(argv, i, split)
    split.rest = i
    return split


def _take_option(argv: Sequence[str], i: int, split: _Split) -> int:
    """Record the option at argv[i] (and its value) in `split`; the index of the word after it."""
    tok = argv[i]
    name, eq, inline = tok.partition("=") if tok.startswith("--") else (tok, "", "")
    if not tok.startswith("--") and len(tok) > 2:  # -r3 / -t3
        name, inline, eq = tok[:2], tok[2:], "="
    opt = _lookup_option(name)
    if opt.takes_value:
        if eq:
            value = inline
            consumed = [tok]
        elif i + 1 < len(argv):
            value = argv[i + 1]
            consumed = [tok, value]
        else:
            raise UserError(f"torchrun: option {name} needs a value")
        split.values[opt.dest] = value
        split.options.extend(consumed)
        return i + len(consumed)
    if eq:
        raise UserError(f"torchrun: option {name} takes no value")
    split.flags.add(opt.dest)
    if opt.dest not in _MODE_FLAGS:
        split.options.append(tok)
    return i + 1


def _pet_mode_flags(environ: Mapping[str, str]) -> Set[str]:
    """torchrun's check_env flags: PET_NO_PYTHON=1 acts like --no-python (any integer but 0 is on)."""
    out: Set[str] = set()
    for dest in _MODE_FLAGS:
        raw = environ.get(f"PET_{dest.upper()}", "0")
        if raw.strip().lstrip("-").isdigit() and int(raw) != 0:
            out.add(dest)
    return out


def _lookup_option(name: str) -> _Opt:
    if name in TORCHRUN_OPTIONS:
        return TORCHRUN_OPTIONS[name]
    if name.startswith("--"):  # argparse accepts unambiguous prefixes
        hits = {opt for full, opt in TORCHRUN_OPTIONS.items() if full.startswith(name)}
        if len(hits) == 1:
            return hits.pop()
        if len(hits) > 1:
            raise UserError(f"torchrun: ambiguous option {name}")
    raise UserError(f"torchrun: unknown option {name}")


def _shebang_python(path: str, environ: Mapping[str, str]) -> Optional[str]:
    """The interpreter a script's `#!` line names, when it is a Python (else None: a shell wrapper, a pyenv shim)."""
    from hosttune import programs

    try:
        with open(path, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        if rest and is_python(rest[0]):
            return programs.trusted_which(rest[0], environ.get("PATH"))[0] or rest[0]
        return None
    return words[0] if is_python(words[0]) else None


def torchrun_python(t: TorchrunArgv, environ: Mapping[str, str]) -> str:
    """The interpreter torchrun runs a `script.py` with: $PYTHON_EXEC, else torchrun's own sys.executable."""
    from hosttune import programs

    if environ.get("PYTHON_EXEC"):
        return environ["PYTHON_EXEC"]
    path = environ.get("PATH")
    # looked up as the gateway looks programs up (as root only on PATH directories that pass the trust rule)
    if t.launcher_python is not None:
        return programs.trusted_which(t.launcher_python, path)[0] or t.launcher_python
    exe = t.launcher[0] if os.sep in t.launcher[0] else programs.trusted_which(t.launcher[0], path)[0]
    found = _shebang_python(exe, environ) if exe else None
    return found or TORCHRUN_PYTHON


def rank_command(t: TorchrunArgv, python: str) -> List[str]:
    """What torchrun would start for each rank (torch/distributed/run.py config_from_args), as a plain argv."""
    if t.mode == "no_python":
        return [t.script, *t.script_args]
    if t.mode == "module":
        return [python, "-u", "-m", t.script, *t.script_args]
    # python, and run_path (runpy in a spawned child of torchrun; a fresh interpreter is the same program)
    return [python, "-u", t.script, *t.script_args]


def shim_argv(shim_python: str, *, root: Optional[bool] = None) -> List[str]:
    """How a rank's shim starts: the program gateway's bootstrap (`programs.own_argv`) instead of `python -m
    hosttune.shim`, so nothing in the caller's working directory is imported; the package is the one this launcher
    was itself loaded from (the same code on both ends of the handoff); -I as root (`root`, default: euid 0). The
    rank itself still gets the environment unchanged and runs in the caller's directory."""
    from hosttune import programs

    return programs.own_argv("hosttune.shim", python=shim_python, isolated=root)


def rewrite_torchrun(t: TorchrunArgv, environ: Mapping[str, str], shim_python: str) -> List[str]:
    """torchrun [opts] --no-python <python> [-I] -c <shim bootstrap> <rank command>."""
    return [
        *t.launcher,
        *t.options,
        "--no-python",
        *shim_argv(shim_python),
        *rank_command(t, torchrun_python(t, environ)),
    ]


def nproc_per_node(t: TorchrunArgv, environ: Mapping[str, str], facts: Any) -> int:
    """torchrun's local world size (determine_local_world_size) without importing torch."""
    raw = t.value("nproc_per_node", environ, "1")
    try:
        n = int(raw)
    except ValueError:
        cpus = len(getattr(facts.cpu, "online", ())) or (os.cpu_count() or 1)
        gpus = len(facts.gpus)
        if raw == "cpu":
            n = cpus
        elif raw == "gpu":
            if not gpus:
                raise UserError("torchrun: --nproc-per-node=gpu but this host has no GPU") from None
            n = gpus
        elif raw == "auto":
            n = gpus or cpus
        else:
            raise UserError(f"torchrun: unsupported --nproc-per-node value {raw!r}") from None
    if n < 1:
        raise UserError(f"torchrun: --nproc-per-node must be at least 1, got {raw!r}")
    if n > MAX_NPROC_PER_NODE:
        raise UserError(f"torchrun: --nproc-per-node={raw} is more than the {MAX_NPROC_PER_NODE} local ranks hosttune "
                        f"plans for (this host has {os.cpu_count() or '?'} logical CPUs)")
    return n



def endpoint(t: TorchrunArgv, environ: Mapping[str, str]) -> "Optional[Endpoint]":
    """Where this torchrun job's nodes meet (torch/distributed/run.py get_rdzv_endpoint: --rdzv-endpoint, or for the
    static backend without one --master-addr), with --nnodes' upper bound; None for --standalone or no endpoint."""
    from hosttune.plan.network import Endpoint, host_of, nodes_of  # the planner's: not loaded by a rank's shim

    if "standalone" in t.flags:
        return None  # torchrun then rendezvouses on localhost: one node
    backend = t.value("rdzv_backend", environ, "static")
    raw = t.value("rdzv_endpoint", environ, "")
    source = "torchrun --rdzv-endpoint"
    if backend == "static" and not raw:
        raw, source = t.value("master_addr", environ, "127.0.0.1"), "torchrun --master-addr"
    if not raw.strip():
        return None
    return Endpoint(host_of(raw), source, nodes_of(t.value("nnodes", environ, "1")), torchrun=True,
                    local_addr=bool(t.value("local_addr", environ, "").strip()), c10d=backend == "c10d",
                    rdzv_conf=t.value("rdzv_conf", environ, ""))


__all__ = ["TORCHRUN_PYTHON", "MAX_NPROC_PER_NODE", "TorchrunArgv", "parse_torchrun", "torchrun_python", "rank_command",
           "shim_argv", "rewrite_torchrun", "nproc_per_node", "is_python", "endpoint"]
