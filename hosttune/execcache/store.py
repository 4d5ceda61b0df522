"""Where a caller's entries live, and loading, checking and writing them (only the caller's private files)."""

from __future__ import annotations

import marshal
import os
import stat

from hosttune import execcache as pkg  # the constants, read at each use (tests set some in the process they start)
from hosttune.execcache.key import _read, _stat_key

TYPE_CHECKING = False
if TYPE_CHECKING:  # the annotations only; typing costs ~13 ms to import on Debian 12's python3
    from typing import Any, Dict, Optional, Tuple


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


# The two tests below are trust.private_to_me (owned by me, mode & 0o077 == 0) spelled out on purpose: this module is
# on every start's path and does not import hosttune.trust (~1.0 ms cumulative, `python -X importtime -c "import
# hosttune.trust"`, measured on the 2-core VM); keep them the same rule as trust.private_to_me.
def _private_dir_ok(path: str) -> bool:
    st = _stat_key(path)
    return st is not None and stat.S_ISDIR(st[5]) and st[6] == os.geteuid() and not st[5] & 0o077


def load(path: str) -> Optional[Tuple[Any, ...]]:
    """An entry if the file is the caller's own private regular file of the right shape; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077 or st.st_nlink != 1
                or st.st_size > pkg.MAX_ENTRY_BYTES):
            return None
        blob = os.read(fd, pkg.MAX_ENTRY_BYTES + 1)
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
        return (magic == pkg.VERSION and isinstance(dig, bytes) and isinstance(exe, str) and strs(argv)
                and bool(argv)
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
            return pkg.explain(f"not recorded: {folder} {why}")
        blob = marshal.dumps(entry)
        if len(blob) > pkg.MAX_ENTRY_BYTES:
            return
        fsio.atomic_write(path, blob, 0o600)
        pkg.explain(f"recorded {path}")
        names = [n for n in os.listdir(folder) if len(n) == 32]
        if len(names) > pkg.MAX_ENTRIES:
            names.sort(key=lambda n: _mtime(os.path.join(folder, n)))
            for n in names[: len(names) - pkg.MAX_ENTRIES]:
                try:
                    os.unlink(os.path.join(folder, n))
                except OSError:
                    pass
    except (OSError, trust.Untrusted, ValueError) as exc:
        pkg.explain(f"not recorded: {exc}")


def _mtime(path: str) -> int:
    st = _stat_key(path)
    return 0 if st is None else st[3]

