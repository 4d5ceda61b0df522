"""doctor --deep --nodes over two "nodes" of this machine (network namespaces joined by a veth pair, tests/_nethelp.py):
the real command, inside one namespace, reads the kernel's route and that namespace's sysfs for the other."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest
from _nethelp import in_ns, two_nodes
from conftest import checkout_env

pytestmark = pytest.mark.integration


def wait_up(nodes: Any) -> None:
    """Until both ends' operstate reads "up": the kernel's link watch sets it a moment after `ip link set up`."""
    deadline = time.monotonic() + 120
    for ns, ifname in zip(nodes.ns, nodes.ifname):
        while True:
            state = subprocess.run(in_ns(ns, ["cat", f"/sys/class/net/{ifname}/operstate"]), capture_output=True,
                                   text=True, timeout=60).stdout.strip()
            if state == "up":
                break
            assert time.monotonic() < deadline, f"{ns} {ifname} stays {state!r}"
            time.sleep(0.05)


def doctor_in(ns: str, peer: str, cwd: Path) -> Dict[str, Any]:
    """doctor --deep's network check in namespace `ns`. Not the all-reduce across the nodes: with this node in the
    list it would start a torchrun rank that waits for a peer nobody starts here (test_gloo_allreduce_across_two_
    nodes_through_torchrun runs it on both nodes)."""
    argv = in_ns(ns, [sys.executable, "-m", "hosttune", "doctor", "--deep", "--only", "os", "--json", "--nodes", peer,
                      "--skip", "os.deep_nodes_allreduce"])
    res = subprocess.run(argv, cwd=cwd, env=checkout_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode in (0, 1), res.stderr
    return {f["id"]: f for f in json.loads(res.stdout)["findings"]}


def test_network_path_to_the_other_node_over_veth(tmp_path: Path) -> None:
    with two_nodes() as nodes:
        wait_up(nodes)
        got = doctor_in(nodes.ns[0], nodes.addr[1], tmp_path)["os.deep_network"]
        assert got["status"] == "pass", got
        assert f"{nodes.addr[1]} via {nodes.ifname[0]} (other, from {nodes.addr[0]}): MTU 1500" in got["actual"]
        # a smaller MTU on this node's end (an overlay's, or a mismatch with the other node): a warning naming it
        subprocess.run(["ip", "-n", nodes.ns[0], "link", "set", nodes.ifname[0], "mtu", "1400"], check=True,
                       timeout=60)
        got = doctor_in(nodes.ns[0], f"{nodes.addr[1]},{nodes.addr[0]}", tmp_path)["os.deep_network"]
        assert got["status"] == "warn" and "MTU 1400 is below 1500" in got["actual"], got
        assert f"{nodes.addr[0]}: this host" in got["actual"]
        # the link down on this end: the other node cannot be reached that way
        subprocess.run(["ip", "-n", nodes.ns[0], "link", "set", nodes.ifname[0], "down"], check=True, timeout=60)
        got = doctor_in(nodes.ns[0], nodes.addr[1], tmp_path)["os.deep_network"]
        assert got["status"] == "fail", got


def both(nodes: Any, tmp_path: Path) -> List[Dict[str, Any]]:
    """The same doctor --deep --nodes command on both nodes at once; each node's findings by id."""
    argv = [sys.executable, "-m", "hosttune", "doctor", "--deep", "--only", "os", "--json", "--python", sys.executable,
            "--nodes", f"{nodes.addr[0]},{nodes.addr[1]}", "--skip", "os.deep_container"]
    procs = [subprocess.Popen(in_ns(ns, argv), cwd=tmp_path, env=checkout_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for ns in nodes.ns]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode in (0, 1), err
            outs.append({f["id"]: f for f in json.loads(out)["findings"]})
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return outs


@pytest.mark.slow
def test_gloo_allreduce_across_two_nodes_through_torchrun(tmp_path: Path) -> None:
    """The same command on both nodes (the same --nodes list): each node's doctor reports the same 2-rank all-reduce,
    with correct sums and nccl-tests' busbw = algbw x 2(n-1)/n, which for 2 ranks equals algbw. Then one node's end
    gets a smaller MTU: both nodes name the mismatch (each learns the other's MTU through the all-reduce)."""
    pytest.importorskip("torch")
    with two_nodes() as nodes:
        wait_up(nodes)
        for found in both(nodes, tmp_path):
            got = found["os.deep_nodes_allreduce"]
            assert got["status"] == "pass", got
            m = re.match(r"2 ranks, 16 MiB: busbw ([0-9.]+) GB/s \(algbw ([0-9.]+), ", got["actual"])
            assert m and float(m.group(1)) == float(m.group(2)) and float(m.group(1)) > 0, got
            assert found["os.deep_network"]["status"] == "pass", found["os.deep_network"]
        subprocess.run(["ip", "-n", nodes.ns[0], "link", "set", nodes.ifname[0], "mtu", "1400"], check=True,
                       timeout=60)
        for found in both(nodes, tmp_path):
            got = found["os.deep_nodes_allreduce"]
            assert got["status"] == "warn" and "MTU differs across the nodes" in got["actual"], got
            assert f"{nodes.addr[0]} {nodes.ifname[0]} 1400" in got["actual"], got
            assert f"{nodes.addr[1]} {nodes.ifname[1]} 1500" in got["actual"], got
