"""Where data lives, pinned (issue 21): every mount of a captured tree classified whole (disk, kind, size), the
mount table's escapes and fallbacks, meminfo in MiB, and why a --data path is not data (hosttune.detect.storage,
hosttune.detect.mounts)."""

import os
from pathlib import Path

import pytest
from conftest import build_tree

from hosttune.detect import storage
from hosttune.detect.hostio import HostIO
from hosttune.detect.mounts import MountEntry, parse_mountinfo, parse_mounts, read_mounts, unescape
from hosttune.facts import Memory, Mount

NVME = "/sys/devices/pci0000:00/0000:00:01.0/nvme/nvme0/nvme0n1"
SDA = "/sys/devices/pci0000:00/0000:00:02.0/ata1/host0/target0:0:0/0:0:0:0/block/sda"
SDB = "/sys/devices/pci0000:00/0000:00:02.0/ata2/host1/target1:0:0/1:0:0:0/block/sdb"
MOUNTINFO = "\n".join([
    "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw,errors=remount-ro",
    "23 22 253:0 / /data rw,noatime shared:2 master:1 - xfs /dev/mapper/vg-data rw,attr2",
    "24 22 0:99 / /fast rw - ext4 /dev/sdb rw",
    "25 22 0:50 / /mnt/nfs rw - nfs4 srv:/export rw,vers=4.2",
    "26 22 0:24 / /dev/shm rw,nosuid shared:3 - tmpfs tmpfs rw,size=1048576k",
    "27 22 0:5 / /proc rw - proc proc rw",
    "28 22 0:6 / /sys/fs/pstore rw - pstore pstore rw",
    "29 22 8:17 / /sys/kernel/x rw - ext4 /dev/sdb1 rw",
    "30 22 0:51 / /home/u/remote rw - fuse.sshfs u@h:/ rw",
    "31 22 0:52 / /home/u/fusey rw - fuse.foo foo rw",
    "32 22 0:53 / /run/user/1000 rw - tmpfs tmpfs rw,size=65536k",
    "33 22 0:54 / /snap/core/1 ro - squashfs /dev/loop0 ro",
    "34 22 0:55 / /mnt/a\\040b rw - nfs srv:/a\\040b rw",
    "35 22 0:56 / /var/lib/docker/x rw - overlay overlay rw,lowerdir=/a",
    "36 22 0:57 / /dev/hugepages rw - ext4 /dev/sdb rw",
    "37 22 0:99 / /fast rw - xfs /dev/sdb rw",
])


def _tree(tmp_path: Path) -> HostIO:
    files = {
        "/proc/self/mountinfo": MOUNTINFO + "\n",
        f"{NVME}/queue/rotational": "0\n",
        f"{NVME}/nvme0n1p1/partition": "1\n",
        f"{SDA}/queue/rotational": "1\n",
        f"{SDB}/queue/rotational": "0\n",
        "/sys/devices/virtual/block/dm-0/dm/name": "vg-data\n",
        "/proc/meminfo": "MemTotal:       65536000 kB\nMemFree:  100 kB\nMemAvailable:   32768000 kB\n"
                         "SwapTotal:       2097152 kB\nHugePages_Total:      16\nHugepagesize:       2048 kB\n",
    }
    links = {
        "/sys/dev/block/259:1": f"../..{NVME[4:]}/nvme0n1p1",
        "/sys/dev/block/253:0": "../../devices/virtual/block/dm-0",
        "/sys/devices/virtual/block/dm-0/slaves/sda": f"../../../..{SDA[12:]}",
        "/sys/devices/virtual/block/dm-0/slaves/sdb": f"../../../..{SDB[12:]}",
        "/sys/class/block/nvme0n1": f"../..{NVME[4:]}",
        "/sys/class/block/sda": f"../..{SDA[4:]}",
        "/sys/class/block/sdb": f"../..{SDB[4:]}",
    }
    return HostIO(build_tree(tmp_path, files, links))


def test_every_mount_of_a_captured_tree_classified_whole(tmp_path: Path) -> None:
    io = _tree(tmp_path)
    mounts, shm = storage.probe(io)
    assert list(mounts) == [
        Mount("/", "ext4", "/dev/nvme0n1p1", "nvme0n1", "nvme"),
        Mount("/data", "xfs", "/dev/mapper/vg-data", "sda,sdb", "hdd"),  # a stripe is as slow as its slowest disk
        Mount("/mnt/nfs", "nfs4", "srv:/export", "srv:/export", "network"),
        Mount("/dev/shm", "tmpfs", "tmpfs", None, "tmpfs", size_mb=1024),
        Mount("/home/u/remote", "fuse.sshfs", "u@h:/", "u@h:/", "network"),
        Mount("/run/user/1000", "tmpfs", "tmpfs", None, "tmpfs", size_mb=64),
        Mount("/mnt/a b", "nfs", "srv:/a b", "srv:/a b", "network"),
        Mount("/var/lib/docker/x", "overlay", "overlay", None, "unknown"),
        Mount("/fast", "xfs", "/dev/sdb", "sdb", "ssd"),  # bind mounts of one place: the last one, listed last
    ]
    assert shm == 1024
    assert io.missing == []


def test_classify_block_without_a_sysfs_entry(tmp_path: Path) -> None:
    io = _tree(tmp_path)
    assert storage.classify_block(io, None, "/dev/sdz") == ("sdz", "unknown")
    assert storage.classify_block(io, "8:99", "srv:/x") == (None, "unknown")
    assert storage.classify_block(io, None, "/dev/nvme0n1p1") == ("nvme0n1p1", "unknown")  # no sysfs entry
    assert storage.classify_block(io, "253:0", "x") == ("sda,sdb", "hdd")


def test_disks_of_resolves_partitions_and_slaves(tmp_path: Path) -> None:
    io = _tree(tmp_path)
    assert storage.disks_of(io, f"{NVME}/nvme0n1p1") == ["nvme0n1"]
    assert storage.disks_of(io, "/sys/devices/virtual/block/dm-0") == ["sda", "sdb"]
    assert storage.disks_of(io, SDA) == ["sda"]
    assert storage.disks_of(io, SDA, depth=8) == ["sda"]
    assert storage.disks_of(io, SDA, depth=9) == []


def test_a_slave_whose_link_dangles_is_named_as_it_is(tmp_path: Path) -> None:
    md0 = "/sys/devices/virtual/block/md0"
    io = HostIO(build_tree(tmp_path, {f"{md0}/md/level": "raid0\n"},
                           {f"{md0}/slaves/{n}": f"../../../../gone/{n}" for n in ("nvme2n1", "nvme1n1")}))
    assert storage.disks_of(io, "/sys/devices/virtual/block/md0") == ["nvme1n1", "nvme2n1"]


@pytest.mark.parametrize("name,rot,kind", [
    ("nvme0n1", None, "nvme"), ("nvme0n1", "1", "nvme"), ("sda", "1", "hdd"), ("sda", "0", "ssd"),
    ("sda", None, "unknown"), ("sda", "2", "unknown"), ("vda", "", "unknown"),
])
def test_disk_kind(name: str, rot: object, kind: str) -> None:
    assert storage.disk_kind(name, rot) == kind  # type: ignore[arg-type]


@pytest.mark.parametrize("name,want", [
    ("nvme0c0n1", "nvme0n1"), ("nvme12c3n2", "nvme12n2"), ("nvme0n1", "nvme0n1"), ("nvme0c0n1p1", "nvme0c0n1p1"),
    ("sda", "sda"),
])
def test_canonical_nvme(name: str, want: str) -> None:
    assert storage._canonical_nvme(name) == want


@pytest.mark.parametrize("options,mib", [
    ("rw,size=65536k", 64), ("size=2g,mode=1777", 2048), ("size=2G", 2048), ("rw,size=1048576", 1),
    ("size=512m", 512), ("size=512M,nr_inodes=1", 512), ("nosize=5k", None), ("rw", None), ("size=10%", None),
    ("rw,size=3145727k", 3071), ("", None),
])
def test_tmpfs_size_option_in_mib(options: str, mib: object) -> None:
    assert storage._size_option(options) == mib


def test_mixed_media_take_the_slowest_kind(tmp_path: Path) -> None:
    base = "/sys/devices/virtual/block"
    files = {f"/sys/devices/d/{n}/queue/rotational": r for n, r in (("sdc", "0\n"), ("sdd", "1\n"))}
    files[f"{base}/md1/md/level"] = "raid1\n"
    files["/sys/devices/d/nvme3n1/queue/rotational"] = "0\n"
    links = {f"{base}/md1/slaves/{n}": f"../../../../d/{n}" for n in ("sdc", "nvme3n1")}
    links.update({f"/sys/class/block/{n}": f"../../devices/d/{n}" for n in ("sdc", "sdd", "nvme3n1")})
    links.update({f"{base}/md2/slaves/{n}": f"../../../../d/{n}" for n in ("sdd", "sdc")})
    files["/sys/devices/d/nvme5n1/queue/rotational"] = "0\n"
    links[f"{base}/md3/slaves/nvme5c5n1"] = "../../../../d/nvme5c5n1"
    files["/sys/devices/d/nvme5c5n1/queue/rotational"] = "0\n"
    links["/sys/class/block/nvme5n1"] = "../../devices/d/nvme5n1"
    links["/sys/dev/block/9:3"] = "../../devices/virtual/block/md3"
    links["/sys/dev/block/9:1"] = "../../devices/virtual/block/md1"
    links["/sys/dev/block/9:2"] = "../../devices/virtual/block/md2"
    io = HostIO(build_tree(tmp_path, files, links))
    assert storage.classify_block(io, "9:1", "/dev/md1") == ("nvme3n1,sdc", "ssd")
    assert storage.classify_block(io, "9:2", "/dev/md2") == ("sdc,sdd", "hdd")
    assert storage.classify_block(io, "9:3", "/dev/md3") == ("nvme5n1", "nvme")  # a multipath path is its namespace


def test_memory_in_mib_from_meminfo(tmp_path: Path) -> None:
    io = _tree(tmp_path)
    assert storage.memory(io, 77) == Memory(total_mb=64000, available_mb=32000, swap_total_mb=2048,
                                            hugepages_total=16, hugepage_size_kb=2048, shm_mb=77)
    empty = HostIO(build_tree(tmp_path / "e", {"/proc/meminfo": "MemTotal: 2047 kB\n"}))
    assert storage.memory(empty, None) == Memory(total_mb=1)
    gone = HostIO(build_tree(tmp_path / "g", {"/x": ""}))
    assert storage.memory(gone, None) == Memory()
    assert gone.missing == ["memory: /proc/meminfo not found"]


def test_read_mounts_falls_back_to_proc_mounts_then_notes(tmp_path: Path) -> None:
    mounts = "/dev/sda1 /mnt/my\\040disk ext4 rw,noatime 0 0\nshort line\n"
    io = HostIO(build_tree(tmp_path / "m", {"/proc/mounts": mounts}))
    assert read_mounts(io) == [MountEntry(mount="/mnt/my disk", fstype="ext4", source="/dev/sda1",
                                          options="rw,noatime")]
    assert io.missing == []
    none = HostIO(build_tree(tmp_path / "n", {"/x": ""}))
    assert read_mounts(none) == []
    assert none.missing == ["mounts: no proc/self/mountinfo or proc/mounts"]


def test_parse_mountinfo_fields() -> None:
    got = parse_mountinfo("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:3 - ext3 /dev/root rw,errors=continue\n"
                          "37 35 98:1 / /x rw - ext4 /dev/a\\011b ro\n"
                          "38 35 98:2 / /y rw - ext4\n"
                          "39 35 98:3 / /z rw\n")
    assert got == [
        MountEntry(mount="/mnt2", fstype="ext3", source="/dev/root", root="/mnt1", devno="98:0",
                   options="rw,noatime,rw,errors=continue"),
        MountEntry(mount="/x", fstype="ext4", source="/dev/a\tb", root="/", devno="98:1", options="rw,ro"),
    ]
    assert parse_mountinfo(None) == [] and parse_mounts(None) == []


@pytest.mark.parametrize("text,want", [
    ("a\\040b", "a b"), ("\\134", "\\"), ("a\\04", "a\\04"), ("x\\999", "x\\999"), ("plain", "plain"),
    ("\\011\\012", "\t\n"), ("a\\", "a\\"),
])
def test_unescape(text: str, want: str) -> None:
    assert unescape(text) == want


def test_data_path_problem_names_devices_fifos_and_kernel_filesystems(tmp_path: Path) -> None:
    assert storage.data_path_problem("/dev/null") == "is a character device, not a file or directory of data"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert storage.data_path_problem(str(fifo)) == "is a FIFO, not a file or directory of data"
    assert storage.data_path_problem(str(tmp_path / "absent")) is None
    assert storage.data_path_problem("bad\0path") is None
    data = tmp_path / "data.bin"
    data.write_text("x")
    st = os.stat(data)
    devno = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    for fstype, want in (("sysfs", f"is on sysfs ({tmp_path}), a kernel filesystem, not storage"),
                         ("ext4", None), ("tmpfs", None)):
        root = build_tree(tmp_path / f"root-{fstype}", {
            "/proc/self/mountinfo": f"1 0 0:1 / /other rw - proc proc rw\n"
                                    f"2 1 {devno} / {tmp_path} rw - {fstype} x rw\n"})
        assert storage.data_path_problem(str(data), HostIO(root)) == want, fstype


def test_a_disk_under_two_slaves_is_named_once(tmp_path: Path) -> None:
    """md0 over two partitions of one disk: the disk once (a mirror over sda1 and sda2 is one spindle)."""
    sda = "/sys/devices/d/block/sda"
    files = {f"{sda}/queue/rotational": "1\n", f"{sda}/sda1/partition": "1\n", f"{sda}/sda2/partition": "2\n",
             "/sys/devices/virtual/block/md0/md/level": "raid1\n"}
    links = {"/sys/devices/virtual/block/md0/slaves/sda1": "../../../../d/block/sda/sda1",
             "/sys/devices/virtual/block/md0/slaves/sda2": "../../../../d/block/sda/sda2"}
    io = HostIO(build_tree(tmp_path / "md", files, links))
    assert storage.disks_of(io, "/sys/devices/virtual/block/md0") == ["sda"]
