"""The launcher's planner, run for one rank in a child process: what a rank asks when its handoff holds no plan for
its world size (elastic, an srun task's neighbour), or when a shim was started without a handoff.

Launcher side on purpose: it imports the planner, the profile (and so YAML) and, without handed facts, the
detector; the rank side (launch/rank.py) starts it through the program gateway and reads one JSON line back, so no
rank imports any of them. Request on stdin: {facts, profile, local_rank, world, environ (the caller's own),
override, bound_by}; answer on stdout: {plan, libnuma, numactl} or {error, untrusted}.
"""

import json
import sys
from typing import Any, Dict, Mapping

from hosttune import trust
from hosttune.errors import UserError

LIMIT = 64 << 20  # the handoff's own bound: facts + a profile


def _profile(data: Any, facts: Any) -> Any:
    """The launcher's profile back from `Profile.to_dict()`, or the active one when it had none to hand over."""
    from hosttune import profile as profmod

    return profmod.active(None, facts) if data is None else profmod.Profile.from_dict(data)


def plan(request: Mapping[str, Any]) -> Dict[str, Any]:
    """One rank's plan, from the handed facts and profile, or from this host (no facts handed)."""
    from hosttune import plan as planmod
    from hosttune.facts import Facts

    if request.get("facts") is not None:
        facts = Facts.from_dict(request["facts"])
        prof = _profile(request.get("profile"), facts)
    else:
        from pathlib import Path

        from hosttune import detect
        from hosttune import profile as profmod

        facts = detect.collect(Path("/"), probe_torch=False)
        prof = profmod.active(None, facts)
    rank_plan = planmod.resolve(facts, prof, int(request["local_rank"]), int(request["world"]),
                                environ=dict(request.get("environ") or {}), override=bool(request.get("override")),
                                bound_by=request.get("bound_by"))
    return {"plan": rank_plan.to_dict(), "libnuma": facts.tools.libnuma, "numactl": facts.tools.numactl}


def main() -> int:
    try:
        answer = plan(json.loads(sys.stdin.buffer.read(LIMIT).decode("utf-8")))
    except trust.Untrusted as exc:
        answer = {"error": str(exc), "untrusted": True}
    except (UserError, OSError, ValueError, KeyError, TypeError) as exc:
        answer = {"error": str(exc) or type(exc).__name__, "untrusted": False}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
