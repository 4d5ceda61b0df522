"""Pin for mutation round 5's survivor in hosttune/detect/hostio.py (issue 21): `HostIO.realpath` under a captured
root (the no-follow walk) closes the directory descriptor it walked with. A detection resolves a link per PCI device,
network interface and block device; one descriptor left open per call runs a big host out of descriptors. This
process's own descriptors are counted in the real /proc/self/fd."""

import os
from pathlib import Path
from typing import Set

from hosttune.detect.hostio import HostIO


def open_fds() -> Set[int]:
    return {int(n) for n in os.listdir("/proc/self/fd")}


def tree(tmp_path: Path) -> Path:
    dev = tmp_path / "sys/devices/pci0000:00/0000:00:03.0/net/eth0"
    dev.mkdir(parents=True)
    (dev / "address").write_text("52:54:00:12:34:56\n")
    net = tmp_path / "sys/class/net"
    net.mkdir(parents=True)
    (net / "eth0").symlink_to("../../devices/pci0000:00/0000:00:03.0/net/eth0")
    (net / "gone").symlink_to("../../devices/virtual/net/gone")  # dangles
    return tmp_path


def test_realpath_under_a_root_resolves_inside_it_and_leaves_no_descriptor_open(tmp_path: Path) -> None:
    io = HostIO(tree(tmp_path))
    assert not io.live
    before = open_fds()
    for _ in range(64):
        assert io.realpath("/sys/class/net/eth0") == "/sys/devices/pci0000:00/0000:00:03.0/net/eth0"
        assert io.realpath("sys/class/net/eth0/address") == "/sys/devices/pci0000:00/0000:00:03.0/net/eth0/address"
        assert io.realpath("/sys/class/net/gone") is None
        assert io.realpath("/sys") == "/sys"
    leaked = open_fds() - before
    assert not leaked, {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in leaked
                        if os.path.lexists(f"/proc/self/fd/{fd}")}
