"""`hosttune exec`: turns a user's command (torchrun, srun task, anything) into ranks that run with their plan applied.

The package, one concern per module:
- job.py        the job model: `prepare` (detect once, pick the job's shape, plan every known rank), `Launch`,
                what --dry-run prints
- torchrun.py   torchrun's argv taken apart; rewritten to start each rank through the shim (--no-python)
- slurm.py      an srun task's local rank and its node's task count
- binding.py    CPU/memory binding of this process (sched_setaffinity, set_mempolicy, numactl fallback)
- handoff.py    launcher -> shim/hook: the payload, its writers and its checked reader
- hook.py       the per-rank hook: every Python rank applies its own plan at interpreter start (rankhook/ on
                the job's PYTHONPATH holds its sitecustomize.py)
- rankvars.py   a rank's place on the node from its launcher's variables (LOCAL_RANK, Open MPI, MPICH, PMI, Slurm)
- procfs.py     /proc readers (status, environ, numa_maps, children, the launch marker)
- verify.py     --verify: each running rank compared with its plan
- supervise.py  run: exec or supervise, forward signals, sweep, exit status
- guardian.py   the forked guardian that stops the job when the launcher dies

Importing this package imports none of them: the names below load their module on first use (PEP 562), so a
rank's shim that needs only binding and handoff does not pay for the launcher's modules.
"""

import importlib
from typing import TYPE_CHECKING, Any, Dict, List

_EXPORTS: Dict[str, str] = {
    # job
    "Launch": "job", "prepare": "job", "render_text": "job",
    # torchrun
    "TorchrunArgv": "torchrun", "parse_torchrun": "torchrun", "rewrite_torchrun": "torchrun",
    "rank_command": "torchrun", "torchrun_python": "torchrun", "shim_argv": "torchrun", "nproc_per_node": "torchrun",
    "MAX_NPROC_PER_NODE": "torchrun",
    # slurm
    "slurm_rank": "slurm", "parse_tasks_per_node": "slurm",
    # binding
    "bind_self": "binding", "set_mempolicy": "binding", "effective_cpus": "binding", "effective_mems": "binding",
    "Binding": "binding",
    # handoff
    "TORCHRUN_PYTHON": "handoff", "handoff_payload": "handoff",
    # procfs
    "parse_cpulist": "procfs", "parse_numa_maps_policy": "procfs", "proc_status": "procfs", "proc_environ": "procfs",
    "proc_mempolicy": "procfs", "descendants": "procfs", "marked_processes": "procfs",
    # verify
    "RankCheck": "verify", "check_rank": "verify", "expected_for": "verify",
    # supervise
    "run": "supervise",
}
_RENAMED = {"handoff_payload": "payload"}
_SUBMODULES = ("binding", "guardian", "handoff", "hook", "job", "procfs", "rankvars", "slurm", "supervise", "torchrun",
               "verify")

if TYPE_CHECKING:
    from hosttune.launch.binding import Binding, bind_self, effective_cpus, effective_mems, set_mempolicy
    from hosttune.launch.handoff import TORCHRUN_PYTHON
    from hosttune.launch.handoff import payload as handoff_payload
    from hosttune.launch.job import Launch, prepare, render_text
    from hosttune.launch.procfs import (
        descendants,
        marked_processes,
        parse_cpulist,
        parse_numa_maps_policy,
        proc_environ,
        proc_mempolicy,
        proc_status,
    )
    from hosttune.launch.slurm import parse_tasks_per_node, slurm_rank
    from hosttune.launch.supervise import run
    from hosttune.launch.torchrun import (
        MAX_NPROC_PER_NODE,
        TorchrunArgv,
        nproc_per_node,
        parse_torchrun,
        rank_command,
        rewrite_torchrun,
        shim_argv,
        torchrun_python,
    )
    from hosttune.launch.verify import RankCheck, check_rank, expected_for


def __getattr__(name: str) -> Any:
    if name == "_cpulist":  # tests format CPU lists as the launcher prints them
        from hosttune.cpulist import format_cpulist

        return format_cpulist
    if name in _SUBMODULES:  # `launch.handoff.write(...)` before anything imported the module
        return importlib.import_module(f"hosttune.launch.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hosttune.launch' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hosttune.launch.{module}"), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "Binding", "Launch", "MAX_NPROC_PER_NODE", "RankCheck", "TORCHRUN_PYTHON", "TorchrunArgv", "bind_self",
    "check_rank", "descendants", "effective_cpus", "effective_mems", "expected_for", "handoff_payload",
    "marked_processes", "nproc_per_node", "parse_cpulist", "parse_numa_maps_policy", "parse_tasks_per_node",
    "parse_torchrun", "prepare", "proc_environ", "proc_mempolicy", "proc_status", "rank_command", "render_text",
    "rewrite_torchrun", "run", "set_mempolicy", "shim_argv", "slurm_rank", "torchrun_python",
]
