"""hosttune/plan/network.py: the interface that reaches the job's rendezvous/master address is named to gloo and
NCCL; loopback and container bridges never are; a host name on loopback in a multi-node torchrun job gets
PET_LOCAL_ADDR. The rule on a fake host, then for real inside two network namespaces joined by a veth pair."""

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from _nethelp import in_ns, two_nodes
from _profilehelp import small_facts
from conftest import checkout_env

from hosttune import plan, profile
from hosttune.plan import network
from hosttune.plan.network import IFNAME_VARS, LOCAL_ADDR, WARNING, Endpoint, decide


class FakeRoutes:
    """A host with eth0 (10.0.0.2/24, the way to 10.0.0.0/24), docker0 (172.17.0.1), and a name resolving to `named`."""

    def __init__(self, named: Optional[List[str]] = None, kinds: Optional[Dict[str, str]] = None) -> None:
        self.named = ["127.0.1.1"] if named is None else named
        self.kinds = {"lo": "loopback", "eth0": "other", "docker0": "container-bridge", **(kinds or {})}
        self.ifs = {"lo": ["127.0.0.1", "::1"], "eth0": ["10.0.0.2", "fd00::2"], "docker0": ["172.17.0.1"]}
        self.names = {"node0": ["10.0.0.1"], "localhost": ["127.0.0.1"], "me": ["10.0.0.2"]}

    def hostname(self) -> str:
        return "box"

    def resolve(self, host: str) -> List[str]:
        if host == "box":
            return self.named
        return self.names.get(host, [host] if host[0].isdigit() or ":" in host else [])

    def source(self, address: str) -> Optional[str]:
        if address.startswith("127."):
            return "127.0.0.1"
        if any(address in a for a in self.ifs.values()):
            return address  # an address of this host: the kernel sends from it
        if address.startswith("10.0.0."):
            return "10.0.0.2"
        if address.startswith("172.17."):
            return "172.17.0.1"
        return None

    def interfaces(self) -> Dict[str, List[str]]:
        return self.ifs

    def kind(self, ifname: str) -> str:
        return self.kinds[ifname]


def test_the_interface_the_kernel_routes_the_endpoint_through_is_named_to_gloo_and_nccl() -> None:
    got = decide(Endpoint("node0", "torchrun --rdzv-endpoint", 2, torchrun=True), FakeRoutes(named=["10.0.0.2"]))
    assert {k: got.env[k] for k in IFNAME_VARS} == {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "eth0"}
    assert LOCAL_ADDR not in got.env and not got.warnings
    assert any("eth0 (address 10.0.0.2)" in r and "node0 (10.0.0.1)" in r for r in got.reasons)


def test_this_hosts_own_address_names_the_interface_that_holds_it() -> None:
    got = decide(Endpoint("me", "MASTER_ADDR", 2), FakeRoutes(named=["10.0.0.2"]))
    assert got.env == {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "eth0"}


def test_loopback_endpoint_names_nothing_and_warns_only_when_the_job_spans_nodes() -> None:
    one = decide(Endpoint("localhost", "torchrun --master-addr", 1, torchrun=True), FakeRoutes())
    assert one.env == {} and not one.warnings
    two = decide(Endpoint("localhost", "torchrun --rdzv-endpoint", 2, torchrun=True), FakeRoutes())
    assert two.env == {} and len(two.warnings) == 1 and "spans 2 nodes" in two.warnings[0]


def test_a_container_bridge_or_loopback_route_is_never_named() -> None:
    bridge = decide(Endpoint("172.17.0.5", "MASTER_ADDR", 2), FakeRoutes())
    assert bridge.env == {} and "docker0" in bridge.warnings[0] and "container bridge" in bridge.warnings[0]
    routes = FakeRoutes()
    routes.ifs["lo"].append("10.0.0.1")  # an address of this host held by lo (anycast style): routed through lo
    on_lo = decide(Endpoint("node0", "MASTER_ADDR", 2), routes)
    assert on_lo.env == {} and "through lo (loopback)" in on_lo.warnings[0]


def test_unresolvable_or_unroutable_endpoint_is_a_warning_and_names_nothing() -> None:
    for host in ("nosuch", "192.168.50.1"):
        got = decide(Endpoint(host, "MASTER_ADDR", 2), FakeRoutes())
        assert got.env == {} and len(got.warnings) == 1 and host in got.warnings[0]


def test_host_name_on_loopback_gives_torchrun_the_routed_address_as_local_addr() -> None:
    ep = Endpoint("node0", "torchrun --rdzv-endpoint", 2, torchrun=True)
    got = decide(ep, FakeRoutes(named=["127.0.1.1"]))
    assert got.env[LOCAL_ADDR] == "10.0.0.2" and any("'box' resolves to 127.0.1.1" in r for r in got.reasons)
    given = decide(Endpoint("node0", "torchrun --rdzv-endpoint", 2, torchrun=True, local_addr=True), FakeRoutes())
    assert LOCAL_ADDR not in given.env  # the caller's --local-addr stands
    single = decide(Endpoint("node0", "torchrun --rdzv-endpoint", 1, torchrun=True), FakeRoutes())
    assert LOCAL_ADDR not in single.env  # one node: nobody else needs this node's address
    other = decide(Endpoint("node0", "MASTER_ADDR", 2), FakeRoutes())
    assert LOCAL_ADDR not in other.env and any(w.startswith(WARNING) and "'box'" in w for w in other.warnings)


@pytest.mark.parametrize("raw, host", [("n0:29400", "n0"), ("[fd00::1]:29400", "fd00::1"), ("fd00::1", "fd00::1"),
                                       ("10.0.0.1", "10.0.0.1"), (" n0 ", "n0")])
def test_host_of_takes_torchruns_endpoint_forms(raw: str, host: str) -> None:
    assert network.host_of(raw) == host


def test_master_addr_and_slurms_node_count_are_the_endpoint_without_a_command_line() -> None:
    ep = network.from_environ({"MASTER_ADDR": "n0", "SLURM_JOB_NUM_NODES": "4"})
    assert ep == Endpoint("n0", "MASTER_ADDR", 4)
    assert network.from_environ({}) is None


def test_a_captured_host_names_no_interface() -> None:
    got = network.live_decide(Endpoint("10.0.0.1", "MASTER_ADDR", 2), "/some/capture")
    assert got.env == {} and "captured host" in got.reasons[0]


def _plans_in(ns: str, cases: List[Tuple[str, Dict[str, str]]]) -> List[dict]:
    """plan.resolve run inside namespace `ns` for a 2-node torchrun job meeting at each case's host (no host: the
    job's endpoint is whatever the case's environ says, as for an srun task), one child for all the cases (each
    Python child costs most of a CPU-second on these 2-core machines: issue 21)."""
    code = ("import json, sys\nfrom _profilehelp import small_facts\nfrom hosttune import plan, profile\n"
            "from hosttune.plan.network import Endpoint\n"
            "out = []\n"
            "for host, environ in json.loads(sys.argv[1]):\n"
            "    ep = Endpoint(host, 'torchrun --rdzv-endpoint', 2, torchrun=True) if host else None\n"
            "    rp = plan.resolve(small_facts(), profile.load_text('base: throughput\\n'), 0, 1, "
            "environ=environ, endpoint=ep)\n"
            "    out.append({'env': rp.env, 'reasons': rp.reasons, 'kept': dict(rp.kept)})\n"
            "print(json.dumps(out))\n")
    tests = str(Path(__file__).parent)
    env = checkout_env()
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{tests}"
    out = subprocess.run(in_ns(ns, [sys.executable, "-c", code, json.dumps(cases)]), env=env, check=True,
                         capture_output=True, text=True, timeout=120)
    got = json.loads(out.stdout)
    assert len(got) == len(cases)
    return got


def _plan_in(ns: str, host: str, environ: Dict[str, str]) -> dict:
    (got,) = _plans_in(ns, [(host, environ)])
    return got


def test_inside_two_namespaces_the_veth_is_named_and_the_users_own_choice_kept() -> None:
    loopback_name = all(a.startswith("127.") or a == "::1"
                        for a in {i[4][0] for i in socket.getaddrinfo(socket.gethostname(), None)})
    with two_nodes() as nodes:
        theirs = None
        for ns, peer, mine, ifname in ((nodes.ns[0], nodes.addr[1], nodes.addr[0], nodes.ifname[0]),
                                       (nodes.ns[1], nodes.addr[0], nodes.addr[1], nodes.ifname[1])):
            # the other node's address, and this node's own (node 0 hosts the store); in node 0 also the user's own
            # GLOO_SOCKET_IFNAME, in the same child
            cases = [(peer, {}), (mine, {})] + ([(peer, {"GLOO_SOCKET_IFNAME": "eth7"})] if ns == nodes.ns[0] else [])
            plans = _plans_in(ns, cases)
            for got in plans[:2]:
                assert got["env"]["GLOO_SOCKET_IFNAME"] == ifname and got["env"]["NCCL_SOCKET_IFNAME"] == ifname
                assert (got["env"].get(LOCAL_ADDR) == mine) is loopback_name
            theirs = plans[2] if ns == nodes.ns[0] else theirs
        assert theirs is not None
        assert theirs["env"]["GLOO_SOCKET_IFNAME"] == "eth7" and theirs["env"]["NCCL_SOCKET_IFNAME"] == nodes.ifname[0]
        assert theirs["kept"] == {"GLOO_SOCKET_IFNAME": nodes.ifname[0]}  # said once on stderr by exec
        # in a namespace whose only other interface is a bridge with no uplink, that bridge is never named
        subprocess.run(in_ns(nodes.ns[0], ["ip", "link", "add", "htbr0", "type", "bridge"]), check=True, timeout=60)
        subprocess.run(in_ns(nodes.ns[0], ["ip", "addr", "add", "10.78.0.1/24", "dev", "htbr0"]), check=True,
                       timeout=60)
        subprocess.run(in_ns(nodes.ns[0], ["ip", "link", "set", "htbr0", "up"]), check=True, timeout=60)
        bridged = _plan_in(nodes.ns[0], "10.78.0.9", {})
        assert "GLOO_SOCKET_IFNAME" not in bridged["env"]
        assert any(r.startswith(WARNING) and "htbr0" in r for r in bridged["reasons"])


def test_single_node_plan_on_this_host_names_no_interface() -> None:
    prof = profile.load_text("base: throughput\n")
    rp = plan.resolve(small_facts(), prof, 0, 1, environ={"MASTER_ADDR": "127.0.0.1"})
    assert not set(IFNAME_VARS) & set(rp.env)


def test_a_c10d_endpoint_on_this_hosts_second_address_makes_this_node_the_store_host() -> None:
    own = Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True)
    got = decide(own, FakeRoutes(named=["192.168.1.5"]))  # the host name resolves to another NIC's address
    assert got.env[network.RDZV_CONF] == "is_host=1" and not got.warnings
    theirs = decide(Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True,
                             rdzv_conf="join_timeout=60"), FakeRoutes(named=["192.168.1.5"]))
    assert network.RDZV_CONF not in theirs.env and "add is_host=1" in theirs.warnings[0]
    said = decide(Endpoint("10.0.0.2", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True,
                           rdzv_conf="is_host=1"), FakeRoutes(named=["192.168.1.5"]))
    assert network.RDZV_CONF not in said.env and not said.warnings
    for other in (Endpoint("node0", "torchrun --rdzv-endpoint", 2, torchrun=True, c10d=True),  # another node's
                  Endpoint("10.0.0.2", "torchrun --master-addr", 2, torchrun=True)):  # static: node rank 0 hosts
        assert network.RDZV_CONF not in decide(other, FakeRoutes(named=["192.168.1.5"])).env
    found = decide(own, FakeRoutes(named=["10.0.0.2"]))  # torch finds it by the host name itself
    assert network.RDZV_CONF not in found.env


def test_an_srun_task_with_master_addr_gets_the_interface_too() -> None:
    with two_nodes() as nodes:
        env = {"MASTER_ADDR": nodes.addr[0], "SLURM_JOB_NUM_NODES": "2", "SLURM_NODEID": "1", "SLURM_LOCALID": "0"}
        got = _plan_in(nodes.ns[1], "", env)
        assert got["env"]["GLOO_SOCKET_IFNAME"] == nodes.ifname[1]
        assert any(f"MASTER_ADDR {nodes.addr[0]}" in r for r in got["reasons"])
        assert LOCAL_ADDR not in got["env"]  # not torchrun: nothing reads it
