"""Root trust: the one place that decides whether a file, a directory, a library or an environment value may steer
what hosttune does as root.

The rule (SECURITY.md states it for users): as root, hosttune acts only on what root alone could have written.
A path is resolved once (symbolic links followed), then the file and every directory above it must be owned by a
trusted user (root; as an ordinary user, root or that user) and not writable by group or others. Above the file's
own directory a world-writable directory is accepted only with the sticky bit (as /tmp has): there nobody can
rename or replace an entry they do not own. The file's own directory gets no such exception: a root-owned profile
in /tmp is refused, since anybody may plant a sibling there and the next run may pick it up.

Callers get the *resolved* path back and must use it (not the name they were given), so a symbolic link that is
re-pointed after the check changes nothing.
"""

import errno
import os
import stat
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Mapping, Optional, Tuple, Union

from hosttune.errors import UserError

if TYPE_CHECKING:  # pathlib costs every rank's hook ~4 ms: imported where a Path is made
    from pathlib import Path

PathLike = Union[str, "os.PathLike[str]"]

ELF_MAGIC = b"\x7fELF"

# Variables that make a program load a shared library (a preload, an audit, injection, tool or plugin library) named
# by their value. As root every entry must be an absolute path to a root-owned ELF file (`check_library`), whatever
# the value looks like: a bare name is looked up by the loader wherever its search path points.
LIBRARY_ENV: FrozenSet[str] = frozenset({
    "LD_PRELOAD", "LD_AUDIT", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "OMP_TOOL_LIBRARIES",
    "KMP_TOOL_LIBRARIES", "NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN",
})
# Plugin variables whose literal "none" turns the plugin off (no library is loaded).
_PLUGIN_OFF = frozenset({"NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN"})
# Variables that make a program load code or read its configuration from a path. As root each is as dangerous as
# LD_PRELOAD: a value pointing at a user's directory runs that user's code as root. The library variables are in
# it too, so code that asks "does this name a path?" covers them. TMPDIR, HOME and the cache directories are here
# because what is cached there is code (torch's inductor and Triton kernels, torch extensions, torch.hub and
# Hugging Face remote-code modules, CUDA's JIT cache); CC/CXX because inductor and Triton run the compiler.
PATH_LIST_ENV: FrozenSet[str] = frozenset({
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GCONV_PATH", "PATH", "PYTHONPATH", "PYTHONHOME",
    "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "BASH_ENV", "ENV", "PERL5LIB", "PERLLIB", "RUBYLIB",
    "NODE_PATH", "LOCPATH", "NLSPATH", "TERMINFO", "TERMINFO_DIRS", "HOSTALIASES", "RESOLV_HOST_CONF",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "MALLOC_TRACE", "LD_DEBUG_OUTPUT", "LD_PROFILE_OUTPUT", "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_CACHE_DIR", "CUDA_CACHE_PATH", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "PYTHONBREAKPOINT_PATH",
    "TMPDIR", "HOME", "XDG_CACHE_HOME", "TORCH_HOME", "TORCH_EXTENSIONS_DIR", "HF_HOME", "HF_MODULES_CACHE",
    "TRITON_HOME", "PYTORCH_KERNEL_CACHE_PATH", "PYTHON_EGG_CACHE", "NUMBA_CACHE_DIR", "NCCL_CONF_FILE",
    "NCCL_TOPO_FILE", "NCCL_GRAPH_FILE", "GIT_EXEC_PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "CC", "CXX",
}) | LIBRARY_ENV
# Variables whose value is code or a command line, not a path: no check makes them safe from a profile as root.
CODE_ENV: FrozenSet[str] = frozenset({
    "PYTHONBREAKPOINT", "PYTHONINSPECT", "PERL5OPT", "RUBYOPT", "NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "PROMPT_COMMAND",
    "SHELLOPTS", "BASHOPTS", "PS4", "LD_BIND_NOW_HOOK", "IFS", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_ASKPASS",
    "SSH_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_CONFIG_PARAMETERS", "GIT_EDITOR", "GIT_PAGER",
    "EDITOR", "VISUAL", "PAGER", "BROWSER", "LESSOPEN", "LESSCLOSE",
})
# Names of that kind spelled with a counter (git's GIT_CONFIG_KEY_0=core.sshCommand, GIT_CONFIG_VALUE_0=...), and
# bash's exported functions (BASH_FUNC_ls%%: every bash script the job runs would call it instead of ls).
CODE_ENV_PREFIXES: Tuple[str, ...] = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "BASH_FUNC_")
# Interpreter start-up variables a caller's environment may carry (kept by `su`/`sudo -E`). hosttune drops them when
# it starts an interpreter of its own as root, unless their paths pass `check_path`.
PYTHON_START_ENV: Tuple[str, ...] = (
    "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONBREAKPOINT",
    "PYTHONPYCACHEPREFIX", "PYTHONEXECUTABLE", "PYTHONPLATLIBDIR", "PYTHONSAFEPATH", "PYTHONWARNINGS",
    "PYTHONDEVMODE", "PYTHONNOUSERSITE", "PYTHONSITEPACKAGES",
)


class Untrusted(UserError):
    """A path or value that someone other than a trusted user could have written."""


def is_root() -> bool:
    return os.geteuid() == 0


def trusted_owners() -> FrozenSet[int]:
    """Whose files may steer hosttune: root's alone as root; as an ordinary user, root's and the user's own."""
    uid = os.geteuid()
    return frozenset({0}) if uid == 0 else frozenset({0, uid})


def _owner_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (KeyError, ImportError):
        return f"uid {uid}"


def problem(path: PathLike, *, kind: str = "file",
            owners: Optional[FrozenSet[int]] = None) -> Tuple[str, Optional[str]]:
    """(resolved path, None) when `path` is trusted, else (resolved path, why). `kind` is "file" (a regular file),
    "dir" or "any". Never raises."""
    owners = trusted_owners() if owners is None else owners
    try:
        real = os.path.realpath(os.fspath(path))
    except (OSError, ValueError) as exc:
        return os.fspath(path), f"cannot be resolved ({exc})"
    try:
        st = os.lstat(real)
    except (OSError, ValueError) as exc:
        return real, f"does not exist ({getattr(exc, 'strerror', None) or exc})"
    if kind == "file" and not stat.S_ISREG(st.st_mode):
        return real, f"is not a regular file (it is {_kind_of(st.st_mode)})"
    if kind == "dir" and not stat.S_ISDIR(st.st_mode):
        return real, f"is not a directory (it is {_kind_of(st.st_mode)})"
    why = _mode_problem(real, st, owners, sticky_ok=False)
    if why:
        return real, why
    parent = os.path.dirname(real)
    first = True
    while True:
        try:
            pst = os.lstat(parent)
        except OSError as exc:
            return real, f"its directory {parent} cannot be read ({exc.strerror or exc})"
        # The file's own directory may not be world-writable even with the sticky bit; higher ones may (/tmp).
        why = _mode_problem(parent, pst, owners, sticky_ok=not first or kind == "dir")
        if why:
            return real, f"its directory {why}"
        if parent == "/":
            return real, None
        first = False
        parent = os.path.dirname(parent)


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a link"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "something else"


def _mode_problem(path: str, st: os.stat_result, owners: FrozenSet[int], sticky_ok: bool) -> Optional[str]:
    if st.st_uid not in owners:
        return f"{path} is owned by {_owner_name(st.st_uid)}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        if sticky_ok and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX:
            return None
        who = "group and others" if st.st_mode & stat.S_IWGRP and st.st_mode & stat.S_IWOTH else (
            "its group" if st.st_mode & stat.S_IWGRP else "others")
        return f"{path} is writable by {who}"
    return None


def fix_for(why: str, real: str, owners: Optional[FrozenSet[int]] = None) -> str:
    """The one step that makes `real` trusted, for a `problem()` answer. A file below a directory another user owns
    or could write is moved, never blessed in place: that user can swap it again whatever its own mode."""
    owners = trusted_owners() if owners is None else owners
    move = "move it (after checking its contents) to a directory only root can write, such as /etc/hosttune"
    if why.startswith("is not a directory"):
        # Say what kind is needed: "use a root-owned file" for a file where a directory belongs sends people round.
        return (f"a directory is needed at {real}, not {why.split('(it is ', 1)[-1].rstrip(')')}: move it aside "
                f"and create the directory (mkdir -m 755 {real})")
    if why.startswith("is not a regular file"):
        return (f"a regular file is needed at {real}, not {why.split('(it is ', 1)[-1].rstrip(')')}: name a file "
                f"owned by root that only root can write")
    if os.path.isfile(real) and _foreign_ancestor(real, owners):
        return move
    if os.path.isdir(real) and _foreign_ancestor(real, owners):
        # The same for a directory: whoever owns a directory above it can rename it and put another in its place.
        return (f"use a directory only root can write instead of {real} (another user owns a directory above it "
                f"and can put another one in its place)")
    if " writable by " in why and not why.startswith("its directory ") and _is_shared_tmp(real):
        return f"use a directory only root can write, not {real} (everybody may create entries there)"
    if why.startswith("its directory "):
        bad = why[len("its directory "):].split(" is ", 1)[0]
        if " writable by " in why and _is_shared_tmp(bad):
            return f"{move} (not {bad})"
        return f"chown root: {bad} && chmod go-w {bad}" if " owned by " in why else f"chmod go-w {bad}"
    if " owned by " in why:
        check = "" if os.path.isdir(real) else "check its contents, then: "
        return f"{check}chown root: {real} && chmod go-w {real}"
    if " writable by " in why:
        return f"chmod go-w {real}"
    what = "directory" if os.path.isdir(real) else "file"
    return f"use a root-owned {what} instead of {real}"


def _foreign_ancestor(real: str, owners: FrozenSet[int]) -> bool:
    """Some directory above `real` is owned by a user outside `owners`."""
    parent = os.path.dirname(real)
    while True:
        try:
            if os.lstat(parent).st_uid not in owners:
                return True
        except OSError:
            return False
        if parent == "/":
            return False
        parent = os.path.dirname(parent)


def _is_shared_tmp(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return bool(st.st_mode & stat.S_ISVTX) and bool(st.st_mode & stat.S_IWOTH)


def check_path(path: PathLike, what: str, *, kind: str = "file", owners: Optional[FrozenSet[int]] = None) -> str:
    """The resolved path when trusted; else Untrusted with one line naming `what`, the file, the reason and the fix."""
    real, why = problem(path, kind=kind, owners=owners)
    if why is None:
        return real
    shown = f"{path}" if os.fspath(path) == real else f"{path} (-> {real})"
    if why.startswith("does not exist") or why.startswith("cannot be resolved"):
        raise Untrusted(f"{what} {shown} {why}")
    if why.startswith("is not a"):
        raise Untrusted(f"{what} {shown} {why}; fix: {fix_for(why, real, owners)}")
    raise Untrusted(f"refusing {what} {shown}: {why}, so another user could change what runs as "
                    f"{'root' if is_root() else 'you'}; fix: {fix_for(why, real, owners)}")


def host_tree(value: PathLike, *, writes: bool = False, option: str = "--root") -> str:
    """The one check of a host tree named by `--root DIR` (a captured host, or "/"), for every command that takes one.
    Returns its real path (links followed once), which the caller must use: re-pointing a link afterwards changes
    nothing. Refused in one line (exit 2): a path that does not exist, or is not a directory. As root, a tree hosttune
    writes into (`tune apply`/`revert`) must also pass the root trust rule as a directory: otherwise its owner could
    swap it, or a directory above it, for a link to the host between two writes. A tree that is only read needs no
    owner (HostIO and tune's Tree read any tree as hostile)."""
    shown = os.fspath(value)
    try:
        if not shown:
            raise FileNotFoundError(errno.ENOENT, "empty")
        real = os.path.realpath(shown)
        st = os.stat(real)
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG):
            raise UserError(f"{option} {shown}: cannot be used ({exc.strerror or exc})") from None
        raise UserError(f"{option} {shown}: no such directory") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UserError(f"{option} {shown}: not a directory (it is {_kind_of(st.st_mode)})")
    if writes and is_root():
        owners = frozenset({0})
        real, why = problem(real, kind="dir", owners=owners)
        if why is not None:
            raise Untrusted(f"{option} {shown}: refusing to write into it as root: {why}, so another user could "
                            f"change where root's writes land; fix: {fix_for(why, real, owners)}")
    return real


def check_root_file(path: PathLike, what: str) -> "Path":
    """As root: `check_path`; as an ordinary user only the file's type is checked (they can only hurt themselves)."""
    from pathlib import Path

    if is_root():
        return Path(check_path(path, what))
    return Path(path)


def is_elf(path: PathLike) -> bool:
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.read(fd, 4) == ELF_MAGIC
    finally:
        os.close(fd)


def check_library(path: PathLike, what: str = "preload library") -> str:
    """An LD_PRELOAD/LD_AUDIT entry: absolute, resolved once, every component trusted (root-owned as anyone:
    it runs inside every rank), an ELF file. Returns the resolved path, which is what must be passed on."""
    p = os.fspath(path)
    if not p.startswith("/"):
        raise Untrusted(f"{what} {p!r} is not an absolute path")
    check_links(p, what, frozenset({0}))
    real = check_path(p, what, owners=frozenset({0}))
    if not is_elf(real):
        raise Untrusted(f"{what} {p} is not an ELF shared library")
    return real


def check_links(path: str, what: str, owners: FrozenSet[int], thing: str = "the library") -> None:
    """Every symbolic link named on the way to `path` (each prefix of it, as written) must be a trusted user's, in a
    directory that passes the rule: a library reached through a link in /home/user or a world-writable directory is
    refused even while it points somewhere good, since its owner decides where it points next time."""
    parts = [x for x in path.split("/") if x]
    for i in range(1, len(parts) + 1):
        prefix = "/" + "/".join(parts[:i])
        try:
            st = os.lstat(prefix)
        except OSError:
            return  # check_path reports what is missing
        if not stat.S_ISLNK(st.st_mode):
            continue
        parent = os.path.dirname(prefix)
        real, why = problem(parent, kind="dir", owners=owners)
        if why is None and st.st_uid not in owners:
            why, real = f"{prefix} is owned by {_owner_name(st.st_uid)}", prefix
        elif why is not None:
            why = f"its directory {why}" if not why.startswith("its directory ") else why
        if why is not None:
            raise Untrusted(f"refusing {what} {path}: it is reached through the link {prefix}, and {why}, so "
                            f"another user could change what runs as {'root' if is_root() else 'you'}; fix: name "
                            f"{thing} itself ({os.path.realpath(path)}) or {fix_for(why, real)}")


def _short(value: str, limit: int = 60) -> str:
    """repr(value) cut to `limit` characters: a message never grows with the input."""
    text = repr(value[: 4 * limit])
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Where a value holds an absolute path (or a home- or dot-relative one): at its start, or after a character that
# cannot be part of a relative path's name (`=`, `:`, `,`, a space, a quote ...). "a/b" or "1/2" do not count; a
# web address is taken out first (it names no file here). Compiled on first use: every rank's hook imports trust.
_PATH_IN_VALUE = r"(?:^|[^\w.~-])(?:~[\w.-]*|\.{1,2})?/"
_WEB_ADDRESS = r"\bhttps?://\S*"


def names_a_path(value: str) -> bool:
    """`value` is or contains an absolute path (or a `~/`, `./`, `../` one)."""
    if "/" not in value:
        return False  # most values (4, INFO, :4096:8): no regex, so a rank's hook never imports re for them
    import re

    return bool(re.search(_PATH_IN_VALUE, re.sub(_WEB_ADDRESS, "", value, flags=re.IGNORECASE)))


def is_code_env(name: str) -> bool:
    """A variable whose value is code or a command line (or another LD_* loader switch): refused from a profile as
    root, whatever its value."""
    return (name in CODE_ENV or name.startswith(CODE_ENV_PREFIXES)
            or (name.startswith("LD_") and name not in PATH_LIST_ENV))


def check_env_value(name: str, value: str, where: str) -> str:
    """A profile's (or a plan's) `env:` entry as root. Returns the value to use (entries resolved); raises Untrusted
    with one line. As an ordinary user the value is returned unchanged.

    The rule is an allow-list, not a deny-list: code-valued variables (`is_code_env`) are refused; variables known
    to load a library (LIBRARY_ENV) must name root-owned ELF files by absolute path, whatever the value looks like;
    other known path-valued variables (PATH_LIST_ENV) must name only trusted absolute paths (each list entry
    resolved and checked; a missing entry is refused, as it could be created later); any other variable whose value
    is or contains a path is refused, since hosttune cannot tell what that program does with it. A value with no
    path (OMP_NUM_THREADS=4, NCCL_DEBUG=INFO) passes."""
    if not is_root():
        return value
    if is_code_env(name):
        raise Untrusted(f"{where}: refusing env {name} while running as root: its value is code or changes how "
                        f"programs load code; remove it from the profile")
    if name not in PATH_LIST_ENV:
        if names_a_path(value):
            raise Untrusted(f"{where}: refusing env {name}={_short(value)} as root: the value names a path, and "
                            f"hosttune does not know what {name} does with it (another user's file there could run "
                            f"as root); remove it from the profile")
        return value
    if name in _PLUGIN_OFF and value.strip().lower() == "none":
        return value
    # ld.so splits LD_PRELOAD at spaces and colons; every other list here is colon-separated.
    parts = value.replace(" ", ":").split(":") if name == "LD_PRELOAD" else value.split(":")
    out: List[str] = []
    for part in parts:
        if not part:
            if name in ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH"):
                # An empty entry means the current directory for these.
                raise Untrusted(f"{where}: refusing env {name}={_short(value)} as root: an empty entry means the "
                                f"current directory; remove it")
            continue
        if not part.startswith("/"):
            hint = " (a bare name is looked up wherever the loader searches: name the library itself)" \
                if name in LIBRARY_ENV else ""
            raise Untrusted(f"{where}: refusing env {name} entry {_short(part)} as root: not an absolute path{hint}")
        if name in LIBRARY_ENV:
            out.append(check_library(part, f"{where}: env {name} entry"))
        else:
            out.append(check_path(part, f"{where}: env {name} entry", kind="any", owners=frozenset({0})))
    return ":".join(out) if name != "LD_PRELOAD" else " ".join(out)


def interpreter_env(environ: Mapping[str, str]) -> Tuple[Dict[str, str], List[str]]:
    """The environment for an interpreter hosttune starts, and the names it dropped. As root, start-up variables a
    caller may have left behind are dropped unless every path they name passes the root trust rule."""
    env = dict(environ)
    dropped: List[str] = []
    if not is_root():
        return env, dropped
    for name in PYTHON_START_ENV:
        if name not in env:
            continue
        try:
            if name in PATH_LIST_ENV:
                env[name] = check_env_value(name, env[name], "environment")
                continue
        except UserError:
            pass
        del env[name]
        dropped.append(name)
    return env, dropped


# "Mine" means two things, each decided here once (callers pass the stat they took: lstat, fstat, or a no-follow
# open's). Private: nobody else may read, write or enter it (what hosttune keeps for the caller alone: its runtime and
# cache directories and the entries in them, whose contents - a plan's environment, a recorded job - are nobody
# else's business). Written by me alone: nobody else could have changed it, though others may read it (what is
# trusted for its contents but holds no secret: a file hosttune wrote and reads back, a directory the user made for
# output). The second is the root trust rule's mode test with the caller as the only trusted owner.


def private_to_me(st: os.stat_result) -> bool:
    """Owned by the effective user, with no permission at all for group or others (mode & 0o077 == 0)."""
    return st.st_uid == os.geteuid() and not st.st_mode & 0o077


def written_by_me_alone(st: os.stat_result) -> bool:
    """Owned by the effective user and writable by neither group nor others (mode & 0o022 == 0)."""
    return _mode_problem("", st, frozenset({os.geteuid()}), sticky_ok=False) is None


def private_dir(path: PathLike, *, create: bool = True) -> str:
    """A directory only the caller can use (owner = euid, mode 0700, not a link), created if asked. Raises
    Untrusted when it exists with another owner or wider mode (someone else made it first)."""
    p = os.fspath(path)
    if create:
        try:
            os.mkdir(p, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise Untrusted(f"cannot create private directory {p}: {exc.strerror or exc}") from None
    try:
        st = os.lstat(p)
    except OSError as exc:
        raise Untrusted(f"private directory {p}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise Untrusted(f"refusing {p}: expected a private directory, found something else (a link or a file)")
    if not private_to_me(st):
        raise Untrusted(f"refusing {p}: owned by {_owner_name(st.st_uid)} with mode {stat.S_IMODE(st.st_mode):o}; "
                        f"expected owned by {_owner_name(os.geteuid())} with mode 700")
    return p
