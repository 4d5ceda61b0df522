"""hosttune.detect.numa on a host with more than ten NUMA nodes (issue 21, mutation round 6): the nodes come by id,
not in the folder's name order (node0, node1, node10, ..., node2), so node i is the i-th node and the i-th column of
every distance row, as `numactl -H` prints them."""

from pathlib import Path
from typing import Dict

from conftest import build_tree

from hosttune.detect import numa
from hosttune.detect.hostio import HostIO

N = "sys/devices/system/node"
NODES = 16  # e.g. four sockets in SNC-4 mode; MAX_NUMNODES allows up to 1024


def _snc4_tree(root: Path) -> Path:
    """Sixteen nodes of four CPUs and 1 GiB each; 10 to itself, 12 within a socket, 21 across sockets."""
    files: Dict[str, str] = {f"{N}/online": f"0-{NODES - 1}\n", f"{N}/possible": f"0-{NODES - 1}\n"}
    for i in range(NODES):
        row = " ".join("10" if j == i else "12" if j // 4 == i // 4 else "21" for j in range(NODES))
        files[f"{N}/node{i}/cpulist"] = f"{4 * i}-{4 * i + 3}\n"
        files[f"{N}/node{i}/meminfo"] = f"Node {i} MemTotal:       1048576 kB\n"
        files[f"{N}/node{i}/distance"] = row + "\n"
    return build_tree(root, files)


def test_sixteen_nodes_come_by_id_and_match_their_distance_rows(tmp_path: Path) -> None:
    io = HostIO(_snc4_tree(tmp_path))
    assert io.listdir(f"/{N}")[:4] == ["node0", "node1", "node10", "node11"]  # what the folder's name order gives
    got = numa.probe(io, online=list(range(4 * NODES)))
    assert [n.id for n in got.nodes] == list(range(NODES))
    assert got.allowed_mems == tuple(range(NODES))
    for i, node in enumerate(got.nodes):
        assert node.cpus == (4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3) and node.memory_mb == 1024
        assert node.distances[i] == 10, (i, node)  # its own column: the row's position is the node's id
    assert io.missing == []
    # a cgroup's cpuset.mems keeps the same order
    assert numa.probe(io, online=list(range(4 * NODES)), cgroup_mems=[12, 2, 10, 3]).allowed_mems == (2, 3, 10, 12)
