"""`hosttune doctor`: the host health check for PyTorch training, as data.

A check is `Check(id, group, title, run, needs)`; `run(ctx)` looks at `ctx.facts` (and, for the few things Facts
cannot hold, at `ctx.env` and the live host) and returns a `Finding(status=, actual=, expected=, fix=)`. What a
check needs before it can say anything (a GPU, NVML, the live host) is data on the Check, evaluated by the runner,
which reports a skip saying what is missing. The run function's docstring is what `hosttune doctor --explain ID`
prints, so it says why the threshold is what it is. A check that raises becomes a `skip` finding naming the
exception: the user never sees a traceback. Rendering is the command's (hosttune.commands.doctor).

Layout: model (Finding, Need, Check, Report), context (Context, Live, shared questions, prerequisites), fixes
(distro-aware commands, host values validated and quoted), checks/ (one module per group), catalogue (CHECKS, the
runner, explain, diagnose).
"""

from hosttune.doctor.catalogue import BY_ID, CHECKS, check_by_id, diagnose, explain, run_checks
from hosttune.doctor.checks.storage import space_status
from hosttune.doctor.checks.topology import parse_acs
from hosttune.doctor.checks.torch import parse_alloc_conf
from hosttune.doctor.context import Context, Live
from hosttune.doctor.model import FAIL_ON, GROUPS, SCHEMA, STATUSES, Check, Finding, Need, Report, Result

__all__ = [
    "BY_ID", "CHECKS", "FAIL_ON", "GROUPS", "SCHEMA", "STATUSES", "Check", "Context", "Finding", "Live", "Need",
    "Report", "Result", "check_by_id", "diagnose", "explain", "parse_acs", "parse_alloc_conf", "run_checks",
    "space_status",
]
