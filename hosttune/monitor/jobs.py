"""Which job a GPU is working for: the processes NVML lists on it, and from each one's cgroup the Slurm job, the
Kubernetes pod or the container it runs in (dcgm-exporter's job mapping, without a label on every series).

The cgroup paths are the ones the job managers make (cgroup v1 and v2, systemd and cgroupfs drivers):
- Slurm's proctrack/task cgroup plugins: v1 `/slurm/uid_1000/job_123/step_0/task_0` (in each controller),
  v2 `/system.slice/slurmstepd.scope/job_123/step_0/user/task_0` (also `<node>_slurmstepd.scope` with several
  slurmd on one host): the job is `123`;
- the kubelet: `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _>.slice/
  cri-containerd-<id>.scope` (systemd driver) or `/kubepods/burstable/pod<uid>/<id>` (cgroupfs): the job is the
  pod's UID (namespace/name need the kubelet's API, which the monitor does not ask);
- Docker, Podman, containerd and CRI-O containers outside Kubernetes: `docker-<id>.scope`, `/docker/<id>`,
  `libpod-<id>.scope`, `cri-containerd-<id>.scope`, `crio-<id>.scope`: the job is the short (12 hex) container id.
A monitor in its own cgroup namespace sees other processes' paths relative to its own (`/../../kubepods...`): the
patterns are searched anywhere in the path. A process in none of them (a login shell's CUDA program) has no job.
Below a user's own systemd manager (`user@1000.service`, which delegates its subtree to that user) a path names no
Slurm job or pod: the user could have spelt one there to pass their GPU time off as another job's.

Per sample this reads one small file per GPU process (/proc/PID/cgroup) and stats /proc/PID for its owner; the
uid -> user name lookups are remembered.
"""

import os
import pwd
import re
from typing import Any, Dict, Iterable, List, Optional

from hosttune import fsio

_SLURM = re.compile(r"slurm[^/]*/(?:.*/)?job_(\d+)(?:/|$)")
_POD = re.compile(r"kubepods.*?pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")
_CONTAINER = re.compile(r"(?:^|/)(?:docker-|libpod-|cri-containerd-|crio-|containerd-)?([0-9a-f]{64})(?:\.scope)?"
                        r"(?:/|$)")
# A user's own systemd manager (user@UID.service) may make any cgroup below it: a path there names no Slurm job or
# pod, whatever it spells (a rootless Podman container there is still that user's container).
_DELEGATED = re.compile(r"(?:^|/)user@\d+\.service(?:/|$)")
MAX_CGROUP_BYTES = 64 * 1024  # /proc/PID/cgroup is one line per hierarchy: a few hundred bytes


def classify(path: str) -> Optional[Dict[str, str]]:
    """The job one cgroup path belongs to: {"kind": "slurm" | "kubernetes" | "container", "job": id}, with the
    container id beside a pod's UID; None when the path is no job's."""
    delegated = _DELEGATED.search(path) is not None
    slurm = None if delegated else _SLURM.search(path)
    m = None if delegated else _POD.search(path)
    if slurm and not (m and m.start() < slurm.start()):  # the outer manager's: a pod may nest cgroups of its own
        return {"kind": "slurm", "job": slurm.group(1)}
    container = _CONTAINER.search(path)
    if m:
        out = {"kind": "kubernetes", "job": m.group(1).replace("_", "-")}
        if container:
            out["container"] = container.group(1)[:12]
        return out
    if container:
        return {"kind": "container", "job": container.group(1)[:12]}
    return None


_RANK = {"slurm": 0, "kubernetes": 1, "container": 2}


def from_proc_cgroup(text: str) -> Optional[Dict[str, str]]:
    """The job in /proc/PID/cgroup's text ("hierarchy:controllers:path" per line, cgroups(7)): the first found
    in Slurm, Kubernetes, container order over all the hierarchies (Slurm's v1 plugins use only some controllers)."""
    best: Optional[Dict[str, str]] = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        found = classify(parts[2])
        if found and (best is None or _RANK[found["kind"]] < _RANK[best["kind"]]):
            best = found
    return best


class JobFinder:
    """Looks up the job of GPU processes under a /proc (`proc`: a test's tree, or the host's)."""

    def __init__(self, proc: str = "/proc") -> None:
        self.proc = proc
        self._users: Dict[int, str] = {}

    def user(self, uid: int) -> str:
        name = self._users.get(uid)
        if name is None:
            try:
                name = pwd.getpwuid(uid).pw_name
            except KeyError:  # a uid the monitor's user database does not know (a container's): its number
                name = str(uid)
            self._users[uid] = name
        return name

    def process(self, pid: int) -> Dict[str, Any]:
        """{"pid", and where known "user", "kind", "job", "container"} for one process. A process gone since NVML
        listed it, or one this user may not look at, is just its pid."""
        out: Dict[str, Any] = {"pid": pid}
        base = os.path.join(self.proc, str(int(pid)))
        try:
            out["user"] = self.user(os.stat(base).st_uid)
            text = fsio.read_bounded(os.path.join(base, "cgroup"), MAX_CGROUP_BYTES,
                                     nofollow=True).decode(errors="replace")
        except OSError:  # gone, not ours to read, or over the bound (fsio.TooLarge)
            return out
        found = from_proc_cgroup(text)
        if found:
            out.update(found)
        return out

    def attribute(self, processes: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """NVML's process entries ({"pid", "used_memory_mb"}) with their user and job added."""
        return [dict(proc, **self.process(int(proc["pid"]))) for proc in processes]


def jobs_of(processes: Iterable[Dict[str, Any]]) -> List[Dict[str, str]]:
    """The distinct jobs among a GPU's attributed processes, [{"job", "kind", "user"}] in the order first seen."""
    seen: Dict[Any, Dict[str, str]] = {}
    for proc in processes:
        if proc.get("job") is None:
            continue
        key = (proc["kind"], proc["job"])
        if key not in seen:
            seen[key] = {"job": str(proc["job"]), "kind": str(proc["kind"]), "user": str(proc.get("user", ""))}
    return list(seen.values())
