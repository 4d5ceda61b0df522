"""Pins for hosttune/plan/network.py (issue 21, round 6): every reason line `decide` gives, word for word (they are
what a user reads in `exec --dry-run` when a multi-node job would hang), which variables each case sets, and the
small parsers (endpoint forms, node counts, MASTER_ADDR). On a fake host: the routes are an input of the pure rule."""

from typing import Dict, List, Optional

import pytest

from hosttune.plan import network
from hosttune.plan.network import Endpoint, NetPlan, decide


class Routes:
    """eth0 10.0.0.2 (routes 10.0.0.0/24), docker0 172.17.0.1 (a bridge), lo; the host name `box` resolves to
    `named`."""

    def __init__(self, named: Optional[List[str]] = None, ifs: Optional[Dict[str, List[str]]] = None,
                 kinds: Optional[Dict[str, str]] = None, source: Optional[Dict[str, Optional[str]]] = None) -> None:
        self.named = ["10.0.0.2"] if named is None else named
        self.ifs = ifs if ifs is not None else {"lo": ["127.0.0.1"], "eth0": ["10.0.0.2"],
                                                 "docker0": ["172.17.0.1"]}
        self.kinds = {"lo": "loopback", "eth0": "other", "docker0": "container-bridge", **(kinds or {})}
        self.src = source or {}
        self.names = {"node0": ["10.0.0.1", "10.0.0.9"], "localhost": ["127.0.0.1"], "me": ["10.0.0.2"]}

    def hostname(self) -> str:
        return "box"

    def resolve(self, host: str) -> List[str]:
        if host == "box":
            return self.named
        return self.names.get(host, [host] if host[:1].isdigit() or ":" in host else [])

    def source(self, address: str) -> Optional[str]:
        if address in self.src:
            return self.src[address]
        if address.startswith("127."):
            return "127.0.0.1"
        if any(address in a for a in self.ifs.values()):
            return address
        if address.startswith("10.0.0."):
            return "10.0.0.2"
        if address.startswith("172.17."):
            return "172.17.0.1"
        return None

    def interfaces(self) -> Dict[str, List[str]]:
        return self.ifs

    def kind(self, ifname: str) -> str:
        return self.kinds[ifname]


ETH0 = {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "eth0"}
W = "network: WARNING"


def test_the_constants() -> None:
    assert network.IFNAME_VARS == ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
    assert network.LOCAL_ADDR == "PET_LOCAL_ADDR" and network.RDZV_CONF == "PET_RDZV_CONF"
    assert network.WARNING == W


def test_no_endpoint_no_plan() -> None:
    assert decide(None, Routes()) == NetPlan({}, ())
    assert network.live_decide(None, "/") == NetPlan({}, ())
    assert network.live_decide(None, "/capture") == NetPlan({}, ())


def test_the_routed_interface_is_named_with_one_reason() -> None:
    got = decide(Endpoint("node0", "MASTER_ADDR", 2), Routes())
    assert dict(got.env) == ETH0
    assert got.reasons == ("network: eth0 (address 10.0.0.2) is the kernel's route to MASTER_ADDR node0 (10.0.0.1): "
                           "GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME=eth0",)
    assert got.warnings == ()


def test_an_address_endpoint_is_not_shown_twice() -> None:
    got = decide(Endpoint("10.0.0.7", "torchrun --master-addr", None, torchrun=True), Routes())
    assert got.reasons == ("network: eth0 (address 10.0.0.2) is the kernel's route to torchrun --master-addr "
                           "10.0.0.7: GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME=eth0",)


def test_unresolvable_endpoint() -> None:
    got = decide(Endpoint("nosuch", "MASTER_ADDR", 2), Routes())
    assert got == NetPlan({}, (f"{W}: MASTER_ADDR nosuch does not resolve on this host; the job cannot reach it",))
    assert got.warnings == got.reasons


def test_loopback_endpoint_one_node_and_many() -> None:
    for nodes in (None, 1):
        got = decide(Endpoint("localhost", "torchrun --master-addr", nodes, torchrun=True), Routes())
        assert got == NetPlan({}, ("network: torchrun --master-addr localhost (127.0.0.1) is loopback: one node, no "
                                   "interface named",))
        assert got.warnings == ()
    got = decide(Endpoint("::1", "MASTER_ADDR", 3), Routes())
    assert got == NetPlan({}, (f"{W}: MASTER_ADDR ::1 is this host's loopback, but the job spans 3 nodes: the others "
                               "cannot reach it; give an address they reach",))


def test_no_route_or_a_source_no_interface_holds() -> None:
    got = decide(Endpoint("192.168.50.1", "MASTER_ADDR", 2), Routes())
    assert got == NetPlan({}, (f"{W}: no route from this host to MASTER_ADDR 192.168.50.1; no interface named",))
    odd = decide(Endpoint("node0", "MASTER_ADDR", 2), Routes(source={"10.0.0.1": "10.9.9.9"}))
    assert odd == NetPlan({}, (f"{W}: no route from this host to MASTER_ADDR node0 (10.0.0.1); no interface named",))


def test_bridge_and_loopback_routes_are_warnings_naming_the_interface() -> None:
    got = decide(Endpoint("172.17.0.5", "MASTER_ADDR", 2), Routes())
    assert got == NetPlan({}, (f"{W}: MASTER_ADDR 172.17.0.5 is reached through docker0 (a container bridge, which "
                               "does not leave this host); no interface named: set GLOO_SOCKET_IFNAME/"
                               "NCCL_SOCKET_IFNAME to the interface the other nodes reach",))
    lo = decide(Endpoint("node0", "MASTER_ADDR", 2), Routes(source={"10.0.0.1": "127.0.0.1"}))
    assert lo.reasons == (f"{W}: MASTER_ADDR node0 (10.0.0.1) is reached through lo (loopback); no interface named: "
                          "set GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME to the interface the other nodes reach",)
    assert lo.env == {}


def test_the_first_interface_by_name_holding_the_source_is_named() -> None:
    ifs = {"lo": ["127.0.0.1"], "eth1": ["10.0.0.2"], "bond0": ["10.0.0.2"], "eth0": []}
    got = decide(Endpoint("node0", "MASTER_ADDR", 2), Routes(ifs=ifs, kinds={"eth1": "other", "bond0": "other"}))
    assert dict(got.env) == {"GLOO_SOCKET_IFNAME": "bond0", "NCCL_SOCKET_IFNAME": "bond0"}


def test_host_name_on_loopback_in_a_torchrun_job_over_nodes_sets_local_addr() -> None:
    got = decide(Endpoint("node0", "torchrun --rdzv-endpoint", 2, torchrun=True), Routes(named=["127.0.1.1"]))
    assert dict(got.env) == {**ETH0, "PET_LOCAL_ADDR": "10.0.0.2"}
    assert got.reasons[1] == ("network: this host's name 'box' resolves to 127.0.1.1 (loopback), which torchrun would "
                              "give the other nodes as this node's address: PET_LOCAL_ADDR=10.0.0.2 (torchrun "
                              "--local-addr)")
    assert len(got.reasons) == 2 and got.warnings == ()


def test_host_name_on_loopback_elsewhere_is_a_warning_or_nothing() -> None:
    other = decide(Endpoint("node0", "MASTER_ADDR", 3), Routes(named=["127.0.1.1", "::1"]))
    assert dict(other.env) == ETH0
    assert other.reasons[1:] == (f"{W}: this host's name 'box' resolves to 127.0.1.1 (loopback) on a job over 3 "
                                 "nodes: a launcher that advertises it hangs; fix /etc/hosts",)
    given = decide(Endpoint("node0", "torchrun --rdzv-endpoint", 2, torchrun=True, local_addr=True),
                   Routes(named=["127.0.1.1"]))
    assert dict(given.env) == ETH0 and len(given.reasons) == 1
    for nodes in (None, 1):
        one = decide(Endpoint("node0", "torchrun --rdzv-endpoint", nodes, torchrun=True), Routes(named=["127.0.1.1"]))
        assert dict(one.env) == ETH0 and len(one.reasons) == 1
    mixed = decide(Endpoint("node0", "MASTER_ADDR", 2), Routes(named=["127.0.1.1", "10.0.0.2"]))
    assert len(mixed.reasons) == 1
    unnamed = decide(Endpoint("node0", "MASTER_ADDR", 2), Routes(named=[]))
    assert len(unnamed.reasons) == 1 and dict(unnamed.env) == ETH0


WHY = ("torchrun --rdzv-endpoint 10.0.0.2 is this host's own address on eth0, which torch's store-host check misses "
       "(it knows only the addresses of the host name)")


def test_store_host_on_a_second_address() -> None:
    own = Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True)
    got = decide(own, Routes(named=["192.168.1.5"]))
    assert dict(got.env) == {**ETH0, "PET_RDZV_CONF": "is_host=1"}
    assert got.reasons[1:] == (f"network: {WHY}: PET_RDZV_CONF=is_host=1 (torchrun --rdzv-conf), so this node hosts "
                               "the store",)
    theirs = decide(Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True,
                             rdzv_conf="timeout=9"), Routes(named=["192.168.1.5"]))
    assert dict(theirs.env) == ETH0
    assert theirs.reasons[1:] == (f"{W}: {WHY}: add is_host=1 to your --rdzv-conf on this node, or no node hosts the "
                                  "store",)
    said = decide(Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True,
                           rdzv_conf="is_host=true,timeout=9"), Routes(named=["192.168.1.5"]))
    assert dict(said.env) == ETH0 and said.reasons[1:] == (f"network: {WHY}; your --rdzv-conf says is_host",)
    later = decide(Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True,
                            rdzv_conf="timeout=9,is_host=1"), Routes(named=["192.168.1.5"]))
    assert later.reasons[1:] == (f"network: {WHY}; your --rdzv-conf says is_host",)


def test_store_host_needs_c10d_and_this_hosts_address_unnamed() -> None:
    static = Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 2, torchrun=True)
    assert len(decide(static, Routes(named=["192.168.1.5"])).reasons) == 1
    named = Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True)
    assert len(decide(named, Routes(named=["192.168.1.5", "10.0.0.2"])).reasons) == 1
    elsewhere = Endpoint("10.0.0.1", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True)
    got = decide(elsewhere, Routes(named=["192.168.1.5"]))
    assert "PET_RDZV_CONF" not in got.env and len(got.reasons) == 1
    one = Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 1, torchrun=True, c10d=True)
    assert dict(decide(one, Routes(named=["192.168.1.5"])).env)["PET_RDZV_CONF"] == "is_host=1"


def test_store_host_and_name_on_loopback_together() -> None:
    own = Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True)
    got = decide(own, Routes(named=["127.0.1.1"]))
    assert dict(got.env) == {**ETH0, "PET_RDZV_CONF": "is_host=1", "PET_LOCAL_ADDR": "10.0.0.2"}
    assert [r.split(":")[0] for r in got.reasons] == ["network"] * 3
    assert "PET_RDZV_CONF=is_host=1" in got.reasons[1] and "PET_LOCAL_ADDR=10.0.0.2" in got.reasons[2]


def test_multi_node_and_warnings() -> None:
    assert not Endpoint("h", "s").multi_node and not Endpoint("h", "s", 1).multi_node
    assert Endpoint("h", "s", 2).multi_node
    plan = NetPlan({}, ("network: a", f"{W}: b", "x network: WARNING", f"{W}: c"))
    assert plan.warnings == (f"{W}: b", f"{W}: c")


@pytest.mark.parametrize("raw,host", [("[::1]", "::1"), ("[fd00::1]:29400", "fd00::1"), ("n0:", "n0"),
                                      ("a:b:c", "a:b:c"), ("\tn0:1\n", "n0"), ("n0", "n0")])
def test_host_of(raw: str, host: str) -> None:
    assert network.host_of(raw) == host


@pytest.mark.parametrize("raw,n", [(None, None), ("", None), ("2", 2), ("1:4", 4), ("4:2", 4), ("x", None),
                                   ("3:", 3), (":", None), (" 5 ", 5)])
def test_nodes_of(raw: Optional[str], n: Optional[int]) -> None:
    assert network.nodes_of(raw) == n


def test_from_environ() -> None:
    assert network.from_environ({"MASTER_ADDR": " n0:29500 ", "SLURM_NNODES": "3"}) == Endpoint("n0", "MASTER_ADDR", 3)
    both = {"MASTER_ADDR": "n0", "SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "5"}
    assert network.from_environ(both) == Endpoint("n0", "MASTER_ADDR", 2)
    assert network.from_environ({"MASTER_ADDR": "n0"}) == Endpoint("n0", "MASTER_ADDR", None)
    assert network.from_environ({"MASTER_ADDR": "  "}) is None
    ep = network.from_environ({"MASTER_ADDR": "[fd00::1]:1"})
    assert ep is not None and ep.host == "fd00::1" and not ep.torchrun and not ep.c10d and ep.rdzv_conf == ""


def test_a_captured_root_names_nothing_and_says_why() -> None:
    got = network.live_decide(Endpoint("10.0.0.1", "MASTER_ADDR", 2), "/some/capture")
    assert got == NetPlan({}, ("network: MASTER_ADDR 10.0.0.1: no interface named for a captured host (its routes are "
                               "not in the capture)",))
