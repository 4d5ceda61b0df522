"""Reads of /proc for the launcher, --verify, the sweep and the guardian: one process's status, environment,
memory policy, parent, children; no writes, nothing cached, a missing process is an empty answer, never an error.

Cheap to import (the shim's binding reads Mems_allowed through it): os, time and typing only.
"""

import os
import time
from typing import Dict, List, Optional, Tuple

from hosttune import jobrecord
from hosttune.cpulist import parse_cpulist as _parse_cpulist
from hosttune.policy import names


def parse_cpulist(text: str) -> Tuple[int, ...]:
    """"0-2,5" -> (0, 1, 2, 5), as a tuple to compare with a plan's."""
    return tuple(_parse_cpulist(text))


def _read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def proc_environ(pid: int) -> Optional[Dict[str, str]]:
    raw = _read(f"/proc/{pid}/environ")
    if raw is None:
        return None
    out: Dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return out


def proc_status(pid: int, tid: Optional[int] = None) -> Dict[str, str]:
    path = f"/proc/{pid}/status" if tid is None else f"/proc/{pid}/task/{tid}/status"
    raw = _read(path)
    out: Dict[str, str] = {}
    for line in (raw or b"").decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key] = value.strip()
    return out


def self_mems_allowed() -> Tuple[int, ...]:
    """The NUMA nodes this process may allocate on (its cpuset's mems); () when unreadable."""
    return parse_cpulist(proc_status(os.getpid()).get("Mems_allowed_list", ""))


def parse_numa_maps_policy(text: str) -> Optional[Tuple[str, Tuple[int, ...]]]:
    """The task memory policy from the first line of /proc/PID/numa_maps, as (bind|preferred|interleave|none, nodes).

    numa_maps prints a mapping's own policy or, when it has none, the task's policy in mpol_to_str's format:
    "default", "bind:0-1", "prefer:0", "prefer (many):0-1", "interleave:0-3", flags as "bind=static:0"
    (Documentation/admin-guide/mm/numa_memory_policy.rst, mm/mempolicy.c).
    """
    first = text.split("\n", 1)[0].split(" ", 1)
    if len(first) < 2 or not first[1]:
        return None
    rest = first[1]
    if rest.startswith("prefer (many)"):
        name, nodes = "preferred", rest[len("prefer (many)") :].split(" ")[0]
        nodes = nodes.split(":", 1)[1] if ":" in nodes else ""
    else:
        word = rest.split(" ")[0]
        name, _, nodes = word.partition(":")
        name = name.split("=")[0]
    name = {"prefer": "preferred", "default": "none", "local": "none"}.get(name, name)
    return name, parse_cpulist(nodes) if nodes else ()


def proc_mempolicy(pid: int) -> Optional[Tuple[str, Tuple[int, ...]]]:
    raw = _read(f"/proc/{pid}/numa_maps")
    return None if raw is None else parse_numa_maps_policy(raw.decode("utf-8", "replace"))


def proc_ppid(pid: int) -> Optional[int]:
    raw = _read(f"/proc/{pid}/stat")
    if not raw:
        return None
    # the command name may hold spaces and parentheses: the fields after the last ")" are fixed
    fields = raw[raw.rindex(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def children(pid: int) -> List[int]:
    """Direct children of every thread of `pid` (/proc/PID/task/TID/children, CONFIG_PROC_CHILDREN)."""
    out: List[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        raw = _read(f"/proc/{pid}/task/{tid}/children")
        if raw:
            out.extend(int(x) for x in raw.split())
    return out


def descendants(pid: int) -> List[int]:
    seen: List[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        for c in children(p):
            if c not in seen:
                seen.append(c)
                todo.append(c)
    return seen


_PF_KTHREAD = 0x00200000  # include/linux/sched.h
EXECVE_WAIT_S = 0.25


def in_execve(pid: int) -> bool:
    """The process is between execve's switch to its new memory and the kernel's copy of the new environment onto
    it: a live user process whose env_end (field 51 of /proc/PID/stat, proc(5)) is still 0. /proc/PID/environ reads
    empty in that window (fs/proc/base.c environ_read), though the program it is becoming carries the environment.
    A program started with an empty environment has env_end set (env_start == env_end) and is not in the window;
    kernel threads and zombies have no memory and are not either."""
    raw = _read(f"/proc/{pid}/stat")
    if not raw:
        return False
    try:
        fields = raw[raw.rindex(b")") + 2:].split()
        state, flags, env_end = fields[0], int(fields[6]), int(fields[48])
    except (ValueError, IndexError):
        return False  # a kernel before 3.5 shows no env_end: nothing to tell the window by
    return state not in (b"Z", b"X") and not flags & _PF_KTHREAD and env_end == 0


def marked_processes(marker: str) -> List[int]:
    """Every process whose environment carries this launch's marker (the job, wherever it was reparented)."""
    return environ_holders(f"{names.LAUNCH_ID}={marker}")


def environ_holders(entry: str) -> List[int]:
    """Every process but this one whose environment holds `entry` ("KEY=value") exactly.

    A process caught inside execve shows an empty environment for a moment; it is looked at again (every 2 ms, for
    at most EXECVE_WAIT_S) so that a rank being exec'd right then is not missed by a sweep."""
    needle = entry.encode("utf-8", "surrogateescape")
    out: List[int] = []
    me = os.getpid()
    pending: List[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        raw = _read(f"/proc/{name}/environ")
        if raw and needle in raw.split(b"\0"):
            out.append(int(name))
        elif raw == b"" and in_execve(int(name)):
            pending.append(int(name))
    end = time.monotonic() + EXECVE_WAIT_S
    while pending:
        time.sleep(0.002)
        still: List[int] = []
        for pid in pending:
            raw = _read(f"/proc/{pid}/environ")
            if raw and needle in raw.split(b"\0"):
                out.append(pid)
            elif raw == b"" and in_execve(pid):
                still.append(pid)
        pending = still if time.monotonic() < end else []
    return out


def alive(pid: int) -> bool:
    """The process exists and is neither a zombie nor dead."""
    st = proc_status(pid)
    return bool(st) and not st.get("State", "").startswith(("Z", "X"))


def start_time(pid: int) -> Optional[int]:
    """Field 22 of /proc/PID/stat (clock ticks after boot): with the pid, names one process for good."""
    raw = _read(f"/proc/{pid}/stat")
    return jobrecord.start_time_of(raw) if raw else None


def cpu_seconds(pid: int) -> Optional[float]:
    """utime + stime of the process (fields 14 and 15 of /proc/PID/stat, clock ticks; proc(5)) in seconds."""
    raw = _read(f"/proc/{pid}/stat")
    if not raw:
        return None
    try:
        fields = raw[raw.rindex(b")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (ValueError, IndexError):
        return None
