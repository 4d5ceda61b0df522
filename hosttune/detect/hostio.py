"""The only place the detector opens files under a root or runs a subprocess.

`HostIO(root)` reads a live host (`root == /`) or a captured one (`--root DIR`: a tree holding proc/, sys/, etc/).
With a foreign root nothing outside the tree is consulted: `run` answers None, symbolic links are resolved inside
the tree (an absolute link target means root/target, as it did on the captured machine), and `live` is False so
probes skip os.sched_getaffinity, getrlimit and statvfs. What could not be read is recorded in `missing` as
"what: why"; a probe never raises for an absent or unreadable file.

Every read is bounded and never blocks: regular files only (a FIFO, socket or device is refused at once), at most
`READ_LIMIT` bytes. Size is not asked of the file system first: sysfs attributes report 4096 and /proc files 0.
Under a foreign root the tree may come from anybody, so paths are walked one component at a time relative to
directory descriptors without following any link; each link is resolved by hand, inside the tree (".." stops at
the root), so neither a planted link nor one swapped in mid-walk can make us read the real host's files.

Programs are started through the one gateway, hosttune/programs.py: as root they are looked up only in PATH
directories that pass the root trust rule (a PATH kept by `su`/`sudo -E` can name another user's directory, whose
`python3` or `nvidia-smi` would then run as root), and a program named by path (`facts --python`, the training
interpreter) must pass `trust.check_path` before it runs. Subprocesses start in "/" with an environment rid of what a
caller could have left behind (`child_env`).
"""

import errno
import os
import stat
import subprocess
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune import programs, trust
from hosttune.cpulist import (
    MAX_CPUS,
    format_cpulist,
    parse_cpulist,
    parse_cpulist_checked,
    parse_cpumask,
    parse_cpumask_checked,
)
from hosttune.errors import UserError
from hosttune.fsio import TooLarge, read_bounded, read_fd_bounded
from hosttune.programs import SYSTEM_BIN, trusted_path_dirs, trusted_which  # the program gateway's; kept importable

# sysfs files sometimes end in "\n\0" (hwloc fixture README caveat 7; seen on real kernels' node/has_cpu).
_TRAILING = "\n\0\r \t"
# Every file the detector reads is small (the largest, /proc/cpuinfo, is ~1.5 KiB per CPU: ~12 MiB at 8192 CPUs).
READ_LIMIT = 16 << 20
# The kernel's own limit on links followed in one lookup (fs/namei.c MAXSYMLINKS).
_MAX_LINKS = 40
_SYSTEM_BIN = SYSTEM_BIN

_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def child_env(environ: Mapping[str, str]) -> Tuple[Dict[str, str], List[str]]:
    """The environment for a program the detector starts, and the names it dropped. As an ordinary user: unchanged.
    As root, a caller's environment can name another user's files: PATH keeps only trusted directories; variables
    that load code from a path (LD_LIBRARY_PATH, PYTHONPATH, BASH_ENV, ...) stay only when every path they name
    passes the trust rule; variables whose value is code (PYTHONINSPECT, PERL5OPT, ...) and other LD_* go."""
    env, dropped = trust.interpreter_env(environ)
    if not trust.is_root():
        return env, dropped
    dirs, _ = trusted_path_dirs(env.get("PATH", os.defpath))
    env["PATH"] = os.pathsep.join(dirs or list(_SYSTEM_BIN))
    for name in sorted(env):
        if name == "PATH":
            continue
        if trust.is_code_env(name):
            del env[name]
            dropped.append(name)
        elif name in trust.PATH_LIST_ENV:
            try:
                env[name] = trust.check_env_value(name, env[name], "environment")
            except UserError:
                del env[name]
                dropped.append(name)
    return env, sorted(set(dropped))


def small_int(token: str, digits: int = 20) -> Optional[int]:
    """An optionally signed decimal of at most `digits` digits (every kernel value fits in 20), else None: int()
    on a huge digit string from a planted file is quadratic before Python 3.11 and a ValueError after."""
    body = token[1:] if token[:1] in "+-" else token
    if not body or len(body) > digits or not (body.isascii() and body.isdigit()):
        return None
    return int(token)


class HostIO:
    def __init__(self, root: Path = Path("/")) -> None:
        self.root = Path(root)
        self._base = str(self.root).rstrip("/")
        self.live = os.path.realpath(str(self.root)) == "/"
        self.missing: List[str] = []
        self._cache: Dict[str, Optional[str]] = {}
        self._dirs: Dict[str, List[str]] = {}
        self.last_error: Optional[str] = None
        # False on the launcher's fast path: no subprocess at all (collect(probe_torch=False)).
        self.allow_run = True
        # `facts --capture` (hosttune.capture) sets a Trace: every path a probe asks about, so a capture holds
        # exactly what `--root` reads. trace(kind, rel, data): kind is read/list/stat/elf/which; data the bytes read.
        self.trace: Optional[Callable[[str, str, Optional[bytes]], None]] = None

    # ---- paths ----------------------------------------------------------------------------------------------
    def path(self, rel: str) -> Path:
        """The real path of `rel` (a host path like "/proc/cpuinfo" or "proc/cpuinfo") under the root. Only for
        naming it: opening it would follow links out of a foreign root (read through the methods below)."""
        return Path(self._base + "/" + rel.lstrip("/"))

    def note(self, what: str, why: str) -> None:
        entry = f"{what}: {why}"
        if entry not in self.missing:
            self.missing.append(entry)

    def _walk(self, rel: str, follow_last: bool) -> Tuple[int, Optional[str], os.stat_result, str]:
        """Resolve `rel` inside a foreign root: (descriptor of its directory, its name there or None for the root
        itself, its lstat, its host path). The caller closes the descriptor. Raises OSError."""
        parts = [p for p in rel.split("/") if p]
        stack: List[Tuple[int, str]] = [(os.open(self._base or "/", _O_PATH | _O_DIRECTORY | _O_CLOEXEC), "")]
        hops = 0
        try:
            while parts:
                part = parts.pop(0)
                if part == ".":
                    continue
                if part == "..":
                    if len(stack) > 1:
                        os.close(stack.pop()[0])
                    continue
                parent = stack[-1][0]
                st = os.stat(part, dir_fd=parent, follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode) and (parts or follow_last):
                    hops += 1
                    if hops > _MAX_LINKS:
                        raise OSError(errno.ELOOP, "too many levels of symbolic links")
                    target = os.readlink(part, dir_fd=parent)
                    if target.startswith("/"):
                        while len(stack) > 1:
                            os.close(stack.pop()[0])
                    parts = [p for p in target.split("/") if p] + parts
                    continue
                if not parts:
                    name = "/".join(n for _, n in stack[1:] + [(0, part)])
                    fd = stack.pop()[0]
                    return fd, part, st, "/" + name
                if not stat.S_ISDIR(st.st_mode):
                    raise NotADirectoryError(errno.ENOTDIR, "not a directory")
                # O_NOFOLLOW|O_DIRECTORY: a directory swapped for a link since the stat fails here, not followed.
                stack.append((os.open(part, _O_PATH | _O_NOFOLLOW | _O_DIRECTORY | _O_CLOEXEC, dir_fd=parent), part))
            name = "/".join(n for _, n in stack)
            fd = stack.pop()[0]
            return fd, None, os.fstat(fd), "/" + name.lstrip("/")
        finally:
            for fd, _ in stack:
                os.close(fd)

    def _open_inside(self, rel: str, flags: int) -> int:
        """An fd for `rel` opened with `flags` (no link followed: they were resolved by `_walk`). Foreign root."""
        parent, name, _, _ = self._walk(rel, follow_last=True)
        try:
            if name is None:
                return os.open(".", flags | _O_CLOEXEC, dir_fd=parent)
            return os.open(name, flags | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=parent)
        finally:
            os.close(parent)

    def _read_bytes(self, rel: str) -> bytes:
        if self.live:
            return read_bounded("/" + rel.lstrip("/"), READ_LIMIT)
        # O_NONBLOCK: a FIFO swapped in after the walk opens at once; read_bounded refuses it on its fstat.
        fd = self._open_inside(rel, os.O_RDONLY | os.O_NONBLOCK)
        try:
            return read_fd_bounded(fd, READ_LIMIT, rel)
        finally:
            os.close(fd)

    # ---- reads ----------------------------------------------------------------------------------------------
    def read(self, rel: str, what: Optional[str] = None) -> Optional[str]:
        """The text of a file (trailing newline/NUL garbage stripped), or None. `what` names it in `missing`."""
        if rel in self._cache:
            text = self._cache[rel]
        else:
            try:
                raw = self._read_bytes(rel)
                text = raw.decode("utf-8", errors="replace").rstrip(_TRAILING)
                if self.trace is not None:
                    self.trace("read", rel, raw)
            except OSError as exc:
                text = None
                if self.trace is not None:
                    self.trace("read", rel, None)
                if what or _hostile(exc):
                    # Something that is not a plain file where one is expected (a FIFO, a device, a huge file, a
                    # link loop) is worth a line even where a probe reads it as optional.
                    self.note(what or "read", f"{rel} {_why(exc)}")
            self._cache[rel] = text
            return text
        if text is None and what:
            self.note(what, f"{rel} not readable")
        return text

    def read_int(self, rel: str, what: Optional[str] = None) -> Optional[int]:
        text = self.read(rel, what)
        if text is None:
            return None
        words = text.split()
        if not words:
            return None
        value = small_int(words[0])
        if value is None and what:
            self.note(what, f"{rel} is not a number: {text[:40]!r}")
        return value

    def cpulist(self, text: Optional[str], what: str, where: str) -> List[int]:
        """`parse_cpulist` of `text` read from `where`; dropped entries (corrupt, or ids >= cpulist.MAX_CPUS, the
        kernel's limit) are noted under `what`."""
        cpus, dropped = parse_cpulist_checked(text)
        if dropped:
            self.note(what, f"{where}: {dropped} entr{'y' if dropped == 1 else 'ies'} ignored (corrupt, or CPU ids "
                            f">= {MAX_CPUS})")
        return cpus

    def cpus(self, rel: str, what: str, mask_rel: Optional[str] = None) -> Optional[List[int]]:
        """A cpulist file (else the hex mask file `mask_rel`) as CPU ids, None when neither is readable. Ids at or
        above the kernel's limit (cpulist.MAX_CPUS) and corrupt entries are dropped, and noted under `what`."""
        text = self.read(rel)
        if text is not None:
            return self.cpulist(text, what, rel)
        if mask_rel is None:
            return None
        mask = self.read(mask_rel)
        if mask is None:
            return None
        cpus, over = parse_cpumask_checked(mask)
        if over:
            self.note(what, f"{mask_rel}: bits for CPU ids >= {MAX_CPUS} ignored")
        return cpus

    def exists(self, rel: str) -> bool:
        if self.trace is not None:
            self.trace("stat", rel, None)
        if self.live:
            return os.path.lexists(self.path(rel))
        try:
            os.close(self._walk(rel, follow_last=False)[0])
        except OSError:
            return False
        return True

    def _stat(self, rel: str) -> Optional[os.stat_result]:
        """stat (links followed, inside the root) or None."""
        if self.trace is not None:
            self.trace("stat", rel, None)
        if self.live:
            try:
                return os.stat(self.path(rel))
            except OSError:
                return None
        try:
            parent, _, st, _ = self._walk(rel, follow_last=True)
        except OSError:
            return None
        os.close(parent)
        return st

    def isdir(self, rel: str) -> bool:
        st = self._stat(rel)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def isfile(self, rel: str) -> bool:
        st = self._stat(rel)
        return st is not None and stat.S_ISREG(st.st_mode)

    def listdir(self, rel: str) -> List[str]:
        """Sorted names in a folder ([] when absent); cached, since library dirs are listed by several probes."""
        if self.trace is not None:
            self.trace("list", rel, None)
        if rel not in self._dirs:
            try:
                if self.live:
                    self._dirs[rel] = sorted(os.listdir(self.path(rel)))
                else:
                    fd = self._open_inside(rel, os.O_RDONLY | _O_DIRECTORY)
                    try:
                        self._dirs[rel] = sorted(os.listdir(fd))
                    finally:
                        os.close(fd)
            except OSError:
                self._dirs[rel] = []
        return self._dirs[rel]

    def realpath(self, rel: str) -> Optional[str]:
        """Resolve symbolic links inside the root; the host path ("/sys/devices/...") or None when it dangles."""
        if self.trace is not None:
            self.trace("stat", rel, None)
        if self.live:
            real = os.path.realpath(rel)
            return real if os.path.lexists(real) else None
        try:
            parent, _, _, host = self._walk(rel, follow_last=True)
        except OSError:
            return None
        os.close(parent)
        return host

    def is_elf(self, rel: str) -> bool:
        """Whether `rel` (links resolved inside the root) is a regular file starting with the ELF magic."""
        if self.trace is not None:
            self.trace("elf", rel, None)
        if self.live:
            real = os.path.realpath(rel)
            return self.isfile(real) and trust.is_elf(real)
        try:
            fd = self._open_inside(rel, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 4) == trust.ELF_MAGIC
        finally:
            os.close(fd)

    # ---- processes ------------------------------------------------------------------------------------------
    def run(self, argv: Sequence[str], timeout: float = 10.0, env: Optional[Dict[str, str]] = None,
            note: bool = True) -> Optional["subprocess.CompletedProcess[str]"]:
        """Run a command on the live host; None with a foreign root, or when it cannot start or times out (the
        reason is in `last_error`, and in `missing` when `note`). It starts in "/" (never the caller's directory)
        with `child_env` of `env` (default: ours)."""
        self.last_error = None
        if not self.live or not self.allow_run:
            self.last_error = "no subprocess with a foreign root" if not self.live else "skipped on the fast path"
            return None
        clean, dropped = child_env(os.environ if env is None else env)
        if dropped:
            self.note("environment", f"not passed on as root (they name code or paths another user could write): "
                                     f"{', '.join(dropped)}")
        try:
            # Through the gateway: the program is resolved (as root: trusted PATH directories, its file trusted)
            # and that path is what runs. Refused or missing: None, with the reason in last_error.
            return programs.run(argv, "program", env=clean, capture_output=True, text=True, timeout=timeout,
                                cwd="/", stdin=subprocess.DEVNULL, check=False)
        except programs.NotFound:
            self.last_error = f"cannot run {argv[0]}: not found"
        except UserError as exc:  # trust.Untrusted: one line naming the file, the reason and the fix
            self.last_error = str(exc)
        except subprocess.TimeoutExpired:
            self.last_error = f"timed out after {timeout:g} s"
        except OSError as exc:
            self.last_error = f"cannot run {argv[0]}: {_why(exc)}"
        if note:
            self.note(os.path.basename(argv[0]), self.last_error)
        return None

    def which(self, name: str, extra_dirs: Sequence[str] = ()) -> Optional[str]:
        """A program's path: PATH on the live host (as root, its trusted entries only), the usual bin dirs inside a
        foreign root (host path)."""
        dirs = list(extra_dirs) + list(_SYSTEM_BIN)
        if self.live:
            found, skipped = trusted_which(name)
            for entry in skipped:
                self.note("PATH", f"not searched as root: {entry}")
            if found:
                if self.trace is not None:
                    self.trace("which", found, None)
                return found
            if trust.is_root():
                dirs = [d for d in dirs if trust.problem(d, kind="dir")[1] is None]
        for d in dirs:
            rel = f"{d.rstrip('/')}/{name}"
            if self.isfile(rel):
                return rel
        return None


def _hostile(exc: OSError) -> bool:
    return isinstance(exc, TooLarge) or exc.errno in (errno.EINVAL, errno.ELOOP)


def _why(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "not found"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, TooLarge):
        return f"is larger than {READ_LIMIT >> 20} MiB"
    if exc.errno == errno.EINVAL and "regular" in str(exc):
        return "is not a regular file"
    if exc.errno == errno.ELOOP:
        return "has too many levels of symbolic links"
    return exc.strerror or type(exc).__name__


__all__ = ["HostIO", "READ_LIMIT", "child_env", "small_int", "format_cpulist", "parse_cpulist", "parse_cpumask",
           "trusted_path_dirs", "trusted_which"]
