"""A miss: the full path runs under a recorder, and the entry is written at its exec."""

from __future__ import annotations

import os
import sys

from hosttune import execcache as pkg  # the constants, read at each use (tests set some in the process they start)
from hosttune import jobrecord
from hosttune.execcache.key import _read, _stat_key, _times
from hosttune.execcache.replay import get_mempolicy
from hosttune.execcache.store import _store

TYPE_CHECKING = False
if TYPE_CHECKING:  # the annotations only; typing costs ~13 ms to import on Debian 12's python3
    from typing import Any, Dict, List, Optional, Set, Tuple


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
        if self._recorder.active and not jobrecord.busy():  # the job record is per run: a replay writes its own
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
            pkg.explain("not recorded: the memory policy cannot be read back")
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
        if path in pkg._LOAD_FILES or path.startswith("/proc/pressure/"):
            self.spoil(f"read {path}: a plan that follows the current load is made afresh every run")
        elif path.startswith(pkg._CONTENT_ROOTS):
            self.contents.add(path)  # quota and limits change at run time without any other sign
        elif not (path + "/").startswith(pkg._VOLATILE_ROOTS):
            self.paths.add(path)
            if listed:
                self.listed.add(path)

    # -- the entry, at the exec --
    def finish(self, exe: Any, argv: Any, env: Any) -> None:
        self.stop()
        if self.created:
            self.spoil(f"created {sorted(self.created)[0]}")
        if self.spoiled is not None:
            return pkg.explain(f"not recorded: {self.spoiled}")
        try:
            entry = self._entry(exe, argv, env)
        except (OSError, ValueError, TypeError, UnicodeError) as exc:
            return pkg.explain(f"not recorded: {exc}")
        if entry is not None:
            _store(self.path, entry)

    def _entry(self, exe: Any, argv: Any, env: Any) -> Optional[Tuple[Any, ...]]:
        import time

        exe = os.fsdecode(exe)
        if not exe.startswith("/"):
            # The full path execs what the program gateway resolved (programs.resolve: always absolute); anything
            # else did not come through it, and the replay (which execs `exe` as recorded) must never run it.
            pkg.explain(f"not recorded: the exec of {exe!r} is not a path the program gateway resolved")
            return None
        argv = tuple(os.fsdecode(a) for a in argv)
        env = {os.fsdecode(k): os.fsdecode(v) for k, v in dict(env).items()}
        marker = pkg.LAUNCH_ID in env and pkg.LAUNCH_ID not in self.environ
        env.pop(pkg.LAUNCH_ID, None) if marker else None
        env_set = tuple(sorted((k, v) for k, v in env.items() if self.environ.get(k) != v))
        env_del = tuple(sorted(k for k in self.environ if k not in env))
        cpus = os.sched_getaffinity(0)
        mempol = get_mempolicy()
        if mempol is None:
            pkg.explain("not recorded: the memory policy cannot be read back")
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
        recent = time.time_ns() - pkg.RACY_NS
        young = [p for p, _, k in stats if k is not None and max(_times(k)) >= recent]
        if young:
            pkg.explain(f"not recorded yet: {young[0]} changed less than {pkg.RACY_NS / 1e9:g} s ago")
            return None
        contents = tuple(sorted((p, _read(p)) for p in self.contents))
        return (pkg.VERSION, self.digest, stats, contents, exe, argv, env_set, env_del,
                tuple(sorted(cpus)) if cpus != self.cpus else None,
                mempol if mempol != self.mempol else None, "".join(self.err), marker)


def _audit(event: str, args: Tuple[Any, ...]) -> None:
    rec = Recorder.current
    if rec is None or not rec.active or jobrecord.busy():  # the job record is per run: a replay writes its own
        return
    try:
        if event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & pkg._WRITE_FLAGS)
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
        elif event in pkg._SIDE_EFFECTS:
            rec.spoil(event)
            pkg.explain(f"not recorded: {event} {args[0] if args else ''}")
            rec.stop()  # nothing of this run will be recorded: give the process its own functions back
    except Exception:  # noqa: BLE001 - an audit hook's exception would fail the caller's exec or open
        rec.spoil("recorder error")
