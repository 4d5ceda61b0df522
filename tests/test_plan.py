"""Per-rank plans: hwloc fixture hosts (checked against hwloc's own topology) and synthetic GPU hosts built in code."""

import dataclasses
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest
from conftest import HWLOC_NAMES, hwloc_expected

from hosttune import plan, profile
from hosttune.errors import UserError
from hosttune.facts import Allocators, Cgroup, Cpu, Facts, Gpu, Numa, NumaNode

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
IS_ROOT = os.geteuid() == 0


def parse_cpulist(text: str) -> List[int]:
    out: List[int] = []
    for part in text.strip().strip("\x00").split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def kernel_node_cpus(root: Path, exp: Dict[str, Any]) -> Dict[int, List[int]]:
    """The kernel's own node -> cpulist where captured (hwloc attaches CPU-less memory nodes to CPUs; the kernel
    does not), else hwloc's."""
    out = {}
    for n in exp["numa_nodes"]:
        f = root / f"sys/devices/system/node/node{n['os_index']}/cpulist"
        out[n["os_index"]] = parse_cpulist(f.read_text()) if f.is_file() else n["cpus"]
    return out


@pytest.fixture(scope="module")
def throughput() -> profile.Profile:
    return profile.load("throughput")


def check_layout(plans: List[plan.RankPlan], allowed: Sequence[int], cores: Sequence[Sequence[int]],
                 node_cpus: Dict[int, Sequence[int]], allowed_mems: Sequence[int]) -> None:
    """Invariants every layout must keep, with topology from an independent source (hwloc's expected output)."""
    n = len(plans)
    allowed_set = set(allowed)
    core_of = {p: tuple(c) for c in cores for p in c if p in allowed_set}
    n_cores = len({core_of[p] for p in allowed_set if p in core_of})
    seen: Dict[int, int] = {}
    for rp in plans:
        assert rp.cpus, f"rank {rp.local_rank} is unbound"
        assert set(rp.cpus) <= allowed_set, "a rank got a CPU the cgroup forbids"
        for p in rp.cpus:  # SMT siblings stay together
            assert {q for q in core_of.get(p, (p,)) if q in allowed_set} <= set(rp.cpus)
        phys = len({core_of.get(p, (p,)) for p in rp.cpus})
        assert rp.env["OMP_NUM_THREADS"] == rp.env["MKL_NUM_THREADS"] == str(rp.threads)
        if n <= n_cores:
            assert rp.threads == phys, "threads must equal the physical cores of the binding"
            for p in rp.cpus:
                assert p not in seen, f"CPU {p} given to ranks {seen[p]} and {rp.local_rank}"
                seen[p] = rp.local_rank
        rank_nodes = {nid for nid, cpus in node_cpus.items() if set(cpus) & set(rp.cpus)}
        for m in rp.mems:  # memory on the rank's own nodes, never on a CPU-less or forbidden node
            assert m in rank_nodes and m in allowed_mems
        assert set(rp.mems) == rank_nodes & set(allowed_mems)
        assert rp.mem_policy == ("bind" if rp.mems else "none")
    if n <= n_cores:
        assert set(seen) == allowed_set, "every allowed CPU is used by exactly one rank"
    # NUMA alignment: with fewer ranks than CPU nodes a node is never split; with more, a rank never spans nodes.
    cpu_nodes = {nid: set(c) & allowed_set for nid, c in node_cpus.items() if set(c) & allowed_set}
    if n <= len(cpu_nodes):
        for cpus in cpu_nodes.values():
            assert sum(1 for rp in plans if cpus & set(rp.cpus)) == 1
    elif n <= n_cores:
        for rp in plans:
            assert sum(1 for cpus in cpu_nodes.values() if cpus & set(rp.cpus)) <= 1


@pytest.mark.parametrize("name", HWLOC_NAMES)
def test_hwloc_fixture_plans(name: str, hwloc_tree: Any, throughput: profile.Profile) -> None:
    from hosttune.detect import collect

    root = hwloc_tree(name)
    facts = collect(root, probe_torch=False)
    exp = hwloc_expected(name)
    allowed = exp["allowed"]["pus_os_indexes"]
    assert sorted(facts.cpu.allowed_cpus) == sorted(allowed)
    assert sorted(tuple(c) for c in facts.cpu.cores if set(c) & set(allowed)) == sorted(
        tuple(c) for c in exp["core_pus"] if set(c) & set(allowed))
    node_cpus = kernel_node_cpus(root, exp)
    mems = exp["allowed"]["numa_nodes_os_indexes"]
    for ws in (1, 2, 3, 4, 7):
        plans = plan.resolve_all(facts, throughput, ws, environ={})
        check_layout(plans, allowed, exp["core_pus"], node_cpus, mems)
    one = plan.resolve(facts, throughput, 0, 1, environ={})
    assert one.threads == exp["allowed"]["cores"], "a single process keeps every allowed physical core"


def test_fixture_with_cpuset_and_offline_cpu(hwloc_tree: Any, throughput: profile.Profile) -> None:
    from hosttune.detect import collect

    facts = collect(hwloc_tree("16amd64-8n2c-cpusets"), probe_torch=False)
    plans = plan.resolve_all(facts, throughput, 2, environ={})
    assert [plan.cpulist(p.cpus) for p in plans] == ["0-3,5", "6,12-15"]
    assert 4 not in {c for p in plans for c in p.cpus}  # offline
    assert [p.mems for p in plans] == [(1, 2), (3,)]  # node 0, 6, 7 memory is outside cpuset.mems 1-4


# ------------------------------------------------------------------------------------------------------------------
# Synthetic GPU hosts

NODE_CORES = 16


def two_node_host(gpu_numa: Sequence[int] = (0, 0, 0, 0, 1, 1, 1, 1), allowed: Optional[Sequence[int]] = None,
                  quota: Optional[float] = None, smt: bool = True, **over: Any) -> Facts:
    """2 sockets x 16 cores (x2 SMT: core i = PUs i and i+32); GPUs whose NVML index order is NOT bus order."""
    cores = tuple((i, i + 32) if smt else (i,) for i in range(2 * NODE_CORES))
    node0 = tuple(sorted(p for c in cores[:NODE_CORES] for p in c))
    node1 = tuple(sorted(p for c in cores[NODE_CORES:] for p in c))
    online = tuple(sorted(node0 + node1))
    buses = ["0000:1b:00.0", "0000:1c:00.0", "0000:3d:00.0", "0000:3e:00.0",
             "0000:9a:00.0", "0000:9b:00.0", "0000:c1:00.0", "0000:c2:00.0"][: len(gpu_numa)]
    order = list(reversed(range(len(buses))))  # NVML index 0 is the highest bus id
    gpus = tuple(
        Gpu(index=i, name="NVIDIA H100", uuid=f"GPU-{b:08x}-aaaa-bbbb-cccc-{b:012x}", pci_bus_id=buses[b],
            numa_node=gpu_numa[b])
        for i, b in enumerate(order)
    )
    allowed_t = tuple(allowed) if allowed is not None else online
    return Facts(
        cpu=Cpu(online=online, logical=len(online), physical=len(cores), cores=cores, smt=smt, allowed_cpus=allowed_t,
                quota_cpus=quota, cgroup=Cgroup(version=2, quota_cpus=quota)),
        numa=Numa(nodes=(NumaNode(0, node0, 256000, (10, 21)), NumaNode(1, node1, 256000, (21, 10))),
                  allowed_mems=(0, 1)),
        gpus=gpus,
        allocators=Allocators(jemalloc=JEMALLOC),
        **over,
    )


def by_bus(facts: Facts) -> List[Gpu]:
    return sorted(facts.gpus, key=lambda g: g.pci_bus_id)


def test_eight_gpus_two_nodes(throughput: profile.Profile) -> None:
    facts = two_node_host()
    plans = plan.resolve_all(facts, throughput, 8, environ={})
    gpus = by_bus(facts)
    node_cpus = {n.id: set(n.cpus) for n in facts.numa.nodes}
    for r, rp in enumerate(plans):
        g = gpus[r]  # cuda:r under CUDA_DEVICE_ORDER=PCI_BUS_ID is the r-th GPU by bus id, not NVML index r
        assert rp.gpu == g.pci_bus_id and rp.cuda_device == r
        assert set(rp.cpus) <= node_cpus[g.numa_node], "CPUs must come from the GPU's NUMA node"
        assert rp.mems == (g.numa_node,) and rp.mem_policy == "bind"
        assert rp.threads == 4 and len(rp.cpus) == 8  # 16 cores / 4 ranks per node, SMT siblings together
        assert rp.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
        assert rp.env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
        assert rp.env["HOSTTUNE_PIN_MEMORY"] == "1"
        assert rp.env["HOSTTUNE_NUM_WORKERS"] == "2" and rp.env["HOSTTUNE_PERSISTENT_WORKERS"] == "1"
        assert rp.env["HOSTTUNE_PREFETCH_FACTOR"] == "2"
        assert "CUDA_VISIBLE_DEVICES" not in rp.env  # cuda:LOCAL_RANK keeps working in the user's script
        assert any(g.pci_bus_id in why for why in rp.reasons)
    check_layout(plans, facts.cpu.allowed_cpus, facts.cpu.cores, {n.id: n.cpus for n in facts.numa.nodes}, (0, 1))


def test_two_ranks_on_eight_gpus_share_node0(throughput: profile.Profile) -> None:
    plans = plan.resolve_all(two_node_host(), throughput, 2, environ={})
    assert [p.mems for p in plans] == [(0,), (0,)]
    assert not set(plans[0].cpus) & set(plans[1].cpus)
    assert [p.threads for p in plans] == [8, 8]


def test_cuda_visible_devices_indices_are_pci_order(throughput: profile.Profile) -> None:
    facts = two_node_host(gpu_numa=(0, 1, 0, 1, 0, 1, 0, 1))
    gpus = by_bus(facts)
    plans = plan.resolve_all(facts, throughput, 2, environ={"CUDA_VISIBLE_DEVICES": "3,1"})
    assert [p.gpu for p in plans] == [gpus[3].pci_bus_id, gpus[1].pci_bus_id]
    assert [p.cuda_device for p in plans] == [0, 1]
    # NVML index 3 is a different GPU on this host; the plan must not use it.
    assert next(g for g in facts.gpus if g.index == 3).pci_bus_id != plans[0].gpu
    assert [p.mems for p in plans] == [(1,), (1,)]
    assert set(plans[0].cpus) | set(plans[1].cpus) == set(facts.numa.nodes[1].cpus)
    assert not set(plans[0].cpus) & set(plans[1].cpus)


def test_cuda_visible_devices_uuids_mig_and_empty(throughput: profile.Profile) -> None:
    facts = two_node_host(gpu_numa=(0, 1, 0, 1, 0, 1, 0, 1))
    gpus = by_bus(facts)
    env = {"CUDA_VISIBLE_DEVICES": f"{gpus[5].uuid},{(gpus[2].uuid or '')[:12]}"}  # full UUID, then a prefix
    plans = plan.resolve_all(facts, throughput, 2, environ=env)
    assert [p.gpu for p in plans] == [gpus[5].pci_bus_id, gpus[2].pci_bus_id]
    assert [p.mems for p in plans] == [(1,), (0,)]
    # legacy MIG id names its parent GPU; a modern MIG UUID does not, so that rank gets a NUMA-balanced share
    mig = {"CUDA_VISIBLE_DEVICES": f"MIG-{gpus[6].uuid}/1/0,MIG-8d2a7c1e-1111-2222-3333-444455556666"}
    plans = plan.resolve_all(facts, throughput, 2, environ=mig)
    assert plans[0].gpu == gpus[6].pci_bus_id and plans[0].mems == (0,)
    assert plans[1].gpu is None and plans[1].cpus and not set(plans[0].cpus) & set(plans[1].cpus)
    assert any("MIG" in r for r in plans[1].reasons + plans[0].reasons)
    # empty: no GPU at all; the plan is a CPU plan
    plans = plan.resolve_all(facts, throughput, 2, environ={"CUDA_VISIBLE_DEVICES": ""})
    assert [p.gpu for p in plans] == [None, None]
    assert [p.mems for p in plans] == [(0,), (1,)]
    assert plans[0].env["HOSTTUNE_PIN_MEMORY"] == "0" and "PYTORCH_CUDA_ALLOC_CONF" not in plans[0].env
    # an entry CUDA cannot parse ends the list
    plans = plan.resolve_all(facts, throughput, 2, environ={"CUDA_VISIBLE_DEVICES": "2,GPU-nope,1"})
    assert plans[0].gpu == plans[1].gpu == gpus[2].pci_bus_id


def test_gpus_with_unknown_numa_node_get_a_balanced_split(throughput: profile.Profile) -> None:
    facts = two_node_host(gpu_numa=(-1,) * 8)
    plans = plan.resolve_all(facts, throughput, 4, environ={})
    check_layout(plans, facts.cpu.allowed_cpus, facts.cpu.cores, {n.id: n.cpus for n in facts.numa.nodes}, (0, 1))
    assert [p.mems for p in plans] == [(0,), (0,), (1,), (1,)]
    assert all(p.threads == 8 for p in plans)
    assert all(any("unknown" in r for r in p.reasons) for p in plans)


def test_cgroup_cpuset_and_quota(throughput: profile.Profile) -> None:
    allowed = [c for i in list(range(0, 4)) + list(range(16, 20)) for c in (i, i + 32)]  # 4 cores on each node
    facts = two_node_host(gpu_numa=(0, 1, 0, 1, 0, 1, 0, 1), allowed=allowed, quota=6.0)
    plans = plan.resolve_all(facts, throughput, 4, environ={})  # 2 cores each, but only 6 CPUs of quota
    assert set().union(*[set(p.cpus) for p in plans]) == set(allowed)
    assert sorted(p.threads or 0 for p in plans) == [1, 1, 2, 2]
    for p in plans:
        assert set(p.cpus) <= set(facts.numa.nodes[by_bus(facts)[p.local_rank].numa_node].cpus)
    assert any("quota" in r for r in plans[0].reasons)
    eight = plan.resolve_all(facts, throughput, 8, environ={})  # more ranks than the quota: 1 each, said so
    assert all(p.threads == 1 for p in eight) and any("exceed" in r for r in eight[0].reasons)
    gpu0 = plan.resolve(facts, throughput, 0, 1, environ={})
    assert gpu0.threads == 4 and gpu0.mems == (0,)  # a lone GPU rank keeps to its GPU's node
    cpu = dataclasses.replace(facts, gpus=())
    one = plan.resolve(cpu, throughput, 0, 1, environ={})
    assert one.threads == 6 and len(one.cpus) == 16  # 8 allowed cores but a quota of 6 CPUs
    tiny = dataclasses.replace(cpu, cpu=dataclasses.replace(facts.cpu, quota_cpus=0.5))
    assert plan.resolve(tiny, throughput, 0, 1, environ={}).threads == 1


def test_gpu_on_cpu_less_node_uses_nearest_cpus_and_its_own_memory(throughput: profile.Profile) -> None:
    base = two_node_host(gpu_numa=(2, 3))
    nodes = (
        NumaNode(0, base.numa.nodes[0].cpus, 1000, (10, 20, 11, 40)),
        NumaNode(1, base.numa.nodes[1].cpus, 1000, (20, 10, 40, 11)),
        NumaNode(2, (), 96000, (11, 40, 10, 80)),  # GPU memory exposed as a CPU-less node (Grace Hopper style)
        NumaNode(3, (), 96000, (40, 11, 80, 10)),
    )
    facts = dataclasses.replace(base, numa=Numa(nodes=nodes, allowed_mems=(0, 1, 2, 3)))
    plans = plan.resolve_all(facts, throughput, 2, environ={})
    assert set(plans[0].cpus) <= set(nodes[0].cpus) and set(plans[1].cpus) <= set(nodes[1].cpus)
    assert [p.mems for p in plans] == [(2,), (3,)]
    # CPU ranks never bind memory to the CPU-less nodes
    cpu_plans = plan.resolve_all(facts, profile.load("cpu-only"), 4, environ={})
    assert all(set(p.mems) <= {0, 1} for p in cpu_plans)
    assert all(p.env["CUDA_VISIBLE_DEVICES"] == "" and p.gpu is None for p in cpu_plans)


def test_more_ranks_than_cores_share_with_one_thread(throughput: profile.Profile) -> None:
    facts = Facts(cpu=Cpu(online=(0, 1), logical=2, physical=2, cores=((0,), (1,)), allowed_cpus=(0, 1)),
                  numa=Numa(nodes=(NumaNode(0, (0, 1), 4000),), allowed_mems=(0,)))
    plans = plan.resolve_all(facts, throughput, 3, environ={})
    assert [p.cpus for p in plans] == [(0,), (1,), (0,)]
    assert all(p.threads == 1 for p in plans)
    assert all(any("shared" in r for r in p.reasons) for p in plans)
    single = plan.resolve(facts, throughput, 0, 1, environ={})
    assert single.env["OMP_NUM_THREADS"] == "2", "a lone process must not be forced to 1 thread"
    assert single.env["HOSTTUNE_NUM_WORKERS"] == "0"  # <= 2 cores: workers steal compute


def test_binding_modes_threads_and_memory_policy(tmp_path: Path) -> None:
    facts = two_node_host(gpu_numa=())
    numa = profile.load_text("base: throughput\nbinding: numa\n")
    plans = plan.resolve_all(facts, numa, 4, environ={})
    assert plans[0].cpus == plans[1].cpus == facts.numa.nodes[0].cpus
    assert [p.threads for p in plans] == [8, 8, 8, 8]
    none = profile.load_text("base: throughput\nbinding: none\nmemory_policy: none\n")
    plans = plan.resolve_all(facts, none, 4, environ={})
    assert all(p.cpus == () and p.mems == () and p.threads == 8 for p in plans)
    pinned = profile.load_text("base: throughput\nthreads: 64\nmemory_policy: preferred\n")
    rp = plan.resolve(facts, pinned, 0, 2, environ={})
    assert rp.threads == 16 and any("capped" in r for r in rp.reasons)
    assert rp.mem_policy == "preferred" and rp.mems == (0,)
    lone = plan.resolve(facts, pinned, 0, 1, environ={})  # all 32 cores over 2 nodes, but preferred names one node
    assert lone.mems == (0,) and len(lone.cpus) == 64
    fixed = profile.load_text("base: throughput\nthreads: 3\n")
    assert plan.resolve(facts, fixed, 1, 2, environ={}).env["OMP_NUM_THREADS"] == "3"


def test_common_env_is_a_subset_of_every_rank(throughput: profile.Profile) -> None:
    facts = two_node_host()
    environ = {"LD_PRELOAD": "/opt/x/libfoo.so"}
    common = plan.common_env(facts, throughput, environ)
    for rp in plan.resolve_all(facts, throughput, 4, environ=environ):
        assert {k: rp.env[k] for k in common} == common
        assert rp.common == common
    assert "OMP_NUM_THREADS" not in common


def test_debug_switches_only_in_debug_and_deterministic_in_reproducible() -> None:
    facts = two_node_host()
    keys = set(plan.DEBUG_ENV)
    for name in ("throughput", "reproducible", "memory-saver", "cpu-only"):
        env = plan.resolve(facts, profile.load(name), 0, 1, environ={}).env
        assert not keys & set(env), name
    env = plan.resolve(facts, profile.load("debug"), 0, 1, environ={}).env
    assert {k: env[k] for k in keys} == plan.DEBUG_ENV
    env = plan.resolve(facts, profile.load("reproducible"), 0, 1, environ={}).env
    assert env["HOSTTUNE_DETERMINISTIC"] == "1" and env["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert env["PYTHONHASHSEED"] == "0"
    ms = plan.resolve(facts, profile.load("memory-saver"), 0, 1, environ={}).env
    assert "expandable_segments:True" in ms["PYTORCH_CUDA_ALLOC_CONF"] and "dirty_decay_ms:1000" in ms["MALLOC_CONF"]


# ------------------------------------------------------------------------------------------------------------------
# LD_PRELOAD safety and allocator fallback


def host_with(jemalloc: Optional[str] = None, tcmalloc: Optional[str] = None, iomp5: Optional[str] = None) -> Facts:
    return dataclasses.replace(two_node_host(gpu_numa=()),
                               allocators=Allocators(jemalloc=jemalloc, tcmalloc=tcmalloc, iomp5=iomp5))


@pytest.mark.skipif(not os.path.exists(JEMALLOC), reason="libjemalloc2 not installed")
def test_preload_prepends_and_never_duplicates(throughput: profile.Profile) -> None:
    facts = host_with(jemalloc=JEMALLOC)
    env = plan.resolve(facts, throughput, 0, 1, environ={"LD_PRELOAD": "/opt/a.so /opt/b.so"}).env
    assert env["LD_PRELOAD"] == f"{JEMALLOC}:/opt/a.so:/opt/b.so"
    assert env["MALLOC_CONF"] == profile.THROUGHPUT_MALLOC_CONF
    again = plan.resolve(facts, throughput, 0, 1, environ={"LD_PRELOAD": env["LD_PRELOAD"]}).env
    assert "LD_PRELOAD" not in again or again["LD_PRELOAD"] == env["LD_PRELOAD"]


@pytest.mark.skipif(not IS_ROOT, reason="needs root to give files away")
@pytest.mark.skipif(not os.path.exists(TCMALLOC), reason="libgoogle-perftools4 not installed")
@pytest.mark.parametrize("problem", ["not-root", "group-writable", "world-writable", "missing", "relative", "dir"])
def test_unsafe_preload_falls_back_with_reason(problem: str, tmp_path: Path, throughput: profile.Profile) -> None:
    lib = tmp_path / "libjemalloc.so.2"
    lib.write_bytes(Path(JEMALLOC).read_bytes() if os.path.exists(JEMALLOC) else b"\x7fELF")
    os.chmod(lib, 0o644)
    path = str(lib)
    if problem == "not-root":
        os.chown(lib, 65534, 65534)
    elif problem == "group-writable":
        os.chmod(lib, 0o664)
    elif problem == "world-writable":
        os.chmod(lib, 0o646)
    elif problem == "missing":
        path = str(tmp_path / "nope.so")
    elif problem == "relative":
        path = "libjemalloc.so.2"
    elif problem == "dir":
        path = str(tmp_path)
    rp = plan.resolve(host_with(jemalloc=path, tcmalloc=TCMALLOC), throughput, 0, 1, environ={})
    # a symlink to a root-owned library is fine; what is preloaded is the file it resolves to
    assert rp.env["LD_PRELOAD"] == os.path.realpath(TCMALLOC)
    assert rp.env["TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD"] == "107374182400"
    assert "MALLOC_CONF" not in rp.env
    assert any("jemalloc refused" in r for r in rp.reasons)
    nothing = plan.resolve(host_with(jemalloc=path), throughput, 0, 1, environ={})
    assert "LD_PRELOAD" not in nothing.env and any("glibc" in r for r in nothing.reasons)


def test_system_allocator_and_intel_openmp(throughput: profile.Profile, tmp_path: Path) -> None:
    system = profile.load_text("base: throughput\nallocator: system\n")
    env = plan.resolve(host_with(jemalloc=JEMALLOC), system, 0, 1, environ={}).env
    assert "LD_PRELOAD" not in env and "MALLOC_CONF" not in env and "KMP_AFFINITY" not in env
    env = plan.resolve(host_with(), throughput, 0, 1, environ={"LD_PRELOAD": "/opt/intel/lib/libiomp5.so"}).env
    assert env["KMP_BLOCKTIME"] == "1" and "KMP_AFFINITY" in env


def test_fixture_root_allocators_are_checked_under_the_root(tmp_path: Path, throughput: profile.Profile) -> None:
    facts = dataclasses.replace(host_with(jemalloc=JEMALLOC), root=str(tmp_path))
    rp = plan.resolve(facts, throughput, 0, 1, environ={})
    assert "LD_PRELOAD" not in rp.env  # not present in the captured tree


def test_bad_ranks_are_user_errors(throughput: profile.Profile) -> None:
    facts = two_node_host()
    for rank, size in ((2, 2), (-1, 2), (0, 0)):
        with pytest.raises(UserError):
            plan.resolve(facts, throughput, rank, size, environ={})


def test_plan_from_a_fixture_with_gpus_from_hwloc(hwloc_tree: Any, throughput: profile.Profile) -> None:
    """nvidiagpunumanodes: 6 GPUs, 2 CPU nodes (0, 8) and 6 CPU-less GPU-memory nodes (250-255)."""
    from hosttune.detect import collect

    exp = hwloc_expected("nvidiagpunumanodes")
    facts = collect(hwloc_tree("nvidiagpunumanodes"), probe_torch=False)
    gpus = tuple(Gpu(index=i, pci_bus_id=g["pci_busid"], numa_node=g["numa_node"]) for i, g in enumerate(exp["gpus"]))
    facts = dataclasses.replace(facts, gpus=gpus)
    plans = plan.resolve_all(facts, throughput, 6, environ={})
    for rp, g in zip(plans, sorted(exp["gpus"], key=lambda g: g["pci_busid"])):
        assert rp.gpu == g["pci_busid"]
        assert set(rp.cpus) <= set(g["local_cpus"]) and rp.mems == (g["numa_node"],)
    cpus: List[Tuple[int, ...]] = [p.cpus for p in plans]
    assert len(set().union(*map(set, cpus))) == sum(len(c) for c in cpus)  # disjoint


@pytest.mark.parametrize("profile_name", ["throughput", "cpu-only", "reproducible"])
def test_a_rank_replans_to_the_same_env_inside_torchrun(profile_name: str) -> None:
    """The launcher sets common_env (and an OMP_NUM_THREADS, so torchrun adds no 1) once for torchrun, and each
    rank's shim plans again from torchrun's environment with what the launcher set undone (rank.users_env): it
    must arrive at exactly what the parent planned, the launcher's variables never taken for the user's."""
    from hosttune.launch import rank

    facts = two_node_host(gpu_numa=(0, 1, 0, 1, 0, 1, 0, 1))
    prof = profile.load(profile_name)
    outer = {"LD_PRELOAD": "/opt/a.so", "CUDA_VISIBLE_DEVICES": "3,1,0,2"}
    launcher = dict(plan.common_env(facts, prof, outer), OMP_NUM_THREADS="5")
    touched = {k: outer.get(k) for k in launcher}
    inner = rank.users_env(touched, dict(outer, **launcher, LOCAL_WORLD_SIZE="4"))
    for r in range(4):
        a, b = plan.resolve(facts, prof, r, 4, environ=outer), plan.resolve(facts, prof, r, 4, environ=inner)
        assert b.kept == a.kept  # the caller's own settings only (cpu-only: their CUDA_VISIBLE_DEVICES)
        assert dict(a.env) == dict(b.env) and a.cpus == b.cpus and a.mems == b.mems and a.gpu == b.gpu


def test_gpu_numa_minus_one_uses_local_cpulist_when_it_names_one_node(throughput: profile.Profile) -> None:
    base = two_node_host(gpu_numa=(-1, -1))
    node1 = base.numa.nodes[1].cpus
    gpus = tuple(dataclasses.replace(g, local_cpus=node1 if g.pci_bus_id == by_bus(base)[0].pci_bus_id else ())
                 for g in base.gpus)
    facts = dataclasses.replace(base, gpus=gpus)
    plans = plan.resolve_all(facts, throughput, 2, environ={})
    assert set(plans[0].cpus) <= set(node1) and plans[0].mems == (1,)
    assert any("local_cpulist" in r for r in plans[0].reasons)
    assert set(plans[1].cpus) <= set(base.numa.nodes[0].cpus)  # the balanced share of what is left
