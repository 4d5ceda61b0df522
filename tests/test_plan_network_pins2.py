"""Pins (issue 21, second mutation round) for hosttune/plan/network.py and hosttune/detect/netroute.py: the node count
of a ranged --nnodes, the resolver's first address, a host name resolving to loopback and a routed address, a plan
for this host (root /), and the interface kinds sysfs gives (a container bridge by name, a bridge whose only port is
a tap). Pure, on a fake route table and a sysfs tree under tmp_path."""

from pathlib import Path
from typing import Dict, List, Optional

from test_plan_network import FakeRoutes

from hosttune.detect.netroute import LiveRoutes
from hosttune.plan import network
from hosttune.plan.network import IFNAME_VARS, LOCAL_ADDR, Endpoint, decide


class Routes(FakeRoutes):
    """test_plan_network's route table (eth0 10.0.0.2, the way to 10.0.0.0/24; docker0 172.17.0.1); `names` maps
    host names, this host's "box" included, to their addresses."""

    def __init__(self, names: Dict[str, List[str]]) -> None:
        super().__init__(named=names.get("box", ["127.0.1.1"]))
        self.names = names


def test_a_ranged_node_count_is_its_most_nodes() -> None:
    assert network.nodes_of("1:4") == 4 and network.nodes_of("2") == 2
    assert network.nodes_of(None) is None and network.nodes_of("x") is None


def test_the_resolvers_first_address_is_the_one_routed() -> None:
    """gloo and torchrun connect to the first address a name resolves to: that one picks the interface."""
    first_eth = decide(Endpoint("node0", "MASTER_ADDR", 2), Routes({"node0": ["10.0.0.1", "172.17.0.5"],
                                                                     "box": ["10.0.0.2"]}))
    assert first_eth.env == {var: "eth0" for var in IFNAME_VARS}
    first_bridge = decide(Endpoint("node0", "MASTER_ADDR", 2), Routes({"node0": ["172.17.0.5", "10.0.0.1"],
                                                                        "box": ["10.0.0.2"]}))
    assert first_bridge.env == {} and "docker0" in first_bridge.warnings[0]


def test_a_host_name_with_a_routed_address_besides_loopback_needs_no_local_addr() -> None:
    """Only a name that resolves to loopback alone is handed out wrongly; with a routed address too it is fine."""
    ep = Endpoint("node0", "torchrun --rdzv-endpoint", 2, torchrun=True)
    both = decide(ep, Routes({"node0": ["10.0.0.1"], "box": ["10.0.0.2", "127.0.1.1"]}))
    assert LOCAL_ADDR not in both.env and not both.warnings
    only = decide(ep, Routes({"node0": ["10.0.0.1"], "box": ["127.0.1.1"]}))
    assert only.env[LOCAL_ADDR] == "10.0.0.2"


def test_a_plan_for_this_host_asks_its_routes() -> None:
    """root "/" is this host (not a capture): its kernel is asked (the loopback endpoint needs no network)."""
    here = network.live_decide(Endpoint("127.0.0.1", "MASTER_ADDR", 1), "/")
    assert here.env == {} and not any("captured host" in r for r in here.reasons)
    assert any("is loopback: one node" in r for r in here.reasons)
    assert "captured host" in network.live_decide(Endpoint("127.0.0.1", "MASTER_ADDR", 1), "/a/capture").reasons[0]


def _netdev(root: Path, name: str, *, bridge_ports: Optional[List[str]] = None, tun: bool = False) -> None:
    base = root / "sys" / "class" / "net" / name
    base.mkdir(parents=True)
    (base / "flags").write_text("0x1003\n")  # IFF_UP | IFF_BROADCAST | IFF_MULTICAST: not loopback
    if tun:
        (base / "tun_flags").write_text("0x1002\n")
    if bridge_ports is not None:
        (base / "bridge").mkdir()
        (base / "brif").mkdir()
        for port in bridge_ports:
            (base / "brif" / port).mkdir()


def test_container_bridges_are_known_by_name_and_by_their_ports(tmp_path: Path) -> None:
    _netdev(tmp_path, "docker0")  # no sysfs bridge directory read here: the name says it
    _netdev(tmp_path, "br-5f2c1a")
    _netdev(tmp_path, "vpn0", tun=True)  # a tun/tap device not named tap*
    _netdev(tmp_path, "lab0", bridge_ports=["vpn0"])  # a bridge of guests' taps only
    _netdev(tmp_path, "eno1")
    _netdev(tmp_path, "uplink0", bridge_ports=["eno1", "vpn0"])  # a bridge with the host's NIC in it
    routes = LiveRoutes(tmp_path)
    assert routes.kind("docker0") == "container-bridge" and routes.kind("br-5f2c1a") == "container-bridge"
    assert routes.kind("lab0") == "container-bridge"
    assert routes.kind("uplink0") == "bridge" and routes.kind("eno1") == "other"
