"""Pins for hosttune/profile/generate.py (issue 21, round 5): each reason the generator gives (allocator found or
set, threads and binding with quota/SMT/GPUs, memory policy by node count, CUDA allocator and DataLoader), the
name/summary/provenance of a generated profile, the fingerprint note, to_yaml's layout and write's refusals and
modes."""

import dataclasses
import importlib
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from hosttune.errors import UserError
from hosttune.facts import Allocators, Cpu, Distro, Facts, Gpu, Numa, NumaNode
from hosttune.profile.settings import DataLoader, Profile

G = importlib.import_module("hosttune.profile.generate")


def facts(nodes: int = 1, **kw: Any) -> Facts:
    cpus = tuple(range(4))
    per = len(cpus) // nodes
    numa = Numa(nodes=tuple(NumaNode(i, cpus[i * per:(i + 1) * per], 1000) for i in range(nodes)))
    cpu = kw.pop("cpu", Cpu(online=cpus, logical=4, physical=4, cores=tuple((c,) for c in cpus), allowed_cpus=cpus))
    return Facts(cpu=cpu, numa=numa, **kw)


def prof(**kw: Any) -> Profile:
    return Profile(name="b", summary="base", source="/b.yaml", **kw)


def test_allocator_found_or_set() -> None:
    assert G._allocator(prof(), facts(allocators=Allocators(jemalloc="/j.so", tcmalloc="/t.so")), "x") == \
        ("jemalloc", "jemalloc found at /j.so")
    assert G._allocator(prof(), facts(allocators=Allocators(tcmalloc_minimal="/tm.so")), "x") == \
        ("tcmalloc", "tcmalloc found at /tm.so (no jemalloc found)")
    assert G._allocator(prof(), facts(allocators=Allocators(tcmalloc="/t.so", tcmalloc_minimal="/tm.so")), "x")[1] \
        == "tcmalloc found at /t.so (no jemalloc found)"
    assert G._allocator(prof(), facts(distro=Distro(family="rhel")), "x") == \
        ("system", "no jemalloc or tcmalloc found; glibc malloc (for x1.14-1.20: dnf install jemalloc)")
    assert G._allocator(prof(), facts(distro=Distro(family="debian")), "x")[1].endswith("apt install libjemalloc2)")
    assert G._allocator(prof(allocator="tcmalloc"), facts(allocators=Allocators(jemalloc="/j.so", tcmalloc="/t.so")),
                        "base1") == ("tcmalloc", "tcmalloc set by base1; found at /t.so")
    assert G._allocator(prof(allocator="system"), facts(allocators=Allocators(jemalloc="/j.so")), "base1") == \
        ("system", "system set by base1")


def test_cpu_reasons() -> None:
    got = G._cpu_reasons(prof(), facts(nodes=2), "x")
    assert got == {"threads": "auto: physical cores of each rank's binding (4 allowed cores); never oversubscribed",
                   "binding": "auto: disjoint core sets per rank, NUMA-aligned over 2 node(s)"}
    smt = Cpu(online=(0, 1, 2, 3), logical=4, physical=2, cores=((0, 1), (2, 3)), allowed_cpus=(0, 1, 2),
              smt=True, quota_cpus=1.5)
    got = G._cpu_reasons(prof(), facts(cpu=smt, gpus=(Gpu(index=0), Gpu(index=1))), "x")
    assert got["threads"] == ("auto: physical cores of each rank's binding (2 allowed cores, cgroup quota 1.5 CPUs); "
                              "never oversubscribed")
    assert got["binding"] == ("auto: disjoint core sets per rank, NUMA-aligned over 1 node(s), SMT siblings together, "
                              "near each rank's GPU (2 GPUs)")
    no_nodes = Facts(cpu=Cpu(online=(0, 1), logical=2, physical=2, cores=(), allowed_cpus=()))
    got = G._cpu_reasons(prof(), no_nodes, "x")
    assert "(2 allowed cores)" in got["threads"] and "over 1 node(s)" in got["binding"]
    assert G._cpu_reasons(prof(threads=3, binding="numa"), facts(), "base1") == \
        {"threads": "3 per rank, set by base1", "binding": "numa, set by base1"}


def test_memory_policy() -> None:
    assert G._memory_policy(prof(memory_policy="bind"), facts(nodes=2), "x") == \
        ("auto", "auto: decided per run; here 2 NUMA nodes -> bind, memory on the rank's node")
    assert G._memory_policy(prof(memory_policy="auto"), facts(nodes=1), "x") == \
        ("auto", "auto: decided per run; here 1 NUMA node -> none, nothing to bind")
    assert G._memory_policy(prof(memory_policy="preferred"), facts(nodes=2), "base1") == \
        ("preferred", "preferred, set by base1 (2 NUMA nodes here)")


def test_device_reasons() -> None:
    assert G._device_reasons(prof(cuda_alloc_conf="c"), facts(), "x") == {
        "cuda_alloc_conf": "c: kept for GPU ranks (no GPU seen now)",
        "dataloader.num_workers": "auto: 0 when a rank has <= 2 cores (workers steal compute), else min(4, cores//2);"
                                  " here, one rank: 2",
        "dataloader.pin_memory": "auto: off (no GPU)"}
    got = G._device_reasons(prof(cuda_alloc_conf="c", dataloader=DataLoader(num_workers=1, pin_memory=True)),
                            facts(gpus=(Gpu(index=0),)), "base1")
    assert got == {"cuda_alloc_conf": "c: set by base1 for the 1 GPUs"}
    assert G._device_reasons(prof(), facts(gpus=(Gpu(index=0),)), "x")["dataloader.pin_memory"] == \
        "auto: on (GPUs present)"
    bare = Facts(cpu=Cpu(online=(), logical=0, physical=0, cores=(), allowed_cpus=()))
    assert G._device_reasons(prof(), bare, "x")["dataloader.num_workers"].endswith("else min(4, cores//2)")


def test_generate_names_and_reasons() -> None:
    f = facts(nodes=2, hostname="box", allocators=Allocators(jemalloc="/j.so"))
    p = G.generate(f, "throughput")
    assert p.name == "throughput@box" and p.summary.endswith(" (generated for box)") and p.source == "<generated>"
    assert p.allocator == "jemalloc" and p.memory_policy == "auto" and p.fingerprint == f.hardware_fingerprint()
    assert p.provenance["allocator"] == "generated: jemalloc found at /j.so"
    assert p.reasons["fingerprint"] == "hardware fingerprint of this host; when it changes, regenerate"
    assert p.reasons["debug"] == "debug switches off (only the debug profile sets them); from throughput"
    assert p.reasons["device"] == "GPUs when present; from throughput"
    assert p.reasons["binding"] == "auto: disjoint core sets per rank, NUMA-aligned over 2 node(s)"
    assert p.reasons["threads"].startswith("auto: physical cores of each rank's binding (4 allowed cores)")
    assert p.provenance["binding"] == "generated: " + p.reasons["binding"]
    assert p.reasons["memory_policy"].startswith("auto: decided per run; here 2 NUMA nodes")
    assert p.reasons["dataloader.pin_memory"] == "auto: off (no GPU)"
    anon = G.generate(facts(), "throughput")
    assert anon.name == "throughput" and anon.summary.endswith(" (generated for this host)")
    d = G.generate(facts(), "debug")
    own = G.load("debug").reasons["debug"]  # the base's own reason wins over the generator's default one
    assert d.reasons["debug"] == own and not d.provenance["debug"].startswith("generated:")


def test_fingerprint_note() -> None:
    f = facts(hostname="box")
    assert G.fingerprint_note(prof(), f) is None
    assert G.fingerprint_note(prof(fingerprint=f.hardware_fingerprint()), f) is None
    note = G.fingerprint_note(dataclasses.replace(prof(fingerprint="abc"), name="n\x1bx"), f)
    assert note == (f"hosttune: profile n x (/b.yaml) was generated for other hardware (fingerprint abc; the planned "
                    f"host box is {f.hardware_fingerprint()}): its auto settings are decided for the planned host, "
                    f"its fixed ones are used as written; regenerate with `hosttune profile generate --force`")
    assert "; the planned host is " in (G.fingerprint_note(prof(fingerprint="abc"), facts()) or "")


def test_to_yaml_layout() -> None:
    p = prof(threads=3, env={"A": "1", "B": "two\nlines"}, reasons={"threads": "three", "env.A": "why a"},
             dataloader=DataLoader(num_workers=2))
    text = G.to_yaml(p)
    lines = text.splitlines()
    assert lines[:4] == ["# hosttune profile b", "# base",
                         "# Policy for `hosttune exec` / `hosttune env`; host numbers (cores, nodes, paths) are "
                         "decided per run.", ""]
    assert "threads: 3  # three" in lines and "allocator: auto" in lines
    assert lines.count("dataloader:") == 1 and "  num_workers: 2" in lines and "  pin_memory: auto" in lines
    assert "tune:" in lines and "  swappiness: 10" in lines
    assert "env:" in lines and "  A: '1'  # why a" in lines
    assert not any(ln.startswith("malloc_conf") or ln.startswith("base") or ln.startswith("tcmalloc") for ln in lines)
    assert lines[lines.index("reasons:") + 1:lines.index("reasons:") + 3] == ["  env.A: why a", "  threads: three"]
    back = G.parse_text(text, Path("/x.yaml")).data
    assert back["env"] == {"A": "1", "B": "two\nlines"} and back["threads"] == 3
    assert "reasons:" not in G.to_yaml(prof())


def test_write_refuses_overwrites_and_sets_modes(tmp_path: Path) -> None:
    target = tmp_path / "new" / "p.yaml"
    old = os.umask(0o077)
    try:
        assert G.write(prof(), target, force=False) == target
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644 and stat.S_IMODE(os.stat(target.parent).st_mode) == 0o755
    with pytest.raises(UserError) as e:
        G.write(prof(threads=2), target, force=False)
    assert str(e.value) == f"{target} exists; use --force to replace it"
    G.write(prof(threads=2), target, force=True)
    assert "threads: 2" in target.read_text()
    link = tmp_path / "link.yaml"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(UserError, match="exists; use --force"):
        G.write(prof(), link, force=False)
    (tmp_path / "d.yaml").mkdir()
    with pytest.raises(UserError) as e:
        G.write(prof(), tmp_path / "d.yaml", force=False)  # anything at the name, unforced: "exists" first
    assert str(e.value) == f"{tmp_path / 'd.yaml'} exists; use --force to replace it"
    with pytest.raises(UserError) as e:
        G.write(prof(), tmp_path / "d.yaml", force=True)
    assert str(e.value) == f"{tmp_path / 'd.yaml'} is a directory"
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError) as e:
        G.write(prof(), tmp_path / "file" / "p.yaml", force=True)
    assert str(e.value).startswith(f"{tmp_path / 'file' / 'p.yaml'}: cannot write: ")
