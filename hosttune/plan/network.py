"""Which network interface a job's collectives use: the one through which the kernel reaches the rendezvous/master
address, named to gloo and NCCL (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME), and the hostname-on-loopback trap.

Why: without these variables gloo binds to the address this host's *name* resolves to, and NCCL to the first
interface it likes (anything but lo/docker*). A node whose name resolves to 127.0.1.1 (Debian's /etc/hosts) or that
has a second network (a docker bridge, a management NIC) then advertises an address the other nodes cannot reach,
and the job hangs or fails at its first collective ("Connection refused", or a timeout that names no cause).
The interface the kernel itself routes the master address through is the one the other nodes are reachable on.

The rule (`decide`, pure; the reads are detect/netroute.py's `LiveRoutes`):
- no endpoint, or a loopback one on a single-node job: nothing is named (loopback is right for one node);
  a loopback endpoint on a job that spans nodes is a warning (the other nodes cannot reach it).
- otherwise the interface holding the source address the kernel picks for the endpoint (for this host's own address,
  the interface that holds it) is named in both variables; never loopback or a container bridge (docker0, br-*,
  virbr*, a bridge with only veth/tap ports): then a warning, and nothing is named.
- a torchrun job over more than one node whose host name resolves only to loopback: torchrun's agent would hand that
  name to the other nodes as MASTER_ADDR (RendezvousStoreInfo: `local_addr or socket.getfqdn()`), so the plan sets
  PET_LOCAL_ADDR (torchrun's --local-addr) to the source address found above, unless --local-addr was given.
- a c10d endpoint that is an address of this host which its host name does not resolve to (a second NIC): torch's
  own test of "is this node the store's host" (rendezvous/utils.py _matches_machine_hostname, which says it misses
  secondary NICs) answers no, nobody hosts the store and every node fails to connect. The plan sets
  PET_RDZV_CONF=is_host=1 on that node, or, when the caller gave --rdzv-conf, says to add is_host=1 to it.
The user wins as everywhere (plan.settle): a variable the caller set keeps its value and is said.
"""

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Tuple

if TYPE_CHECKING:
    from hosttune.detect.netroute import Routes

IFNAME_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
LOCAL_ADDR = "PET_LOCAL_ADDR"  # torchrun's --local-addr, from its environment (torch/distributed/argparse_util.env)
RDZV_CONF = "PET_RDZV_CONF"  # torchrun's --rdzv-conf, likewise
WARNING = "network: WARNING"  # how a reason line that the user must act on starts


@dataclass(frozen=True)
class Endpoint:
    """The address every node of the job connects to first (rendezvous store or master)."""

    host: str  # a name or an address, as given
    source: str  # where it was found ("torchrun --rdzv-endpoint", "MASTER_ADDR")
    nodes: Optional[int] = None  # how many nodes the job spans, when known
    torchrun: bool = False  # torchrun's agent advertises this node's name (PET_LOCAL_ADDR applies)
    local_addr: bool = False  # the caller already gave torchrun --local-addr
    c10d: bool = False  # torchrun's c10d rendezvous: the agent whose host the endpoint names hosts the store
    rdzv_conf: str = ""  # the caller's --rdzv-conf, as given

    @property
    def multi_node(self) -> bool:
        return self.nodes is not None and self.nodes > 1


@dataclass(frozen=True)
class NetPlan:
    env: Mapping[str, str]
    reasons: Tuple[str, ...]

    @property
    def warnings(self) -> Tuple[str, ...]:
        return tuple(r for r in self.reasons if r.startswith(WARNING))


def host_of(endpoint: str) -> str:
    """The host part of torchrun's HOST[:PORT] / [IPV6]:PORT (torch's parse_rendezvous_endpoint)."""
    endpoint = endpoint.strip()
    if endpoint.startswith("["):
        return endpoint[1:].split("]", 1)[0]
    if endpoint.count(":") == 1:
        return endpoint.partition(":")[0]
    return endpoint  # a bare name, IPv4 address, or IPv6 address without a port


def nodes_of(raw: Optional[str]) -> Optional[int]:
    """The most nodes a count such as torchrun's --nnodes ("2", "1:4") or SLURM_JOB_NUM_NODES allows."""
    if not raw:
        return None
    try:
        return max(int(part) for part in str(raw).split(":") if part.strip())
    except ValueError:
        return None


def from_environ(environ: Mapping[str, str]) -> Optional[Endpoint]:
    """MASTER_ADDR as a Slurm or MPI job script exports it; the node count from Slurm's allocation."""
    host = environ.get("MASTER_ADDR", "").strip()
    if not host:
        return None
    nodes = nodes_of(environ.get("SLURM_JOB_NUM_NODES") or environ.get("SLURM_NNODES"))
    return Endpoint(host_of(host), "MASTER_ADDR", nodes)


def _interface_of(address: str, interfaces: Mapping[str, List[str]]) -> Optional[str]:
    for name, addrs in sorted(interfaces.items()):
        if address in addrs:
            return name
    return None


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def decide(endpoint: Optional[Endpoint], routes: "Routes") -> NetPlan:
    """The variables and reason lines for a job whose nodes meet at `endpoint` (see the module's rule)."""
    if endpoint is None:
        return NetPlan({}, ())
    shown = f"{endpoint.source} {endpoint.host}"
    addrs = routes.resolve(endpoint.host)
    if not addrs:
        return NetPlan({}, (f"{WARNING}: {shown} does not resolve on this host; the job cannot reach it",))
    addr = addrs[0]
    at = shown if addr == endpoint.host else f"{shown} ({addr})"
    if _is_loopback(addr):
        if endpoint.multi_node:
            return NetPlan({}, (f"{WARNING}: {at} is this host's loopback, but the job spans {endpoint.nodes} nodes: "
                                f"the others cannot reach it; give an address they reach",))
        return NetPlan({}, (f"network: {at} is loopback: one node, no interface named",))
    src = routes.source(addr)
    ifname = _interface_of(src, routes.interfaces()) if src else None
    if src is None or ifname is None:
        return NetPlan({}, (f"{WARNING}: no route from this host to {at}; no interface named",))
    kind = routes.kind(ifname)
    if kind in ("loopback", "container-bridge"):
        what = "loopback" if kind == "loopback" else "a container bridge, which does not leave this host"
        return NetPlan({}, (f"{WARNING}: {at} is reached through {ifname} ({what}); no interface named: set "
                            f"{IFNAME_VARS[0]}/{IFNAME_VARS[1]} to the interface the other nodes reach",))
    env: Dict[str, str] = {var: ifname for var in IFNAME_VARS}
    reasons: List[str] = [f"network: {ifname} (address {src}) is the kernel's route to {at}: "
                          f"{', '.join(IFNAME_VARS)}={ifname}"]
    name = routes.hostname()
    named = routes.resolve(name)
    if endpoint.c10d and src == addr and endpoint.host != name and addr not in named:
        reasons.append(_store_host(endpoint, at, ifname, env))
    if endpoint.multi_node and named and all(_is_loopback(a) for a in named):
        reasons.extend(_name_on_loopback(endpoint, name, named[0], src, env))
    return NetPlan(env, tuple(reasons))


def _name_on_loopback(endpoint: Endpoint, name: str, first: str, src: str, env: Dict[str, str]) -> List[str]:
    """This host's name resolves only to loopback on a job over several nodes."""
    if endpoint.torchrun and endpoint.local_addr:
        return []  # the caller's --local-addr is what torchrun advertises
    if endpoint.torchrun:
        env[LOCAL_ADDR] = src
        return [f"network: this host's name {name!r} resolves to {first} (loopback), which torchrun would give the "
                f"other nodes as this node's address: {LOCAL_ADDR}={src} (torchrun --local-addr)"]
    return [f"{WARNING}: this host's name {name!r} resolves to {first} (loopback) on a job over {endpoint.nodes} "
            f"nodes: a launcher that advertises it hangs; fix /etc/hosts"]


def _store_host(endpoint: Endpoint, at: str, ifname: str, env: Dict[str, str]) -> str:
    """This node holds the c10d endpoint's address on `ifname`, which torch's own host check does not see."""
    why = f"{at} is this host's own address on {ifname}, which torch's store-host check misses (it knows only " \
          f"the addresses of the host name)"
    if "is_host" in endpoint.rdzv_conf:
        return f"network: {why}; your --rdzv-conf says is_host"
    if endpoint.rdzv_conf:
        return f"{WARNING}: {why}: add is_host=1 to your --rdzv-conf on this node, or no node hosts the store"
    env[RDZV_CONF] = "is_host=1"
    return f"network: {why}: {RDZV_CONF}=is_host=1 (torchrun --rdzv-conf), so this node hosts the store"


def live_decide(endpoint: Optional[Endpoint], root: str) -> NetPlan:
    """`decide` on this host (detect.netroute); under a captured root (`facts.root`) the route cannot be asked."""
    if endpoint is None:
        return NetPlan({}, ())
    if root not in ("", "/"):
        return NetPlan({}, (f"network: {endpoint.source} {endpoint.host}: no interface named for a captured host "
                            f"(its routes are not in the capture)",))
    from hosttune.detect.netroute import LiveRoutes

    return decide(endpoint, LiveRoutes())


__all__ = ["Endpoint", "IFNAME_VARS", "LOCAL_ADDR", "NetPlan", "RDZV_CONF", "WARNING", "decide",
           "from_environ", "host_of", "live_decide", "nodes_of"]
