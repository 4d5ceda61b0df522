"""`hosttune exec --verify`: what each running rank should look like (its plan inside this launcher's allowed
sets), compared with what /proc shows of it (affinity of every thread, memory policy, environment), reported on
stderr as mismatches are found and once more when the job ends.
"""

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Tuple

from hosttune.cpulist import format_cpulist as _cpulist
from hosttune.launch.binding import effective_cpus, effective_mems
from hosttune.launch.handoff import users_env
from hosttune.launch.job import Launch
from hosttune.launch.procfs import (
    descendants,
    marked_processes,
    parse_cpulist,
    proc_environ,
    proc_mempolicy,
    proc_ppid,
    proc_status,
)
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


def expected_for(launch: Launch, local_rank: int, local_world_size: int, rank_env: Mapping[str, str]) -> RankCheck:
    """What --verify expects of a rank: the same plan the shim resolved, inside this launcher's allowed sets."""
    from hosttune import plan as planmod

    if launch.kind == "torchrun" and local_world_size == len(launch.ranks):
        plan = launch.ranks[local_rank]  # what the shim was handed
    elif launch.kind == "torchrun":
        environ = users_env(launch.touched, rank_env)
        plan = planmod.resolve(launch.facts, launch.profile, local_rank, local_world_size, environ=environ)
    else:
        plan = launch.ranks[0]
    cpus: Tuple[int, ...] = ()
    policy, mems = "none", ()  # type: Tuple[str, Tuple[int, ...]]
    if not launch.no_bind:
        cpus = effective_cpus(plan.cpus, os.sched_getaffinity(0)) if plan.cpus else ()
        policy, mems = effective_mems(plan)
    return RankCheck(0, local_rank, local_world_size, cpus, policy, mems, dict(plan.env))



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
        if proc_ppid(pid) in checks:
            continue  # a child of a rank (DataLoader worker, compiler): it inherits the rank's binding
        env = proc_environ(pid)
        if not env or names.LOCAL_RANK not in env:
            continue  # the shim before its exec, torchrun itself, or a helper process
        try:
            local = int(env[names.LOCAL_RANK])
            size = int(env.get(names.LOCAL_WORLD_SIZE, "1"))
        except ValueError:
            continue
        rc = expected_for(launch, local, size, env)
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


