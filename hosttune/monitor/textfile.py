"""Where the monitor's Prometheus textfile goes: node_exporter's textfile directory, the monitor's own store, and the
root-owned link from one to the other.

node_exporter's directory belongs to someone else (root below user prometheus's /var/lib/prometheus on Debian,
prometheus itself on Fedora), and the monitor runs as a dynamic user that cannot write there. So root (the unit's
ExecStartPre=+ `monitor setup-textfile`, or a root `hosttune monitor` itself) gives the monitor a store in hosttune's
state directory and links `hosttune.prom` there from node_exporter's directory (`publish`); the monitor writes only in
the store (`write_dir`). Root makes nothing else in node_exporter's directory, follows no link another user could
have made on the way to it, and never changes the owner or mode of a directory it did not create.
"""

import errno
import os
import stat
from typing import Dict, List, Optional, Tuple

from hosttune import fsio
from hosttune.monitor.sinks import DIR_MODE, TEXTFILE_NAME, render_stopped, set_aside, trusted_dir
from hosttune.policy import dirs, names

# node_exporter's textfile directory as the distributions ship it. Debian/Ubuntu prometheus-node-exporter: the
# default of --collector.textfile.directory (root:root 0755, shared with prometheus-node-exporter-collectors, below
# /var/lib/prometheus, which belongs to user prometheus). Fedora/EPEL golang-github-prometheus-node-exporter: the same
# path, made by its spec (`mkdir -vp %{buildroot}%{_sharedstatedir}/prometheus/node-exporter`, `%dir
# %attr(0755,prometheus,prometheus) %{_sharedstatedir}/prometheus/node-exporter`; CBL-Mariner imported that spec
# from Fedora 36 unchanged). Either way another user owns a directory on the way: root never writes a file there,
# only the link `publish()` makes, without following any link.
NODE_EXPORTER_DIRS = ("/var/lib/prometheus/node-exporter",)
# Where it goes without node_exporter's directory, and where the unit's monitor (and a root one) writes: persistent
# (a file in /run vanished on stop, which node_exporter reports as node_textfile_scrape_error 1), and readable by
# node_exporter. STORE_DIR is the packaged place (the unit's ReadWritePaths=); store_dir() follows $HOSTTUNE_STATE_DIR.
STORE_DIR = "/var/lib/hosttune/textfile"
AUTO = "auto"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def store_dir(environ: Optional[Dict[str, str]] = None) -> str:
    """The monitor's own textfile directory: `textfile` in hosttune's state directory (policy/dirs.state_dir)."""
    return os.path.join(dirs.state_dir(environ), os.path.basename(STORE_DIR))


def resolve_textfile_dir(value: str, root: str = "/") -> str:
    """monitor.yaml `textfile_dir`: "auto" is node_exporter's distro directory under `root` (the live host, or a
    test's tree) when it exists, else store_dir(); "" (off) and explicit paths are themselves."""
    if value != AUTO:
        return value
    for d in NODE_EXPORTER_DIRS:
        path = os.path.join(root, d.lstrip("/"))
        if os.path.isdir(path):
            return path
    return store_dir()


def _published_link(target: str) -> str:
    return os.path.join(target, TEXTFILE_NAME)


def write_dir(target: str, store: Optional[str] = None) -> str:
    """Where the monitor writes hosttune.prom for node_exporter to find it in `target`: `target` itself, or `store`
    when `publish()` (root, the unit's ExecStartPre=+) linked target/hosttune.prom to the store. Only a link owned
    by root that names exactly the store's file is taken: nothing another user plants redirects the writes."""
    store = store_dir() if store is None else store
    link = _published_link(target)
    try:
        st = os.lstat(link)
        if stat.S_ISLNK(st.st_mode) and st.st_uid == 0 and os.readlink(link) == os.path.join(store, TEXTFILE_NAME):
            return store
    except OSError:
        pass
    return target


DYNAMIC_UID_DIR = "/run/systemd/dynamic-uid"


def service_user(name: str, dynamic_dir: str = DYNAMIC_UID_DIR) -> Optional[Tuple[int, int]]:
    """(uid, gid) of `name`: from the user database, else as a DynamicUser= that systemd allocated for a running
    unit. NSS finds those only with libnss-systemd, which a minimal Debian lacks; systemd itself records each one
    as the link `direct:<name>` -> "<uid>" in /run/systemd/dynamic-uid (src/core/dynamic-user.c, the same records
    nss-systemd reads), and a dynamic user's group has the same number."""
    import pwd

    try:
        pw = pwd.getpwnam(name)
        return pw.pw_uid, pw.pw_gid
    except KeyError:
        pass
    if "/" in name or not name:
        return None
    try:
        value = os.readlink(os.path.join(dynamic_dir, f"direct:{name}"))
    except OSError:
        return None
    return (int(value), int(value)) if value.isdigit() else None


MAX_LINK_HOPS = 40  # as the kernel's MAXSYMLINKS


def _open_dir_nofollow(path: str) -> int:
    """A descriptor of the directory `path` (absolute), opened one component at a time from "/" with O_NOFOLLOW,
    making what is missing (DIR_MODE). A link on the way is followed only when root owns it and it sits in a
    directory only root can write (`/var/lib/prometheus -> /srv/prometheus` made by an admin); one that another user
    made or could swap (a link planted in /var/lib/prometheus, user prometheus's) is ELOOP. The same walk as
    hosttune.tune.rootfs.Tree, whose import is too slow for a daemon's start."""
    parts = [p for p in path.split("/") if p]
    hops = 0
    fd = os.open("/", os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        i = 0
        while i < len(parts):
            name = parts[i]
            made = False
            try:
                nfd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                try:
                    os.mkdir(name, DIR_MODE, dir_fd=fd)
                    made = True
                except FileExistsError:
                    pass
                nfd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                here = os.fstat(fd)
                where = "/" + "/".join(parts[:i + 1])
                if not stat.S_ISLNK(st.st_mode):
                    raise OSError(errno.ENOTDIR, "not a directory", where) from None
                if st.st_uid != 0 or here.st_uid != 0 or here.st_mode & 0o022 or hops >= MAX_LINK_HOPS:
                    raise OSError(errno.ELOOP, "a link another user made or could replace (never followed)",
                                  where) from None
                hops += 1
                dest = os.path.normpath(os.path.join(os.path.dirname(where), os.readlink(name, dir_fd=fd)))
                parts = [p for p in dest.split("/") if p] + parts[i + 1:]
                os.close(fd)
                fd = os.open("/", os.O_RDONLY | _DIRECTORY | _CLOEXEC)
                i = 0
                continue
            os.close(fd)
            fd = nfd
            if made:
                os.fchmod(fd, DIR_MODE)  # mkdir applied the umask
            i += 1
    except OSError as exc:
        os.close(fd)
        raise OSError(exc.errno, exc.strerror, exc.filename or path) from None
    return fd


def publish(target: str, uid: int, gid: int, store: Optional[str] = None) -> Tuple[str, List[str]]:
    """Make `target` (node_exporter's textfile directory) show the monitor's file without the monitor writing there:
    `store` (0755, in hosttune's state directory) and its hosttune.prom belong to uid:gid, a valid file is there
    from the start (`monitor_up 0` until the first sample), and target/hosttune.prom is a root-owned link to it,
    renamed into place. Run as root: by the unit before every start (ExecStartPre=+, the dynamic uid may change
    between starts) with the dynamic user, and by a root `hosttune monitor` with root itself.

    Nothing at `target` is trusted (node_exporter's directory sits below /var/lib/prometheus, user prometheus's):
    it is walked without following any link root did not make (`_open_dir_nofollow`), root only makes the link
    there, and changes the owner or mode of nothing it did not create. Returns (what it did, warnings), for the
    journal."""
    store = os.path.normpath(store_dir() if store is None else store)
    warnings: List[str] = []
    parent = os.path.dirname(store)
    fsio.makedirs_private(parent, DIR_MODE)
    # root chowns and writes below it: the state directory must be root's alone
    trusted_dir(parent, "state dir", f"${names.STATE_DIR}")
    fsio.makedirs_private(store, DIR_MODE)
    if not stat.S_ISDIR(os.lstat(store).st_mode):
        raise OSError(errno.ENOTDIR, "not a directory (a link or a file at the store's name)", store)
    os.chown(store, uid, gid, follow_symlinks=False)
    os.chmod(store, DIR_MODE)  # node_exporter (user prometheus) lists and reads it
    path = os.path.join(store, TEXTFILE_NAME)
    sfd = os.open(store, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    try:
        moved = set_aside(sfd, store)
        if moved:
            warnings.append(moved)
        try:
            st: Optional[os.stat_result] = os.stat(TEXTFILE_NAME, dir_fd=sfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and (not stat.S_ISREG(st.st_mode) or st.st_nlink != 1):
            # a link, a non-file or a hard link at the name (the previous run's user could have made it): root never
            # writes or chowns through one
            os.unlink(TEXTFILE_NAME, dir_fd=sfd)
            st = None
        if st is None:
            fsio.atomic_write(path, render_stopped(None, {}), 0o644, durable=False)
        os.chown(TEXTFILE_NAME, uid, gid, dir_fd=sfd, follow_symlinks=False)
    finally:
        os.close(sfd)
    if not target or os.path.realpath(target) == os.path.realpath(store):
        return f"textfile {path}", warnings
    tfd = _open_dir_nofollow(os.path.abspath(target))
    try:
        moved = set_aside(tfd, target)
        if moved:
            warnings.append(moved)
        link = _published_link(target)
        try:
            lst: Optional[os.stat_result] = os.stat(TEXTFILE_NAME, dir_fd=tfd, follow_symlinks=False)
        except FileNotFoundError:
            lst = None
        if (lst is not None and stat.S_ISLNK(lst.st_mode) and lst.st_uid == 0
                and os.readlink(TEXTFILE_NAME, dir_fd=tfd) == path):
            return f"textfile {path}, linked from {link}", warnings
        tmp = f".{TEXTFILE_NAME}.{os.urandom(6).hex()}.link"  # not *.prom: node_exporter skips it
        os.symlink(path, tmp, dir_fd=tfd)
        try:
            os.replace(tmp, TEXTFILE_NAME, src_dir_fd=tfd, dst_dir_fd=tfd)
        except OSError:
            os.unlink(tmp, dir_fd=tfd)
            raise
    finally:
        os.close(tfd)
    return f"textfile {path}, linked from {link}", warnings
