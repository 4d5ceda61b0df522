"""The live network path to one address: how the kernel routes to it, which interface holds the source address, and
what kind of interface that is (loopback, a container bridge, anything else). plan/network.py decides from it.

The route is the kernel's own answer, without a subprocess: connect() on a UDP socket sends nothing but makes the
kernel pick the route and the source address (ip-route(8)'s `route get` answers from the same lookup, policy rules
included); getsockname() then names that source. For an address of this host the source is the address itself.
Interfaces and their addresses come from getifaddrs (psutil.net_if_addrs); the interface's kind from sysfs through
HostIO (/sys/class/net/IF/flags IFF_LOOPBACK, IF/bridge/, IF/brif/ and each port's `device` link). Under
`ip netns exec` all of these answer for the namespace the process runs in.
"""

import ipaddress
import socket
from pathlib import Path
from typing import Dict, List, Optional, Protocol

from hosttune.detect.hostio import HostIO

IFF_LOOPBACK = 0x8  # include/uapi/linux/if.h
# Bridges that software on this host made for its containers/VMs: a route to another machine never leaves through one.
_GUEST_PORTS = ("veth", "tap", "vnet", "vif")
CONTAINER_BRIDGE_PREFIXES = ("docker", "br-", "virbr", "cni", "podman", "lxcbr", "lxdbr", "cbr", "kube-bridge")


class Routes(Protocol):
    """What plan.network's `decide` and doctor --deep --nodes' `network_path` ask of the host: `LiveRoutes` here, a
    fake in tests."""

    def hostname(self) -> str: ...
    def resolve(self, host: str) -> List[str]: ...
    def source(self, address: str) -> Optional[str]: ...
    def interfaces(self) -> Dict[str, List[str]]: ...
    def kind(self, ifname: str) -> str: ...


class LiveRoutes:
    """The probe plan.network asks (tests give it a fake with the same methods)."""

    def __init__(self, root: Path = Path("/")) -> None:
        self.io = HostIO(root)

    def hostname(self) -> str:
        return socket.gethostname()

    def resolve(self, host: str) -> List[str]:
        """The addresses `host` resolves to, in the resolver's order (what torchrun/gloo would connect to first)."""
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return []
        out: List[str] = []
        for info in infos:
            addr = str(info[4][0]).split("%")[0]
            if addr not in out:
                out.append(addr)
        return out

    def source(self, address: str) -> Optional[str]:
        """The local address the kernel sends from to reach `address` (None: no route)."""
        family = socket.AF_INET6 if ipaddress.ip_address(address).version == 6 else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as sock:
                sock.connect((address, 9))  # UDP: nothing is sent; the kernel only chooses the route
                return str(sock.getsockname()[0]).split("%")[0]
        except OSError:
            return None

    def interfaces(self) -> Dict[str, List[str]]:
        """Interface name -> its IPv4/IPv6 addresses."""
        import psutil

        out: Dict[str, List[str]] = {}
        for name, addrs in psutil.net_if_addrs().items():
            out[name] = [str(a.address).split("%")[0] for a in addrs
                         if a.family in (socket.AF_INET, socket.AF_INET6)]
        return out

    def kind(self, ifname: str) -> str:
        """loopback | container-bridge | bridge | other, from sysfs (the name when sysfs says nothing)."""
        base = f"sys/class/net/{ifname}"
        flags = self.io.read(f"{base}/flags")
        try:
            loop = flags is not None and int(flags.strip(), 16) & IFF_LOOPBACK
        except ValueError:
            loop = False
        if loop or ifname == "lo":
            return "loopback"
        if ifname.startswith(CONTAINER_BRIDGE_PREFIXES):
            return "container-bridge"
        if self.io.isdir(f"{base}/bridge"):
            ports = self.io.listdir(f"{base}/brif")
            # a bridge whose ports are only containers' and VMs' ends (veth, tap, vnet) cannot reach another machine;
            # one with an uplink (a NIC, a bond, a VLAN) is the host's own path and may well be the right one
            uplinks = [p for p in ports if not p.startswith(_GUEST_PORTS) and not self.io.exists(
                f"sys/class/net/{p}/tun_flags")]
            return "bridge" if uplinks else "container-bridge"
        return "other"
