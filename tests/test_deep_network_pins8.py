"""Pins for hosttune.doctor.deep.network (issue 21, practice round HDOC8): NUMA node 0 is a node (only -1 means none),
read over a fixture sysfs tree; one peer's whole path and finding."""

from pathlib import Path
from typing import Optional

import pytest
from test_doctor_network import ROUTES, ib, netdev

from hosttune.detect.hostio import HostIO
from hosttune.doctor.deep.network import IbPort, NetPath, ib_ports, network_path, nodes_finding, path_finding
from hosttune.doctor.model import Finding


def test_numa_node_zero_is_kept_and_minus_one_is_none(tmp_path: Path) -> None:
    netdev(tmp_path, "ib0", mtu="4092\n", speed="200000\n", numa="0\n")
    ib(tmp_path, "mlx5_0", "1", "4: ACTIVE\n", "200 Gb/sec (4X HDR)\n", "InfiniBand\n", net="ib0", numa="0\n")
    ib(tmp_path, "mlx5_0", "2", "1: DOWN\n", "\n", "InfiniBand\n", net="ib0", numa="0\n")
    ib(tmp_path, "mlx5_1", "1", "4: ACTIVE\n", "100 Gb/sec (4X EDR)\n", "Ethernet\n", numa="-1\n")
    io = HostIO(tmp_path)
    p1 = IbPort("mlx5_0", "1", "ACTIVE", "200 Gb/sec (4X HDR)", "InfiniBand", ("ib0",), 0)
    p2 = IbPort("mlx5_0", "2", "DOWN", "", "InfiniBand", ("ib0",), 0)
    assert ib_ports(io) == [p1, p2, IbPort("mlx5_1", "1", "ACTIVE", "100 Gb/sec (4X EDR)", "Ethernet", (), None)]
    path = network_path("node-b", ROUTES, io, ib_ports(io))
    assert path == NetPath("node-b", "10.1.0.2", "10.1.0.1", "ib0", "other", operstate="up", carrier=None, mtu=4092,
                           speed_mbps=200000, numa_node=0, ports=(p1, p2))
    head = "node-b (10.1.0.2) via ib0 (other, from 10.1.0.1): MTU 4092, 200 Gb/s, NUMA node 0"
    ports = "mlx5_0/1 InfiniBand ACTIVE 200 Gb/sec (4X HDR), mlx5_0/2 InfiniBand DOWN rate ?; IB port mlx5_0/2 DOWN"
    fix = "check the cable and the subnet manager (ibstat; an IB port stays INIT without opensm)"
    expected = "link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE"
    assert path_finding(path, [0, 1]) == Finding(status="fail", actual=f"{head} (GPUs' node), {ports}",
                                                 expected=expected, fix=fix)
    eth = network_path("192.0.2.9", ROUTES, io)
    assert eth == NetPath("192.0.2.9", "192.0.2.9", "192.0.2.1", "eth0", "other")
    assert nodes_finding([path, eth], [1, 1]) == Finding(
        status="fail", actual=f"{head} (GPUs on node 1), {ports} | 192.0.2.9 via eth0 (other, from 192.0.2.1): "
        "MTU ?, speed not reported; MTU unreadable", expected=expected, fix=f"{fix}\nsee the values above")


@pytest.mark.parametrize("state,carrier,down", [
    ("down", None, True), ("lowerlayerdown", None, True), ("notpresent", None, True), ("dormant", None, False),
    ("up", None, False), ("notpresent", 1, False), ("down", 0, True),
])
def test_link_down_states_whole(state: str, carrier: Optional[int], down: bool) -> None:
    """operstate down, lowerlayerdown and notpresent are down unless the carrier already says up."""
    path = NetPath("192.0.2.9", "192.0.2.9", "192.0.2.1", "eth0", "other", operstate=state, carrier=carrier,
                   mtu=9000, speed_mbps=100000)
    head = "192.0.2.9 via eth0 (other, from 192.0.2.1): MTU 9000, 100 Gb/s"
    want = Finding(status="fail", actual=f"{head}; eth0 is {state}",
                   expected="link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE",
                   fix="bring the link up: ip link set eth0 up (and check the cable)") if down else \
        Finding(status="pass", actual=head)
    assert path_finding(path) == want
