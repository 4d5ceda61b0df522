"""The per-rank shim: `python -m hosttune.shim COMMAND...` binds this rank to its plan, then execs COMMAND (started
by the launcher through the program gateway's bootstrap, `programs.own_argv`, which runs this module's main()).

`hosttune exec -- torchrun ...` rewrites torchrun's argv so that torchrun starts every rank (and every restart of a
rank) through this module; it is the route for ranks that are not Python (`torchrun --no-python`). Python ranks of
other launchers apply their plan from inside instead (launch/hook.py). A thin entry over launch/rank.py, which
says where the plan comes from and what a bad one does (the one failure rule, shared with the hook): tampering or
a trust failure refuses the rank (exit 2); a plan that does not fit is one warning line and the rank runs as
torchrun started it. The rank's place comes from its launcher's variables on each start (rankvars.py), so a
restarted rank is bound again and an elastic change of the world size gets a fresh layout (planned by the
launcher's planner in a child process, see rank.replan; also when no handoff was given: someone ran an argv
printed by --dry-run).

Binding happens before exec: affinity and memory policy set here are inherited by the program and all its threads.
Exit status: the program's own (exec); 127 when COMMAND cannot be found, 126 when it cannot be run, 2 on bad input
or a refused rank.

Import cost, paid by every rank start: launch.{rank, handoff, rankvars, binding, procfs, pythons}, rankplan
(dataclasses), trust, fsio, policy.names; never the planner, a profile, YAML, the detector or click
(tests/test_launch_rank.py). The rank is started through the program gateway (hosttune/programs.py, imported right
before the exec), which imports subprocess.
"""

import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from hosttune import trust
from hosttune.errors import UserError
from hosttune.launch import handoff, rank, rankvars
from hosttune.launch.binding import bind_self
from hosttune.launch.pythons import parent_python
from hosttune.policy import names
from hosttune.rankplan import TORCHRUN_PYTHON
from hosttune.sigexec import default_handlers_for_exec


def _say(msg: str) -> None:
    sys.stderr.write(f"hosttune.shim: {msg}\n")
    sys.stderr.flush()


def _planned_env(environ: Dict[str, str], local_rank: int, world: int) -> Optional[Tuple[Dict[str, str], List[str]]]:
    """(the rank's environment, a numactl prefix) with its plan bound to this process; None when the rank is
    refused (said)."""
    what = f"rank {local_rank}/{world}"
    try:
        data = handoff.read(environ)
        setup = rank.setup(data, local_rank, world, environ)
        plan_env = rank.checked_env(setup.plan.env, data, environ) if setup.plan is not None else {}
    except trust.Untrusted as exc:  # tampering or a trust failure: refuse; torchrun sees it and stops the job
        _say(rank.refused_line(what, exc))
        return None
    env = dict(environ)
    env.update(plan_env)
    env[names.LOCAL_RANK] = str(local_rank)
    env[names.LOCAL_WORLD_SIZE] = str(world)
    env.pop(names.HANDOFF, None)  # the rank's own children have no use for it
    if setup.plan is None:
        _say(rank.warned_line(what, setup.warning or "no plan"))
    elif not setup.no_bind:
        try:
            binding = bind_self(setup.plan, setup.libnuma, setup.numactl)
        except OSError as exc:  # the plan does not fit this process's CPUs at all
            _say(rank.warned_line(what, f"CPUs {list(setup.plan.cpus)} not bound ({exc.strerror or exc})"))
            return env, []
        for note in binding.notes:
            _say(f"rank {local_rank}: {note}")
        return env, list(binding.prefix)
    return env, []


def main(argv: Optional[Sequence[str]] = None) -> int:
    args: List[str] = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        _say("usage: python -m hosttune.shim COMMAND [ARGS...] (started by `hosttune exec -- torchrun ...`)")
        return 2
    environ = dict(os.environ)
    try:
        place = rankvars.place(environ)
    except UserError as exc:  # bad rank variables: bad input
        _say(f"error: {exc}; rank not started")
        return 2
    local_rank, world = (0, 1) if place is None else (place.local_rank, place.local_world_size)
    planned = _planned_env(environ, local_rank, world)
    if planned is None:
        return 2
    env, prefix = planned
    if args[0] == TORCHRUN_PYTHON:
        try:
            found = parent_python()
        except UserError as exc:
            _say(f"error: {exc}; rank {local_rank} not started")
            return 2
        if found is None:
            _say("cannot tell which python torchrun runs on (the shim's parent is not a Python interpreter); "
                 "set PYTHON_EXEC to the interpreter for the training script")
            return 127
        args[0] = found
    if prefix:
        args = [*prefix, "--", *args]
    return _exec(args, env)


def _exec(args: List[str], env: Dict[str, str]) -> int:
    from hosttune import programs  # the gateway; imported here, after the plan (see the import cost above)

    default_handlers_for_exec()  # a signal caught just now is acted on, not lost in the exec
    try:
        # A bare name is looked up on env's PATH (as os.execvpe did), as root on its trusted directories only; the
        # resolved path runs. Not trust-checked beyond that: the rank command is root's own command line (`exec --
        # torchrun --no-python CMD`: sudo's semantics, as launch/supervise.py resolves it with check=False).
        programs.execve(args, env, "rank command", check_trust=False)
    except programs.NotFound as exc:
        _say(str(exc))
        return 126 if os.sep in args[0] and os.path.lexists(args[0]) else 127  # as a shell: found but not runnable
    except OSError as exc:
        _say(f"{args[0]}: {exc.strerror}")
        return 126
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main())
