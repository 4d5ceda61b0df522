"""`hosttune exec --verify`: what each running rank should look like (its plan inside this launcher's allowed
sets), compared with what /proc shows of it (affinity of every thread, memory policy, environment), reported on
stderr as mismatches are found and once more when the job ends.

Which processes are ranks: a rank started through the shim (torchrun --no-python) carries HOSTTUNE_LOCAL_RANK in the
environment the shim exec'd it with; so does a plain/srun job's top process. Python ranks apply their plan with the
per-rank hook (hook.py) and are found by their launcher's rank variables (rankvars.py). The hook sets a rank's own
variables inside the running interpreter, where /proc/PID/environ does not show them, so for those ranks only the
variables the launcher handed every process are compared; CPUs and memory policy are the kernel's and compared in
full.
"""

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

from hosttune.cpulist import format_cpulist as _cpulist
from hosttune.errors import UserError
from hosttune.launch.binding import effective_cpus, effective_mems
from hosttune.launch.job import Launch
from hosttune.launch.procfs import (
    cpu_seconds,
    descendants,
    marked_processes,
    parse_cpulist,
    proc_environ,
    proc_mempolicy,
    proc_ppid,
    proc_status,
)
from hosttune.launch.rank import users_env
from hosttune.policy import names


def _say(msg: str) -> None:
    sys.stderr.write(f"hosttune: {msg}\n")
    sys.stderr.flush()


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


def _handed(launch: Launch, local_rank: int, local_world_size: int) -> Any:
    for plan in [*launch.ranks, *launch.more_plans]:
        if (plan.local_rank, plan.local_world_size) == (local_rank, local_world_size):
            return plan
    return None


def expected_for(launch: Launch, local_rank: int, local_world_size: int, rank_env: Mapping[str, str],
                 hooked: bool = False) -> RankCheck:
    """What --verify expects of a rank: the same plan its shim or hook resolved, inside this launcher's allowed
    sets. `hooked`: a rank that applied its plan from inside (see the module's docstring)."""
    from hosttune import plan as planmod

    plan = _handed(launch, local_rank, local_world_size) if launch.kind == "torchrun" or hooked else None
    if plan is None and (launch.kind == "torchrun" or hooked):
        environ = users_env(launch.touched, rank_env)
        plan = planmod.resolve(launch.facts, launch.profile, local_rank, local_world_size, environ=environ,
                               override=launch.override, bound_by=launch.bound_by)
    elif plan is None:
        plan = launch.ranks[0]
    cpus: Tuple[int, ...] = ()
    policy, mems = "none", ()  # type: Tuple[str, Tuple[int, ...]]
    if not launch.no_bind:
        cpus = effective_cpus(plan.cpus, os.sched_getaffinity(0)) if plan.cpus else ()
        policy, mems = effective_mems(plan)
    env = dict(plan.env)
    if hooked:
        env = {k: v for k, v in env.items() if launch.env.get(k) == v}
    return RankCheck(0, local_rank, local_world_size, cpus, policy, mems, env)



HOOK_GRACE_S = 1.0  # a Python rank applies its plan at interpreter start: tens of ms, more on a loaded machine
HOOK_CPU_S = 0.25  # the interpreter's own CPU time from exec to the hook is tens of ms


def _age(pid: int) -> float:
    """Seconds since the process started (0 when it cannot be told)."""
    from hosttune.launch.procfs import start_time

    started = start_time(pid)
    try:
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime - started / os.sysconf("SC_CLK_TCK")) if started is not None else 0.0


def _past_hook(pid: int) -> bool:
    """Whether a hooked rank has run its hook (sitecustomize, at interpreter start-up). Wall time alone cannot tell
    on a loaded machine, where a runnable process may wait seconds for a CPU: it has once it is older than the grace
    and has either blocked by itself (state S: the program's own first wait, after start-up) or spent HOOK_CPU_S of
    CPU time, far more than start-up to the hook takes."""
    if _age(pid) < HOOK_GRACE_S:
        return False
    if proc_status(pid).get("State", "").startswith("S"):
        return True
    return (cpu_seconds(pid) or 0.0) >= HOOK_CPU_S


def _hooked_place(launch: Launch, env: Mapping[str, str]) -> Any:
    """The place of a rank that applies its plan through the hook: a Python started with a launcher's rank
    variables in a job with the hook on its PYTHONPATH (not in a torchrun job whose ranks start through shims)."""
    from hosttune.launch import rankvars
    from hosttune.launch.hook import HOOK_DIR

    if (launch.kind == "torchrun" and not launch.hook) or HOOK_DIR not in env.get("PYTHONPATH", "").split(os.pathsep):
        return None
    if env.get(names.LOCAL_RANK) is not None and launch.kind in ("srun", "rank"):
        return None  # the rank hosttune was started as: bound by the launcher before exec
    try:
        return rankvars.place(env)
    except UserError:
        return None


def verify_pass(launch: Launch, top: int, checks: Dict[int, RankCheck], marker: str) -> None:
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
        env = proc_environ(pid)
        if not env:
            continue
        place = _hooked_place(launch, env)
        parent = checks.get(proc_ppid(pid) or -1)
        if parent is not None and (place is None or (place.local_rank, place.local_world_size) ==
                                   (parent.local_rank, parent.local_world_size)):
            continue  # a child of a rank (DataLoader worker, compiler): it inherits the rank's binding
        if place is not None:
            if not _past_hook(pid):
                continue  # its interpreter may not have reached the hook yet: read it on a later pass
            local, size = place.local_rank, place.local_world_size
        elif names.LOCAL_RANK in env:
            try:
                local = int(env[names.LOCAL_RANK])
                size = int(env.get(names.LOCAL_WORLD_SIZE, "1"))
            except ValueError:
                continue
        else:
            continue  # the shim before its exec, torchrun itself, or a helper process
        rc = expected_for(launch, local, size, env, hooked=place is not None)
        rc.pid = pid
        checks[pid] = rc
        for m in check_rank(rc):
            _say(f"verify: rank {local} (pid {pid}): MISMATCH {m}")


def verify_report(launch: Launch, checks: Dict[int, RankCheck]) -> None:
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


