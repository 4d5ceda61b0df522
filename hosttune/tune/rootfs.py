"""Every read and write `hosttune tune` makes under a root: no link is followed, so nothing leaves the tree.

`Tree(root)` walks each path one component at a time from a descriptor of the root with O_NOFOLLOW: a symbolic link
anywhere on the way (a planted `etc/sysctl.d -> /etc/sysctl.d` in a captured tree) is refused with ELOOP instead of
leading a write onto the real host. Files are replaced atomically through `fsio.atomic_write` on the opened
directory's /proc/self/fd path, so a directory swapped after the walk cannot redirect the rename either.

Kernel attributes (sysfs, /proc/sys) are written in place, the only way the kernel accepts them. In a captured tree
a write to a selector file (`always [madvise] never`) moves the brackets the way the kernel shows the new choice,
so verify and revert read the tree exactly as they would read the host.
"""

import errno
import os
import re
import stat
from pathlib import Path
from typing import Iterator, List, Optional, Tuple, Union

from hosttune.fsio import atomic_write, read_fd_bounded

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
READ_LIMIT = 1 << 20
_SELECTED = re.compile(r"\[([^\]\s]+)\]")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_line(text: str, where: str) -> str:
    """`text` when it is one line without control characters; else OSError(EINVAL). The last line of defence of
    every line tune writes (a kernel attribute, a line of limits.d, sysctl.d, a drop-in or tuned.conf): the values
    are validated by the profile's settings table before, and this makes a newline that got past it harmless."""
    if _CONTROL.search(text):
        raise OSError(errno.EINVAL, f"refusing a value with a newline or control character ({text[:60]!r})", where)
    return text


def _parts(rel: str) -> List[str]:
    parts = [p for p in rel.strip("/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise OSError(errno.EINVAL, "'..' in a tune path", rel)
    return parts


class Tree:
    """A host under `root` ("/" is the live host)."""

    def __init__(self, root: Path = Path("/")) -> None:
        self.root = Path(root)
        self.live = os.path.realpath(str(self.root)) == "/"

    def path(self, rel: str) -> str:
        """The path shown to a user for `rel` ("/etc/..." on the live host, "DIR/etc/..." in a tree)."""
        return str(self.root / rel.lstrip("/"))

    def _dir(self, parts: List[str], create: bool, made: Optional[List[str]] = None) -> int:
        """A descriptor of the directory `parts` below the root, every step no-follow; `create` makes what is
        missing (mode 0755) and appends each new directory to `made`."""
        fd = os.open(str(self.root), os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            for i, name in enumerate(parts):
                try:
                    nfd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(name, 0o755, dir_fd=fd)
                    if made is not None:
                        made.append("/".join(parts[:i + 1]))
                    nfd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
                except OSError as exc:
                    where = self.path("/".join(parts[:i + 1]))
                    if os.path.islink(where):
                        raise OSError(errno.ELOOP, "a symbolic link in the tree (never followed)", where) from None
                    raise OSError(exc.errno, exc.strerror, where) from None
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def read(self, rel: str) -> Optional[str]:
        """The text of a regular file, None when it is absent; a link or special file raises OSError."""
        raw = self.read_raw(rel)
        return None if raw is None else raw[0].decode("utf-8", "replace")

    def read_raw(self, rel: str) -> Optional[Tuple[bytes, int]]:
        """(bytes, permission bits) of a regular file, None when it is absent; a link or special file raises
        OSError. For files restored exactly by revert."""
        parts = _parts(rel)
        try:
            dfd = self._dir(parts[:-1], create=False)
        except FileNotFoundError:
            return None
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC, dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, self.path(rel)) from None
        finally:
            os.close(dfd)
        try:
            return read_fd_bounded(fd, READ_LIMIT, self.path(rel)), stat.S_IMODE(os.fstat(fd).st_mode)
        finally:
            os.close(fd)

    def exists(self, rel: str) -> bool:
        try:
            return self.read(rel) is not None
        except OSError:
            return False

    def glob(self, pattern: str) -> List[str]:
        """Relative paths matching `pattern` (fnmatch on each component), links never entered."""
        out = [Path(p).relative_to(self.root).as_posix() for p in self.root.glob(pattern.lstrip("/"))]
        return sorted(p for p in out if not any(Path(self.root, *Path(p).parts[:i + 1]).is_symlink()
                                                 for i in range(len(Path(p).parts))))

    def write_attr(self, rel: str, value: str) -> None:
        """Write a kernel attribute in place (sysfs, /proc/sys); in a tree, as the kernel would show it."""
        check_line(value, self.path(rel))
        parts = _parts(rel)
        dfd = self._dir(parts[:-1], create=False)
        try:
            text = value + "\n"
            if not self.live:
                old = self.read(rel) or ""
                text = select(old, value) if _SELECTED.search(old) else value + ("\n" if old.endswith("\n") else "")
            flags = os.O_WRONLY | _NOFOLLOW | _CLOEXEC | (0 if self.live else os.O_TRUNC)
            try:
                fd = os.open(parts[-1], flags, dir_fd=dfd)
                try:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise OSError(errno.EINVAL, "not a regular file", self.path(rel))
                    os.write(fd, text.encode())
                finally:
                    os.close(fd)
            except OSError as exc:  # name the whole path, not the bare name the dir_fd-relative call saw
                raise OSError(exc.errno, exc.strerror, self.path(rel)) from exc
        finally:
            os.close(dfd)

    def write_file(self, rel: str, text: Union[str, bytes], made: Optional[List[str]] = None,
                   mode: int = 0o644) -> None:
        """Replace a configuration file atomically (permission bits `mode`), creating its directories (recorded in
        `made`). A link or anything but a regular file at `rel` or on the way is refused, never followed."""
        parts = _parts(rel)
        dfd = self._dir(parts[:-1], create=True, made=made)
        try:
            st = None
            try:
                st = os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                pass
            if st is not None and not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EEXIST, "exists and is not a regular file", self.path(rel))
            atomic_write(f"/proc/self/fd/{dfd}/{parts[-1]}", text, mode)
        finally:
            os.close(dfd)

    def makedirs(self, rel: str, made: Optional[List[str]] = None) -> None:
        os.close(self._dir(_parts(rel), create=True, made=made))

    def remove(self, rel: str) -> None:
        parts = _parts(rel)
        dfd = self._dir(parts[:-1], create=False)
        try:
            os.unlink(parts[-1], dir_fd=dfd)
        finally:
            os.close(dfd)

    def rmdir_if_empty(self, rel: str) -> bool:
        parts = _parts(rel)
        try:
            dfd = self._dir(parts[:-1], create=False)
        except OSError:
            return False
        try:
            os.rmdir(parts[-1], dir_fd=dfd)
            return True
        except OSError:
            return False
        finally:
            os.close(dfd)

    def read_only(self, rel: str) -> bool:
        """True when `rel` is on a read-only mount (a container's /proc/sys); only the live host can say."""
        if not self.live:
            return False
        try:
            return bool(os.statvfs(self.path(rel)).f_flag & os.ST_RDONLY)
        except OSError:
            return False


def selected(text: Optional[str]) -> Optional[str]:
    """The value of a kernel attribute: the bracketed choice of a selector file, else the stripped text."""
    if text is None:
        return None
    m = _SELECTED.search(text)
    return m.group(1) if m else (text.strip() or None)


def select(old: str, value: str) -> str:
    """A selector file's text with `value` bracketed (the kernel's view after writing `value`)."""
    words: List[Tuple[str, bool]] = [(w.strip("[]"), w.startswith("[")) for w in old.split()]
    if value not in [w for w, _ in words]:
        raise OSError(errno.EINVAL, f"{value!r} is not one of {' '.join(w for w, _ in words)}")
    trail = old[len(old.rstrip()):]
    return " ".join(f"[{w}]" if w == value else w for w, _ in words) + trail


def iter_lines(text: Optional[str]) -> Iterator[str]:
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";")):
            yield line
