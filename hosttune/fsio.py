"""Files hosttune writes or reads on a user's behalf: one atomic write, one bounded read, one no-follow open.

- `atomic_write`: an unpredictable temp name in the target's directory (O_EXCL, no-follow), write, fsync, rename
  over the target, fsync the directory. A reader sees the old file or the new one, never part of one; a crash
  leaves at most a hidden temp file, never a truncated target; a planted link at the temp name is never followed.
- `read_bounded`: a regular file only (a FIFO or device is refused without blocking), at most `limit` bytes.
- `open_append_nofollow`: for logs: never follows a link planted at the log's name.
"""

import contextlib
import errno
import os
import stat
from typing import BinaryIO, Iterator, Union

from hosttune.errors import UserError

PathLike = Union[str, "os.PathLike[str]"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class TooLarge(OSError):
    pass


def fsync_dir(path: PathLike) -> None:
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: PathLike, mode: int = 0o644, *, exclusive: bool = False,
                  durable: bool = True) -> Iterator[BinaryIO]:
    """`with atomic_writer(p) as f: f.write(...)` replaces `p` atomically when the block ends without an error (for
    writers that stream, such as torch.save). `exclusive`: fail with FileExistsError rather than replace an
    existing file (link(2) never replaces). Raises OSError; the temp file is removed on every failure."""
    p = os.fspath(path)
    d = os.path.dirname(p) or "."
    import tempfile  # here, not at module level: every rank's hook imports fsio (tempfile costs ~6 ms)

    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(p)}.", suffix=".tmp", dir=d)  # O_EXCL, random name
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if exclusive:
            try:
                os.link(tmp, p)
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                    raise
                if os.path.lexists(p):  # a filesystem without hard links: check, then rename
                    raise FileExistsError(errno.EEXIST, "File exists", p) from None
                os.replace(tmp, p)
            else:
                os.unlink(tmp)
        else:
            os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_dir(d)


def atomic_write(path: PathLike, data: Union[bytes, str], mode: int = 0o644, *, exclusive: bool = False,
                 durable: bool = True) -> None:
    """Replace `path` with `data` atomically (see `atomic_writer`)."""
    with atomic_writer(path, mode, exclusive=exclusive, durable=durable) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def read_bounded(path: PathLike, limit: int, *, nofollow: bool = False) -> bytes:
    """At most `limit` bytes of a regular file. Raises OSError (IsADirectoryError/TooLarge/...); a FIFO, socket or
    device raises OSError(EINVAL) at once instead of blocking. `nofollow`: a link at `path` itself is refused."""
    flags = os.O_RDONLY | os.O_NONBLOCK | _CLOEXEC | (_NOFOLLOW if nofollow else 0)
    fd = os.open(os.fspath(path), flags)
    try:
        return read_fd_bounded(fd, limit, os.fspath(path))
    finally:
        os.close(fd)


def read_fd_bounded(fd: int, limit: int, name: str) -> bytes:
    """`read_bounded` for a descriptor the caller opened (and closes); `name` is for the error."""
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", name)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", name)
    chunks = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    blob = b"".join(chunks)
    if len(blob) > limit:
        raise TooLarge(errno.EFBIG, f"larger than {limit} bytes", name)
    return blob


def read_user_text(path: PathLike, what: str, limit: int = 1 << 20) -> str:
    """A user-named text file (a config): UTF-8, regular, bounded. Every failure is one UserError line."""
    try:
        blob = read_bounded(path, limit)
    except TooLarge:
        raise UserError(f"{path}: {what} is larger than {limit} bytes") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        return blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: {what} is not UTF-8 text (bad byte at offset {exc.start})") from None


def open_append_nofollow(path: PathLike, mode: int = 0o640) -> int:
    """An fd for appending to a log; a symbolic link or a non-regular file at `path` is refused (OSError)."""
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def makedirs_private(path: PathLike, mode: int = 0o755) -> None:
    """mkdir -p whose new directories get exactly `mode` whatever the umask (umask 000 would otherwise leave 0777)."""
    p = os.fspath(path)
    if os.path.isdir(p):
        return
    parent = os.path.dirname(p.rstrip("/"))
    if parent and parent != p:
        makedirs_private(parent, mode)
    try:
        os.mkdir(p, mode)
    except FileExistsError:
        return
    os.chmod(p, mode)  # mkdir applies the umask; chmod does not

