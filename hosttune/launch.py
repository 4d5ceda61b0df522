"""`hosttune exec`: turns a user's command (torchrun, srun task, anything) into ranks that run with their plan applied.

Three shapes of job:
- torchrun (`torchrun ...`, `python -m torch.distributed.run ...`): the argv is rewritten to torchrun's own
  `--no-python` mode so that every rank (and every restart of a rank) starts through hosttune/shim.py (`python -c
  <bootstrap> <rank command>`, isolated from the caller's directory: see shim_argv); the shim reads
  LOCAL_RANK/LOCAL_WORLD_SIZE, resolves that rank's plan, binds, sets env and execs.
  Detection happens once, here; facts and profile reach the shims through a private handoff file (handoff.py).
- an srun task (SLURM_LOCALID set, no torchrun): this process is one rank of the node's tasks.
- anything else: one rank that owns the whole allowed set.

Plain and srun jobs are bound in this process and then exec'd (exit status and signals are the job's own). torchrun
jobs and `--verify` runs are supervised instead: the child gets its own process group, SIGINT/SIGTERM/SIGHUP are
forwarded to it, every process carrying this launch's marker is swept when it ends, and hosttune exits with the
job's status (128+N when the job died of signal N, or when it failed after hosttune forwarded signal N). A forked
guardian (guardian.py) stops the job if hosttune itself is killed, and catches processes that left the job's
process group and dropped the marker (hosttune is their subreaper).

This module must stay cheap to import (every torchrun rank's shim imports it): no torch, no detector, and the
heavier stdlib modules (subprocess, ctypes, tempfile, shutil, shlex) only inside the functions that use them.
"""

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from hosttune import handoff
from hosttune.cpulist import format_cpulist as _cpulist
from hosttune.cpulist import parse_cpulist as _parse_cpulist
from hosttune.errors import UserError

# Environment names the launcher and shim use among themselves.
ENV_HANDOFF = handoff.ENV  # path of the JSON handoff file (facts, profile, touched env, flags): see handoff.py
ENV_MARKER = "HOSTTUNE_LAUNCH_ID"  # carried by every process of the job; the sweep and --verify look for it
ENV_LOCAL_RANK = "HOSTTUNE_LOCAL_RANK"  # set on the rank's own process (after the shim's exec)
ENV_LOCAL_WORLD_SIZE = "HOSTTUNE_LOCAL_WORLD_SIZE"
ENV_GRACE = "HOSTTUNE_STOP_GRACE"  # seconds between the forwarded signal and SIGKILL (default 40)

# In a rank command: "the interpreter torchrun itself runs on", resolved by the shim from its parent process when
# the launcher cannot read it from torchrun's shebang (pyenv shims, wrapper scripts).
TORCHRUN_PYTHON = "{torchrun-python}"

MPOL_PREFERRED = 1
MPOL_BIND = 2
MPOL_PREFERRED_MANY = 5  # Linux 5.15+

# Local ranks per node hosttune plans for: far above any real node (one rank per GPU or per core), low enough that
# a typo (4000) is one clear line instead of thousands of plans, shims and a multi-megabyte handoff.
MAX_NPROC_PER_NODE = 1024

DEFAULT_GRACE_S = 40.0  # torchrun waits 30 s for its workers after SIGTERM before SIGKILL; give it that and more
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


# --------------------------------------------------------------------------------------------------------------
# torchrun argv


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


def _is_python(path: str) -> bool:
    name = os.path.basename(path)
    return name.startswith("python") or name.startswith("pypy")


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
    if not argv:
        return None
    python: Optional[str] = None
    if os.path.basename(argv[0]) == "torchrun":
        start = 1
        launcher: Tuple[str, ...] = (argv[0],)
    elif _is_python(argv[0]):
        target = _python_module_target(argv)
        if target is None or target[1] != "torch.distributed.run":
            return None
        start = target[0]
        launcher = tuple(argv[:start])
        python = argv[0]
    else:
        return None

    options: List[str] = []
    values: Dict[str, str] = {}
    flags: Set[str] = set()
    i = start
    script: Optional[str] = None
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            if i + 1 < len(argv):
                script = argv[i + 1]
                i += 2
            else:
                i += 1
            break
        if not tok.startswith("-") or tok == "-":
            script = tok
            i += 1
            break
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
            values[opt.dest] = value
            options.extend(consumed)
            i += len(consumed)
            continue
        if eq:
            raise UserError(f"torchrun: option {name} takes no value")
        flags.add(opt.dest)
        if opt.dest not in _MODE_FLAGS:
            options.append(tok)
        i += 1
    if "help" in flags:
        return None  # `torchrun --help`: nothing to launch; run it as it is
    if script is None:
        raise UserError("torchrun: no training script given (torchrun [OPTIONS] SCRIPT [ARGS...])")
    for dest in _MODE_FLAGS:
        # torchrun's check_env flags: PET_NO_PYTHON=1 acts like --no-python
        raw = environ.get(f"PET_{dest.upper()}", "0")
        if raw.strip().lstrip("-").isdigit() and int(raw) != 0:
            flags.add(dest)
    if "no_python" in flags and "module" in flags:
        raise UserError("torchrun: -m/--module cannot be combined with --no-python (torchrun refuses it too)")
    return TorchrunArgv(
        launcher=launcher,
        options=tuple(options),
        values=values,
        flags=frozenset(flags),
        script=script,
        script_args=tuple(argv[i:]),
        launcher_python=python,
    )


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
    import shutil

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
        if rest and _is_python(rest[0]):
            return shutil.which(rest[0], path=environ.get("PATH")) or rest[0]
        return None
    return words[0] if _is_python(words[0]) else None


def torchrun_python(t: TorchrunArgv, environ: Mapping[str, str]) -> str:
    """The interpreter torchrun runs a `script.py` with: $PYTHON_EXEC, else torchrun's own sys.executable."""
    import shutil

    if environ.get("PYTHON_EXEC"):
        return environ["PYTHON_EXEC"]
    path = environ.get("PATH")
    if t.launcher_python is not None:
        return shutil.which(t.launcher_python, path=path) or t.launcher_python
    exe = t.launcher[0] if os.sep in t.launcher[0] else shutil.which(t.launcher[0], path=path)
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


# How a rank's shim starts: `python -c` with this bootstrap instead of `python -m hosttune.shim`, because `-m`
# (and `-c`) put the caller's directory first on sys.path, so a `hosttune.py` or `json.py` another user left in a
# shared working directory would run inside every rank (as root, too). The bootstrap drops that entry before any
# import and loads the package from the directory this launcher was itself loaded from (the same code on both ends
# of the handoff, without putting anything else ahead of the standard library). As root the interpreter also runs
# isolated (-I: no PYTHONPATH/PYTHONSTARTUP/user site that `su`/`sudo -E` may have carried over); the rank itself
# still gets the environment unchanged and runs in the caller's directory.
_SHIM_BOOT = (
    "import sys; sys.path[:1] == [''] and sys.path.pop(0); import importlib.util as u; "
    "s = u.spec_from_file_location('hosttune', {init!r}, submodule_search_locations=[{pkg!r}]); "
    "m = u.module_from_spec(s); sys.modules['hosttune'] = m; s.loader.exec_module(m); "
    "from hosttune.shim import main; sys.exit(main())"
)


def shim_argv(shim_python: str, *, root: Optional[bool] = None) -> List[str]:
    pkg = os.path.dirname(os.path.abspath(__file__))
    isolated = os.geteuid() == 0 if root is None else root
    boot = _SHIM_BOOT.format(init=os.path.join(pkg, "__init__.py"), pkg=pkg)
    return [shim_python, *(["-I"] if isolated else []), "-c", boot]


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


# --------------------------------------------------------------------------------------------------------------
# srun


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


# --------------------------------------------------------------------------------------------------------------
# the plan of a launch


@dataclass
class Launch:
    kind: str  # torchrun | srun | plain
    argv: List[str]  # what runs (torchrun rewritten; plain/srun: the command itself, maybe behind numactl)
    ranks: List[Any]  # RankPlan of each local rank known now (torchrun: --nproc-per-node of them)
    env: Dict[str, str]  # the environment the top process gets (torchrun: common env; plain: the rank's env)
    touched: Dict[str, Optional[str]]  # variables set for torchrun -> the user's own value (None: was unset)
    facts: Any
    profile: Any
    no_bind: bool = False
    torchrun: Optional[TorchrunArgv] = None  # the user's torchrun command line, taken apart

    def to_dict(self) -> Dict[str, Any]:
        ranks = []
        for plan in self.ranks:
            ranks.append(
                {
                    "local_rank": plan.local_rank,
                    "local_world_size": plan.local_world_size,
                    "cpus": [] if self.no_bind else list(plan.cpus),
                    "mems": [] if self.no_bind else list(plan.mems),
                    "mem_policy": "none" if self.no_bind else plan.mem_policy,
                    "gpu": plan.gpu,
                    "env": dict(plan.env),
                    "reasons": list(plan.reasons),
                }
            )
        return {"kind": self.kind, "argv": list(self.argv), "ranks": ranks, "env": dict(self.env)}


def prepare(
    command: Sequence[str],
    *,
    profile: Optional[str] = None,
    root: Optional[Path] = None,
    no_bind: bool = False,
    environ: Optional[Mapping[str, str]] = None,
    facts: Any = None,
    shim_python: Optional[str] = None,
) -> Launch:
    """Detect once, pick the job's shape, and resolve the plan of every local rank known now."""
    from hosttune import plan as planmod
    from hosttune import profile as profmod

    env_in: Dict[str, str] = dict(os.environ if environ is None else environ)
    if not command:
        raise UserError("exec: no COMMAND given (hosttune exec [OPTIONS] -- COMMAND [ARGS...])")
    if facts is None:
        from hosttune import detect

        facts = detect.collect(root or Path("/"), probe_torch=False, use_nvml=root is None)
    prof = profmod.active(profile, facts)
    t = parse_torchrun(command, env_in)
    if t is not None:
        n = nproc_per_node(t, env_in, facts)
        ranks = [planmod.resolve(facts, prof, r, n, environ=env_in) for r in range(n)]
        common = dict(planmod.common_env(facts, prof, environ=env_in))
        # torchrun forces OMP_NUM_THREADS=1 (and warns) when it is unset; every shim sets its rank's own value.
        if "OMP_NUM_THREADS" not in env_in and ranks and "OMP_NUM_THREADS" in ranks[0].env:
            common["OMP_NUM_THREADS"] = ranks[0].env["OMP_NUM_THREADS"]
        touched = {k: env_in.get(k) for k in common}
        argv = rewrite_torchrun(t, env_in, shim_python or sys.executable)
        return Launch("torchrun", argv, ranks, common, touched, facts, prof, no_bind, t)
    slurm = slurm_rank(env_in)
    kind = "plain" if slurm is None else "srun"
    local, size = (0, 1) if slurm is None else slurm
    plan = planmod.resolve(facts, prof, local, size, environ=env_in)
    return Launch(kind, list(command), [plan], dict(plan.env), {}, facts, prof, no_bind)


def render_text(launch: Launch) -> str:
    import shlex

    d = launch.to_dict()
    lines = [f"# {launch.kind} job", "argv: " + shlex.join(d["argv"])]
    if launch.kind == "torchrun":
        lines.append("torchrun env (same for every rank):")
        lines.extend(f"  {k}={shlex.quote(v)}" for k, v in sorted(d["env"].items()))
    for r in d["ranks"]:
        cpus = _cpulist(r["cpus"]) or "(not bound)"
        mems = _cpulist(r["mems"]) or "-"
        gpu = f" gpu {r['gpu']}" if r["gpu"] else ""
        head = f"rank {r['local_rank']}/{r['local_world_size']}"
        lines.append(f"{head}: cpus {cpus} mems {mems} ({r['mem_policy']}){gpu}")
        common = d["env"] if launch.kind == "torchrun" else {}
        for k, v in sorted(r["env"].items()):
            if common.get(k) != v:
                lines.append(f"  {k}={shlex.quote(v)}")
        lines.extend(f"  # {reason}" for reason in r["reasons"])
    if launch.kind == "torchrun":
        lines.append("(restarted ranks and a changed world size get their plan again from the shim)")
    return "\n".join(lines)


def parse_cpulist(text: str) -> Tuple[int, ...]:
    """"0-2,5" -> (0, 1, 2, 5), as a tuple to compare with a plan's."""
    return tuple(_parse_cpulist(text))


# --------------------------------------------------------------------------------------------------------------
# binding (used by the launcher for plain/srun jobs, and by the shim for torchrun ranks)


def effective_cpus(plan_cpus: Sequence[int], allowed: Iterable[int]) -> Tuple[int, ...]:
    """The plan's CPUs inside the allowed set; the allowed set itself when they do not meet (never EINVAL)."""
    allowed_set = set(allowed)
    cpus = tuple(sorted(set(plan_cpus) & allowed_set))
    return cpus or tuple(sorted(allowed_set))


def _self_mems_allowed() -> Tuple[int, ...]:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Mems_allowed_list:"):
                    return parse_cpulist(line.split(":", 1)[1])
    except OSError:
        pass
    return ()


def effective_mems(plan: Any) -> Tuple[str, Tuple[int, ...]]:
    """(policy, nodes) the rank really gets: plan nodes inside Mems_allowed; ("none", ()) when nothing is left."""
    if plan.mem_policy not in ("bind", "preferred") or not plan.mems:
        return "none", ()
    allowed = _self_mems_allowed()
    nodes = tuple(sorted(set(plan.mems) & set(allowed))) if allowed else tuple(sorted(plan.mems))
    if not nodes:
        return "none", ()
    return plan.mem_policy, nodes


def _libnuma(path: Optional[str]) -> Optional[Any]:
    import ctypes

    for name in [p for p in (path, "libnuma.so.1", "libnuma.so") if p]:
        try:
            return ctypes.CDLL(name, use_errno=True)
        except OSError:
            continue
    return None


def set_mempolicy(policy: str, nodes: Sequence[int], libnuma_path: Optional[str] = None) -> Optional[str]:
    """Set this process's memory policy (inherited across fork and exec). None on success, else why not."""
    import ctypes

    lib = _libnuma(libnuma_path)
    if lib is None or not hasattr(lib, "set_mempolicy"):
        return "libnuma.so.1 not found"
    bits = ctypes.sizeof(ctypes.c_ulong) * 8
    words = max(nodes) // bits + 1
    mask = (ctypes.c_ulong * words)()
    for node in nodes:
        mask[node // bits] |= 1 << (node % bits)
    fn = lib.set_mempolicy
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_ulong), ctypes.c_ulong]
    fn.restype = ctypes.c_long
    modes = [MPOL_BIND] if policy == "bind" else [MPOL_PREFERRED]
    if policy == "preferred" and len(nodes) > 1:
        modes = [MPOL_PREFERRED_MANY, MPOL_PREFERRED]  # one preferred node only before Linux 5.15
    err = 0
    for mode in modes:
        if mode == MPOL_PREFERRED and len(nodes) > 1:
            mask = (ctypes.c_ulong * words)()
            mask[nodes[0] // bits] |= 1 << (nodes[0] % bits)
        # maxnode counts one past the last bit, as libnuma itself passes it (numa_set_membind: size + 1)
        if fn(mode, mask, words * bits + 1) == 0:
            return None
        err = ctypes.get_errno()
    return f"set_mempolicy failed: {os.strerror(err)}"


@dataclass(frozen=True)
class Binding:
    cpus: Tuple[int, ...]  # () = not bound
    mem_policy: str
    mems: Tuple[int, ...]
    prefix: Tuple[str, ...]  # ("numactl", "--membind=0") when libnuma was not usable
    notes: Tuple[str, ...]


def bind_self(plan: Any, libnuma_path: Optional[str] = None, numactl: Optional[str] = None) -> Binding:
    """Bind this process to the plan (CPUs, then memory); exec afterwards so every thread of the job inherits it."""
    import shutil

    notes: List[str] = []
    allowed = os.sched_getaffinity(0)
    cpus: Tuple[int, ...] = ()
    if plan.cpus:
        cpus = effective_cpus(plan.cpus, allowed)
        if set(cpus) != set(plan.cpus):
            notes.append(f"plan CPUs {_cpulist(plan.cpus)} narrowed to the allowed {_cpulist(cpus)}")
        os.sched_setaffinity(0, cpus)
    policy, nodes = effective_mems(plan)
    prefix: Tuple[str, ...] = ()
    if policy != "none":
        why = set_mempolicy(policy, nodes, libnuma_path)
        if why is not None:
            tool = numactl or shutil.which("numactl")
            if tool:
                flag = "--membind" if policy == "bind" else "--preferred"
                prefix = (tool, f"{flag}={_cpulist(nodes) if policy == 'bind' else nodes[0]}")
            else:
                notes.append(f"memory not bound ({why}; numactl not found either)")
                policy, nodes = "none", ()
    return Binding(cpus, policy, nodes, prefix, tuple(notes))


# --------------------------------------------------------------------------------------------------------------
# handoff from the launcher to the shims


def handoff_payload(launch: Launch, marker: str) -> Dict[str, Any]:
    """What every shim of this launch needs. The plans for the known local world size are resolved here already,
    so a rank's shim only reads JSON and binds (no facts/profile/YAML imports); a different world size (elastic)
    falls back to resolving from the facts and profile carried along."""
    prof = launch.profile
    size = len(launch.ranks)
    return {
        "version": 1,
        "marker": marker,
        "plans": {str(size): [_plan_dict(p) for p in launch.ranks]},
        "tools": {"libnuma": launch.facts.tools.libnuma, "numactl": launch.facts.tools.numactl},
        "facts": launch.facts.to_dict(),
        "profile": _jsonable(prof.to_dict()) if hasattr(prof, "to_dict") else None,
        "touched": launch.touched,
        "no_bind": launch.no_bind,
    }


def _plan_dict(plan: Any) -> Dict[str, Any]:
    return {
        "local_rank": plan.local_rank,
        "local_world_size": plan.local_world_size,
        "cpus": list(plan.cpus),
        "mems": list(plan.mems),
        "mem_policy": plan.mem_policy,
        "env": dict(plan.env),
    }


@dataclass(frozen=True)
class PlanView:
    """The parts of a RankPlan that binding and exec need, rebuilt from the handoff without importing plan.py."""

    local_rank: int
    local_world_size: int
    cpus: Tuple[int, ...]
    mems: Tuple[int, ...]
    mem_policy: str
    env: Mapping[str, str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PlanView":
        return cls(int(d["local_rank"]), int(d["local_world_size"]), tuple(d["cpus"]), tuple(d["mems"]),
                   str(d["mem_policy"]), dict(d["env"]))


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------------------------
# /proc reads for --verify and the sweep


def _read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def proc_environ(pid: int) -> Optional[Dict[str, str]]:
    raw = _read(f"/proc/{pid}/environ")
    if raw is None:
        return None
    out: Dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return out


def proc_status(pid: int, tid: Optional[int] = None) -> Dict[str, str]:
    path = f"/proc/{pid}/status" if tid is None else f"/proc/{pid}/task/{tid}/status"
    raw = _read(path)
    out: Dict[str, str] = {}
    for line in (raw or b"").decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key] = value.strip()
    return out


def parse_numa_maps_policy(text: str) -> Optional[Tuple[str, Tuple[int, ...]]]:
    """The task memory policy from the first line of /proc/PID/numa_maps, as (bind|preferred|interleave|none, nodes).

    numa_maps prints a mapping's own policy or, when it has none, the task's policy in mpol_to_str's format:
    "default", "bind:0-1", "prefer:0", "prefer (many):0-1", "interleave:0-3", flags as "bind=static:0"
    (Documentation/admin-guide/mm/numa_memory_policy.rst, mm/mempolicy.c).
    """
    first = text.split("\n", 1)[0].split(" ", 1)
    if len(first) < 2 or not first[1]:
        return None
    rest = first[1]
    if rest.startswith("prefer (many)"):
        name, nodes = "preferred", rest[len("prefer (many)") :].split(" ")[0]
        nodes = nodes.split(":", 1)[1] if ":" in nodes else ""
    else:
        word = rest.split(" ")[0]
        name, _, nodes = word.partition(":")
        name = name.split("=")[0]
    name = {"prefer": "preferred", "default": "none", "local": "none"}.get(name, name)
    return name, parse_cpulist(nodes) if nodes else ()


def proc_mempolicy(pid: int) -> Optional[Tuple[str, Tuple[int, ...]]]:
    raw = _read(f"/proc/{pid}/numa_maps")
    return None if raw is None else parse_numa_maps_policy(raw.decode("utf-8", "replace"))


def proc_ppid(pid: int) -> Optional[int]:
    raw = _read(f"/proc/{pid}/stat")
    if not raw:
        return None
    # the command name may hold spaces and parentheses: the fields after the last ")" are fixed
    fields = raw[raw.rindex(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def _children(pid: int) -> List[int]:
    out: List[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        raw = _read(f"/proc/{pid}/task/{tid}/children")
        if raw:
            out.extend(int(x) for x in raw.split())
    return out


def descendants(pid: int) -> List[int]:
    seen: List[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        for c in _children(p):
            if c not in seen:
                seen.append(c)
                todo.append(c)
    return seen


def marked_processes(marker: str) -> List[int]:
    """Every process whose environment carries this launch's marker (the job, wherever it was reparented)."""
    needle = f"{ENV_MARKER}={marker}".encode()
    out: List[int] = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        raw = _read(f"/proc/{name}/environ")
        if raw and needle in raw.split(b"\0"):
            out.append(int(name))
    return out


@dataclass
class RankCheck:
    pid: int
    local_rank: int
    local_world_size: int
    expected_cpus: Tuple[int, ...]
    expected_policy: str
    expected_mems: Tuple[int, ...]
    expected_env: Dict[str, str]
    mismatches: List[str] = field(default_factory=list)
    checks: int = 0
    last: float = 0.0  # time.monotonic() of the last check


def _exited(status: Mapping[str, str]) -> bool:
    """A process that is gone (no status) or a zombie/dead one: nothing of it is left to compare."""
    return not status or status.get("State", "").startswith(("Z", "X"))


def check_rank(rc: RankCheck) -> List[str]:
    """Compare a running rank with its plan: affinity of every thread, memory policy, environment. New mismatches."""
    found: List[str] = []
    status = proc_status(rc.pid)
    if _exited(status):
        return found
    rc.checks += 1
    rc.last = time.monotonic()
    if rc.expected_cpus:
        try:
            tids = sorted(int(t) for t in os.listdir(f"/proc/{rc.pid}/task"))
        except OSError:
            tids = []
        for tid in tids or [rc.pid]:
            st = proc_status(rc.pid, tid)
            if "Cpus_allowed_list" not in st:
                continue
            got = parse_cpulist(st["Cpus_allowed_list"])
            if got != rc.expected_cpus:
                who = "" if tid == rc.pid else f" thread {tid} ({st.get('Name', '?')})"
                found.append(f"cpus{who} {_cpulist(got)}, plan {_cpulist(rc.expected_cpus)}")
                break
    if rc.expected_policy != "none":
        mems_allowed = parse_cpulist(status.get("Mems_allowed_list", ""))
        if not set(rc.expected_mems) <= set(mems_allowed):
            found.append(f"Mems_allowed {_cpulist(mems_allowed)} lacks plan nodes {_cpulist(rc.expected_mems)}")
        pol = proc_mempolicy(rc.pid)
        if pol is not None and pol != (rc.expected_policy, rc.expected_mems):
            got_pol = pol[0] + (":" + _cpulist(pol[1]) if pol[1] else "")
            found.append(f"memory policy {got_pol}, plan {rc.expected_policy}:{_cpulist(rc.expected_mems)}")
    env = proc_environ(rc.pid)
    if not env and _exited(proc_status(rc.pid)):
        # The rank ended between the reads: a zombie's environ reads empty, which is no evidence against the plan.
        return found
    env = env or {}
    for key, value in sorted(rc.expected_env.items()):
        if env.get(key) != value:
            found.append(f"env {key}={env.get(key)!r}, plan {value!r}")
    new = [m for m in found if m not in rc.mismatches]
    rc.mismatches.extend(new)
    return new


# --------------------------------------------------------------------------------------------------------------
# running


def _which_or_fail(cmd: str, environ: Mapping[str, str]) -> str:
    import shutil

    if os.sep in cmd:
        if not os.path.exists(cmd):
            raise UserError(f"exec: {cmd}: no such file")
        if os.path.isdir(cmd) or not os.access(cmd, os.X_OK):
            raise UserError(f"exec: {cmd}: not an executable file")
        return cmd
    found = shutil.which(cmd, path=environ.get("PATH", os.defpath))
    if not found:
        raise UserError(f"exec: {cmd}: command not found")
    return found


def _grace() -> float:
    raw = os.environ.get(ENV_GRACE)
    try:
        return float(raw) if raw else DEFAULT_GRACE_S
    except ValueError:
        raise UserError(f"{ENV_GRACE}={raw!r} is not a number of seconds") from None


def _say(msg: str) -> None:
    sys.stderr.write(f"hosttune: {msg}\n")
    sys.stderr.flush()


def run(launch: Launch, *, verify: bool = False) -> int:
    """Run the job; returns the exit status hosttune should end with (plain jobs without --verify do not return)."""
    environ = dict(os.environ)
    marker = f"{os.getpid()}-{os.urandom(4).hex()}"
    if launch.kind == "torchrun":
        t = launch.torchrun
        _which_or_fail(launch.argv[0], environ)
        if t is not None and t.mode in ("python", "run_path") and not os.path.exists(t.script):
            raise UserError(f"exec: {t.script}: no such file (torchrun's training script)")
        if t is not None and t.mode == "no_python":
            _which_or_fail(t.script, environ)
        try:
            path = handoff.write(handoff_payload(launch, marker), environ)
        except OSError as exc:
            raise UserError(f"exec: {exc}") from None
        env = dict(environ)
        env.update(launch.env)
        for key in ("PET_MODULE", "PET_RUN_PATH", "PET_NO_PYTHON"):
            env.pop(key, None)  # consumed while parsing; the rewritten argv says --no-python itself
        env[ENV_HANDOFF] = path
        env[ENV_MARKER] = marker
        try:
            return _supervise(launch, launch.argv, env, marker, verify, cleanup=[path])
        finally:
            handoff.remove(path)
    # plain / srun: bind this process, then exec (or spawn and watch with --verify)
    plan = launch.ranks[0]
    exe = _which_or_fail(launch.argv[0], environ)
    env = dict(environ)
    env.update(plan.env)
    env[ENV_MARKER] = marker
    env[ENV_LOCAL_RANK] = str(plan.local_rank)
    env[ENV_LOCAL_WORLD_SIZE] = str(plan.local_world_size)
    argv = list(launch.argv)
    if not launch.no_bind:
        binding = bind_self(plan, launch.facts.tools.libnuma, launch.facts.tools.numactl)
        for note in binding.notes:
            _say(note)
        if binding.prefix:
            argv = [*binding.prefix, "--", *argv]
            exe = binding.prefix[0]
    if not verify:
        sys.stdout.flush()
        try:
            os.execve(exe, argv, env)
        except OSError as exc:
            raise UserError(f"exec: {argv[0]}: {exc.strerror}") from None
    return _supervise(launch, argv, env, marker, verify)


def expected_for(launch: Launch, local_rank: int, local_world_size: int, rank_env: Mapping[str, str]) -> RankCheck:
    """What --verify expects of a rank: the same plan the shim resolved, inside this launcher's allowed sets."""
    from hosttune import plan as planmod

    if launch.kind == "torchrun" and local_world_size == len(launch.ranks):
        plan = launch.ranks[local_rank]  # what the shim was handed
    elif launch.kind == "torchrun":
        environ = dict(rank_env)
        for key, orig in launch.touched.items():
            if orig is None:
                environ.pop(key, None)
            else:
                environ[key] = orig
        plan = planmod.resolve(launch.facts, launch.profile, local_rank, local_world_size, environ=environ)
    else:
        plan = launch.ranks[0]
    cpus: Tuple[int, ...] = ()
    policy, mems = "none", ()  # type: Tuple[str, Tuple[int, ...]]
    if not launch.no_bind:
        cpus = effective_cpus(plan.cpus, os.sched_getaffinity(0)) if plan.cpus else ()
        policy, mems = effective_mems(plan)
    return RankCheck(0, local_rank, local_world_size, cpus, policy, mems, dict(plan.env))


def _supervise(launch: Launch, argv: List[str], env: Dict[str, str], marker: str, verify: bool,
               cleanup: Sequence[str] = ()) -> int:
    """Spawn the job in its own process group, forward signals, optionally verify ranks, sweep, map the status.

    A guardian (guardian.py) stops the job if this process dies without doing so itself (SIGKILL, OOM killer)."""
    import subprocess

    from hosttune import guardian

    grace = _grace()
    guardian.become_subreaper()  # a rank's setsid'd child stays in our tree, where the guardian sees it
    guard = guardian.Guardian.start(marker, grace, cleanup)
    received: List[int] = []
    child: Optional[subprocess.Popen[bytes]] = None
    old: Dict[int, Any] = {}

    def forward(signum: int, frame: Any) -> None:
        received.append(signum)
        if child is not None and child.returncode is None:
            try:
                os.killpg(child.pid, signum)
            except ProcessLookupError:
                pass

    for sig in FORWARDED:
        old[sig] = signal.signal(sig, forward)
    checks: Dict[int, RankCheck] = {}
    try:
        try:
            # no threads here, so preexec_fn is safe; the top process also gets SIGTERM if we die
            child = subprocess.Popen(argv, env=env, preexec_fn=guardian.pdeathsig_preexec())
        except OSError as exc:
            guard.finish()
            raise UserError(f"exec: {argv[0]}: {exc.strerror}") from None
        guard.watch(child.pid)
        if received:  # a signal that came before the child existed
            os.killpg(child.pid, received[-1])
        started = time.monotonic()
        deadline: Optional[float] = None
        while True:
            now = time.monotonic()
            interval = 0.02 if now - started < 3 else 0.25
            try:
                child.wait(timeout=interval if verify or received else 0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            if received and deadline is None:
                deadline = time.monotonic() + grace
            guardian.reap_orphans_except(child.pid, guard.pid)
            if deadline is not None and time.monotonic() > deadline:
                _say(f"job still running {grace:.0f} s after signal {received[0]}; killing it")
                try:
                    os.killpg(child.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                deadline = float("inf")
            if verify:
                _verify_pass(launch, child.pid, checks, marker)
        rc = child.returncode
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
        if child is not None and child.returncode is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child.wait()
        _sweep(marker)
        guard.finish()  # stragglers that dropped the marker (setsid + env -i) are stopped by the guardian
    if verify:
        _verify_report(launch, checks)
    if rc < 0:
        return 128 - rc
    if rc != 0 and received:
        return 128 + received[0]
    return rc


def _verify_pass(launch: Launch, top: int, checks: Dict[int, RankCheck], marker: str) -> None:
    if os.path.exists(f"/proc/{top}/task/{top}/children"):
        candidates = [top, *descendants(top)]
    else:  # a kernel without CONFIG_PROC_CHILDREN: look for the launch marker instead
        candidates = marked_processes(marker)
    for pid in candidates:
        if pid in checks:
            rc = checks[pid]
            if time.monotonic() - rc.last >= 2.0:  # re-check every ~2 s: libraries reset affinity after init
                for m in check_rank(rc):
                    _say(f"verify: rank {rc.local_rank} (pid {pid}): MISMATCH {m}")
            continue
        if proc_ppid(pid) in checks:
            continue  # a child of a rank (DataLoader worker, compiler): it inherits the rank's binding
        env = proc_environ(pid)
        if not env or ENV_LOCAL_RANK not in env:
            continue  # the shim before its exec, torchrun itself, or a helper process
        try:
            local = int(env[ENV_LOCAL_RANK])
            size = int(env.get(ENV_LOCAL_WORLD_SIZE, "1"))
        except ValueError:
            continue
        rc = expected_for(launch, local, size, env)
        rc.pid = pid
        checks[pid] = rc
        for m in check_rank(rc):
            _say(f"verify: rank {local} (pid {pid}): MISMATCH {m}")


def _verify_report(launch: Launch, checks: Dict[int, RankCheck]) -> None:
    if not checks:
        _say("verify: no rank was seen running (the job ended before it could be read)")
        return
    for rc in sorted(checks.values(), key=lambda c: (c.local_rank, c.pid)):
        what = (
            f"cpus {_cpulist(rc.expected_cpus) or '(not bound)'}, mems "
            f"{rc.expected_policy}:{_cpulist(rc.expected_mems) or '-'}, {len(rc.expected_env)} env vars"
        )
        verdict = "ok" if not rc.mismatches else f"{len(rc.mismatches)} mismatch(es)"
        _say(f"verify: rank {rc.local_rank}/{rc.local_world_size} (pid {rc.pid}): {what}: {verdict}")


def _sweep(marker: str, wait_s: float = 2.0) -> List[int]:
    """SIGTERM, then SIGKILL, every process still carrying the marker: no rank outlives the launcher."""
    left = marked_processes(marker)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + wait_s
        while time.monotonic() < end:
            left = [p for p in left if _alive(p)]
            if not left:
                break
            time.sleep(0.02)
    return left


def _alive(pid: int) -> bool:
    st = proc_status(pid)
    return bool(st) and not st.get("State", "").startswith(("Z", "X"))


__all__ = [
    "Launch",
    "TorchrunArgv",
    "parse_torchrun",
    "rewrite_torchrun",
    "rank_command",
    "slurm_rank",
    "parse_tasks_per_node",
    "prepare",
    "run",
    "render_text",
    "bind_self",
    "set_mempolicy",
    "effective_cpus",
    "check_rank",
]
