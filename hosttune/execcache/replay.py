"""A hit: look the call up and, when every recorded input is unchanged, bind, print and exec as recorded."""

from __future__ import annotations

import os
import sys

from hosttune import execcache as pkg  # the constants, read at each use (tests set some in the process they start)
from hosttune.execcache.key import digest, parse_args
from hosttune.execcache.store import _stale, _usable_dir, cache_dir, load

TYPE_CHECKING = False
if TYPE_CHECKING:  # the annotations only; typing costs ~13 ms to import on Debian 12's python3
    from typing import Any, List, Optional, Tuple


def fast_exec(args: List[str]) -> None:
    """Exec the cached result of `hosttune exec ARGS` when every input is unchanged (does not return then);
    otherwise start recording for the full path and return."""
    if (os.environ.get(pkg.ENV_SWITCH) == "0" or parse_args(args) is None
            or os.uname().machine not in pkg._NR):
        return
    where = cache_dir()
    if where is None:
        return pkg.explain("no private place for it (no HOME)")
    try:
        dig = digest(args)
    except OSError as exc:  # cwd gone, /proc unreadable: no cache
        return pkg.explain(f"not used ({exc})")
    path = os.path.join(where, dig[:16].hex())
    unusable = _usable_dir(where)
    if unusable is not None:
        pkg.explain(unusable)
        entry = None
    else:
        entry = load(path)
        if entry is None:
            pkg.explain(f"no usable entry {path}")
    if entry is not None and entry[1] == dig:
        stale = _stale(entry)
        if stale:
            pkg.explain(f"stale: {stale}")
        elif _replay(entry, path):  # pragma: no cover - _replay execs or returns False
            return
    from hosttune.execcache.recorder import Recorder  # a miss only: a hit never loads the recorder

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
        env[pkg.LAUNCH_ID] = f"{os.getpid()}-{os.urandom(4).hex()}"
    if err:
        sys.stderr.write(err)
        sys.stderr.flush()
    pkg.explain(f"replayed {path}")
    from hosttune import jobrecord  # the monitor's job label, as on the full path (launch/supervise.py)
    from hosttune.policy import dirs
    from hosttune.sigexec import default_handlers_for_exec

    record = jobrecord.begin(dirs.runtime_dir(env), env.get("CUDA_VISIBLE_DEVICES"), env)
    jobrecord.watch(record)
    default_handlers_for_exec()
    try:
        # Not programs.execve: hosttune/programs.py imports subprocess and typing (~20 ms with `python3 -X
        # importtime`, more than the rest of a hit). `exe` is exactly the path the program gateway resolved when the
        # entry was recorded (launch/supervise.py: programs.resolve, then programs.execve with exe=; the recorder
        # keeps only an absolute path), and the stat of it, of every link on the way and of every directory above
        # it are unchanged (`_stale`), so the gateway's lookup and trust decision still hold.
        os.execve(exe, list(argv), env)
    except OSError:
        jobrecord.remove(record)  # the full path writes its own
        return False
    return False  # pragma: no cover


def _libc() -> Any:
    import ctypes

    return ctypes, ctypes.CDLL(None, use_errno=True)


def get_mempolicy() -> Optional[Tuple[int, ...]]:
    """(mode with flags, node ids...) of this thread's memory policy, by the raw syscall; None when unreadable."""
    nr = pkg._NR.get(os.uname().machine)
    if nr is None:
        return None
    ctypes, libc = _libc()
    words = pkg._NODE_BITS // (8 * ctypes.sizeof(ctypes.c_ulong))
    mode = ctypes.c_int(0)
    mask = (ctypes.c_ulong * words)()
    if libc.syscall(ctypes.c_long(nr[0]), ctypes.byref(mode), mask, ctypes.c_ulong(pkg._NODE_BITS), None,
                    ctypes.c_ulong(0)) != 0:
        return None
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    return (mode.value, *[w * bits + b for w in range(words) for b in range(bits) if mask[w] >> b & 1])


def _set_mempolicy(mempol: Tuple[int, ...]) -> bool:
    """Set exactly the policy the full path left (its mode, flags and nodes), by the raw syscall."""
    nr = pkg._NR.get(os.uname().machine)
    if nr is None:
        return False
    ctypes, libc = _libc()
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    mask = (ctypes.c_ulong * (pkg._NODE_BITS // bits))()
    for node in mempol[1:]:
        if not 0 <= node < pkg._NODE_BITS:
            return False
        mask[node // bits] |= 1 << (node % bits)
    nodes = ctypes.c_ulong(pkg._NODE_BITS + 1)
    return libc.syscall(ctypes.c_long(nr[1]), ctypes.c_int(mempol[0]), mask, nodes) == 0  # type: ignore[no-any-return]

