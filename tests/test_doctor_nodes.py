"""doctor --deep --nodes over two "nodes" of this machine (network namespaces joined by a veth pair, tests/_nethelp.py):
the real command, inside one namespace, reads the kernel's route and that namespace's sysfs for the other."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

from _nethelp import in_ns, two_nodes
from conftest import checkout_env


def doctor_in(ns: str, peer: str, cwd: Path) -> Dict[str, Any]:
    argv = in_ns(ns, [sys.executable, "-m", "hosttune", "doctor", "--deep", "--only", "os", "--json", "--nodes", peer])
    res = subprocess.run(argv, cwd=cwd, env=checkout_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode in (0, 1), res.stderr
    return {f["id"]: f for f in json.loads(res.stdout)["findings"]}


def test_network_path_to_the_other_node_over_veth(tmp_path: Path) -> None:
    with two_nodes() as nodes:
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
