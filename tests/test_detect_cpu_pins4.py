"""hosttune.detect.cpu pinned (issue 21): /proc/cpuinfo on x86, ARM (every implementer and part lscpu names),
POWER; the ISA flags kept; online CPUs and the core/package topology from a sysfs tree; the allowed set."""

import sys
import types
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import build_tree

from hosttune.detect import cpu as C
from hosttune.detect.hostio import HostIO
from hosttune.facts import Cgroup

X86 = ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
       "flags\t\t: fpu sse2 lm avx2 avx512f amx_tile hypervisor avx512_bf16 bogus\n\n"
       "processor\t: 1\nvendor_id\t: Other\nmodel name\t: Second\nflags\t\t: sse2\n")


def _arm(impl: str, *parts: str) -> str:
    return "".join(f"processor\t: {i}\nFeatures\t: fp asimd sve bf16\nCPU implementer\t: {impl}\n"
                   f"CPU part\t: {p}\n\n" for i, p in enumerate(parts))


def test_x86_cpuinfo_first_processor_wins() -> None:
    info = C.parse_cpuinfo(X86)
    assert info == {"model": "Intel(R) Xeon(R) Platinum 8480+", "vendor": "GenuineIntel",
                    "flags": ["fpu", "sse2", "lm", "avx2", "avx512f", "amx_tile", "hypervisor", "avx512_bf16",
                              "bogus"]}
    assert C.interesting_flags(info["flags"]) == ("avx2", "avx512f", "avx512_bf16", "amx_tile", "hypervisor")
    assert C._arch_from_cpuinfo(info) == "x86_64"


def test_empty_cpuinfo() -> None:
    assert C.parse_cpuinfo(None) == {"model": None, "vendor": None, "flags": []}
    assert C.parse_cpuinfo("") == {"model": None, "vendor": None, "flags": []}
    assert C.parse_cpuinfo("no colon here\nmodel name\t:\n") == {"model": None, "vendor": None, "flags": []}


@pytest.mark.parametrize("impl,part,name", [
    ("0x41", "0xd08", "Cortex-A72"), ("0x41", "0xd0c", "Neoverse-N1"), ("0x41", "0xd40", "Neoverse-V1"),
    ("0x41", "0xd49", "Neoverse-N2"), ("0x41", "0xd4f", "Neoverse-V2"), ("0x41", "0xd8e", "Neoverse-N3"),
    ("0x41", "0xd84", "Neoverse-V3"), ("0x41", "0xd85", "Cortex-X925"), ("0x41", "0xd87", "Cortex-A725"),
    ("0x48", "0xd01", "Kunpeng-920"), ("0x43", "0x0af", "ThunderX2 99xx"), ("0x46", "0x001", "A64FX"),
    ("0xc0", "0xac3", "Ampere-1"), ("0xc0", "0xac4", "Ampere-1a"), ("0x61", "0x022", "M1"),
])
def test_arm_part_names_as_lscpu(impl: str, part: str, name: str) -> None:
    info = C.parse_cpuinfo(_arm(impl.upper().replace("X", "x"), part.upper().replace("X", "x")))
    assert info["model"] == name
    assert C._arch_from_cpuinfo(info) == "aarch64"


@pytest.mark.parametrize("impl,vendor", [
    ("0x41", "ARM"), ("0x42", "Broadcom"), ("0x43", "Cavium"), ("0x46", "Fujitsu"), ("0x48", "HiSilicon"),
    ("0x4e", "NVIDIA"), ("0x50", "APM"), ("0x51", "Qualcomm"), ("0x53", "Samsung"), ("0x56", "Marvell"),
    ("0x61", "Apple"), ("0x69", "Intel"), ("0xc0", "Ampere"), ("0x99", "0x99"),
])
def test_arm_implementer_is_the_vendor(impl: str, vendor: str) -> None:
    assert C.parse_cpuinfo(_arm(impl, "0x999"))["vendor"] == vendor


def test_arm_hybrid_lists_each_core_type_and_unknown_part_gives_none() -> None:
    # the core types in the order of their part numbers
    assert C.parse_cpuinfo(_arm("0x41", "0xd87", "0xd85", "0xd87"))["model"] == "Cortex-X925 + Cortex-A725"
    assert C.parse_cpuinfo(_arm("0x41", "0xd85", "0x123"))["model"] is None  # one unknown: py-cpuinfo may know
    assert C.parse_cpuinfo(_arm("0x41", "0x123"))["model"] is None


def test_old_arm_processor_line_and_power() -> None:
    old = C.parse_cpuinfo("Processor\t: ARMv7 Processor rev 4 (v7l)\nFeatures\t: half thumb\n")
    assert old["model"] == "ARMv7 Processor rev 4 (v7l)" and old["vendor"] is None
    assert C._arch_from_cpuinfo(old) is None
    power = C.parse_cpuinfo("processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\n")
    assert power["model"] == "POWER9 (architected), altivec supported" and power["vendor"] == "IBM"
    assert C._arch_from_cpuinfo(power) == "ppc64le"
    s390 = C.parse_cpuinfo("processor 0: version = FF\ncpu model\t: z15\n")
    assert s390["model"] == "z15" and s390["vendor"] is None


@pytest.mark.parametrize("flags,arch", [(["lm"], "x86_64"), (["sse2"], "x86_64"), (["fp"], "aarch64"),
                                        (["asimd"], "aarch64"), (["vsx"], None)])
def test_arch_from_flags(flags: list, arch: Any) -> None:
    assert C._arch_from_cpuinfo({"flags": flags, "model": None}) == arch


def test_py_cpuinfo_fallback_names(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("cpuinfo")
    answers: Dict[str, Any] = {}
    fake.get_cpu_info = lambda: answers  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cpuinfo", fake)
    answers.update(brand_raw="New", brand="Old")
    assert C.cpuinfo_model_fallback() == "New"
    answers.pop("brand_raw")
    assert C.cpuinfo_model_fallback() == "Old"  # py-cpuinfo 5.0 (Debian 12)
    answers.clear()
    assert C.cpuinfo_model_fallback() is None

    def broken() -> Any:
        raise RuntimeError("cpuid")

    fake.get_cpu_info = broken  # type: ignore[attr-defined]
    assert C.cpuinfo_model_fallback() is None


def _topo(cpu: int, pkg: Any, core: Any, sibs: str) -> Dict[str, str]:
    t = f"sys/devices/system/cpu/cpu{cpu}/topology"
    out = {f"{t}/thread_siblings_list": sibs + "\n"}
    if pkg is not None:
        out[f"{t}/physical_package_id"] = f"{pkg}\n"
    if core is not None:
        out[f"{t}/core_id"] = f"{core}\n"
    return out


def test_online_from_the_list_keeps_only_cpus_with_folders(tmp_path: Path) -> None:
    files = {"sys/devices/system/cpu/online": "0-7\n"}
    for c in (0, 1, 2):
        files.update(_topo(c, 0, c, str(c)))
    io = HostIO(build_tree(tmp_path, files))
    assert C.online_cpus(io) == [0, 1, 2]


def test_online_without_the_list_reads_each_cpu(tmp_path: Path) -> None:
    files: Dict[str, str] = {}
    for c in range(4):
        files.update(_topo(c, 0, c, str(c)))
    files["sys/devices/system/cpu/cpu2/online"] = "0\n"
    files["sys/devices/system/cpu/cpu3/online"] = "1\n"
    (tmp_path / "sys/devices/system/cpu/cpufreq").mkdir(parents=True)
    io = HostIO(build_tree(tmp_path, files))
    assert C.online_cpus(io) == [0, 1, 3]


def test_online_with_nothing_is_noted(tmp_path: Path) -> None:
    io = HostIO(build_tree(tmp_path, {"proc/cpuinfo": X86}))
    assert C.online_cpus(io) == []
    assert any(m.startswith("cpu.online:") for m in io.missing)
    only_list = HostIO(build_tree(tmp_path / "b", {"sys/devices/system/cpu/online": "0-3\n"}))
    assert C.online_cpus(only_list) == [0, 1, 2, 3]  # no folders at all: the list as it is


def test_topology_smt_pairs_packages_and_unknown_package(tmp_path: Path) -> None:
    files = {"sys/devices/system/cpu/online": "0-5\n", "proc/cpuinfo": X86}
    # package 0: cores (0,2) and (1,3) as SMT pairs; CPUs 4 and 5 report package -1 with one sibling mask
    for c, core, sibs in ((0, 0, "0,2"), (1, 1, "1,3"), (2, 0, "0,2"), (3, 1, "1,3")):
        files.update(_topo(c, 0, core, sibs))
    for c in (4, 5):
        files.update(_topo(c, -1, c, str(c)))
        files[f"sys/devices/system/cpu/cpu{c}/topology/core_siblings_list"] = "4-5\n"
    io = HostIO(build_tree(tmp_path, files))
    cores, packages = C.topology(io, [0, 1, 2, 3, 4, 5])
    assert cores == [(0, 2), (1, 3), (4,), (5,)]
    assert packages == [(0, 1, 2, 3), (4, 5)]
    cpu = C.probe(io, Cgroup(cpuset=(0, 1, 2, 3, 4, 9), quota_cpus=1.5), affinity=[1, 2, 3, 4, 5])
    assert (cpu.logical, cpu.physical, cpu.packages, cpu.smt) == (6, 4, 2, True)
    assert cpu.allowed_cpus == (1, 2, 3, 4) and cpu.quota_cpus == 1.5 and cpu.cgroup.cpuset == (0, 1, 2, 3, 4, 9)
    assert cpu.model == "Intel(R) Xeon(R) Platinum 8480+" and cpu.arch == "x86_64"
    assert cpu.online == (0, 1, 2, 3, 4, 5) and cpu.cores == ((0, 2), (1, 3), (4,), (5,))


def test_topology_siblings_offline_and_same_core_id_on_two_dies(tmp_path: Path) -> None:
    files: Dict[str, str] = {}
    # Magny-Cours: core_id repeats per die, the sibling masks tell the dies apart
    files.update(_topo(0, 0, 0, "0"))
    files.update(_topo(1, 0, 0, "1"))
    # a sibling that is offline is not part of the core
    files.update(_topo(2, 0, 5, "2,3"))
    io = HostIO(build_tree(tmp_path, files))
    cores, packages = C.topology(io, [0, 1, 2])
    assert cores == [(0,), (1,), (2,)] and packages == [(0, 1, 2)]


def test_topology_core_cpus_list_when_no_thread_siblings(tmp_path: Path) -> None:
    t = "sys/devices/system/cpu/cpu{}/topology/"
    files = {t.format(0) + "core_cpus_list": "0-1\n", t.format(1) + "core_cpus_list": "0-1\n",
             t.format(0) + "core_id": "0\n", t.format(1) + "core_id": "0\n",
             t.format(0) + "physical_package_id": "0\n", t.format(1) + "physical_package_id": "0\n"}
    io = HostIO(build_tree(tmp_path, files))
    assert C.topology(io, [0, 1]) == ([(0, 1)], [(0, 1)])


def test_topology_without_files_each_pu_is_a_core_and_a_package(tmp_path: Path) -> None:
    io = HostIO(build_tree(tmp_path, {"proc/cpuinfo": X86}))
    assert C.topology(io, [0, 1]) == ([(0,), (1,)], [(0,), (1,)])


def test_probe_on_a_tree_without_cpus(tmp_path: Path) -> None:
    io = HostIO(build_tree(tmp_path, {"proc/cpuinfo": X86, "sys/devices/system/cpu/smt/control": "on\n"}))
    cpu = C.probe(io, Cgroup())
    assert cpu.online == () and cpu.physical == 0 and cpu.smt is False and cpu.smt_control == "on"
    assert any(m.startswith("cpu.topology:") for m in io.missing)


def test_every_isa_flag_of_interest_is_kept_in_its_order() -> None:
    want = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
            "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "hypervisor", "asimd", "sve", "sve2",
            "bf16", "i8mm", "asimdhp", "vsx", "mma")
    assert C.interesting_flags(list(reversed(want)) + ["sse4_1", "avx512cd", "amx"]) == want


def test_unknown_package_uses_package_cpus_list_first(tmp_path: Path) -> None:
    files: Dict[str, str] = {}
    for c in (0, 1, 2):
        files.update(_topo(c, -1, c, str(c)))
        t = f"sys/devices/system/cpu/cpu{c}/topology"
        files[f"{t}/package_cpus_list"] = "0-1\n" if c < 2 else "2\n"
        files[f"{t}/core_siblings_list"] = "0-2\n"
    io = HostIO(build_tree(tmp_path, files))
    assert C.topology(io, [0, 1, 2]) == ([(0,), (1,), (2,)], [(0, 1), (2,)])
