"""doctor --deep --nodes, the network path: the reads over a fixture sysfs tree (HostIO under a tmp root) and a fake
route table, the decisions (pure), the check through the runner, and the option's bad input (one line, exit 2)."""

import dataclasses
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional

import pytest
from conftest import run_cli

from hosttune.detect.hostio import HostIO
from hosttune.doctor.deep import network
from hosttune.doctor.deep.network import IbPort, NetPath, ib_ports, network_path, nodes_finding, path_finding

if TYPE_CHECKING:
    from hosttune.doctor.deep.runner import JobResult


class FakeRoutes:
    def __init__(self, names: Dict[str, List[str]], ifaces: Dict[str, List[str]], src: Dict[str, str],
                 kinds: Optional[Dict[str, str]] = None, hostname: str = "node-a") -> None:
        self.names, self.ifaces, self.src, self.kinds, self.name = names, ifaces, src, kinds or {}, hostname

    def hostname(self) -> str:
        return self.name

    def resolve(self, host: str) -> List[str]:
        return self.names.get(host, [host] if host[0].isdigit() else [])

    def source(self, address: str) -> Optional[str]:
        return self.src.get(address)

    def interfaces(self) -> Dict[str, List[str]]:
        return self.ifaces

    def kind(self, ifname: str) -> str:
        return self.kinds.get(ifname, "other")


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def netdev(root: Path, name: str, mtu: str = "1500\n", speed: Optional[str] = "100000\n", state: str = "up\n",
           numa: Optional[str] = None) -> None:
    base = f"sys/class/net/{name}"
    write(root, f"{base}/mtu", mtu)
    write(root, f"{base}/operstate", state)
    if speed is not None:
        write(root, f"{base}/speed", speed)
    if numa is not None:
        write(root, f"{base}/device/numa_node", numa)


def ib(root: Path, dev: str, port: str, state: str, rate: str, layer: str, net: str = "", numa: str = "1\n") -> None:
    base = f"sys/class/infiniband/{dev}"
    write(root, f"{base}/ports/{port}/state", state)
    write(root, f"{base}/ports/{port}/rate", rate)
    write(root, f"{base}/ports/{port}/link_layer", layer)
    write(root, f"{base}/device/numa_node", numa)
    if net:
        (root / base / "device" / "net" / net).mkdir(parents=True, exist_ok=True)


ROUTES = FakeRoutes({"node-b": ["10.1.0.2"]}, {"lo": ["127.0.0.1"], "ib0": ["10.1.0.1"], "eth0": ["192.0.2.1"]},
                    {"10.1.0.2": "10.1.0.1", "192.0.2.9": "192.0.2.1"})


def test_ib_ports_are_read_from_sysfs_with_state_rate_layer_and_netdevs(tmp_path: Path) -> None:
    ib(tmp_path, "mlx5_0", "1", "4: ACTIVE\n", "200 Gb/sec (4X HDR)\n", "InfiniBand\n", net="ib0")
    ib(tmp_path, "mlx5_1", "1", "1: DOWN\n", "10 Gb/sec (4X SDR)\n", "Ethernet\n", numa="-1\n")
    ports = ib_ports(HostIO(tmp_path))
    assert ports == [IbPort("mlx5_0", "1", "ACTIVE", "200 Gb/sec (4X HDR)", "InfiniBand", ("ib0",), 1),
                     IbPort("mlx5_1", "1", "DOWN", "10 Gb/sec (4X SDR)", "Ethernet", (), None)]
    assert ports[1].label == "mlx5_1/1 RoCE DOWN 10 Gb/sec (4X SDR)"


def test_ipoib_path_names_interface_mtu_speed_port_and_gpu_locality(tmp_path: Path) -> None:
    netdev(tmp_path, "ib0", mtu="2044\n", speed="200000\n", numa="1\n")
    ib(tmp_path, "mlx5_0", "1", "4: ACTIVE\n", "200 Gb/sec (4X HDR)\n", "InfiniBand\n", net="ib0")
    io = HostIO(tmp_path)
    path = network_path("node-b", ROUTES, io, ib_ports(io))
    assert (path.address, path.source, path.ifname, path.mtu, path.speed_mbps, path.numa_node) == \
        ("10.1.0.2", "10.1.0.1", "ib0", 2044, 200000, 1)
    f = path_finding(path, gpu_nodes=[0, 1])
    assert f.status == "pass", f  # IPoIB's 2044 is its datagram MTU, not a tunnel
    assert "node-b (10.1.0.2) via ib0" in f.actual and "MTU 2044" in f.actual and "200 Gb/s" in f.actual
    assert "NUMA node 1 (GPUs' node)" in f.actual and "mlx5_0/1 InfiniBand ACTIVE 200 Gb/sec (4X HDR)" in f.actual
    assert "GPUs on node 0" in path_finding(path, gpu_nodes=[0]).actual


def test_a_down_ib_port_behind_the_route_fails(tmp_path: Path) -> None:
    netdev(tmp_path, "ib0", mtu="4092\n")
    ib(tmp_path, "mlx5_0", "1", "2: INIT\n", "200 Gb/sec (4X HDR)\n", "InfiniBand\n", net="ib0")
    io = HostIO(tmp_path)
    f = path_finding(network_path("node-b", ROUTES, io, ib_ports(io)))
    assert f.status == "fail" and "IB port mlx5_0/1 INIT" in f.actual and "subnet manager" in f.fix


@pytest.mark.parametrize("mtu,speed,status,words", [
    ("1500\n", "25000\n", "pass", "MTU 1500, 25 Gb/s"),
    ("9000\n", None, "pass", "MTU 9000, speed not reported"),  # veth/virtual links: no speed (EINVAL)
    ("9000\n", "-1\n", "pass", "speed not reported"),
    ("1450\n", "25000\n", "warn", "MTU 1450 is below 1500"),
    ("1000\n", "25000\n", "warn", "MTU 1000 is below 1500"),
    ("1500\n", "1000\n", "warn", "link 1 Gb/s, below 10 Gb/s"),
    ("garbage\n", "25000\n", "warn", "MTU unreadable"),
])
def test_ethernet_mtu_and_speed(tmp_path: Path, mtu: str, speed: Optional[str], status: str, words: str) -> None:
    netdev(tmp_path, "eth0", mtu=mtu, speed=speed)
    f = path_finding(network_path("192.0.2.9", ROUTES, HostIO(tmp_path)))
    assert f.status == status and words in f.actual, f


def test_a_link_that_is_down_fails(tmp_path: Path) -> None:
    netdev(tmp_path, "eth0", state="down\n")
    f = path_finding(network_path("192.0.2.9", ROUTES, HostIO(tmp_path)))
    assert f.status == "fail" and "eth0 is down" in f.actual and "ip link set eth0 up" in f.fix
    write(tmp_path, "sys/class/net/eth0/carrier", "0\n")
    assert path_finding(network_path("192.0.2.9", ROUTES, HostIO(tmp_path))).status == "fail"
    # the carrier is up and operstate not yet (link watch runs a moment later): not down
    write(tmp_path, "sys/class/net/eth0/carrier", "1\n")
    assert path_finding(network_path("192.0.2.9", ROUTES, HostIO(tmp_path))).status == "pass"


@pytest.mark.parametrize("kind", ["container-bridge", "loopback"])
def test_a_route_through_a_container_bridge_or_loopback_fails(tmp_path: Path, kind: str) -> None:
    routes = FakeRoutes({}, {"docker0": ["172.17.0.1"]}, {"172.17.0.5": "172.17.0.1"}, {"docker0": kind})
    netdev(tmp_path, "docker0")
    f = path_finding(network_path("172.17.0.5", routes, HostIO(tmp_path)))
    assert f.status == "fail" and "via docker0" in f.actual and "does not leave this host" in f.actual


def test_unresolved_loopback_unrouted_and_own_host(tmp_path: Path) -> None:
    routes = FakeRoutes({"node-c": ["127.0.1.1"], "node-a": ["127.0.1.1"]}, {"eth0": ["192.0.2.1"]}, {})
    io = HostIO(tmp_path)
    got = {p: path_finding(network_path(p, routes, io)) for p in ("nowhere", "node-c", "198.51.100.4", "node-a",
                                                                    "192.0.2.1")}
    assert got["nowhere"].status == "fail" and "does not resolve" in got["nowhere"].actual
    assert got["node-c"].status == "fail" and "loopback" in got["node-c"].actual and "/etc/hosts" in got["node-c"].fix
    assert got["198.51.100.4"].status == "fail" and "no route" in got["198.51.100.4"].actual
    # the same --nodes list on every node: this host's own name and addresses pass
    assert got["node-a"].status == "pass" and "this host" in got["node-a"].actual
    assert got["192.0.2.1"].status == "pass" and "this host" in got["192.0.2.1"].actual


def test_peers_over_interfaces_with_different_mtus_warn() -> None:
    a = NetPath("b", "10.0.0.2", "10.0.0.1", "eth0", "other", operstate="up", mtu=9000, speed_mbps=100000)
    c = dataclasses.replace(a, peer="c", address="10.2.0.2", ifname="eth1", mtu=1500)
    f = nodes_finding([a, c])
    assert f.status == "warn" and "MTU differs between the peers' interfaces (1500, 9000)" in f.actual
    assert nodes_finding([a, dataclasses.replace(c, mtu=9000)]).status == "pass"
    worst = nodes_finding([a, NetPath("gone")])
    assert worst.status == "fail" and "gone: does not resolve" in worst.actual and " | " in worst.actual


def test_the_check_runs_through_the_runner_on_this_host() -> None:
    """os.deep_network on the live host: this host's own address is a peer that passes; no --nodes is a skip."""
    from hosttune.detect import collect
    from hosttune.doctor import Context, run_checks
    from hosttune.doctor.deep import DEEP_CHECKS, DeepOptions, DeepRun

    check = [c for c in DEEP_CHECKS if c.id == "os.deep_network"]
    ctx = Context(facts=collect(Path("/"), probe_torch=False), env={})
    for nodes, status, words in ((("127.0.0.1",), "pass", "127.0.0.1: this host"), ((), "skip", "no --nodes")):
        ctx.deep = DeepRun(ctx, DeepOptions(nodes=nodes, progress=False))
        try:
            (r,) = run_checks(ctx, check).results
        finally:
            ctx.deep.close()
        assert r.status == status and words in r.actual, r


@pytest.mark.parametrize("args,words", [
    (["--nodes", "node-b"], "--nodes: needs --deep"),
    (["--deep", "--nodes", "a;touch x"], "is not a host name or an address"),
    (["--deep", "--nodes", "a,,b"], "'' is not a host name"),
    (["--deep", "--nodes", "-x"], "is not a host name"),
])
def test_bad_nodes_is_one_line_exit_2(args: List[str], words: str) -> None:
    res = run_cli(["doctor", *args])
    out = res.stdout + res.stderr
    assert res.returncode == 2 and words in out and "Traceback" not in out and not res.stdout, out


def test_nodes_are_split_and_deduplicated() -> None:
    from hosttune.commands.doctor import parse_nodes

    assert parse_nodes(("a,b", " b , [fd00::2]", "10.0.0.1")) == ("a", "b", "fd00::2", "10.0.0.1")


@pytest.mark.parametrize("paths,words", [
    ([NetPath("b", "10.0.0.2", "10.0.0.1", "eth0", "other")], "this host is not in --nodes"),
    ([NetPath("a", "10.0.0.1", "10.0.0.1", own=True)], "--nodes names only this host"),
    ([NetPath("a", "10.0.0.1", "10.0.0.1", own=True), NetPath("b", "10.0.0.2", "10.0.0.9")], "no usable route to b"),
    ([NetPath("a", "10.0.0.1", "10.0.0.1", own=True), NetPath("c", "172.17.0.2", "172.17.0.1", "docker0",
                                                              "container-bridge")], "no usable route to c"),
])
def test_the_cross_node_allreduce_skips_without_starting_anything(paths: List[NetPath], words: str) -> None:
    from hosttune.doctor import Context, run_checks
    from hosttune.doctor.deep import DEEP_CHECKS, DeepOptions, DeepRun
    from hosttune.facts import Facts

    check = [c for c in DEEP_CHECKS if c.id == "os.deep_nodes_allreduce"]
    ctx = Context(facts=Facts(), env={})
    ctx.deep = DeepRun(ctx, DeepOptions(nodes=tuple(p.peer for p in paths), progress=False))
    ctx.deep.paths = paths
    try:
        (r,) = run_checks(ctx, check).results
    finally:
        ctx.deep.close()
    assert r.status == "skip" and words in r.actual and not ctx.deep.jobs, r


def _allreduce_job(tags: List[Dict[str, object]], correct: bool = True) -> "JobResult":
    from hosttune.doctor.deep.runner import JobResult, parse_events

    res = {"event": "result", "what": "allreduce gloo", "backend": "gloo", "world": 2, "bytes": 16.0 * (1 << 20),
           "iters": 5, "seconds": 0.05, "correct": correct, "tags": tags}
    return JobResult(name="allreduce_nodes", events=parse_events(json.dumps(res) + "\n"), returncode=0)


def test_the_cross_node_allreduce_names_nodes_whose_mtus_differ() -> None:
    same = [{"node": "10.0.0.1", "ifname": "eth0", "mtu": 9000}, {"node": "10.0.0.2", "ifname": "eth1", "mtu": 9000}]
    f = network.nodes_allreduce_finding(_allreduce_job(same), 2)
    # 16 MiB in 50 ms: algbw 0.34 GB/s; busbw = algbw x 2(n-1)/n = algbw for n = 2
    assert f.status == "pass" and f.actual.startswith("2 ranks, 16 MiB: busbw 0.3 GB/s (algbw 0.3, 50.00 ms"), f
    differ = [same[0], {**same[1], "mtu": 1500}]
    f = network.nodes_allreduce_finding(_allreduce_job(differ), 2)
    assert f.status == "warn" and "MTU differs across the nodes (10.0.0.1 eth0 9000, 10.0.0.2 eth1 1500)" in f.actual
    assert network.nodes_allreduce_finding(_allreduce_job(differ, correct=False), 2).status == "fail"


def test_inside_a_slurm_allocation_its_nodes_are_the_default(tmp_path: Path) -> None:
    """Issue 26: `doctor --deep` inside a Slurm allocation of several nodes checks them without --nodes; Slurm's own
    scontrol expands the host list (a minimal slurm.conf is all `show hostnames` reads)."""
    if not shutil.which("scontrol"):
        pytest.skip("scontrol not installed (Debian's slurm-client)")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\nSlurmctldHost=localhost\nNodeName=nosuch[1-2] CPUs=1\n")
    env = {"SLURM_CONF": str(conf), "SLURM_JOB_NODELIST": "nosuch[1-2]", "SLURM_JOB_NUM_NODES": "2"}
    args = ["doctor", "--deep", "--only", "os", "--skip", "os.deep_nodes_allreduce", "--json"]
    res = run_cli(args, env=env)
    assert "--nodes from the Slurm allocation (SLURM_JOB_NODELIST): nosuch1,nosuch2" in res.stderr
    found = {f["id"]: f for f in json.loads(res.stdout)["findings"]}
    net = found["os.deep_network"]
    assert net["status"] != "skip" and "nosuch1" in net["actual"] and "nosuch2" in net["actual"], net
    one = run_cli(args, env=dict(env, SLURM_JOB_NUM_NODES="1"))  # one node: nothing to check across
    assert "Slurm allocation" not in one.stderr
    assert {f["id"]: f for f in json.loads(one.stdout)["findings"]}["os.deep_network"]["status"] == "skip"
    for nodelist in ("nosuch[1-2].invalid", "nosuch[1-"):  # scontrol: "Invalid hostlist" (exit 0), and "nosuch]"
        bad = run_cli(args, env=dict(env, SLURM_JOB_NODELIST=nodelist))
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and not bad.stdout, bad.stderr
