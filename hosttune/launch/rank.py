"""The rank side's one module: where a rank's plan comes from, the check of its variables, and THE failure rule.
Both entries are thin over it: the shim (hosttune/shim.py, a rank started through `programs.own_argv`) and
the per-rank hook (hook.py, inside every Python rank).

Where the plan comes from (`plan_for`): the launcher's handoff (handoff.py) carries the plans of the world sizes
it foresaw, as `RankPlan.to_dict()`; the rank reads its own back with `RankPlan.from_dict` (the wire module,
hosttune/rankplan.py, which imports no planner). A world size nobody foresaw (elastic, an srun task's neighbour)
or a shim started without a handoff (an argv printed by --dry-run) is planned again by the launcher's own planner,
run as a child process (`replan`: launch/replan.py through the program gateway, on the launcher's interpreter
named in the handoff), so no rank ever imports the planner, a profile, YAML, the detector or click (the "rank
side" contract in .importlinter; tests/test_launch_rank.py checks sys.modules).

The failure rule (`setup`, used by both entries, said with `refused_line` / `warned_line`):
- Tampering or a trust failure refuses the rank: a handoff another user could have written, one that is missing,
  unreadable or not a handoff, a malformed plan in it, a planner interpreter that is not root's, or (as root) a
  plan variable that names another user's file (`checked_env`). All are `trust.Untrusted`; the shim exits 2 and
  the hook ends its process with status 2, before any user code runs. Its launcher sees the failure and stops
  the job.
- A plan that merely does not fit is ONE warning line and the rank runs as its launcher started it: re-planning
  failed for a reason that is not trust (a profile that does not apply here), the plan's CPUs are not allowed
  here (narrowed, or not bindable at all), memory cannot be bound.
"""

import json
import os
import sys
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from hosttune import trust
from hosttune.errors import UserError
from hosttune.rankplan import RankPlan

REPLAN_LIMIT = 4 << 20  # one rank's plan as JSON; a longer answer is not the planner's
REPLAN_TIMEOUT_S = 120.0  # a planner that hangs must not hang every rank at interpreter start


class Setup(NamedTuple):
    plan: Optional[RankPlan]  # None: no plan fits; the rank runs as its launcher started it (see `warning`)
    libnuma: Optional[str]
    numactl: Optional[str]
    no_bind: bool
    warning: Optional[str]  # why the plan is not applied (one line), when plan is None


def own_root() -> str:
    """The directory that holds this hosttune package (the planner's process loads `ROOT/hosttune`)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def planner() -> Dict[str, str]:
    """The launcher's planner, for the handoff: its interpreter and its hosttune."""
    return {"python": sys.executable, "root": own_root()}


def users_env(touched: Optional[Mapping[str, Optional[str]]], environ: Mapping[str, str]) -> Dict[str, str]:
    """The caller's own environment: torchrun's, with what the launcher set for torchrun (`touched`: variable ->
    the caller's value, None when it was unset) undone. A rank re-planned from it does not take torchrun's
    OMP_NUM_THREADS for the user's choice, nor prepend the launcher's LD_PRELOAD twice."""
    user_env = dict(environ)
    if touched is not None and not isinstance(touched, dict):
        raise trust.Untrusted("the launcher's handoff is malformed (what it touched is not a table); tampered?")
    for key, orig in (touched or {}).items():
        if not isinstance(key, str) or not (orig is None or isinstance(orig, str)):
            raise trust.Untrusted("the launcher's handoff is malformed (what it touched is not text); tampered?")
        if orig is None:
            user_env.pop(key, None)
        else:
            user_env[key] = orig
    return user_env


def handed(data: Mapping[str, Any], local_rank: int, world: int) -> Optional[RankPlan]:
    """The launcher's plan for this rank when it planned this world size, else None (plan again). A plan that is
    there but malformed, or names another rank, is Untrusted (tampered)."""
    plans = data.get("plans") or {}
    if not isinstance(plans, dict):
        raise trust.Untrusted("the launcher's handoff is malformed (its plans are not a table); tampered?")
    row = plans.get(str(world))
    if not isinstance(row, list) or not 0 <= local_rank < len(row) or row[local_rank] is None:
        return None
    try:
        plan = RankPlan.from_dict(row[local_rank])
    except (ValueError, TypeError, AttributeError) as exc:
        raise trust.Untrusted(f"the launcher's handoff has a malformed plan for rank {local_rank}/{world} ({exc}); "
                              f"tampered?") from None
    if (plan.local_rank, plan.local_world_size) != (local_rank, world):
        raise trust.Untrusted(f"the launcher's handoff gives rank {local_rank}/{world} the plan of rank "
                              f"{plan.local_rank}/{plan.local_world_size}; tampered?")
    return plan


def _planner_argv(data: Mapping[str, Any]) -> List[str]:
    """The planner's process: the launcher's interpreter and hosttune (named in the handoff) through the program
    gateway's bootstrap (nothing from the rank's working directory; -I as root). As root both must be root's alone:
    another user's interpreter or package is Untrusted; a malformed `planner` is tampering."""
    found = data.get("planner")
    if found is not None and not isinstance(found, dict):
        raise trust.Untrusted("the launcher's handoff is malformed (its planner is not a table); tampered?")
    where: Mapping[str, Any] = found or {}
    python, root = where.get("python") or sys.executable, where.get("root") or own_root()
    if not isinstance(python, str) or not isinstance(root, str):
        raise trust.Untrusted("the launcher's handoff is malformed (its planner's paths are not text); tampered?")
    from hosttune import programs  # the gateway; imported only on this rare path

    pkg = os.path.join(root, "hosttune")
    if trust.is_root():
        trust.check_path(pkg, "the launcher's planner (its hosttune)", kind="dir")
        trust.check_path(os.path.join(pkg, "__init__.py"), "the launcher's planner (its hosttune)")
    return programs.own_argv("hosttune.launch.replan", python=python, pkg=pkg)


def _ask_planner(argv: List[str], request: Mapping[str, Any], environ: Mapping[str, str], where: str) -> Any:
    """The planner's answer (parsed JSON) to `request`; UserError when it times out or answers no JSON."""
    import subprocess

    from hosttune import programs  # the gateway; imported only on this rare path

    try:
        done = programs.run(argv, "the launcher's planner (its Python)", env=dict(environ),
                            input=json.dumps(request).encode(), capture_output=True, timeout=REPLAN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UserError(f"re-planning rank {where}: the planner timed out") from None
    try:
        return json.loads(done.stdout[:REPLAN_LIMIT].decode("utf-8"))
    except ValueError:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise UserError(f"re-planning rank {where} failed: {tail[0]}") from None


def replan(data: Optional[Mapping[str, Any]], local_rank: int, world: int, environ: Mapping[str, str]
           ) -> Tuple[RankPlan, Optional[str], Optional[str]]:
    """(plan, libnuma, numactl) from the launcher's planner run as a child process (launch/replan.py): from the
    handed facts and profile, or (no handoff) from the host detected there. Untrusted when the planner says so, its
    interpreter or package is not root's (as root), or the handoff is malformed; UserError for any other failure
    (a timeout, an error answer)."""
    data = data or {}
    argv = _planner_argv(data)
    request = {"facts": data.get("facts"), "profile": data.get("profile"), "local_rank": local_rank, "world": world,
               "environ": users_env(data.get("touched"), environ), "override": bool(data.get("override")),
               "bound_by": data.get("bound_by")}
    answer = _ask_planner(argv, request, environ, f"{local_rank}/{world}")
    if not isinstance(answer, dict) or "plan" not in answer:
        error = str(answer.get("error")) if isinstance(answer, dict) else "no plan"
        if isinstance(answer, dict) and answer.get("untrusted"):
            raise trust.Untrusted(error)
        raise UserError(f"re-planning rank {local_rank}/{world}: {error}")
    try:
        plan = RankPlan.from_dict(answer["plan"])
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise UserError(f"re-planning rank {local_rank}/{world}: the planner's plan is malformed ({exc})") from None
    return plan, answer.get("libnuma"), answer.get("numactl")


def plan_for(data: Optional[Mapping[str, Any]], local_rank: int, world: int, environ: Mapping[str, str]
             ) -> Tuple[RankPlan, Optional[str], Optional[str], bool]:
    """(plan, libnuma path, numactl path, no_bind) for this rank: handed over, else planned again (`replan`)."""
    no_bind = bool((data or {}).get("no_bind"))
    if data is not None:
        plan = handed(data, local_rank, world)
        if plan is not None:
            given = data.get("tools")
            tools: Mapping[str, Any] = given if isinstance(given, dict) else {}
            return plan, tools.get("libnuma"), tools.get("numactl"), no_bind
    plan, libnuma, numactl = replan(data, local_rank, world, environ)
    return plan, libnuma, numactl, no_bind


def setup(data: Optional[Mapping[str, Any]], local_rank: int, world: int, environ: Mapping[str, str]) -> Setup:
    """THE failure rule, for both entries: Untrusted (tampering, a trust failure) propagates and the entry refuses
    the rank; any other failure to get a plan is a Setup without one and a one-line warning."""
    try:
        plan, libnuma, numactl, no_bind = plan_for(data, local_rank, world, environ)
    except trust.Untrusted:
        raise
    except (UserError, OSError, ValueError) as exc:
        return Setup(None, None, None, True, f"plan not applied ({exc})")
    return Setup(plan, libnuma, numactl, no_bind, None)


def checked_env(plan_env: Mapping[str, str], data: Optional[Mapping[str, Any]], environ: Mapping[str, str]
                ) -> Dict[str, str]:
    """As root, every variable the plan sets passes `trust.check_env_value` again here, right before the rank
    runs: loader and interpreter variables (LD_PRELOAD, PYTHONPATH, CUDA_INJECTION64_PATH, ...) must name only
    root's files, code-valued ones are refused, and any other value that names a path is refused. A library
    re-pointed since the launcher checked it, or a plan that did not come from a checked profile, stops the rank
    (Untrusted). Values already in the caller's own environment (torchrun's, minus what the launcher added) are
    the caller's and not the plan's to judge."""
    if not trust.is_root():
        return dict(plan_env)
    own = users_env((data or {}).get("touched"), environ)
    for key, value in plan_env.items():
        if own.get(key) != value:
            trust.check_env_value(key, value, "the launcher's plan")
    return dict(plan_env)


def refused_line(what: str, exc: BaseException) -> str:
    return f"{what}: {exc}; rank not started"


def warned_line(what: str, why: str) -> str:
    return f"{what}: {why}; it runs as its launcher started it"


__all__ = ["Setup", "checked_env", "handed", "plan_for", "planner", "refused_line", "replan", "setup", "users_env",
           "warned_line"]
