"""doctor --deep --nodes: the network path from this host to each other node of a job, as the kernel routes it.

For each peer: the address it resolves to (the resolver's first, what gloo/torchrun connect to), the interface the
kernel sends from (detect/netroute.py's LiveRoutes: the same lookup as `ip route get`), that interface's kind
(loopback, container bridge, bridge, other), and from sysfs through HostIO: /sys/class/net/IF/{operstate,mtu,speed}
and IF/device/numa_node (GPU-NIC locality); on InfiniBand/RoCE hosts every port of /sys/class/infiniband/DEV/ports/N
with its state ("4: ACTIVE"), rate ("200 Gb/sec (4X HDR)") and link layer, and the netdevs of DEV's PCI function
(DEV/device/net/), which tie a port to the interface that reaches the peer (IPoIB, RoCE).

`network_path` reads (fakes and a fixture root in tests); `path_finding` and `nodes_finding` decide, purely.
"""

import ipaddress
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from hosttune.detect.hostio import HostIO
from hosttune.detect.netroute import Routes
from hosttune.doctor.deep.findings import allreduce_finding
from hosttune.doctor.deep.runner import JobResult
from hosttune.doctor.model import Finding

IB = "sys/class/infiniband"
MIN_MTU = 1280  # IPv6's minimum link MTU (RFC 8200); below it IPv6 does not run at all
ETH_MTU = 1500  # Ethernet's; less on a non-IB link is a tunnel or overlay (VXLAN 1450, WireGuard 1420)
SLOW_MBPS = 10000  # below 10 Gb/s the gradients' all-reduce is bound by the network
_RANK = {"pass": 0, "skip": 0, "warn": 1, "fail": 2}


@dataclass(frozen=True)
class IbPort:
    device: str  # mlx5_0
    port: str  # 1
    state: str  # ACTIVE, DOWN, INIT, ARMED, POLLING (the text after "N: "), "" unreadable
    rate: str  # "200 Gb/sec (4X HDR)", "" unreadable
    link_layer: str  # InfiniBand | Ethernet (RoCE) | ""
    netdevs: Tuple[str, ...]  # interfaces of the device's PCI function (ib0, enp65s0f0np0)
    numa_node: Optional[int]

    @property
    def label(self) -> str:
        layer = "RoCE" if self.link_layer == "Ethernet" else (self.link_layer or "IB")
        return f"{self.device}/{self.port} {layer} {self.state or '?'} {self.rate or 'rate ?'}"


@dataclass(frozen=True)
class NetPath:
    peer: str
    address: Optional[str] = None  # what the peer resolves to first
    source: Optional[str] = None  # the local address the kernel sends from
    ifname: Optional[str] = None
    kind: str = ""  # netroute's kind
    own: bool = False  # the peer is this host (an address of it, or its name)
    operstate: Optional[str] = None
    carrier: Optional[int] = None  # IF/carrier: 1 carrier up (read at once; operstate follows a moment later)
    mtu: Optional[int] = None
    speed_mbps: Optional[int] = None  # None: not reported (virtual links, or -1)
    numa_node: Optional[int] = None
    ports: Tuple[IbPort, ...] = ()  # the IB/RoCE ports behind ifname


def _state(text: Optional[str]) -> str:
    """'4: ACTIVE' -> 'ACTIVE' (sysfs ports/N/state; phys_state has the same form)."""
    text = (text or "").strip()
    return text.split(":", 1)[1].strip() if ":" in text else text


def _node(io: HostIO, rel: str) -> Optional[int]:
    node = io.read_int(rel)
    return node if node is not None and node >= 0 else None


def ib_ports(io: HostIO) -> List[IbPort]:
    """Every InfiniBand/RoCE port sysfs lists, in device then port order."""
    out: List[IbPort] = []
    for dev in io.listdir(IB):
        netdevs = tuple(io.listdir(f"{IB}/{dev}/device/net"))
        node = _node(io, f"{IB}/{dev}/device/numa_node")
        ports = io.listdir(f"{IB}/{dev}/ports")
        for port in sorted(ports, key=lambda p: (len(p), p)):
            base = f"{IB}/{dev}/ports/{port}"
            out.append(IbPort(dev, port, _state(io.read(f"{base}/state")), (io.read(f"{base}/rate") or "").strip(),
                              (io.read(f"{base}/link_layer") or "").strip(), netdevs, node))
    return out


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def network_path(peer: str, routes: Routes, io: HostIO, ports: Sequence[IbPort] = ()) -> NetPath:
    """How this host reaches `peer` (a name or an address), read from the kernel and sysfs."""
    addrs = routes.resolve(peer)
    if not addrs:
        return NetPath(peer)
    addr = addrs[0]
    interfaces = routes.interfaces()
    mine = {a for v in interfaces.values() for a in v}
    if addr in mine or (_is_loopback(addr) and peer in (routes.hostname(), "localhost")):
        return NetPath(peer, addr, addr, None, "", own=True)
    src = routes.source(addr)
    ifname = next((n for n, v in sorted(interfaces.items()) if src in v), None) if src else None
    if ifname is None:
        return NetPath(peer, addr, src)
    base = f"sys/class/net/{ifname}"
    speed = io.read_int(f"{base}/speed")  # EINVAL (None) or -1 on links that do not report one
    state = (io.read(f"{base}/operstate") or "").strip() or None
    return NetPath(peer, addr, src, ifname, routes.kind(ifname), operstate=state,
                   carrier=io.read_int(f"{base}/carrier"), mtu=io.read_int(f"{base}/mtu"),
                   speed_mbps=speed if speed and speed > 0 else None,
                   numa_node=_node(io, f"{base}/device/numa_node"),
                   ports=tuple(p for p in ports if ifname in p.netdevs))


def _speed(mbps: Optional[int]) -> str:
    if mbps is None:
        return "speed not reported"
    return f"{mbps / 1000:g} Gb/s" if mbps >= 1000 else f"{mbps} Mb/s"


def path_finding(path: NetPath, gpu_nodes: Sequence[int] = ()) -> Finding:
    """One peer's path: fail when the collectives cannot leave this host that way, warn when they will be slow or
    fragile, pass otherwise. `gpu_nodes`: the NUMA nodes of this host's GPUs (for the locality note)."""
    if path.own:
        return Finding(status="pass", actual=f"{path.peer}: this host ({path.address})")
    if path.address is None:
        return Finding(status="fail", actual=f"{path.peer}: does not resolve on this host", expected="resolves",
                       fix=f"add {path.peer} to DNS or /etc/hosts on every node, or give its address")
    at = path.peer if path.peer == path.address else f"{path.peer} ({path.address})"
    if _is_loopback(path.address):
        return Finding(status="fail", actual=f"{at}: resolves to loopback on this host", expected="a routed address",
                       fix=f"/etc/hosts maps {path.peer} to {path.address}: map it to the address the nodes share")
    if path.ifname is None:
        return Finding(status="fail", actual=f"{at}: no route from this host", expected="a route",
                       fix="add a route to the nodes' network (ip route), or give the address of the shared network")
    head = f"{at} via {path.ifname} ({path.kind or 'other'}, from {path.source})"
    if path.kind in ("loopback", "container-bridge"):
        return Finding(status="fail", actual=f"{head}: does not leave this host", expected="a NIC",
                       fix="the route to the peer goes through a container bridge: give the peer's address on "
                           "the nodes' network, and set GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME to that interface")
    facts = [f"MTU {path.mtu if path.mtu is not None else '?'}", _speed(path.speed_mbps)]
    if path.numa_node is not None:
        near = "" if not gpu_nodes else (" (GPUs' node)" if path.numa_node in gpu_nodes else
                                         f" (GPUs on node {','.join(str(n) for n in sorted(set(gpu_nodes)))})")
        facts.append(f"NUMA node {path.numa_node}{near}")
    facts.extend(p.label for p in path.ports)
    actual = f"{head}: {', '.join(facts)}"
    fails, warns = _problems(path)
    if fails or warns:
        return Finding(status="fail" if fails else "warn", actual=f"{actual}; {'; '.join(fails + warns)}",
                       expected=f"link up, MTU >= {ETH_MTU}, >= {SLOW_MBPS // 1000} Gb/s, IB ports ACTIVE",
                       fix="\n".join(_fixes(path)))
    return Finding(status="pass", actual=actual)


def _down(path: NetPath) -> bool:
    """operstate says down and the carrier does not say up (the kernel's link watch updates operstate up to a
    second or more after the carrier comes up; `carrier` reads the driver's state at once)."""
    return path.operstate in ("down", "lowerlayerdown", "notpresent") and path.carrier != 1


def _problems(path: NetPath) -> Tuple[List[str], List[str]]:
    fails: List[str] = []
    warns: List[str] = []
    if _down(path):
        fails.append(f"{path.ifname} is {path.operstate}")
    down = [p for p in path.ports if p.state != "ACTIVE"]
    if down:
        named = ", ".join(f"{p.device}/{p.port} {p.state or 'state unreadable'}" for p in down)
        fails.append(f"IB port {named}")
    ib = any(p.link_layer == "InfiniBand" for p in path.ports)
    if path.mtu is None:
        warns.append("MTU unreadable")
    elif path.mtu < MIN_MTU or (path.mtu < ETH_MTU and not ib):
        warns.append(f"MTU {path.mtu} is below {ETH_MTU} (a tunnel or overlay)")
    if path.speed_mbps is not None and path.speed_mbps < SLOW_MBPS:
        warns.append(f"link {_speed(path.speed_mbps)}, below {SLOW_MBPS // 1000} Gb/s")
    return fails, warns


def _fixes(path: NetPath) -> List[str]:
    out: List[str] = []
    if any(p.state != "ACTIVE" for p in path.ports):
        out.append("check the cable and the subnet manager (ibstat; an IB port stays INIT without opensm)")
    if _down(path):
        out.append(f"bring the link up: ip link set {path.ifname} up (and check the cable)")
    if path.mtu is not None and path.mtu < ETH_MTU:
        out.append("give every node the same MTU on this network (ip link set dev IF mtu N): a mismatch drops "
                   "large packets and the first large collective hangs")
    if path.speed_mbps is not None and path.speed_mbps < SLOW_MBPS:
        out.append("use the nodes' fast network: give the peers' addresses on it (the route picks the interface)")
    return out or ["see the values above"]


def nodes_finding(paths: Sequence[NetPath], gpu_nodes: Sequence[int] = ()) -> Finding:
    """Every peer's path in one finding: the worst status; an MTU that differs between the interfaces that reach
    the peers warns (the nodes of one job should share one network and one MTU)."""
    found = [path_finding(p, gpu_nodes) for p in paths]
    worst = max(found, key=lambda f: _RANK[f.status]).status if found else "skip"
    actual = " | ".join(f.actual for f in found) or "no peers"
    mtus = sorted({p.mtu for p in paths if p.mtu is not None and p.ifname})
    fixes = [f.fix for f in found if f.fix and f.status in ("warn", "fail")]
    if len(mtus) > 1:
        actual += f" | MTU differs between the peers' interfaces ({', '.join(str(m) for m in mtus)})"
        fixes.append("the job's nodes should meet on one network with one MTU")
        worst = "fail" if worst == "fail" else "warn"
    expected = next((f.expected for f in found if f.status == worst and f.expected), "")
    return Finding(status=worst, actual=actual, expected=expected, fix="\n".join(dict.fromkeys(fixes)))


def nodes_allreduce_finding(job: JobResult, nodes: int) -> Finding:
    """The cross-node all-reduce (findings.allreduce_finding: busbw, correct sums), and the MTU each node reported
    for its interface: different MTUs across the nodes warn, naming each node's."""
    f = allreduce_finding(job, "gloo", None, f"{nodes} nodes, one rank each, finish with correct sums")
    r = job.result("allreduce gloo") or {}
    tags = sorted((t for t in r.get("tags") or [] if isinstance(t, dict)), key=lambda t: str(t.get("node")))
    mtus = {t.get("mtu") for t in tags}
    if len(mtus) < 2 or f.status == "fail":
        return f
    said = ", ".join(f"{t.get('node')} {t.get('ifname')} {t.get('mtu')}" for t in tags)
    return Finding(status="warn", actual=f"{f.actual}; MTU differs across the nodes ({said})",
                   expected="one MTU on every node of the job's network",
                   fix="set the same MTU on every node's interface of this network (ip link set dev IF mtu N, and "
                       "the switch ports): a mismatch drops or fragments the larger side's packets")


__all__ = ["IbPort", "NetPath", "ib_ports", "network_path", "nodes_allreduce_finding", "nodes_finding",
           "path_finding"]
