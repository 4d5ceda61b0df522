"""hosttune/profile/generate.py's `generate`, whole: every packaged base profile made concrete for six hosts (each
allocator case, GPUs or none, one or several NUMA nodes, SMT, a cgroup quota, a named host or none) gives exactly
the recorded name, summary, allocator, memory policy, fingerprint, reasons and provenance
(tests/recorded/profile/generate.json, recorded from the code before `generate` was split into steps)."""

import json
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune.facts import Allocators, Cgroup, Cpu, Distro, Facts, Gpu, Numa, NumaNode
from hosttune.profile.generate import generate

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "tests" / "recorded" / "profile" / "generate.json"
BASES = sorted(p.stem for p in (REPO / "profiles").glob("*.yaml"))


def _cpu(n: int, smt: bool = False, quota: Any = None, allowed: Any = None) -> Cpu:
    cores = tuple((c, c + n // 2) for c in range(n // 2)) if smt else tuple((c,) for c in range(n))
    return Cpu(model="X", online=tuple(range(n)), logical=n, physical=len(cores), packages=1, smt=smt, cores=cores,
               allowed_cpus=tuple(range(n)) if allowed is None else allowed, quota_cpus=quota,
               cgroup=Cgroup(version=2, quota_cpus=quota))


def hosts() -> Dict[str, Facts]:
    two_nodes = Numa(nodes=(NumaNode(0, (0, 1, 2, 3), 1024), NumaNode(1, (4, 5, 6, 7), 1024)))
    one_node = Numa(nodes=(NumaNode(0, tuple(range(8)), 2048),))
    gpus = (Gpu(index=0, pci_bus_id="0000:3b:00.0", numa_node=0), Gpu(index=1, pci_bus_id="0000:86:00.0",
                                                                      numa_node=1))
    return {
        "jemalloc-gpus-2nodes": Facts(hostname="gpu7", cpu=_cpu(8), numa=two_nodes, gpus=gpus,
                                      allocators=Allocators(jemalloc="/usr/lib/libjemalloc.so.2")),
        "tcmalloc-smt-quota": Facts(hostname="box", cpu=_cpu(8, smt=True, quota=2.5), numa=one_node,
                                    allocators=Allocators(tcmalloc_minimal="/usr/lib/libtcmalloc_minimal.so.4")),
        "full-tcmalloc": Facts(cpu=_cpu(8), numa=one_node, allocators=Allocators(tcmalloc="/l/libtcmalloc.so.4",
                                                                                 jemalloc=None)),
        "none-rhel": Facts(hostname="r", distro=Distro(id="rocky", family="rhel"), cpu=_cpu(2), numa=one_node),
        "none-debian-2nodes-cpuset": Facts(distro=Distro(id="debian", family="debian"),
                                           cpu=_cpu(8, allowed=(4, 5)), numa=two_nodes, gpus=gpus[:1]),
        "bare": Facts(),
    }


def _view(base: str, facts: Facts) -> Dict[str, Any]:
    p = generate(facts, base)
    # in their order (as `profile show` lists them), the checkout's own path written as <repo>
    return {"name": p.name, "summary": p.summary, "source": p.source, "allocator": p.allocator,
            "memory_policy": p.memory_policy, "fingerprint": p.fingerprint,
            "reasons": [[k, v] for k, v in p.reasons.items()],
            "provenance": [[k, v.replace(str(REPO), "<repo>")] for k, v in p.provenance.items()]}


def record() -> Dict[str, Any]:
    return {f"{base} {name}": _view(base, facts) for base in BASES for name, facts in hosts().items()}


@pytest.mark.parametrize("base", BASES)
def test_each_base_made_concrete_for_each_host_is_as_recorded(base: str) -> None:
    want = json.loads(RECORDED.read_text(encoding="utf-8"))
    for name, facts in hosts().items():
        assert _view(base, facts) == want[f"{base} {name}"], (base, name)


def test_the_recording_covers_every_packaged_base() -> None:
    assert len(BASES) >= 4 and sorted(json.loads(RECORDED.read_text(encoding="utf-8"))) == sorted(record())


def test_a_base_that_fixes_its_choices_keeps_them_and_says_who_set_them(tmp_path: Path) -> None:
    base = tmp_path / "fixed.yaml"
    base.write_text("summary: Fixed\nbase: throughput\nallocator: tcmalloc\nthreads: 3\nbinding: numa\n"
                    "memory_policy: preferred\ncuda_alloc_conf: ''\ndataloader:\n  pin_memory: true\n")
    facts = hosts()["full-tcmalloc"]
    p = generate(facts, str(base))
    r = p.reasons
    assert (p.allocator, p.memory_policy, p.threads, p.binding) == ("tcmalloc", "preferred", 3, "numa")
    assert r["allocator"] == f"tcmalloc set by {base}; found at /l/libtcmalloc.so.4"
    assert r["threads"] == f"3 per rank, set by {base}"
    assert r["binding"] == f"numa, set by {base}"
    assert r["memory_policy"] == f"preferred, set by {base} (1 NUMA node here)"
    # an empty cuda_alloc_conf and a fixed pin_memory get no generated reason
    assert not p.provenance.get("cuda_alloc_conf", "").startswith("generated")
    assert not p.provenance.get("dataloader.pin_memory", "").startswith("generated")
    assert p.provenance["binding"] == f"generated: numa, set by {base}"
    assert (p.name, p.summary) == ("fixed", "Fixed (generated for this host)")
