"""The network path probe (issue 21): interface kinds from sysfs (the loopback flag bit, container bridges by name,
bridges by their ports: veth/tap/vnet/vif and tun devices are guests, anything else an uplink), and the kernel's
answers for this host's own loopback (hosttune.detect.netroute)."""

from pathlib import Path

import pytest
from conftest import build_tree

from hosttune.detect.netroute import CONTAINER_BRIDGE_PREFIXES, LiveRoutes


def _routes(tmp_path: Path) -> LiveRoutes:
    n = "/sys/class/net"
    files = {f"{n}/lo0/flags": "0x9\n", f"{n}/eth0/flags": "0x1003\n", f"{n}/bad/flags": "zz\n",
             f"{n}/lo/flags": "0x1\n", f"{n}/br0/bridge/x": "", f"{n}/br0/brif/veth1": "",
             f"{n}/br0/brif/tap0": "", f"{n}/br1/bridge/x": "", f"{n}/br1/brif/vnet3": "",
             f"{n}/br1/brif/eno1": "", f"{n}/br2/bridge/x": "", f"{n}/br2/brif/vpn0": "",
             f"{n}/vpn0/tun_flags": "0x1002\n", f"{n}/br3/bridge/x": "", f"{n}/br4/bridge/x": "",
             f"{n}/br4/brif/vif1.0": ""}
    return LiveRoutes(build_tree(tmp_path / "root", files))


@pytest.mark.parametrize("ifname,kind", [
    ("lo0", "loopback"), ("lo", "loopback"), ("eth0", "other"), ("bad", "other"), ("br0", "container-bridge"),
    ("br1", "bridge"), ("br2", "container-bridge"), ("br3", "container-bridge"), ("br4", "container-bridge"),
    ("docker0", "container-bridge"), ("br-1a2b", "container-bridge"), ("virbr0", "container-bridge"),
    ("cni0", "container-bridge"), ("podman1", "container-bridge"), ("lxcbr0", "container-bridge"),
    ("lxdbr0", "container-bridge"), ("cbr0", "container-bridge"), ("kube-bridge", "container-bridge"),
    ("absent0", "other"),
])
def test_interface_kinds(tmp_path: Path, ifname: str, kind: str) -> None:
    assert _routes(tmp_path).kind(ifname) == kind


def test_the_bridge_prefixes() -> None:
    assert CONTAINER_BRIDGE_PREFIXES == ("docker", "br-", "virbr", "cni", "podman", "lxcbr", "lxdbr", "cbr",
                                         "kube-bridge")


def test_loopback_answers_on_this_host() -> None:
    routes = LiveRoutes()
    assert routes.source("127.0.0.1") == "127.0.0.1"
    assert "127.0.0.1" in routes.resolve("127.0.0.1") and routes.resolve("127.0.0.1") == ["127.0.0.1"]
    assert "127.0.0.1" in [a for addrs in routes.interfaces().values() for a in addrs]
    assert routes.hostname()
