"""NUMA nodes from sysfs: online CPUs, memory and distances per node; sparse ids and CPU-less nodes are real."""

import re
from typing import Dict, List, Optional, Sequence

from hosttune.detect.hostio import HostIO, small_int
from hosttune.facts import Numa, NumaNode

NODE_DIR = "/sys/devices/system/node"


def parse_node_meminfo(text: Optional[str]) -> Optional[int]:
    """nodeN/meminfo "Node 0 MemTotal:  16384 kB" -> MiB."""
    for line in (text or "").splitlines():
        m = re.match(r"\s*Node\s+\d+\s+MemTotal:\s+(\d+)\s*kB", line)
        value = small_int(m.group(1)) if m else None
        if value is not None:
            return value // 1024
    return None


def parse_meminfo(text: Optional[str]) -> Dict[str, int]:
    """/proc/meminfo -> {key: value}, values in kB where the file says kB (HugePages_* are counts)."""
    out: Dict[str, int] = {}
    for line in (text or "").splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        value = small_int(fields[0]) if fields else None
        if value is not None and value >= 0:
            out[key.strip()] = value
    return out


def probe(io: HostIO, online: Sequence[int], cgroup_mems: Optional[Sequence[int]] = None) -> Numa:
    online_set = set(online)
    # Node ids are below MAX_NUMNODES (1 << CONFIG_NODES_SHIFT, at most 1024): five digits is plenty.
    ids = sorted(int(n[4:]) for n in io.listdir(NODE_DIR)
                 if n.startswith("node") and n[4:].isdigit() and small_int(n[4:], 5) is not None)
    nodes: List[NumaNode] = []
    if not ids:
        # Single-node machines built without NUMA have no node/ folder: one node 0 with everything (as hwloc does).
        total = parse_meminfo(io.read("/proc/meminfo")).get("MemTotal")
        if not io.isdir(NODE_DIR):
            io.note("numa", f"{NODE_DIR} not found; assuming one node")
        nodes.append(NumaNode(id=0, cpus=tuple(online), memory_mb=(total or 0) // 1024, distances=(10,)))
    else:
        for nid in ids:
            d = f"{NODE_DIR}/node{nid}"
            got = io.cpus(f"{d}/cpulist", f"numa.node{nid}", f"{d}/cpumap")
            if got is None:
                io.note(f"numa.node{nid}", "no cpulist or cpumap")
            cpus = got or []
            mem = parse_node_meminfo(io.read(f"{d}/meminfo"))
            if mem is None:
                io.note(f"numa.node{nid}", "no MemTotal in meminfo")
            dist = tuple(v for v in (small_int(x) for x in (io.read(f"{d}/distance") or "").split()) if v is not None)
            # Node cpulists can name CPUs that are offline or were never captured (hwloc README caveat 2).
            nodes.append(NumaNode(id=nid, cpus=tuple(c for c in cpus if c in online_set), memory_mb=mem or 0,
                                  distances=dist))
    node_ids = [n.id for n in nodes]
    allowed = node_ids if cgroup_mems is None else [n for n in node_ids if n in set(cgroup_mems)]
    return Numa(nodes=tuple(nodes), allowed_mems=tuple(allowed))
