"""Where data lives: each real mount -> its disk(s) -> nvme | ssd | hdd, network filesystems, tmpfs; memory."""

import os
import re
import stat
import threading
from pathlib import Path
from typing import List, Optional, Tuple

from hosttune.detect.hostio import HostIO
from hosttune.detect.mounts import MountEntry, read_mounts
from hosttune.detect.numa import parse_meminfo
from hosttune.facts import Memory, Mount

NETWORK_FS = {
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "fuse.ceph", "fuse.glusterfs",
    "glusterfs", "9p", "fuse.sshfs", "afs", "ocfs2", "gfs2", "fuse.s3fs", "fuse.juicefs", "fuse.gcsfuse",
    "virtiofs", "wekafs", "fuse.weka", "pvfs2", "orangefs", "panfs", "fuse.rclone", "davfs", "fuse.davfs2",
}
TMPFS = {"tmpfs", "ramfs"}
PSEUDO_FS = {
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "securityfs", "pstore", "bpf", "debugfs",
    "tracefs", "configfs", "fusectl", "mqueue", "hugetlbfs", "autofs", "binfmt_misc", "efivarfs", "rpc_pipefs",
    "nsfs", "selinuxfs", "nfsd", "squashfs", "fuse.portal", "fuse.gvfsd-fuse", "rootfs", "cpuset",
    "fuse.lxcfs", "ramfs", "devfs", "sockfs", "pipefs", "xenfs", "zonefs",
}
# The kernel's own filesystems (and lxcfs, which stands in for /proc in containers): nothing on them is data on a
# disk, whatever a path there looks like (/proc/kmsg is a "regular file" of size 0 that blocks when read).
KERNEL_FS = {
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "securityfs", "pstore", "bpf", "debugfs", "tracefs",
    "configfs", "fusectl", "mqueue", "binfmt_misc", "efivarfs", "rpc_pipefs", "nsfs", "selinuxfs", "nfsd", "cpuset",
    "fuse.lxcfs", "devfs", "sockfs", "pipefs", "xenfs",
}
# squashfs images (snaps) are read-only software, not where training data sits: skipped. overlay is kept: it is a
# container's "/", with kind "unknown" because its upper layer's disk is not visible from inside.


def disk_kind(name: str, rotational: Optional[str]) -> str:
    if name.startswith("nvme"):
        return "nvme"
    if rotational == "1":
        return "hdd"
    if rotational == "0":
        return "ssd"
    return "unknown"


def _block_dir(io: HostIO, name: str) -> Optional[str]:
    """The sysfs folder of a block device by name (nvme may sit only under sys/class/block: hwloc caveat)."""
    for base in ("/sys/class/block", "/sys/block"):
        real = io.realpath(f"{base}/{name}")
        if real:
            return real
    return None


def disks_of(io: HostIO, block_dir: str, depth: int = 0) -> List[str]:
    """The whole disks under a block device folder: partition -> parent disk; dm-*/md* -> slaves, recursively."""
    if depth > 8:
        return []
    name = block_dir.rstrip("/").rsplit("/", 1)[-1]
    if io.exists(f"{block_dir}/partition"):
        return disks_of(io, block_dir.rsplit("/", 1)[0], depth + 1)
    slaves = io.listdir(f"{block_dir}/slaves")
    if slaves:
        out: List[str] = []
        for s in slaves:
            real = io.realpath(f"{block_dir}/slaves/{s}") or _block_dir(io, s)
            for disk in (disks_of(io, real, depth + 1) if real else [s]):
                if disk not in out:
                    out.append(disk)
        return out
    return [name]


def _canonical_nvme(name: str) -> str:
    """NVMe multipath paths are nvme0c0n1 (controller 0 of subsystem 0); the namespace disk is nvme0n1."""
    m = re.fullmatch(r"nvme(\d+)c\d+n(\d+)", name)
    return f"nvme{m.group(1)}n{m.group(2)}" if m else name


def classify_block(io: HostIO, devno: Optional[str], source: str) -> Tuple[Optional[str], str]:
    """(device description, kind) for a block-backed mount."""
    block_dir = io.realpath(f"/sys/dev/block/{devno}") if devno else None
    if block_dir is None and source.startswith("/dev/"):
        real_src = io.realpath(source)
        name = (real_src or source).rsplit("/", 1)[-1]
        block_dir = _block_dir(io, name)
    if block_dir is None:
        return (source.rsplit("/", 1)[-1] if source.startswith("/dev/") else None), "unknown"
    disks = [_canonical_nvme(d) for d in disks_of(io, block_dir)]
    disks = list(dict.fromkeys(disks))
    kinds = []
    for d in disks:
        ddir = _block_dir(io, d)
        rot = io.read(f"{ddir}/queue/rotational") if ddir else None
        kinds.append(disk_kind(d, rot))
    # A mirror/stripe over mixed media is as slow as its slowest member.
    order = ["hdd", "unknown", "ssd", "nvme"]
    kind = min(kinds, key=order.index) if kinds else "unknown"
    return ",".join(disks), kind


def classify(io: HostIO, entry: MountEntry) -> Optional[Mount]:
    fstype = entry.fstype
    if fstype in NETWORK_FS:
        return Mount(mount=entry.mount, fstype=fstype, source=entry.source, device=entry.source, kind="network")
    if fstype in TMPFS:
        return Mount(mount=entry.mount, fstype=fstype, source=entry.source, device=None, kind="tmpfs")
    if fstype in PSEUDO_FS or fstype.startswith("fuse.") and fstype not in NETWORK_FS:
        return None
    if entry.mount.startswith(("/proc", "/sys", "/dev", "/run/user")) and entry.mount != "/dev/shm":
        return None
    device, kind = classify_block(io, entry.devno, entry.source)
    return Mount(mount=entry.mount, fstype=fstype, source=entry.source, device=device, kind=kind)


def _statvfs(path: str) -> Tuple[Optional[int], Optional[int]]:
    try:
        st = os.statvfs(path)
    except OSError:
        return None, None
    return st.f_blocks * st.f_frsize // (1 << 20), st.f_bavail * st.f_frsize // (1 << 20)


def _statvfs_bounded(path: str, timeout: float) -> Optional[Tuple[Optional[int], Optional[int]]]:
    """statvfs in a daemon thread: a hard-mounted NFS whose server is gone blocks statvfs forever. None = timed out
    (the thread is abandoned; it cannot be killed, but it does not keep the process alive)."""
    result: List[Tuple[Optional[int], Optional[int]]] = []
    worker = threading.Thread(target=lambda: result.append(_statvfs(path)), daemon=True)
    worker.start()
    worker.join(timeout)
    return result[0] if result else None


def _size_option(options: str) -> Optional[int]:
    """tmpfs "size=65536k" -> MiB (captured roots have no statvfs)."""
    m = re.search(r"(?:^|,)size=(\d{1,20})([kmgKMG]?)(?:,|$)", options)
    if not m:
        return None
    scale = {"": 1 / (1 << 20), "k": 1 / 1024, "m": 1, "g": 1024}[m.group(2).lower()]
    return int(int(m.group(1)) * scale)


def probe(io: HostIO, sizes: bool = True, network_timeout: float = 1.0) -> Tuple[Tuple[Mount, ...], Optional[int]]:
    """(mounts, /dev/shm size in MiB). Bind mounts of the same place are listed once (the last one wins).

    `sizes` (live only) fills size/free with statvfs; network filesystems get `network_timeout` seconds each.
    """
    out: List[Mount] = []
    shm: Optional[int] = None
    for entry in read_mounts(io):
        m = classify(io, entry)
        if m is None:
            continue
        size = free = None
        if io.live and sizes and m.kind == "network":
            got = _statvfs_bounded(entry.mount, network_timeout)
            if got is None:
                io.note(f"storage {entry.mount}", f"statvfs gave no answer in {network_timeout:g} s (server gone?)")
            size, free = got or (None, None)
        elif io.live and (sizes or m.mount == "/dev/shm"):
            size, free = _statvfs(entry.mount)
        elif m.kind == "tmpfs":
            size = _size_option(entry.options)
        m = Mount(mount=m.mount, fstype=m.fstype, source=m.source, device=m.device, kind=m.kind, size_mb=size,
                  free_mb=free)
        out = [x for x in out if x.mount != m.mount] + [m]
        if m.mount == "/dev/shm":
            shm = size
    return tuple(out), shm


def memory(io: HostIO, shm_mb: Optional[int]) -> Memory:
    info = parse_meminfo(io.read("/proc/meminfo", "memory"))

    def mb(key: str) -> Optional[int]:
        return info[key] // 1024 if key in info else None

    return Memory(total_mb=mb("MemTotal"), available_mb=mb("MemAvailable"), swap_total_mb=mb("SwapTotal"),
                  hugepages_total=info.get("HugePages_Total"), hugepage_size_kb=info.get("Hugepagesize"),
                  shm_mb=shm_mb)


_FILE_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISSOCK, "a socket"))


def data_path_problem(path: str, io: Optional[HostIO] = None) -> Optional[str]:
    """Why `path` (a dataset or checkpoint path on this machine, doctor's --data) is not data on storage, or None.

    Only what is certain: a device, FIFO or socket (/dev/zero, a named pipe: reading one never ends or blocks), or
    a file on one of the kernel's own filesystems (/proc/kmsg, /sys/...), found by its device number in
    /proc/self/mountinfo. A path that does not exist, or whose filesystem is not identified (a btrfs subvolume's
    own device number), is not judged here."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    for test, kind in _FILE_KINDS:
        if test(st.st_mode):
            return f"is {kind}, not a file or directory of data"
    devno = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    io = io if io is not None else HostIO(Path("/"))
    for entry in read_mounts(io):
        if entry.devno == devno and entry.fstype in KERNEL_FS:
            return f"is on {entry.fstype} ({entry.mount}), a kernel filesystem, not storage"
    return None
