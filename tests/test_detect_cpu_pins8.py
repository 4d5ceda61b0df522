"""hosttune.detect.cpu pins (issue 21, practice round HDET8): the whole Cpu of a small captured tree, with the cgroup
cpuset and an affinity applied (an empty affinity allows nothing)."""

from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import pytest
from conftest import build_tree

from hosttune.detect import cpu
from hosttune.detect.hostio import HostIO
from hosttune.facts import Cgroup, Cpu

CPUINFO = "".join(
    f"processor\t: {n}\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\n"
    "flags\t\t: fpu lm sse4_2 avx2 fma avx512f hypervisor amx_tile\n\n" for n in range(4))


def _tree(tmp_path: Path) -> Path:
    base = "/sys/devices/system/cpu"
    files: Dict[str, str] = {"/proc/cpuinfo": CPUINFO, f"{base}/online": "0-3\n", f"{base}/smt/control": "on\n"}
    for c in range(4):
        topo = f"{base}/cpu{c}/topology"
        files[f"{topo}/physical_package_id"] = "0\n"
        files[f"{topo}/core_id"] = f"{c % 2}\n"
        files[f"{topo}/thread_siblings_list"] = "0,2\n" if c % 2 == 0 else "1,3\n"
    return build_tree(tmp_path, files)


@pytest.mark.parametrize("affinity,allowed", [(None, (0, 1, 2)), ([1, 2, 3], (1, 2)), ([], ())])
def test_whole_cpu_of_a_tree(tmp_path: Path, affinity: Optional[Sequence[int]], allowed: Tuple[int, ...]) -> None:
    cg = Cgroup(version=2, path="/job", cpuset=(0, 1, 2), quota_cpus=1.5)
    io = HostIO(_tree(tmp_path))
    got = cpu.probe(io, cg, affinity=affinity)
    assert got == Cpu(model="Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", vendor="GenuineIntel", arch="x86_64",
                      flags=("sse4_2", "avx2", "fma", "avx512f", "amx_tile", "hypervisor"), online=(0, 1, 2, 3),
                      logical=4, physical=2, packages=1, smt=True, smt_control="on", cores=((0, 2), (1, 3)),
                      package_cpus=((0, 1, 2, 3),), allowed_cpus=allowed, quota_cpus=1.5, cgroup=cg)
    assert io.missing == []


def test_no_cpu_folders_is_no_online_cpus_and_a_note(tmp_path: Path) -> None:
    io = HostIO(build_tree(tmp_path, {"/sys/devices/system/cpu/possible": "0-3\n"}))
    assert cpu.online_cpus(io) == []
    assert io.missing == ["cpu.online: /sys/devices/system/cpu has no cpuN folders"]


def test_a_cpu_without_sibling_files_is_its_own_core(tmp_path: Path) -> None:
    """Two PUs that share package and core_id but whose sibling lists cannot be read are two cores, not one."""
    base = "/sys/devices/system/cpu"
    files = {f"{base}/online": "0-1\n"}
    for c in range(2):
        files[f"{base}/cpu{c}/topology/physical_package_id"] = "0\n"
        files[f"{base}/cpu{c}/topology/core_id"] = "0\n"
    io = HostIO(build_tree(tmp_path, files))
    assert cpu.topology(io, [0, 1]) == ([(0,), (1,)], [(0, 1)])
