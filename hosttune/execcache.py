"""`hosttune exec`'s start-up cache: a plain job's final exec, replayed without click, YAML, the detector or the planner
when nothing it was computed from has changed.

Why: on Debian 12's /usr/bin/python3 the full path of `hosttune exec -- true` costs ~150 ms (imports ~100 ms: click,
PyYAML, the facts dataclasses, the planner; detection ~25 ms; the plan ~5 ms; bench/bench_launch.py prints the
phases). A hit costs a few ms on top of the interpreter's own start.

How (nothing here decides a policy; it records what the full path did and checks that every input is unchanged):
- `fast_exec(args)` runs from `hosttune.cli` before click is imported, for `exec [--profile P] [--no-bind] [--]
  COMMAND...` only (--dry-run, --verify, --root, --json and any other option take the full path). It hashes the
  call (argv, the whole environment, cwd, ids, interpreter, hosttune version) and the host's dynamic state (boot
  id, online CPUs and nodes, this process's allowed CPUs/nodes and cgroup, the NVIDIA driver version, the PCI device
  list, hostname), picks the entry of that digest, and checks the entry's recorded dependencies: stat (device,
  inode, size, mtime, ctime, mode, owner) of every file and directory the full path opened, listed or stat'ed
  outside /proc, /sys and /dev, with their ancestors (trust decisions read owners and modes), every hosttune/
  third-party module it ran, the PATH directories; and the bytes of every cgroup file it read (CPU quota). All equal:
  it sets the CPU affinity and memory policy the full path set, prints what the full path printed, and execs the
  same program with the same environment (a fresh launch marker). Anything else: it returns and the full path runs.
- On a miss the full path runs under a recorder (an audit hook plus wrappers of os.stat/lstat/access/readlink,
  stderr and stdout), and the entry is written at its `os.exec` audit event, right before the exec. A window that
  starts a process, writes or renames a file, forks or signals is not recorded (a torchrun job, --verify, a handoff):
  those always take the full path.

Storage: root uses the `cache` directory in its runtime directory (`policy.dirs.runtime_dir()`: /run/hosttune, or
$HOSTTUNE_RUNTIME_DIR); a user $XDG_RUNTIME_DIR/hosttune when $XDG_RUNTIME_DIR is theirs alone, else their cache
directory (`policy.dirs.user_cache_dir()`: $XDG_CACHE_HOME/hosttune or ~/.cache/hosttune). The directory must be
owned by the caller with mode 0700 (root's runtime directory too; one moved by $HOSTTUNE_RUNTIME_DIR must pass the
trust rule with every directory above it), an entry a single-link regular file owned by the caller, no group/other
bits; anything else is ignored (a cache someone else could write is never trusted). Nothing is created in a
directory before it passed the trust rule. Entries are written atomically with
mode 0600, hold a hash of the environment (never its values), and are pruned to the newest `MAX_ENTRIES`.
HOSTTUNE_EXEC_CACHE=0 turns the cache off (no read, no write); =explain says on stderr why a run was or was not
replayed or recorded. `hosttune facts` and every other command never use it.

This module must stay cheap to import: os, sys, marshal, stat and the builtin BLAKE2 only at module level; no typing,
pathlib, re or json on the hit path (each costs several ms on the distro interpreter).
"""

from __future__ import annotations

import marshal
import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # the annotations only; typing costs ~13 ms to import on Debian 12's python3
    from typing import Any, Dict, List, Optional, Set, Tuple

VERSION = "hosttune-exec-cache/1"
ENV_SWITCH = "HOSTTUNE_EXEC_CACHE"  # also in hosttune.policy.names (not imported here: start-up cost)
LAUNCH_ID = "HOSTTUNE_LAUNCH_ID"  # = names.LAUNCH_ID, checked by tests/test_exec_speed.py
MAX_ENTRY_BYTES = 1 << 20
MAX_ENTRIES = 32
RACY_NS = 2_000_000_000  # read at each use: tests/test_exec_speed.py sets it in the process it starts
_VOLATILE_ROOTS = ("/proc/", "/sys/", "/dev/")
# Files keyed by their bytes, not their stat: cgroup limits change at run time without any other sign. (A module
# constant so that tests/test_exec_speed.py can put a quota file of its own under this rule.)
_CONTENT_ROOTS: Tuple[str, ...] = ("/sys/fs/cgroup/",)
# The host's dynamic state every plan depends on (read on every look-up, compared byte for byte through the digest).
_HOST_FILES = (
    "/proc/sys/kernel/random/boot_id",  # a reboot: new driver, new topology, new everything
    "/sys/devices/system/cpu/online",  # CPU hot-plug, SMT switched off at run time
    "/sys/devices/system/node/online",
    "/sys/devices/system/node/has_memory",  # memory-less nodes after memory hot-(un)plug
    "/proc/self/cgroup",  # moved to another cgroup (quota, cpuset)
    "/proc/driver/nvidia/version",  # driver loaded, unloaded or upgraded
    "/proc/sys/kernel/hostname",  # generated profiles name the host
)
# What says how busy the host is right now: a full path that reads one of these is never recorded (the answer changes
# from one second to the next, so no key could hold it).
_LOAD_FILES = frozenset(("/proc/loadavg", "/proc/stat", "/proc/schedstat"))
_STATUS_KEYS = (b"Cpus_allowed_list:", b"Mems_allowed_list:")  # the cpuset as this process sees it
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# Audit events after which the window is not a pure computation ending in exec: never recorded.
_SIDE_EFFECTS = frozenset((
    "subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
    "os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod", "os.chown",
    "os.truncate", "os.utime", "os.putenv", "os.unsetenv", "os.chdir", "os.chflags", "os.setxattr",
    "os.removexattr", "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move",
    "shutil.rmtree", "tempfile.mkstemp", "tempfile.mkdtemp", "resource.setrlimit", "resource.prlimit",
    "socket.connect", "socket.bind", "socket.sendto",
))
_NR = {  # (get_mempolicy, set_mempolicy) syscall numbers: asm-generic/unistd.h and the arch tables
    "x86_64": (239, 238), "aarch64": (236, 237), "ppc64le": (260, 261), "ppc64": (260, 261), "s390x": (269, 270),
    "riscv64": (236, 237), "loongarch64": (236, 237),
}
_NODE_BITS = 4096  # >= MAX_NUMNODES (1 << CONFIG_NODES_SHIFT, at most 1024): get_mempolicy needs the whole mask


# ---- small helpers ----------------------------------------------------------------------------------------------

def _read(path: str, limit: int = 65536) -> Optional[bytes]:
    """A small kernel or cache file, bounded; None when absent or unreadable. (hosttune.fsio imports tempfile and
    typing, ~15 ms here; this is the same bounded read on an fd opened without following links.)"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit + 1)
        while data and len(data) <= limit:
            more = os.read(fd, limit + 1 - len(data))
            if not more:
                break
            data += more
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat_key(path: str, listed: bool = True) -> Optional[Tuple[int, ...]]:
    """What a path's lstat says about it: everything, or for a directory whose entries nobody listed its identity,
    type, owner and mode only (what trust checks and lookups through it depend on; its times change with every entry
    added anywhere in it, e.g. another job's handoff under /run/hosttune)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    key = _key_of(st, listed)
    if stat.S_ISLNK(st.st_mode) and not (os.path.realpath(path) + "/").startswith(_VOLATILE_ROOTS):
        # the link itself and what it leads to now (an alternatives target swapped); /etc/mtab -> /proc/self/mounts
        # is the link only (procfs times are always now)
        try:
            key += _key_of(os.stat(path), listed)
        except OSError:
            key += (-1,)
    return key


def _times(key: Tuple[int, ...]) -> List[int]:
    """The mtimes and ctimes in a `_stat_key` (a link's own and its target's); none for a directory's identity."""
    return [key[i] for i in (3, 4, 11, 12) if len(key) >= 8 and (i < 8 or len(key) == 16)] or [0]


def _key_of(st: os.stat_result, listed: bool) -> Tuple[int, ...]:
    if not listed and stat.S_ISDIR(st.st_mode):
        return (st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_uid, st.st_gid)


def _blake2b() -> Any:
    try:
        from _blake2 import blake2b  # builtin: no OpenSSL load (hashlib costs ~5 ms here)
    except ImportError:  # pragma: no cover - every CPython 3.9-3.13 build has it
        from hashlib import blake2b
    return blake2b(digest_size=32, person=b"hosttune-exec")


def cache_dir(environ: Optional[Dict[str, str]] = None) -> Optional[str]:
    """Where this caller's entries live (not created here): root `cache` in its runtime directory; a user
    XDG_RUNTIME_DIR's hosttune directory, or their cache directory. None when there is no sensible place."""
    from hosttune.policy import dirs

    env = os.environ if environ is None else environ
    if os.geteuid() == 0:
        return os.path.join(dirs.runtime_dir(env), "cache")
    xdg = env.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/") and _private_dir_ok(xdg):
        return os.path.join(xdg, "hosttune")
    return dirs.user_cache_dir(env)


def _usable_dir(where: str) -> Optional[str]:
    """Why the entries in `where` cannot be trusted, or None. Root's runtime directory must be private too (a
    /run/hosttune that systemd handed to a service's user is not root's any more); one moved by
    $HOSTTUNE_RUNTIME_DIR must pass the trust rule with every directory above it (the variable survives `sudo -E`)."""
    if not _private_dir_ok(where):
        return f"{where} is missing or not private to this user"
    if os.geteuid() != 0:
        return None
    from hosttune.policy import dirs

    runtime = os.path.dirname(where)
    if not _private_dir_ok(runtime):
        return f"{runtime} is not private to root"
    if runtime == dirs.RUNTIME:
        return None  # /run is root's: the trust module's import is not paid on every start
    from hosttune import trust

    _, why = trust.problem(where, kind="dir")
    return why


def _private_dir_ok(path: str) -> bool:
    st = _stat_key(path)
    return st is not None and stat.S_ISDIR(st[5]) and st[6] == os.geteuid() and not st[5] & 0o077


# ---- the key ----------------------------------------------------------------------------------------------------

def parse_args(args: List[str]) -> Optional[Tuple[Optional[str], bool, List[str]]]:
    """(profile, no_bind, command) for the forms the cache serves; None for everything else (the full path)."""
    profile: Optional[str] = None
    no_bind = False
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            i += 1
            break
        if not tok.startswith("-") or tok == "-":
            break
        if tok == "--no-bind":
            no_bind = True
        elif tok == "--profile" and i + 1 < len(args):
            profile = args[i + 1]
            i += 1
        elif tok.startswith("--profile="):
            profile = tok[len("--profile="):]
        else:
            return None  # --dry-run, --verify, --json, --root, --override, -h ... and typos: the full path says
        i += 1
    command = args[i:]
    return (profile, no_bind, command) if command else None


def _host_state(h: Any) -> None:
    for path in _HOST_FILES:
        data = _read(path)
        h.update(b"\0missing\0" if data is None else data)
        h.update(b"\0" + path.encode() + b"\0")
    status = _read("/proc/self/status") or b""
    h.update(b"\n".join(line for line in status.split(b"\n") if line.startswith(_STATUS_KEYS)))
    h.update(repr(sorted(os.sched_getaffinity(0))).encode())
    for folder in ("/sys/bus/pci/devices", "/proc/driver/nvidia/gpus", "/proc/driver/nvidia/capabilities"):
        h.update(repr(_tree(folder)).encode())  # GPU hot-plug; MIG instances appear under capabilities


def _tree(folder: str, depth: int = 4, budget: Optional[List[int]] = None) -> List[str]:
    """Sorted names below `folder` (bounded: depth 4, 4096 entries): what exists, not what it says."""
    budget = [4096] if budget is None else budget
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ["\0missing"]
    out: List[str] = []
    for name in names:
        if budget[0] <= 0:
            break
        budget[0] -= 1
        out.append(name)
        path = folder + "/" + name
        if depth > 1 and not os.path.islink(path) and os.path.isdir(path) and not folder.startswith("/sys/bus"):
            out.extend(name + "/" + sub for sub in _tree(path, depth - 1, budget))
    return out


def digest(args: List[str], environ: Optional[Any] = None) -> bytes:
    """The call and the host state as one digest: argv, environment, cwd, ids, interpreter, hosttune's version."""
    from hosttune import __version__

    env = os.environb if environ is None else environ
    h = _blake2b()
    h.update(repr((VERSION, __version__, sys.version, sys.executable, os.getcwd(), os.getuid(), os.geteuid(),
                   os.getgid(), os.getegid(), sorted(os.getgroups()), list(args))).encode())
    for k, v in sorted(env.items()):
        h.update(k if isinstance(k, bytes) else k.encode("utf-8", "surrogateescape"))
        h.update(b"=")
        h.update(v if isinstance(v, bytes) else v.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    _host_state(h)
    return h.digest()  # type: ignore[no-any-return]


# ---- look-up and replay -----------------------------------------------------------------------------------------

def load(path: str) -> Optional[Tuple[Any, ...]]:
    """An entry if the file is the caller's own private regular file of the right shape; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077 or st.st_nlink != 1
                or st.st_size > MAX_ENTRY_BYTES):
            return None
        blob = os.read(fd, MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        entry = marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return None
    return entry if _valid(entry) else None


def _valid(entry: Any) -> bool:
    """The exact shape `_entry` writes: a tuple of plain values (marshal can also carry code objects: refused)."""
    def strs(t: Any) -> bool:
        return isinstance(t, tuple) and all(isinstance(x, str) for x in t)

    def ints(t: Any) -> bool:
        return isinstance(t, tuple) and all(isinstance(x, int) for x in t)

    try:
        magic, dig, stats, contents, exe, argv, env_set, env_del, cpus, mempol, err, marker = entry
        return (magic == VERSION and isinstance(dig, bytes) and isinstance(exe, str) and strs(argv) and bool(argv)
                and isinstance(stats, tuple)
                and all(isinstance(p, str) and isinstance(f, bool) and (k is None or ints(k)) for p, f, k in stats)
                and isinstance(contents, tuple)
                and all(isinstance(p, str) and (b is None or isinstance(b, bytes)) for p, b in contents)
                and isinstance(env_set, tuple) and all(strs(kv) and len(kv) == 2 for kv in env_set)
                and strs(env_del) and (cpus is None or ints(cpus))
                and (mempol is None or (ints(mempol) and len(mempol) >= 1)) and isinstance(err, str)
                and isinstance(marker, bool))
    except (TypeError, ValueError):
        return False


def _stale(entry: Tuple[Any, ...]) -> Optional[str]:
    """The first recorded input that changed, or None when all are as recorded."""
    for path, listed, key in entry[2]:
        if _stat_key(path, listed) != key:
            return path
    for path, data in entry[3]:
        if _read(path) != data:
            return path
    return None


def explain(msg: str) -> None:
    """HOSTTUNE_EXEC_CACHE=explain: why a run was or was not replayed or recorded, straight to fd 2 (so that the
    recorder, which keeps what the full path prints, does not keep this)."""
    if os.environ.get(ENV_SWITCH) == "explain":
        os.write(2, f"hosttune: exec cache: {msg}\n".encode("utf-8", "replace"))


def fast_exec(args: List[str]) -> None:
    """Exec the cached result of `hosttune exec ARGS` when every input is unchanged (does not return then);
    otherwise start recording for the full path and return."""
    if os.environ.get(ENV_SWITCH) == "0" or parse_args(args) is None or os.uname().machine not in _NR:
        return
    where = cache_dir()
    if where is None:
        return explain("no private place for it (no HOME)")
    try:
        dig = digest(args)
    except OSError as exc:  # cwd gone, /proc unreadable: no cache
        return explain(f"not used ({exc})")
    path = os.path.join(where, dig[:16].hex())
    unusable = _usable_dir(where)
    if unusable is not None:
        explain(unusable)
        entry = None
    else:
        entry = load(path)
        if entry is None:
            explain(f"no usable entry {path}")
    if entry is not None and entry[1] == dig:
        stale = _stale(entry)
        if stale:
            explain(f"stale: {stale}")
        elif _replay(entry, path):  # pragma: no cover - _replay execs or returns False
            return
    Recorder.start(args, path, dig)


def _replay(entry: Tuple[Any, ...], path: str) -> bool:
    """Bind, print and exec as recorded. False (nothing done that the full path would not redo) when it can't."""
    _, _, _, _, exe, argv, env_set, env_del, cpus, mempol, err, marker = entry
    if not os.access(exe, os.X_OK) or not os.path.isfile(exe):
        return False  # the full path says why
    if mempol is not None and not _set_mempolicy(mempol):
        return False
    if cpus is not None:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            return False
    env = dict(os.environ)
    for k in env_del:
        env.pop(k, None)
    env.update(env_set)
    if marker:  # the same form supervise.run gives it: this pid (the job's, after exec) and 4 random bytes
        env[LAUNCH_ID] = f"{os.getpid()}-{os.urandom(4).hex()}"
    if err:
        sys.stderr.write(err)
        sys.stderr.flush()
    explain(f"replayed {path}")
    from hosttune.sigexec import default_handlers_for_exec

    default_handlers_for_exec()
    try:
        # Not programs.execve: hosttune/programs.py imports subprocess and typing (~20 ms with `python3 -X
        # importtime`, more than the rest of a hit). `exe` is exactly the path the program gateway resolved when the
        # entry was recorded (launch/supervise.py: programs.resolve, then programs.execve with exe=; the recorder
        # keeps only an absolute path), and the stat of it, of every link on the way and of every directory above
        # it are unchanged (`_stale`), so the gateway's lookup and trust decision still hold.
        os.execve(exe, list(argv), env)
    except OSError:
        return False
    return False  # pragma: no cover


def _libc() -> Any:
    import ctypes

    return ctypes, ctypes.CDLL(None, use_errno=True)


def get_mempolicy() -> Optional[Tuple[int, ...]]:
    """(mode with flags, node ids...) of this thread's memory policy, by the raw syscall; None when unreadable."""
    nr = _NR.get(os.uname().machine)
    if nr is None:
        return None
    ctypes, libc = _libc()
    words = _NODE_BITS // (8 * ctypes.sizeof(ctypes.c_ulong))
    mode = ctypes.c_int(0)
    mask = (ctypes.c_ulong * words)()
    if libc.syscall(ctypes.c_long(nr[0]), ctypes.byref(mode), mask, ctypes.c_ulong(_NODE_BITS), None,
                    ctypes.c_ulong(0)) != 0:
        return None
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    return (mode.value, *[w * bits + b for w in range(words) for b in range(bits) if mask[w] >> b & 1])


def _set_mempolicy(mempol: Tuple[int, ...]) -> bool:
    """Set exactly the policy the full path left (its mode, flags and nodes), by the raw syscall."""
    nr = _NR.get(os.uname().machine)
    if nr is None:
        return False
    ctypes, libc = _libc()
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    mask = (ctypes.c_ulong * (_NODE_BITS // bits))()
    for node in mempol[1:]:
        if not 0 <= node < _NODE_BITS:
            return False
        mask[node // bits] |= 1 << (node % bits)
    return libc.syscall(ctypes.c_long(nr[1]), ctypes.c_int(mempol[0]), mask, ctypes.c_ulong(_NODE_BITS + 1)) == 0


# ---- recording on a miss ----------------------------------------------------------------------------------------

class _Tee:
    """sys.stderr/sys.stdout as the full path sees them: every text write also kept for the entry."""

    def __init__(self, stream: Any, recorder: Recorder, name: str) -> None:
        self._stream, self._recorder, self._name = stream, recorder, name

    def write(self, text: str) -> int:
        self._recorder.wrote(self._name, text)
        return self._stream.write(text)  # type: ignore[no-any-return]

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        if name in ("buffer", "fileno"):  # bytes written around us could not be replayed
            self._recorder.spoil(f"{self._name}.{name}")
        return getattr(self._stream, name)


class _Recorded:
    """os.stat (lstat, access, readlink) while recording: tells the recorder, then calls the real one. An object, not
    a function: a class that takes `os.stat` as an attribute while we are installed (Python 3.9's
    pathlib._NormalAccessor: `stat = os.stat`) must get a callable that does not bind like a method, as the
    builtin does not."""

    __slots__ = ("__wrapped__", "_recorder")

    def __init__(self, fn: Any, recorder: Recorder) -> None:
        self.__wrapped__, self._recorder = fn, recorder

    def __call__(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        if self._recorder.active:
            self._recorder.saw(path, kwargs.get("dir_fd"))
        return self.__wrapped__(path, *args, **kwargs)


class Recorder:
    """What the full path of one `hosttune exec` reads and does, from `start` to its exec."""

    current: Optional[Recorder] = None

    def __init__(self, args: List[str], path: str, dig: bytes) -> None:
        self.args, self.path, self.digest = args, path, dig
        self.paths: Set[str] = set()
        self.listed: Set[str] = set()  # directories whose entries the full path listed
        self.created: Set[str] = set()  # files it created and has not removed yet
        self.contents: Set[str] = set()
        self.spoiled: Optional[str] = None
        self.active = True
        self.err: List[str] = []
        self.environ = dict(os.environ)
        self.cpus = os.sched_getaffinity(0)
        self.mempol = get_mempolicy()
        self._saved: Dict[str, Any] = {}

    @classmethod
    def start(cls, args: List[str], path: str, dig: bytes) -> Optional[Recorder]:
        if sys.stderr is None or sys.stdout is None:
            return None  # no streams to watch (a daemon's start): what the full path prints could not be replayed
        rec = cls(args, path, dig)
        if rec.mempol is None:
            explain("not recorded: the memory policy cannot be read back")
            return None  # the policy could not be read back, so it could not be replayed either
        cls.current = rec
        if not getattr(sys, "_hosttune_exec_hook", False):
            sys.addaudithook(_audit)  # hooks can't be removed: one per process, idle once the recorder stops
            sys._hosttune_exec_hook = True  # type: ignore[attr-defined]
        for name in ("stat", "lstat", "access", "readlink"):
            rec._saved[name] = getattr(os, name)
            setattr(os, name, rec._wrap(rec._saved[name]))
        rec._saved["stderr"], rec._saved["stdout"] = sys.stderr, sys.stdout
        sys.stderr = _Tee(sys.stderr, rec, "stderr")  # type: ignore[assignment]
        sys.stdout = _Tee(sys.stdout, rec, "stdout")  # type: ignore[assignment]
        return rec

    def _wrap(self, fn: Any) -> Any:
        return _Recorded(fn, self)

    def stop(self) -> None:
        if not self.active:
            return
        self.active = False
        for name in ("stat", "lstat", "access", "readlink"):
            if name in self._saved:
                setattr(os, name, self._saved[name])
        if isinstance(sys.stderr, _Tee):
            sys.stderr = self._saved["stderr"]
        if isinstance(sys.stdout, _Tee):
            sys.stdout = self._saved["stdout"]
        if Recorder.current is self:
            Recorder.current = None

    def spoil(self, why: str) -> None:
        if self.spoiled is None:
            self.spoiled = why

    def wrote(self, name: str, text: Any) -> None:
        if name == "stdout" and text:
            self.spoil("wrote to stdout")
        elif isinstance(text, str):
            self.err.append(text)
        else:
            self.spoil("wrote bytes to stderr")

    def saw(self, path: Any, dir_fd: Any = None, listed: bool = False) -> None:
        if isinstance(path, int):
            return  # an fd: the open that made it was seen
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return
        if dir_fd is not None and not path.startswith("/"):
            self.spoil("a path relative to a directory descriptor")
            return
        path = os.path.normpath(os.path.join(os.getcwd(), path))
        if path in _LOAD_FILES or path.startswith("/proc/pressure/"):
            self.spoil(f"read {path}: a plan that follows the current load is made afresh every run")
        elif path.startswith(_CONTENT_ROOTS):
            self.contents.add(path)  # quota and limits change at run time without any other sign
        elif not (path + "/").startswith(_VOLATILE_ROOTS):
            self.paths.add(path)
            if listed:
                self.listed.add(path)

    # -- the entry, at the exec --
    def finish(self, exe: Any, argv: Any, env: Any) -> None:
        self.stop()
        if self.created:
            self.spoil(f"created {sorted(self.created)[0]}")
        if self.spoiled is not None:
            return explain(f"not recorded: {self.spoiled}")
        try:
            entry = self._entry(exe, argv, env)
        except (OSError, ValueError, TypeError, UnicodeError) as exc:
            return explain(f"not recorded: {exc}")
        if entry is not None:
            _store(self.path, entry)

    def _entry(self, exe: Any, argv: Any, env: Any) -> Optional[Tuple[Any, ...]]:
        import time

        exe = os.fsdecode(exe)
        if not exe.startswith("/"):
            # The full path execs what the program gateway resolved (programs.resolve: always absolute); anything
            # else did not come through it, and the replay (which execs `exe` as recorded) must never run it.
            explain(f"not recorded: the exec of {exe!r} is not a path the program gateway resolved")
            return None
        argv = tuple(os.fsdecode(a) for a in argv)
        env = {os.fsdecode(k): os.fsdecode(v) for k, v in dict(env).items()}
        marker = LAUNCH_ID in env and LAUNCH_ID not in self.environ
        env.pop(LAUNCH_ID, None) if marker else None
        env_set = tuple(sorted((k, v) for k, v in env.items() if self.environ.get(k) != v))
        env_del = tuple(sorted(k for k in self.environ if k not in env))
        cpus = os.sched_getaffinity(0)
        mempol = get_mempolicy()
        if mempol is None:
            explain("not recorded: the memory policy cannot be read back")
            return None
        paths = set(self.paths)
        listed = set(self.listed)
        stdlib = os.path.dirname(os.__file__) + "/"
        for mod in list(sys.modules.values()):
            f = getattr(mod, "__file__", None)
            if isinstance(f, str) and f.startswith("/") and not f.startswith(stdlib):
                paths.add(f)  # hosttune and third-party code that ran: an edit or upgrade re-plans
        for d in self.environ.get("PATH", os.defpath).split(os.pathsep):
            if d.startswith("/"):
                paths.add(os.path.normpath(d))  # a program installed or removed (numactl, tools the detector runs)
                listed.add(os.path.normpath(d))
        paths.add(exe)  # the program, its links and every directory above it: owners and modes, as resolve saw them
        cache_root = os.path.dirname(self.path) + "/"
        deps: Dict[str, bool] = {}  # path -> its entries matter (listed, or the parent of a missing path)
        for p in paths:
            if p.endswith((".pyc", ".pyo")) or "/__pycache__/" in p or (
                    p.startswith(cache_root) and "/" not in p[len(cache_root):]):
                continue  # the entries themselves (a handoff directory beside them is an input like any other)
            missing = _stat_key(p) is None
            deps[p] = deps.get(p, False) or p in listed
            while True:  # every ancestor: owners and modes decide trust; a missing path's parent shows its creation
                parent = os.path.dirname(p)
                if parent == p:
                    break
                deps[parent] = deps.get(parent, False) or missing or parent in listed
                missing = missing and _stat_key(parent) is None
                p = parent
        stats = tuple(sorted((p, f, _stat_key(p, f)) for p, f in deps.items()))
        # Racily clean (git's word): a file changed within the filesystem's timestamp granularity of now could change
        # again with the same size and times. Such an entry is not written; the next run records it.
        recent = time.time_ns() - RACY_NS
        young = [p for p, _, k in stats if k is not None and max(_times(k)) >= recent]
        if young:
            explain(f"not recorded yet: {young[0]} changed less than {RACY_NS / 1e9:g} s ago")
            return None
        contents = tuple(sorted((p, _read(p)) for p in self.contents))
        return (VERSION, self.digest, stats, contents, exe, argv, env_set, env_del,
                tuple(sorted(cpus)) if cpus != self.cpus else None,
                mempol if mempol != self.mempol else None, "".join(self.err), marker)


def _audit(event: str, args: Tuple[Any, ...]) -> None:
    rec = Recorder.current
    if rec is None or not rec.active:
        return
    try:
        if event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS)
            exclusive = (isinstance(mode, str) and "x" in mode) or (
                isinstance(flags, int) and flags & os.O_CREAT and flags & os.O_EXCL)
            if writes and exclusive and isinstance(path, str):
                rec.created.add(path)  # a new file (tempfile's probe of the temp dir): harmless if removed again
            elif writes:
                rec.spoil(f"opened {path!r} for writing")
            else:
                rec.saw(path)
        elif event in ("os.listdir", "os.scandir"):
            rec.saw(args[0] if args and args[0] is not None else ".", listed=True)
        elif event == "os.exec":
            rec.finish(*args[:3])
        elif event == "os.mkdir" and isinstance(args[0], (str, bytes)) and len(args) > 2 and args[2] == -1 \
                and _stat_key(os.fsdecode(args[0])) is not None:
            rec.saw(args[0])  # mkdir of what exists (trust.private_dir(create=True)) fails with EEXIST: a read
        elif event == "os.remove" and args and args[0] in rec.created:
            rec.created.discard(args[0])
        elif event in _SIDE_EFFECTS:
            rec.spoil(event)
            explain(f"not recorded: {event} {args[0] if args else ''}")
            rec.stop()  # nothing of this run will be recorded: give the process its own functions back
    except Exception:  # noqa: BLE001 - an audit hook's exception would fail the caller's exec or open
        rec.spoil("recorder error")


def _store(path: str, entry: Tuple[Any, ...]) -> None:
    """Write the entry atomically into the caller's private directory; prune the oldest beyond MAX_ENTRIES."""
    from hosttune import fsio, trust

    folder = os.path.dirname(path)
    parent = os.path.dirname(folder)
    try:
        if os.geteuid() == 0:
            # the runtime directory: nothing made until the directory it goes in passes the rule; private, as the
            # handoff wants it too
            trust.check_path(os.path.dirname(parent), "the runtime directory's parent", kind="dir")
            trust.private_dir(parent, create=True)
        else:
            fsio.makedirs_private(parent, 0o700)  # ~/.cache, $XDG_RUNTIME_DIR: the user's own
        trust.private_dir(folder)
        _, why = trust.problem(folder, kind="dir")
        if why is not None:
            return explain(f"not recorded: {folder} {why}")
        blob = marshal.dumps(entry)
        if len(blob) > MAX_ENTRY_BYTES:
            return
        fsio.atomic_write(path, blob, 0o600)
        explain(f"recorded {path}")
        names = [n for n in os.listdir(folder) if len(n) == 32]
        if len(names) > MAX_ENTRIES:
            names.sort(key=lambda n: _mtime(os.path.join(folder, n)))
            for n in names[: len(names) - MAX_ENTRIES]:
                try:
                    os.unlink(os.path.join(folder, n))
                except OSError:
                    pass
    except (OSError, trust.Untrusted, ValueError) as exc:
        explain(f"not recorded: {exc}")


def _mtime(path: str) -> int:
    st = _stat_key(path)
    return 0 if st is None else st[3]
