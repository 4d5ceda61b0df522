"""The job record `hosttune exec` keeps while its job runs, so that the monitor can say which job a GPU works for
(`hosttune_job_info{gpu,uuid,job,user}`) without NVML's process list: where it lives, its name and content, the
writer (exec, and exec's cached fast path), and the parse a reader applies. The reader, which trusts none of it, is
monitor/jobs.py `Records`. A foundation module: exec (launch/), its cache (execcache/) and the monitor all use it.

Where: `records_dir(runtime_dir)`, `hosttune-jobs` beside hosttune's runtime directory (`policy.dirs.runtime_dir()`:
so /run/hosttune-jobs, moved with $HOSTTUNE_RUNTIME_DIR), root's and mode 1777 like /tmp: every user's exec writes
there, and the sticky bit keeps each record its writer's (nobody else can remove or rename it). Not inside
/run/hosttune itself: that is root's private directory (0700: the trust rule for root's handoffs and exec cache),
which no other user can enter. Root makes it (the package's tmpfiles.d line, or root's first exec); a user's exec
writes nothing when it is missing, or is not root's (or the user's own) with the sticky bit, or sits under a
directory others can change.

Name: `job-<pid>-<start>-<8 hex>.json`; content: {"version", "pid", "start" (field 22 of /proc/PID/stat: with the
pid it names one process for good), "slurm_job" ($SLURM_JOB_ID: a claim, any user can set it),
"cuda_visible_devices" (what the job's ranks were given; null: unset, every GPU), "device_order"}. No user name:
a reader takes that from the file's owner, which nobody can forge. Written atomically and never through a link
(fsio.atomic_write: an O_EXCL temp file linked to a fresh random name, so a name another user took first is never
ours to replace), mode 0644 (the monitor runs as its own user).

How long: a supervised job's (torchrun, launchers, --verify, --hang-timeout) record names hosttune's own process
and is removed when the job ends, however it ends. A plain or srun job is exec'd, so the record names the job's own
process (exec keeps the pid and start time) and a watcher removes it: a process double-forked before the exec, in a
session of its own with no descriptor of the job's, that waits on a pidfd of the job (Linux >= 5.3; else polls
/proc every second). A record outlives its job only when exec or the watcher was SIGKILLed (or a Slurm step's end
killed the watcher first): its pid is then gone or another process's, the monitor ignores it, and the user's next
exec removes it.

Cheap to import: exec's cached fast path writes a record (no typing at run time; trust, fsio and json only once a
records directory exists).
"""
from __future__ import annotations

import os
import re
import stat

TYPE_CHECKING = False  # `typing` is not imported at run time (exec's cached fast path)
if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List, Mapping, Optional

VERSION = 1
DIR_NAME = "hosttune-jobs"
DIR_MODE = 0o1777
PREFIX = "job-"
SUFFIX = ".json"
LIMIT = 4096  # the largest record a reader accepts: one is ~200 bytes, with a long CUDA_VISIBLE_DEVICES ~1 KiB
_SLURM_ID = re.compile(r"[0-9]{1,20}")
_VISIBLE = re.compile(r"[A-Za-z0-9,._/:-]{0,1024}")  # indices, GPU-/MIG- UUIDs and their /gi/ci
ORDERS = ("PCI_BUS_ID", "FASTEST_FIRST")
POLL_S = 1.0  # the watcher's /proc poll where pidfd_open is missing
STAT_LIMIT = 4096  # /proc/PID/stat: 52 numbers and a command name of at most 64 bytes


def records_dir(runtime_dir: str) -> str:
    """`hosttune-jobs` beside the runtime directory (`policy.dirs.runtime_dir()`): /run/hosttune-jobs."""
    return os.path.join(os.path.dirname(runtime_dir.rstrip("/")), DIR_NAME)


def dir_mode_problem(st: os.stat_result, owners: Iterable[int]) -> Optional[str]:
    """Why a directory with this lstat is no records directory (None: it is one): a real directory (not a link)
    owned by one of `owners`, writable by others only with the sticky bit. Its parents are the trust rule's
    (`trust.problem`), asked by the caller."""
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid not in set(owners):
        return f"is owned by uid {st.st_uid}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return "is writable by others without the sticky bit"
    return None


def name(pid: int, start: int, token: str) -> str:
    return f"{PREFIX}{pid}-{start}-{token}{SUFFIX}"


def parse_name(filename: str) -> Optional[List[int]]:
    """[pid, start] from a record's file name, or None when it is no record's name (a temp file, anything else)."""
    if not (filename.startswith(PREFIX) and filename.endswith(SUFFIX)):
        return None
    parts = filename[len(PREFIX):-len(SUFFIX)].split("-")
    if len(parts) != 3 or not (parts[0].isdigit() and parts[1].isdigit()) or len(parts[0]) > 10:
        return None
    return [int(parts[0]), int(parts[1])]


def content(pid: int, start: int, environ: Mapping[str, str], cuda_visible: Optional[str]) -> Dict[str, Any]:
    return {"version": VERSION, "pid": pid, "start": start, "slurm_job": environ.get("SLURM_JOB_ID") or None,
            "cuda_visible_devices": cuda_visible, "device_order": environ.get("CUDA_DEVICE_ORDER") or None}


def parse(blob: bytes, pid: int, start: int) -> Optional[Dict[str, Any]]:
    """{"slurm_job", "cuda_visible_devices", "device_order"} of a record that is well formed and names the process
    its file name names; None for anything else (the reader then ignores the file)."""
    import json

    try:
        data = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return None
    if type(data.get("pid")) is not int or data["pid"] != pid or type(data.get("start")) is not int \
            or data["start"] != start:
        return None
    slurm, vis, order = data.get("slurm_job"), data.get("cuda_visible_devices"), data.get("device_order")
    if slurm is not None and not (isinstance(slurm, str) and _SLURM_ID.fullmatch(slurm)):
        return None
    if vis is not None and not (isinstance(vis, str) and _VISIBLE.fullmatch(vis)):
        return None
    if order is not None and order not in ORDERS:
        return None
    return {"slurm_job": slurm, "cuda_visible_devices": vis, "device_order": order}


def visible(values: Iterable[Optional[str]]) -> Optional[str]:
    """Several ranks' CUDA_VISIBLE_DEVICES as one: their entries in order, each once; None (every GPU) when any
    rank has it unset."""
    seen: List[str] = []
    for value in values:
        if value is None:
            return None
        for entry in value.split(","):
            entry = entry.strip()
            if entry and entry not in seen:
                seen.append(entry)
    return ",".join(seen)


def start_time_of(stat_text: bytes) -> Optional[int]:
    """Field 22 of /proc/PID/stat (starttime, clock ticks after boot; proc(5)), after the parenthesised command
    name, which may itself hold spaces and parentheses."""
    try:
        return int(stat_text[stat_text.rindex(b")") + 2:].split()[19])
    except (ValueError, IndexError):
        return None


def dir_problem(path: str) -> Optional[str]:
    """Why this user must not write records into `path` (None: it may): dir_mode_problem with root or this
    user as the owner, under directories that pass the trust rule."""
    try:
        why = dir_mode_problem(os.lstat(path), {0, os.geteuid()})
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    if why is not None:
        return f"{path} {why}"
    from hosttune import trust  # here: a host without the directory never pays for it (exec's cached fast path)

    _real, why = trust.problem(os.path.dirname(path), kind="dir")
    return None if why is None else f"{path}: {why}"


def _usable_dir(runtime_dir: str) -> Optional[str]:
    """The records directory when this user may write there (made first when root and missing), else None."""
    d = records_dir(runtime_dir)
    if os.geteuid() == 0 and not os.path.lexists(d):
        from hosttune import trust

        _real, why = trust.problem(os.path.dirname(d), kind="dir")
        if why is not None:
            return None  # never made in a directory others can change (their name, their link)
        try:
            os.mkdir(d, 0o700)  # widened once it is ours for sure (mkdir applies the umask; chmod does not)
            os.chmod(d, DIR_MODE)
        except OSError:
            pass
    return d if dir_problem(d) is None else None


def start_time(pid: int, proc: str = "/proc") -> Optional[int]:
    """The start time of process `pid`, None when it is gone (or hidden from this user)."""
    from hosttune import fsio

    try:
        return start_time_of(fsio.read_bounded(f"{proc}/{int(pid)}/stat", STAT_LIMIT, nofollow=True))
    except OSError:
        return None


_busy = False


def busy() -> bool:
    """True while this process writes its record or forks its watcher: exec's start-up cache recorder
    (execcache/recorder.py) does not take that for part of the job's start, which it replays (a replay writes a
    record of its own)."""
    return _busy


def begin(runtime_dir: str, cuda_visible: Optional[str], environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Write this process's record beside `runtime_dir` (`policy.dirs.runtime_dir()`); its path, or None when there
    is no usable records directory (the job runs the same either way). Removes this user's records whose process
    is gone first."""
    global _busy
    _busy = True
    try:
        return _begin(runtime_dir, cuda_visible, os.environ if environ is None else environ)
    finally:
        _busy = False


def _begin(runtime_dir: str, cuda_visible: Optional[str], env: Mapping[str, str]) -> Optional[str]:
    import json

    from hosttune import fsio

    d = _usable_dir(runtime_dir)
    pid = os.getpid()
    start = start_time(pid)
    if d is None or start is None:
        return None
    sweep(d)
    path = os.path.join(d, name(pid, start, os.urandom(4).hex()))
    blob = json.dumps(content(pid, start, env, cuda_visible), sort_keys=True)
    try:
        fsio.atomic_write(path, blob, 0o644, exclusive=True, durable=False)  # tmpfs: nothing to sync
    except OSError:
        return None
    return path


def sweep(d: str) -> None:
    """Remove this user's records under `d` whose process is gone (a SIGKILLed exec's, or its watcher's)."""
    try:
        names = os.listdir(d)
    except OSError:
        return
    me = os.geteuid()
    for name in names:
        tag = parse_name(name)
        if tag is None or start_time(tag[0]) == tag[1]:
            continue
        path = os.path.join(d, name)
        try:
            if os.lstat(path).st_uid == me:
                os.unlink(path)
        except OSError:
            pass


def remove(path: Optional[str]) -> None:
    if path is None:
        return
    try:
        os.unlink(path)
    except OSError:
        pass


def watch(path: Optional[str]) -> None:
    """Before this process execs its job: fork the watcher that removes `path` when this process ends. The
    watcher is a grandchild in a session of its own (the job never sees a child it did not start, and a Ctrl-C to
    the job's process group does not reach it) holding no descriptor of the job's (a caller reading the job's
    output sees its end when the job ends)."""
    if path is None:
        return
    global _busy
    _busy = True
    try:
        child = _fork_watcher(path)
        try:
            os.waitpid(child, 0)
        except ChildProcessError:
            pass
    except OSError:
        pass  # no watcher: the record goes stale when the job ends, and is ignored and swept
    finally:
        _busy = False


def _fork_watcher(path: str) -> int:
    """The first fork's pid, in the parent; the watcher never returns."""
    job = os.getpid()
    start = start_time(job)
    child = os.fork()
    if child:
        return child
    code = 0
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        _detach()
        _wait_for(job, start)
        remove(path)
    except BaseException:  # noqa: BLE001 - a forked child must never return into the launcher's stack
        code = 1
    finally:
        os._exit(code)


def _detach() -> None:
    """stdin/stdout/stderr on /dev/null, every other inherited descriptor closed (/proc/self/fd lists them: a
    close of every possible number up to RLIMIT_NOFILE can be a million calls)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2:
            try:
                os.close(int(name))
            except OSError:
                pass  # the listing's own descriptor, already closed


def _wait_for(pid: int, start: Optional[int]) -> None:
    """Until process `pid` (started at `start`) has ended."""
    import select

    try:
        fd = os.pidfd_open(pid)  # type: ignore[attr-defined]  # Python >= 3.9, Linux >= 5.3
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        if start_time(pid) == start:  # still ours after the open (not a reused pid)
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            while not poller.poll():
                pass
        os.close(fd)
        return
    import time

    while start is not None and start_time(pid) == start:
        time.sleep(POLL_S)
