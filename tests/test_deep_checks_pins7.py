"""Pins for hosttune.doctor.deep.checks (issue 21, practice round HDOC): each test fails with one planted change."""

import json
import types
from typing import Any, List

import pytest

from hosttune.doctor.deep import checks as C
from hosttune.doctor.deep.runner import JobResult
from hosttune.doctor.model import Finding


class Run:
    def __init__(self, paths: List[Any], port: int = 29400) -> None:
        self.paths = paths
        self.options = types.SimpleNamespace(nodes=tuple(p.peer for p in paths), rdzv_port=port)
        self.nodes_calls: List[Any] = []

    def nodes_allreduce(self, *a: Any) -> JobResult:
        self.nodes_calls.append(a)
        return JobResult(name="allreduce_nodes")


def path(peer: str, own: bool, address: str, source: str, ifname: str, mtu: int) -> Any:
    return types.SimpleNamespace(peer=peer, own=own, ifname=ifname, kind="loopback" if own else "ethernet",
                                 address=address, source=source, mtu=mtu)


def test_nodes_allreduce_runs_over_the_route_to_the_first_other_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """This host first in --nodes (its own path: loopback, lo): gloo's interface and the advertised address are
    those of the route to the first OTHER node, and the rendezvous is this host."""
    got: List[Any] = []
    monkeypatch.setattr(C.network, "nodes_allreduce_finding",
                        lambda job, n: got.append((job.name, n)) or Finding(status="pass", actual="ok"))
    run = Run([path("me", True, "10.1.0.1", "127.0.0.1", "lo", 65536),
               path("n2", False, "10.1.0.2", "10.1.0.1", "ens1", 9000),
               path("n3", False, "10.2.0.3", "10.2.0.1", "ens2", 1500)], port=29501)
    c = types.SimpleNamespace(deep=run, facts=types.SimpleNamespace(), live=True)
    f = C.check_nodes_allreduce(c)
    assert (f.status, f.actual) == ("pass", "ok")
    tag = json.dumps({"node": "10.1.0.1", "ifname": "ens1", "mtu": 9000})
    assert run.nodes_calls == [("10.1.0.1:29501", 3, "is_host=1,join_timeout=80", "10.1.0.1", "ens1", tag)]
    assert got == [("allreduce_nodes", 3)]
