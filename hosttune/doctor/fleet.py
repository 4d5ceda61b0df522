"""Doctor in a fleet: the one-line verdict that Slurm's HealthCheckProgram and node-problem-detector's custom plugin
protocol take, and the Slurm drain/resume of this node that hosttune owns.

Slurm runs HealthCheckProgram as root, with no arguments, every HealthCheckInterval seconds and once before slurmd
registers, kills it after 60 s, and ignores its exit status: "any action to be taken must be explicitly performed by
the program" (slurm.conf(5)). So `doctor --slurm` drains the node itself with `scontrol update ... state=drain
reason="hosttune: <check id>: <actual>"` and resumes it once the checks pass again, but, like LBNL NHC's
node-mark-online (which only undrains a node whose note starts with "NHC:"), only a node whose reason starts with
"hosttune:": a node an admin drained, downed or failed stays as it is. scontrol gets a short timeout: before slurmd
has registered it can hang (mej/nhc#159).

node-problem-detector's custom plugins (pkg/custompluginmonitor/types) exit 0 = OK, 1 = NonOK, anything else =
Unknown, and NPD keeps at most `max_output_length` (default 80) characters of stdout as the condition message.
"""

import re
import socket
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

from hosttune.detect.hostio import HostIO
from hosttune.doctor.model import Report
from hosttune.term import printable

PREFIX = "hosttune:"  # every reason hosttune writes starts with it: the mark of a drain it may undo
SLURM_REASON_MAX = 200  # long enough for an id and its actual value; sinfo -R shows the start anyway
NPD_MAX_OUTPUT = 80  # node-problem-detector's default max_output_length
NPD_OK, NPD_NONOK, NPD_UNKNOWN = 0, 1, 2
SCONTROL_TIMEOUT = 15.0  # seconds; Slurm kills the whole health check after 60
CRASHED = "check crashed:"  # how the runner reports a check that raised (catalogue.run_checks)


@dataclass(frozen=True)
class Verdict:
    """What a fleet tool needs from one doctor run: whether the node is fit, one line saying why, and whether doctor
    could not tell (a check crashed and nothing else is wrong)."""

    healthy: bool
    line: str
    unknown: bool = False


def _one_line(text: str) -> str:
    """Host text as one printable line: control characters escaped, runs of white space made one space."""
    return printable(" ".join(text.split()))


def _fit(head: str, body: str, tail: str, limit: int) -> str:
    """head + body + tail in at most `limit` characters, shortening the body (never the id or the count)."""
    room = limit - len(head) - len(tail)
    if len(body) > room:
        body = body[:max(room - 3, 0)] + "..."
    return (head + body + tail)[:limit]


def verdict(report: Report, fail_on: str = "fail", limit: int = SLURM_REASON_MAX) -> Verdict:
    """The node's verdict: unhealthy with "hosttune: <id>: <actual> (+N more)" for the first problem at or above
    `fail_on` (failures before warnings), else healthy with a one-line summary."""
    problems = report.problems(fail_on)
    if problems:
        first = problems[0]
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return Verdict(False, _fit(f"{PREFIX} {first.id}: ", _one_line(first.actual or first.status), more, limit))
    crashed = [r for r in report.results if r.status == "skip" and r.actual.startswith(CRASHED)]
    s = report.summary
    if crashed:
        return Verdict(True, _fit(f"{PREFIX} {crashed[0].id}: ", _one_line(crashed[0].actual), "", limit),
                       unknown=True)
    return Verdict(True, _fit(f"{PREFIX} ok: ", f"{s['pass']} pass, {s['warn']} warn, {s['skip']} skip", "", limit))


def npd_exit(v: Verdict) -> int:
    """node-problem-detector's status for a verdict: 1 NonOK, 2 Unknown, 0 OK."""
    if not v.healthy:
        return NPD_NONOK
    return NPD_UNKNOWN if v.unknown else NPD_OK


# ---- Slurm ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SlurmNode:
    name: str
    state: str  # "IDLE", "IDLE+DRAIN", "MIXED+DRAIN", "DOWN+NOT_RESPONDING", ...
    reason: str  # without the " [user@time]" Slurm appends

    @property
    def offline(self) -> bool:
        """Drained, draining, down or failed: nothing new starts there."""
        return any(flag in self.state.upper() for flag in ("DRAIN", "DOWN", "FAIL"))

    @property
    def ours(self) -> bool:
        """The reason is one hosttune wrote (so the drain is hosttune's to undo)."""
        return self.reason.startswith(PREFIX)


_STATE = re.compile(r"(?:^|\s)State=(\S+)")
# Slurm shows a reason as "Reason=<text> [<user>@<time>]"; the text itself may hold spaces and "x=y".
_REASON_STAMPED = re.compile(r"(?:^|\s)Reason=(.*?) \[[^\[\]@]*@[^\[\]]*\]")
_REASON_BARE = re.compile(r"(?:^|\s)Reason=(.*?)\s*$")


def parse_show_node(text: str) -> Optional[SlurmNode]:
    """`scontrol -o show node NAME` (one line of Key=Value fields) -> SlurmNode, or None when it names no node."""
    line = next((ln for ln in text.splitlines() if "NodeName=" in ln), "")
    name = re.search(r"NodeName=(\S+)", line)
    state = _STATE.search(line)
    if not name or not state:
        return None
    m = _REASON_STAMPED.search(line) or _REASON_BARE.search(line)
    reason = m.group(1).strip() if m else ""
    return SlurmNode(name.group(1), state.group(1), "" if reason in ("(null)", "none") else reason)


def node_name(env: Mapping[str, str]) -> str:
    """This node's Slurm name: $SLURMD_NODENAME where slurmd set it, else `hostname -s`."""
    return env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def slurm_sync(v: Verdict, name: str, io: Optional[HostIO] = None) -> Tuple[str, str]:
    """Drain or resume Slurm node `name` to match the verdict: (action, what happened). Actions: "drained",
    "resumed", "kept" (left as it was, and why), "none" (nothing to do), "error" (scontrol missing or failing:
    the line is still printed, so the node's log says what was wrong)."""
    io = io or HostIO()
    scontrol = io.which("scontrol")
    if scontrol is None:
        return "error", "scontrol not found on PATH: the node's state was not changed"
    shown = io.run([scontrol, "-o", "show", "node", name], timeout=SCONTROL_TIMEOUT, note=False)
    if shown is None or shown.returncode != 0:
        why = io.last_error or _one_line((shown.stderr or shown.stdout) if shown else "")[:200]
        return "error", f"scontrol show node {name}: {why or 'failed'}"
    node = parse_show_node(shown.stdout)
    if node is None:
        return "error", f"scontrol show node {name}: no such node in its answer"
    if not v.healthy:
        if node.offline and not node.ours:
            return "kept", f"{name} is already {node.state} by someone else ({node.reason or 'no reason'}): left alone"
        if "DRAIN" in node.state.upper() and node.reason == v.line:
            return "kept", f"{name} is already drained with this reason"
        return _update(io, scontrol, name, ["state=drain", f"reason={v.line}"], "drained")
    if "DRAIN" in node.state.upper() and node.ours:
        return _update(io, scontrol, name, ["state=resume"], "resumed")
    return "none", ""


def _update(io: HostIO, scontrol: str, name: str, args: list, action: str) -> Tuple[str, str]:
    done = io.run([scontrol, "update", f"nodename={name}", *args], timeout=SCONTROL_TIMEOUT, note=False)
    if done is None or done.returncode != 0:
        why = io.last_error or _one_line((done.stderr or done.stdout) if done else "")[:200]
        return "error", f"scontrol update nodename={name} {args[0]}: {why or 'failed'}"
    return action, f"{action} {name}"


__all__ = ["NPD_MAX_OUTPUT", "PREFIX", "SLURM_REASON_MAX", "SlurmNode", "Verdict", "node_name", "npd_exit",
           "parse_show_node", "slurm_sync", "verdict"]
