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

`hosttune exec` also keeps a record for the life of its job (launch/jobrecord.py), which names the GPUs its ranks
were given even where NVML lists no processes (`Records`, `add_records`). Root reads them as another user's input:
a record is one regular file (never a link, one link count, at most jobrecord.LIMIT bytes) in a directory that is
root's and sticky; its user is the file's owner, never anything it says; it counts only while its pid is alive, has
the start time it names and belongs to that same owner (a record naming a process that is gone, reused or somebody
else's is ignored). Its job is what the process's cgroup says (Slurm's and the kubelet's cgroups: unforgeable), else
its $SLURM_JOB_ID (a claim, shown under its writer's own name, and only while no other user holds or claims the same
job id here: otherwise it falls back to the exec's own id), else the exec's own id (`<pid>.<start>`, kind "exec").
"""

import os
import pwd
import re
import stat
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set

from hosttune import fsio, trust
from hosttune import jobrecord as fmt
from hosttune.facts import Gpu
from hosttune.policy import cuda_visible, dirs

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


# ---- the records `hosttune exec` keeps ---------------------------------------------------------------------------
MAX_RECORDS = 4096  # read per sample at most: a user who fills the directory slows nobody's sample down
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class Records:
    """The live records in `directory` (jobrecord.records_dir() by default), read each sample."""

    def __init__(self, directory: Optional[str] = None, finder: Optional[JobFinder] = None,
                 environ: Optional[Mapping[str, str]] = None) -> None:
        self.dir = directory or fmt.records_dir(dirs.runtime_dir(environ))
        self.finder = finder or JobFinder()
        self.problem: Optional[str] = None  # why the directory was not read (None: read, or absent)

    def read(self) -> List[Dict[str, Any]]:
        """[{"pid", "user", "job", "kind", "claimed", "cuda_visible_devices", "device_order"}] of the live records."""
        if not os.path.lexists(self.dir):
            self.problem = None
            return []
        self.problem = self._dir_problem()
        if self.problem is not None:
            return []
        try:
            names = sorted(os.listdir(self.dir))[:MAX_RECORDS]
        except OSError as exc:
            self.problem = f"{self.dir}: {exc.strerror or exc}"
            return []
        out = []
        for name in names:
            tag = fmt.parse_name(name)
            rec = None if tag is None else self._one(os.path.join(self.dir, name), tag[0], tag[1])
            if rec is not None:
                out.append(rec)
        return out

    def _dir_problem(self) -> Optional[str]:
        """A records directory root (or, for a monitor run by a user, that user) owns, sticky if others may write
        to it, under directories that pass the trust rule; anything else is not read at all."""
        try:
            why = fmt.dir_mode_problem(os.lstat(self.dir), trust.trusted_owners())
        except OSError as exc:
            return f"{self.dir}: {exc.strerror or exc}"
        if why is None:
            why = trust.problem(os.path.dirname(self.dir), kind="dir")[1]
        return None if why is None else f"{self.dir} {why}"

    def _one(self, path: str, pid: int, start: int) -> Optional[Dict[str, Any]]:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
        except OSError:
            return None  # gone since the listing, or a link (ELOOP)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                return None  # a hard link to another user's record would carry their content under a new name
            rec = fmt.parse(fsio.read_fd_bounded(fd, fmt.LIMIT, path), pid, start)
        except OSError:
            return None
        finally:
            os.close(fd)
        if rec is None or not self._alive_and_owned(pid, start, st.st_uid):
            return None
        rec.update(pid=pid, user=self.finder.user(st.st_uid))
        found = self.finder.process(pid)
        if found.get("job") is not None:
            rec.update(kind=found["kind"], job=found["job"], claimed=False)
        elif rec["slurm_job"] is not None:
            rec.update(kind="slurm", job=rec["slurm_job"], claimed=True)
        else:
            rec.update(kind="exec", job=f"{pid}.{start}", claimed=False)
        rec["exec_id"] = f"{pid}.{start}"
        return rec

    def _alive_and_owned(self, pid: int, start: int, uid: int) -> bool:
        """The record's process runs, is the one it names (start time) and is its writer's."""
        try:
            owner = os.stat(os.path.join(self.finder.proc, str(pid))).st_uid
        except OSError:
            return False  # gone, or hidden (a monitor under hidepid=invisible sees only its own processes)
        if owner != uid:
            return False
        return fmt.start_time(pid, self.finder.proc) == start


def _gpus_of(record: Dict[str, Any], static: Iterable[Dict[str, Any]]) -> Set[int]:
    """The GPU indices a record's ranks were given: CUDA_VISIBLE_DEVICES read the way CUDA reads it
    (policy/cuda_visible.py; plans set CUDA_DEVICE_ORDER=PCI_BUS_ID, NVML's order), every GPU when unset."""
    gpus = [Gpu(index=int(s["index"]), uuid=s.get("uuid"), pci_bus_id=s.get("pci_bus_id") or "") for s in static]
    return {g.index for g in cuda_visible.select(gpus, record.get("cuda_visible_devices")).known}


def add_records(gpus: List[Dict[str, Any]], static: Iterable[Dict[str, Any]], records: List[Dict[str, Any]]) -> None:
    """Each live record's job into the "jobs" of the sample's GPU entries its ranks were given (beside what NVML's
    processes said). A claimed Slurm job id another user holds (a cgroup said so) or claims too names nobody's job
    here: that record shows under its exec's own id."""
    users: Dict[str, Set[str]] = {}
    for gpu in gpus:
        for job in gpu.get("jobs") or []:
            if job.get("kind") == "slurm":
                users.setdefault(str(job["job"]), set()).add(str(job.get("user", "")))
    for rec in records:
        if rec["kind"] == "slurm":
            users.setdefault(rec["job"], set()).add(rec["user"])
    static = list(static)
    for rec in records:
        kind, job = rec["kind"], rec["job"]
        if rec["claimed"] and users.get(job, set()) - {rec["user"]}:
            kind, job = "exec", rec["exec_id"]
        mine = _gpus_of(rec, static)
        for gpu in gpus:
            if gpu.get("lost") or gpu.get("index") not in mine:
                continue
            listed = gpu.setdefault("jobs", [])
            if not any(j.get("kind") == kind and j.get("job") == job for j in listed):
                listed.append({"job": job, "kind": kind, "user": rec["user"]})


def add_pods(gpus: List[Dict[str, Any]], assigned: Optional[Dict[str, Dict[str, str]]]) -> None:
    """The kubelet's word on which pod holds each GPU (monitor/podresources.py): that GPU's job is then the pod's
    `namespace/name`, in place of the pod UIDs its processes' cgroups named (the user stays when they all had
    one). Nothing changes where the kubelet was not asked or does not list the GPU."""
    for gpu in gpus:
        pod = (assigned or {}).get(str(gpu.get("uuid")))
        if pod is None or gpu.get("lost"):
            continue
        listed = gpu.get("jobs") or []
        users = {j.get("user", "") for j in listed if j.get("kind") == "kubernetes"}
        named = {"job": f"{pod['namespace']}/{pod['pod']}", "kind": "kubernetes",
                 "user": users.pop() if len(users) == 1 else "", "container": pod["container"]}
        gpu["jobs"] = [j for j in listed if j.get("kind") != "kubernetes"] + [named]
