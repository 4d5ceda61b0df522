"""The per-rank shim: `python -m hosttune.shim COMMAND...` binds this rank to its plan, then execs COMMAND.

`hosttune exec -- torchrun ...` rewrites torchrun's argv so that torchrun starts every rank (and every restart of a
rank) through this module. It reads LOCAL_RANK and LOCAL_WORLD_SIZE from torchrun's environment on each start, so
a restarted rank is bound again and an elastic change of the world size gets a fresh layout. Facts and profile come
from the launcher's handoff file ($HOSTTUNE_HANDOFF); without one (someone ran an argv printed by --dry-run) the
shim detects the host itself.

Binding happens before exec: affinity and memory policy set here are inherited by the program and all its threads.
Exit status: the program's own (exec); 127 when COMMAND cannot be found, 126 when it cannot be run, 2 on bad input.
"""

import dataclasses
import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune import handoff, launch, trust
from hosttune.errors import UserError


def _say(msg: str) -> None:
    sys.stderr.write(f"hosttune.shim: {msg}\n")
    sys.stderr.flush()


def _int_env(environ: Mapping[str, str], *keys: str) -> Optional[int]:
    for key in keys:
        raw = environ.get(key)
        if raw not in (None, ""):
            try:
                return int(str(raw))
            except ValueError:
                raise UserError(f"{key}={raw!r} is not an integer") from None
    return None


def profile_from_dict(data: Mapping[str, Any]) -> Any:
    """Rebuild the launcher's Profile from `Profile.to_dict()` (nested DataLoader, tuples)."""
    from hosttune import profile as profmod

    known = {f.name: f for f in dataclasses.fields(profmod.Profile)}
    kwargs: Dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            continue
        if key == "dataloader" and isinstance(value, Mapping):
            value = profmod.DataLoader(**value)
        elif key == "chain" and isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    return profmod.Profile(**kwargs)


def read_handoff(environ: Mapping[str, str]) -> Optional[Dict[str, Any]]:
    """The launcher's plan, read through the checked channel (handoff.py); UserError when it fails a check."""
    return handoff.read(environ)


def users_env(handoff_data: Optional[Mapping[str, Any]], environ: Mapping[str, str]) -> Dict[str, str]:
    """The caller's own environment: torchrun's, with what the launcher set for torchrun (its common env) undone."""
    user_env = dict(environ)
    touched = (handoff_data or {}).get("touched") or {}
    for key, orig in touched.items():
        if orig is None:
            user_env.pop(key, None)
        else:
            user_env[key] = orig
    return user_env


def checked_env(plan_env: Mapping[str, str], environ: Mapping[str, str]) -> Dict[str, str]:
    """As root, every loader/interpreter variable the plan sets (LD_PRELOAD, PYTHONPATH, PYTHONSTARTUP, ...) must
    pass the root trust rule again here, right before exec: a library re-pointed since the launcher checked it, or a
    plan that did not come from a checked profile, stops the rank (Untrusted). Values already in the environment
    torchrun gave us, minus what the launcher added, are the caller's own and not the plan's to judge."""
    if not trust.is_root():
        return dict(plan_env)
    for key, value in plan_env.items():
        risky = key in trust.PATH_LIST_ENV or key in trust.CODE_ENV or key.startswith("LD_")
        if risky and environ.get(key) != value:
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
        plans = (handoff_data.get("plans") or {}).get(str(world))
        tools = handoff_data.get("tools") or {}
        no_bind = bool(handoff_data.get("no_bind"))
        if plans and 0 <= local_rank < len(plans):
            return launch.PlanView.from_dict(plans[local_rank]), tools.get("libnuma"), tools.get("numactl"), no_bind
    from hosttune import plan as planmod
    from hosttune.facts import Facts

    if handoff_data is not None:
        facts = Facts.from_dict(handoff_data["facts"])
        if handoff_data.get("profile") is not None:
            prof = profile_from_dict(handoff_data["profile"])
        else:
            from hosttune import profile as profmod

            prof = profmod.active(None, facts)
    else:
        from pathlib import Path

        from hosttune import detect
        from hosttune import profile as profmod

        facts = detect.collect(Path("/"), probe_torch=False)
        prof = profmod.active(None, facts)
        no_bind = False
    # Plan with the user's own environment: undo what the launcher set for torchrun (its common env), so
    # LD_PRELOAD is not prepended twice and torchrun's OMP_NUM_THREADS is not taken for the user's choice.
    user_env = users_env(handoff_data, environ)
    rank_plan = planmod.resolve(facts, prof, local_rank, world, environ=user_env)
    return rank_plan, facts.tools.libnuma, facts.tools.numactl, no_bind


def parent_python() -> Optional[str]:
    """The interpreter torchrun runs on: $PYTHON_EXEC (torchrun's own override), else argv[0] of our parent (the
    kernel puts the `#!` interpreter there), else its executable. None when the parent is not a Python at all (a
    shell ran the shim): the rank command must never be handed to bash or sh."""
    import shutil

    if os.environ.get("PYTHON_EXEC"):
        return os.environ["PYTHON_EXEC"]
    ppid = os.getppid()
    try:
        with open(f"/proc/{ppid}/cmdline", "rb") as fh:
            argv0 = fh.read().split(b"\0")[0].decode("utf-8", "surrogateescape")
    except OSError:
        argv0 = ""
    if argv0 and launch._is_python(argv0):
        if os.path.isabs(argv0) and os.access(argv0, os.X_OK):
            return argv0
        found = shutil.which(argv0)
        if found:
            return found
    try:
        exe = os.readlink(f"/proc/{ppid}/exe")
    except OSError:
        return None
    return exe if launch._is_python(exe) else None


def main(argv: Optional[Sequence[str]] = None) -> int:
    args: List[str] = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        _say("usage: python -m hosttune.shim COMMAND [ARGS...] (started by `hosttune exec -- torchrun ...`)")
        return 2
    environ = dict(os.environ)
    try:
        local_rank = _int_env(environ, "LOCAL_RANK", "SLURM_LOCALID")
        world = _int_env(environ, "LOCAL_WORLD_SIZE")
        if local_rank is None:
            local_rank, world = 0, 1
        elif world is None:
            slurm = launch.slurm_rank(environ)
            world = slurm[1] if slurm else local_rank + 1
        handoff_data = read_handoff(environ)
        rank_plan, libnuma, numactl, no_bind = resolve_plan(handoff_data, local_rank, world, environ)
    except UserError as exc:
        # Refuse rather than run the rank unprofiled: a silently unbound rank hides both a misconfiguration and
        # a swapped handoff. torchrun sees the failure and stops the job.
        _say(f"error: {exc}; rank not started")
        return 2

    env = dict(environ)
    try:
        env.update(checked_env(rank_plan.env, users_env(handoff_data, environ)))
    except UserError as exc:
        _say(f"error: {exc}; rank {local_rank} not started")
        return 2
    env[launch.ENV_LOCAL_RANK] = str(local_rank)
    env[launch.ENV_LOCAL_WORLD_SIZE] = str(world)
    env.pop(launch.ENV_HANDOFF, None)  # the rank's own children have no use for it
    if args[0] == launch.TORCHRUN_PYTHON:
        found = parent_python()
        if found is None:
            _say("cannot tell which python torchrun runs on (the shim's parent is not a Python interpreter); "
                 "set PYTHON_EXEC to the interpreter for the training script")
            return 127
        args[0] = found
    if not no_bind:
        binding = launch.bind_self(rank_plan, libnuma, numactl)
        for note in binding.notes:
            _say(f"rank {local_rank}: {note}")
        if binding.prefix:
            args = [*binding.prefix, "--", *args]
    try:
        os.execvpe(args[0], args, env)
    except FileNotFoundError:
        _say(f"{args[0]}: command not found")
        return 127
    except OSError as exc:
        _say(f"{args[0]}: {exc.strerror}")
        return 126
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main())
