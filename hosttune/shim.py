"""The per-rank shim: `python -m hosttune.shim COMMAND...` binds this rank to its plan, then execs COMMAND.

`hosttune exec -- torchrun ...` rewrites torchrun's argv so that torchrun starts every rank (and every restart of a
rank) through this module; it is the route for ranks that are not Python (`torchrun --no-python`). Python ranks of
other launchers apply their plan from inside instead (launch/hook.py). It reads the rank's place from its launcher's
variables on each start (rankvars.py: LOCAL_RANK/LOCAL_WORLD_SIZE, Open MPI, MPICH, PMI, Slurm), so a restarted
rank is bound again and an elastic change of the world size gets a fresh layout. Facts and profile come
from the launcher's handoff file ($HOSTTUNE_HANDOFF); without one (someone ran an argv printed by --dry-run) the
shim detects the host itself.

Binding happens before exec: affinity and memory policy set here are inherited by the program and all its threads.
Exit status: the program's own (exec); 127 when COMMAND cannot be found, 126 when it cannot be run, 2 on bad input.

Import cost, paid by every rank start: on the handoff path this module imports only launch.handoff (json, fsio,
trust), launch.binding (+ procfs), launch.slurm and policy.names; `hosttune.launch` itself loads nothing until a
name is used. `python3 -X importtime` on the bootstrap path (shim_argv, a handoff for 2 ranks, Python 3.11, median
of 21): `import hosttune.shim` 17.2 ms / 27 modules before the launch/ package (launch.py + dataclasses), 5.7 ms /
16 modules after. The handed plan is read as `RankPlan.to_dict()` without RankPlan.from_dict, because importing
plan.py (facts, profile, YAML) would add about 60 ms to every rank; only an elastic world size or a missing
handoff plans here, and pays for it. The rank is started through the program gateway (hosttune/programs.py, imported
right before the exec), which imports subprocess at module level: +30 ms median of 11 on a busy 2-core CI box
(`-X importtime`, cumulative `hosttune.programs`, beside 43 ms for `hosttune.shim`), until programs.py defers it.
"""

import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune import trust
from hosttune.errors import UserError
from hosttune.launch import handoff, rankvars
from hosttune.launch.binding import bind_self
from hosttune.policy import names
from hosttune.sigexec import default_handlers_for_exec


def _say(msg: str) -> None:
    sys.stderr.write(f"hosttune.shim: {msg}\n")
    sys.stderr.flush()


def checked_env(plan_env: Mapping[str, str], environ: Mapping[str, str]) -> Dict[str, str]:
    """As root, every variable the plan sets passes `trust.check_env_value` again here, right before exec: loader and
    interpreter variables (LD_PRELOAD, PYTHONPATH, CUDA_INJECTION64_PATH, ...) must name only root's files, code-valued
    ones are refused, and any other value that names a path is refused. A library re-pointed since the launcher
    checked it, or a plan that did not come from a checked profile, stops the rank (Untrusted). Values already in the
    environment torchrun gave us, minus what the launcher added, are the caller's own and not the plan's to judge."""
    if not trust.is_root():
        return dict(plan_env)
    for key, value in plan_env.items():
        if environ.get(key) != value:
            trust.check_env_value(key, value, "the launcher's plan")
    return dict(plan_env)


def resolve_plan(
    handoff_data: Optional[Mapping[str, Any]], local_rank: int, world: int, environ: Mapping[str, str]
) -> Tuple[Any, Optional[str], Optional[str], bool]:
    """(plan, libnuma path, numactl path, no_bind) for this rank.

    Fast path: the launcher resolved the plans for this world size already. Otherwise (an elastic change of the
    world size, or no launcher at all) resolve from the handed-over facts and profile, or detect here.
    """
    if handoff_data is not None:
        tools = handoff_data.get("tools") or {}
        no_bind = bool(handoff_data.get("no_bind"))
        handed = handoff.rank_plan(handoff_data, local_rank, world)
        if handed is not None:
            return handed, tools.get("libnuma"), tools.get("numactl"), no_bind
    from hosttune import plan as planmod
    from hosttune.facts import Facts

    if handoff_data is not None:
        facts = Facts.from_dict(handoff_data["facts"])
        prof = handoff.profile_of(handoff_data, facts)
    else:
        from pathlib import Path

        from hosttune import detect
        from hosttune import profile as profmod

        facts = detect.collect(Path("/"), probe_torch=False)
        prof = profmod.active(None, facts)
        no_bind = False
    # Plan with the user's own environment: undo what the launcher set for torchrun (its common env), so
    # LD_PRELOAD is not prepended twice and torchrun's OMP_NUM_THREADS is not taken for the user's choice.
    user_env = handoff.users_env((handoff_data or {}).get("touched"), environ)
    data = handoff_data or {}
    rank_plan = planmod.resolve(facts, prof, local_rank, world, environ=user_env,
                                override=bool(data.get("override")), bound_by=data.get("bound_by"))
    return rank_plan, facts.tools.libnuma, facts.tools.numactl, no_bind


def parent_python() -> Optional[str]:
    """The interpreter torchrun runs on: $PYTHON_EXEC (torchrun's own override), else argv[0] of our parent (the
    kernel puts the `#!` interpreter there), else its executable. None when the parent is not a Python at all (a
    shell ran the shim): the rank command must never be handed to bash or sh.

    Through the program gateway (hosttune/programs.py): as root $PYTHON_EXEC, which `su`/`sudo -E` keep, must be
    root's alone (`programs.resolve`, Untrusted otherwise) and a bare argv[0] is looked up on PATH's trusted
    directories only (`programs.trusted_which`). As an ordinary user both are what they were (PATH as is)."""
    from hosttune import programs

    if os.environ.get("PYTHON_EXEC"):
        if trust.is_root():
            return programs.resolve(os.environ["PYTHON_EXEC"], "$PYTHON_EXEC")
        return os.environ["PYTHON_EXEC"]
    ppid = os.getppid()
    try:
        with open(f"/proc/{ppid}/cmdline", "rb") as fh:
            argv0 = fh.read().split(b"\0")[0].decode("utf-8", "surrogateescape")
    except OSError:
        argv0 = ""
    if argv0 and handoff.is_python(argv0):
        if os.path.isabs(argv0) and os.access(argv0, os.X_OK):
            return argv0
        found = programs.trusted_which(argv0)[0]
        if found:
            return found
    try:
        exe = os.readlink(f"/proc/{ppid}/exe")
    except OSError:
        return None
    return exe if handoff.is_python(exe) else None


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
        local_rank, world = (0, 1) if place is None else (place.local_rank, place.local_world_size)
        handoff_data = handoff.read(environ)
        rank_plan, libnuma, numactl, no_bind = resolve_plan(handoff_data, local_rank, world, environ)
    except UserError as exc:
        # Refuse rather than run the rank unprofiled: a silently unbound rank hides both a misconfiguration and
        # a swapped handoff. torchrun sees the failure and stops the job.
        _say(f"error: {exc}; rank not started")
        return 2

    env = dict(environ)
    try:
        env.update(checked_env(rank_plan.env, handoff.users_env((handoff_data or {}).get("touched"), environ)))
    except UserError as exc:
        _say(f"error: {exc}; rank {local_rank} not started")
        return 2
    env[names.LOCAL_RANK] = str(local_rank)
    env[names.LOCAL_WORLD_SIZE] = str(world)
    env.pop(names.HANDOFF, None)  # the rank's own children have no use for it
    if args[0] == handoff.TORCHRUN_PYTHON:
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
    if not no_bind:
        binding = bind_self(rank_plan, libnuma, numactl)
        for note in binding.notes:
            _say(f"rank {local_rank}: {note}")
        if binding.prefix:
            args = [*binding.prefix, "--", *args]
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
