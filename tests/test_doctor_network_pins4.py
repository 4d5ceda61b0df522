"""`doctor --deep --nodes`' path findings pinned whole (issue 21): each way a peer's path fails or warns (no
resolution, loopback, no route, a bridge, link down with and without carrier, IB ports, MTU at 1280/1500, speed at
10 Gb/s, NUMA locality), the merged finding over several peers (MTU mismatch) and the cross-node all-reduce's MTU
tags; plus measure_limit and nvml_index. Pure functions on fabricated paths.

To regenerate after a deliberate change of wording: `python3 tests/test_doctor_network_pins4.py` prints GOLDEN;
review the diff row by row before pasting it back."""

from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Tuple

import pytest

from hosttune.doctor.deep import network as N
from hosttune.doctor.deep import session
from hosttune.doctor.deep.runner import JobResult

Row = Tuple[str, str, str, str]


def port(state: str = "ACTIVE", layer: str = "InfiniBand", dev: str = "mlx5_0") -> N.IbPort:
    return N.IbPort(dev, "1", state, "200 Gb/sec (4X HDR)" if state else "", layer, ("ib0",), 1)


def path(**kw: Any) -> N.NetPath:
    base: Dict[str, Any] = dict(peer="node2", address="10.0.0.2", source="10.0.0.1", ifname="eth0", kind="ethernet",
                                operstate="up", carrier=1, mtu=9000, speed_mbps=100000, numa_node=None)
    base.update(kw)
    return N.NetPath(**base)


def ar(*tags: Dict[str, Any], correct: bool = True) -> JobResult:
    row = {"event": "result", "what": "allreduce gloo", "world": 2, "bytes": 64.0 * (1 << 20), "seconds": 0.05,
           "correct": correct, "tags": list(tags)}
    return JobResult(name="allreduce", events=(row,), returncode=0)


CASES: List[Tuple[str, Callable[[], Any]]] = [
    ("own", lambda: N.path_finding(path(own=True, address="10.0.0.1"))),
    ("no-resolve", lambda: N.path_finding(path(address=None))),
    ("loopback-v4", lambda: N.path_finding(path(address="127.0.1.1"))),
    ("loopback-v6", lambda: N.path_finding(path(peer="::1", address="::1"))),
    ("no-route", lambda: N.path_finding(path(ifname=None))),
    ("bridge", lambda: N.path_finding(path(ifname="docker0", kind="container-bridge"))),
    ("lo", lambda: N.path_finding(path(ifname="lo", kind="loopback", peer="10.0.0.2"))),
    ("ok", lambda: N.path_finding(path())),
    ("ok-numa-near", lambda: N.path_finding(path(numa_node=1), [1, 0, 1])),
    ("ok-numa-far", lambda: N.path_finding(path(numa_node=0), [1, 3, 1])),
    ("ok-numa-no-gpus", lambda: N.path_finding(path(numa_node=0))),
    ("down", lambda: N.path_finding(path(operstate="down", carrier=0))),
    ("down-carrier-up", lambda: N.path_finding(path(operstate="down", carrier=1))),
    ("lowerlayerdown", lambda: N.path_finding(path(operstate="lowerlayerdown", carrier=None))),
    ("unknown-state", lambda: N.path_finding(path(operstate="unknown", carrier=None))),
    ("mtu-1500", lambda: N.path_finding(path(mtu=1500))),
    ("mtu-1499", lambda: N.path_finding(path(mtu=1499))),
    ("mtu-1450-ib", lambda: N.path_finding(path(mtu=1450, ports=(port(),)))),
    ("mtu-1279-ib", lambda: N.path_finding(path(mtu=1279, ports=(port(),)))),
    ("mtu-1280-ib", lambda: N.path_finding(path(mtu=1280, ports=(port(),)))),
    ("mtu-1450-roce", lambda: N.path_finding(path(mtu=1450, ports=(port(layer="Ethernet"),)))),
    ("mtu-none", lambda: N.path_finding(path(mtu=None, speed_mbps=None))),
    ("speed-10g", lambda: N.path_finding(path(speed_mbps=10000))),
    ("speed-9999", lambda: N.path_finding(path(speed_mbps=9999))),
    ("speed-100m", lambda: N.path_finding(path(speed_mbps=100))),
    ("ib-init", lambda: N.path_finding(path(ports=(port("INIT"), port("", dev="mlx5_1"))))),
    ("everything", lambda: N.path_finding(path(operstate="down", carrier=0, mtu=1400, speed_mbps=1000,
                                               ports=(port("DOWN", "Ethernet"),), kind=""))),
    ("same-name", lambda: N.path_finding(path(peer="10.0.0.2"))),
    ("nodes-none", lambda: N.nodes_finding([])),
    ("nodes-ok", lambda: N.nodes_finding([path(), path(peer="node3", address="10.0.0.3")])),
    ("nodes-mtu-differs", lambda: N.nodes_finding([path(), path(peer="node3", address="10.0.0.3", mtu=1500,
                                                               ifname="eth1")])),
    ("nodes-mtu-differs-fail", lambda: N.nodes_finding([path(address=None), path(peer="n3", mtu=1500),
                                                        path(peer="n4", mtu=9000)])),
    ("nodes-warn-and-fail", lambda: N.nodes_finding([path(speed_mbps=1000), path(peer="n3", ifname=None),
                                                     path(peer="n4", speed_mbps=1000)])),
    ("nodes-mtu-no-ifname", lambda: N.nodes_finding([path(), path(peer="n3", ifname=None, mtu=1500)])),
    ("ar-one-mtu", lambda: N.nodes_allreduce_finding(ar({"node": "a", "ifname": "eth0", "mtu": 9000},
                                                        {"node": "b", "ifname": "eth0", "mtu": 9000}), 2)),
    ("ar-mtus", lambda: N.nodes_allreduce_finding(ar({"node": "b", "ifname": "eth1", "mtu": 1500},
                                                     {"node": "a", "ifname": "eth0", "mtu": 9000}, "junk"), 2)),
    ("ar-mtus-wrong", lambda: N.nodes_allreduce_finding(ar({"node": "b", "mtu": 1500}, {"node": "a", "mtu": 9000},
                                                           correct=False), 2)),
    ("ar-no-tags", lambda: N.nodes_allreduce_finding(ar(), 3)),
]


GOLDEN: Dict[str, Row] = {
    'own': ('pass', 'node2: this host (10.0.0.1)', '', ''),
 'no-resolve': ('fail',
                'node2: does not resolve on this host',
                'resolves',
                'add node2 to DNS or /etc/hosts on every node, or give its address'),
 'loopback-v4': ('fail',
                 'node2 (127.0.1.1): resolves to loopback on this host',
                 'a routed address',
                 '/etc/hosts maps node2 to 127.0.1.1: map it to the address the nodes share'),
 'loopback-v6': ('fail',
                 '::1: resolves to loopback on this host',
                 'a routed address',
                 '/etc/hosts maps ::1 to ::1: map it to the address the nodes share'),
 'no-route': ('fail',
              'node2 (10.0.0.2): no route from this host',
              'a route',
              "add a route to the nodes' network (ip route), or give the address of the shared network"),
 'bridge': ('fail',
            'node2 (10.0.0.2) via docker0 (container-bridge, from 10.0.0.1): does not leave this host',
            'a NIC',
            "the route to the peer goes through a container bridge: give the peer's address on the nodes' network, "
            'and set GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME to that interface'),
 'lo': ('fail',
        '10.0.0.2 via lo (loopback, from 10.0.0.1): does not leave this host',
        'a NIC',
        "the route to the peer goes through a container bridge: give the peer's address on the nodes' network, and "
        'set GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME to that interface'),
 'ok': ('pass', 'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s', '', ''),
 'ok-numa-near': ('pass',
                  "node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s, NUMA node 1 (GPUs' node)",
                  '',
                  ''),
 'ok-numa-far': ('pass',
                 'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s, NUMA node 0 (GPUs on node '
                 '1,3)',
                 '',
                 ''),
 'ok-numa-no-gpus': ('pass',
                     'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s, NUMA node 0',
                     '',
                     ''),
 'down': ('fail',
          'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s; eth0 is down',
          'link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE',
          'bring the link up: ip link set eth0 up (and check the cable)'),
 'down-carrier-up': ('pass', 'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s', '', ''),
 'lowerlayerdown': ('fail',
                    'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s; eth0 is lowerlayerdown',
                    'link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE',
                    'bring the link up: ip link set eth0 up (and check the cable)'),
 'unknown-state': ('pass', 'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s', '', ''),
 'mtu-1500': ('pass', 'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 1500, 100 Gb/s', '', ''),
 'mtu-1499': ('warn',
              'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 1499, 100 Gb/s; MTU 1499 is below 1500 (a '
              'tunnel or overlay)',
              'link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE',
              'give every node the same MTU on this network (ip link set dev IF mtu N): a mismatch drops large '
              'packets and the first large collective hangs'),
 'mtu-1450-ib': ('pass',
                 'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 1450, 100 Gb/s, mlx5_0/1 InfiniBand '
                 'ACTIVE 200 Gb/sec (4X HDR)',
                 '',
                 ''),
 'mtu-1279-ib': ('warn',
                 'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 1279, 100 Gb/s, mlx5_0/1 InfiniBand '
                 'ACTIVE 200 Gb/sec (4X HDR); MTU 1279 is below 1500 (a tunnel or overlay)',
                 'link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE',
                 'give every node the same MTU on this network (ip link set dev IF mtu N): a mismatch drops large '
                 'packets and the first large collective hangs'),
 'mtu-1280-ib': ('pass',
                 'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 1280, 100 Gb/s, mlx5_0/1 InfiniBand '
                 'ACTIVE 200 Gb/sec (4X HDR)',
                 '',
                 ''),
 'mtu-1450-roce': ('warn',
                   'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 1450, 100 Gb/s, mlx5_0/1 RoCE ACTIVE '
                   '200 Gb/sec (4X HDR); MTU 1450 is below 1500 (a tunnel or overlay)',
                   'link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE',
                   'give every node the same MTU on this network (ip link set dev IF mtu N): a mismatch drops large '
                   'packets and the first large collective hangs'),
 'mtu-none': ('warn',
              'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU ?, speed not reported; MTU unreadable',
              'link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE',
              'see the values above'),
 'speed-10g': ('pass', 'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 10 Gb/s', '', ''),
 'speed-9999': ('warn',
                'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 9.999 Gb/s; link 9.999 Gb/s, below '
                '10 Gb/s',
                'link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE',
                "use the nodes' fast network: give the peers' addresses on it (the route picks the interface)"),
 'speed-100m': ('warn',
                'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Mb/s; link 100 Mb/s, below 10 '
                'Gb/s',
                'link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE',
                "use the nodes' fast network: give the peers' addresses on it (the route picks the interface)"),
 'ib-init': ('fail',
             'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s, mlx5_0/1 InfiniBand INIT 200 '
             'Gb/sec (4X HDR), mlx5_1/1 InfiniBand ? rate ?; IB port mlx5_0/1 INIT, mlx5_1/1 state unreadable',
             'link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE',
             'check the cable and the subnet manager (ibstat; an IB port stays INIT without opensm)'),
 'everything': ('fail',
                'node2 (10.0.0.2) via eth0 (other, from 10.0.0.1): MTU 1400, 1 Gb/s, mlx5_0/1 RoCE DOWN 200 Gb/sec '
                '(4X HDR); eth0 is down; IB port mlx5_0/1 DOWN; MTU 1400 is below 1500 (a tunnel or overlay); link 1 '
                'Gb/s, below 10 Gb/s',
                'link up, MTU >= 1500, >= 10 Gb/s, IB ports ACTIVE',
                'check the cable and the subnet manager (ibstat; an IB port stays INIT without opensm)\n'
                'bring the link up: ip link set eth0 up (and check the cable)\n'
                'give every node the same MTU on this network (ip link set dev IF mtu N): a mismatch drops large '
                'packets and the first large collective hangs\n'
                "use the nodes' fast network: give the peers' addresses on it (the route picks the interface)"),
 'same-name': ('pass', '10.0.0.2 via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s', '', ''),
 'nodes-none': ('skip', 'no peers', '', ''),
 'nodes-ok': ('pass',
              'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s | node3 (10.0.0.3) via eth0 '
              '(ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s',
              '',
              ''),
 'nodes-mtu-differs': ('warn',
                       'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s | node3 (10.0.0.3) '
                       "via eth1 (ethernet, from 10.0.0.1): MTU 1500, 100 Gb/s | MTU differs between the peers' "
                       'interfaces (1500, 9000)',
                       '',
                       "the job's nodes should meet on one network with one MTU"),
 'nodes-mtu-differs-fail': ('fail',
                            'node2: does not resolve on this host | n3 (10.0.0.2) via eth0 (ethernet, from '
                            '10.0.0.1): MTU 1500, 100 Gb/s | n4 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU '
                            "9000, 100 Gb/s | MTU differs between the peers' interfaces (1500, 9000)",
                            'resolves',
                            'add node2 to DNS or /etc/hosts on every node, or give its address\n'
                            "the job's nodes should meet on one network with one MTU"),
 'nodes-warn-and-fail': ('fail',
                         'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 1 Gb/s; link 1 Gb/s, below '
                         '10 Gb/s | n3 (10.0.0.2): no route from this host | n4 (10.0.0.2) via eth0 (ethernet, from '
                         '10.0.0.1): MTU 9000, 1 Gb/s; link 1 Gb/s, below 10 Gb/s',
                         'a route',
                         "use the nodes' fast network: give the peers' addresses on it (the route picks the "
                         'interface)\n'
                         "add a route to the nodes' network (ip route), or give the address of the shared network"),
 'nodes-mtu-no-ifname': ('fail',
                         'node2 (10.0.0.2) via eth0 (ethernet, from 10.0.0.1): MTU 9000, 100 Gb/s | n3 (10.0.0.2): '
                         'no route from this host',
                         'a route',
                         "add a route to the nodes' network (ip route), or give the address of the shared network"),
 'ar-one-mtu': ('pass',
                '2 ranks, 64 MiB: busbw 1.3 GB/s (algbw 1.3, 50.00 ms per all-reduce)',
                '2 nodes, one rank each, finish with correct sums',
                ''),
 'ar-mtus': ('warn',
             '2 ranks, 64 MiB: busbw 1.3 GB/s (algbw 1.3, 50.00 ms per all-reduce); MTU differs across the nodes (a '
             'eth0 9000, b eth1 1500)',
             "one MTU on every node of the job's network",
             "set the same MTU on every node's interface of this network (ip link set dev IF mtu N, and the switch "
             "ports): a mismatch drops or fragments the larger side's packets"),
 'ar-mtus-wrong': ('fail',
                   '2 ranks, 64 MiB: busbw 1.3 GB/s (algbw 1.3, 50.00 ms per all-reduce); WRONG SUMS',
                   '2 nodes, one rank each, finish with correct sums',
                   "gloo needs this host's name to resolve to a local address (getent hosts $(hostname)); "
                   'GLOO_SOCKET_IFNAME=lo pins it to loopback'),
 'ar-no-tags': ('pass',
                '2 ranks, 64 MiB: busbw 1.3 GB/s (algbw 1.3, 50.00 ms per all-reduce)',
                '3 nodes, one rank each, finish with correct sums',
                '')}


def _row(f: Any) -> Row:
    return (f.status, f.actual, f.expected, f.fix)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_finding(name: str, make: Callable[[], Any]) -> None:
    assert _row(make()) == GOLDEN[name]


def test_every_case_has_its_finding() -> None:
    assert sorted(GOLDEN) == sorted(c[0] for c in CASES)


def test_ib_port_label() -> None:
    assert port().label == "mlx5_0/1 InfiniBand ACTIVE 200 Gb/sec (4X HDR)"
    assert port("", "Ethernet").label == "mlx5_0/1 RoCE ? rate ?"
    assert N.IbPort("d", "2", "INIT", "", "", (), None).label == "d/2 IB INIT rate ?"


@pytest.mark.parametrize("what,limit", [("info", 60.0), ("allreduce nccl", 60.0), ("allreduce", 60.0),
                                        ("gpu_compute 0", 20.0), ("disk /data", 20.0), ("infox", 20.0)])
def test_measure_limit(what: str, limit: float) -> None:
    assert session.measure_limit(what) == limit


def test_nvml_index_by_bus_id() -> None:
    gpus = [SimpleNamespace(index=0, pci_bus_id="0000:1b:00.0"), SimpleNamespace(index=1, pci_bus_id="0000:3b:00.0"),
            SimpleNamespace(index=2, pci_bus_id="")]
    devices = [{"index": 0, "pci_bus_id": "00000000:3B:00.0"}, {"index": 1, "pci_bus_id": "0000:1b:00.0"},
               {"index": 2}, {"index": 3, "pci_bus_id": "0000:99:00.0"}]
    assert [session.nvml_index(gpus, devices, i) for i in range(5)] == [1, 0, 2, 3, 4]


def _regenerate() -> None:
    import pprint

    print("GOLDEN: Dict[str, Row] = " + pprint.pformat({n: _row(m()) for n, m in CASES}, width=118, sort_dicts=False))


if __name__ == "__main__":
    _regenerate()
