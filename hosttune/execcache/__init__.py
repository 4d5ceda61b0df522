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

This package must stay cheap to import: os, sys, marshal, stat and the builtin BLAKE2 only at module level; no typing,
pathlib, re or json on the hit path (each costs several ms on the distro interpreter).

Modules: `key` (the call and host digest, stat keys, argument forms), `store` (where entries live, load, check, write),
`replay` (the hit: look-up, bind, exec), `recorder` (the miss: what the full path read and did, imported on a miss
only). The names below are the package's interface (`from hosttune import execcache; execcache.fast_exec(...)`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # the annotations only; typing costs ~13 ms to import on Debian 12's python3
    from typing import Tuple

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


def explain(msg: str) -> None:
    """HOSTTUNE_EXEC_CACHE=explain: why a run was or was not replayed or recorded, straight to fd 2 (so that the
    recorder, which keeps what the full path prints, does not keep this)."""
    if os.environ.get(ENV_SWITCH) == "explain":
        os.write(2, f"hosttune: exec cache: {msg}\n".encode("utf-8", "replace"))


# The constants above are defined before the modules that read them are imported (they import this package).
from hosttune.execcache.key import _blake2b, _host_state, _key_of, _read, _stat_key, _times, _tree, digest, parse_args  # noqa: E402
from hosttune.execcache.replay import _libc, _replay, _set_mempolicy, fast_exec, get_mempolicy  # noqa: E402
from hosttune.execcache.store import _mtime, _private_dir_ok, _stale, _store, _usable_dir, _valid, cache_dir, load  # noqa: E402

_LAZY = ("Recorder", "_Recorded", "_Tee", "_audit")


def __getattr__(name: str) -> object:
    """The recorder's names, imported on first use (a hit never needs them)."""
    if name in _LAZY:
        from hosttune.execcache import recorder

        return getattr(recorder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ENV_SWITCH", "LAUNCH_ID", "MAX_ENTRIES", "MAX_ENTRY_BYTES", "RACY_NS", "VERSION", "Recorder", "cache_dir",
    "digest", "explain", "fast_exec", "get_mempolicy", "load", "parse_args",
    "_blake2b", "_host_state", "_key_of", "_libc", "_mtime", "_private_dir_ok", "_read", "_replay", "_set_mempolicy",
    "_stale", "_stat_key", "_store", "_times", "_tree", "_usable_dir", "_valid",
]
