"""The key of a call: argument forms the cache serves, the digest of the call and the host's dynamic state, and
what a path's stat says (the recorded inputs are compared by it)."""

from __future__ import annotations

import os
import stat
import sys

from hosttune import execcache as pkg  # the constants, read at each use (tests set some in the process they start)

TYPE_CHECKING = False
if TYPE_CHECKING:  # the annotations only; typing costs ~13 ms to import on Debian 12's python3
    from typing import Any, List, Optional, Tuple


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
    if stat.S_ISLNK(st.st_mode) and not (os.path.realpath(path) + "/").startswith(pkg._VOLATILE_ROOTS):
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
    for path in pkg._HOST_FILES:
        data = _read(path)
        h.update(b"\0missing\0" if data is None else data)
        h.update(b"\0" + path.encode() + b"\0")
    status = _read("/proc/self/status") or b""
    h.update(b"\n".join(line for line in status.split(b"\n") if line.startswith(pkg._STATUS_KEYS)))
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
    h.update(repr((pkg.VERSION, __version__, sys.version, sys.executable, os.getcwd(), os.getuid(),
                   os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups()), list(args))).encode())
    for k, v in sorted(env.items()):
        h.update(k if isinstance(k, bytes) else k.encode("utf-8", "surrogateescape"))
        h.update(b"=")
        h.update(v if isinstance(v, bytes) else v.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    _host_state(h)
    return h.digest()  # type: ignore[no-any-return]

