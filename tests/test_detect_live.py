"""`hosttune facts --json` on this machine, compared with what nproc, lscpu and numactl -H say."""

import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, List

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux hosts only")


def _run(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout


@pytest.fixture(scope="module")
def facts() -> Dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "hosttune", "facts", "--json"], capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _numactl_nodes() -> Dict[int, Dict[str, Any]]:
    nodes: Dict[int, Dict[str, Any]] = {}
    for line in _run("numactl", "-H").splitlines():
        m = re.match(r"node (\d+) cpus:(.*)", line)
        if m:
            nodes.setdefault(int(m.group(1)), {})["cpus"] = [int(x) for x in m.group(2).split()]
        m = re.match(r"node (\d+) size: (\d+) MB", line)
        if m:
            nodes.setdefault(int(m.group(1)), {})["size"] = int(m.group(2))
    return nodes


def test_cpu_counts_agree_with_nproc_and_lscpu(facts: Dict[str, Any]) -> None:
    cpu = facts["cpu"]
    # nproc counts the CPUs this process may run on (sched_getaffinity); --all the online ones... almost:
    # `nproc --all` is sysconf(_SC_NPROCESSORS_CONF) on some coreutils, so compare it with lscpu's online list.
    assert len(cpu["allowed_cpus"]) == int(_run("nproc").strip())
    rows = [line.split(",") for line in _run("lscpu", "-p=CPU,CORE,SOCKET,NODE").splitlines()
            if line and not line.startswith("#")]
    online = sorted(int(r[0]) for r in rows)
    assert cpu["online"] == online and cpu["logical"] == len(online)
    assert cpu["physical"] == len({(r[2], r[1]) for r in rows})
    assert cpu["packages"] == len({r[2] for r in rows})
    lscpu = dict(line.split(":", 1) for line in _run("lscpu").splitlines() if ":" in line)
    if "Model name" in lscpu and cpu["model"]:
        assert lscpu["Model name"].strip() == cpu["model"]
    if "Flags" in lscpu:
        assert set(cpu["flags"]) <= set(lscpu["Flags"].split())


@pytest.mark.skipif(shutil.which("numactl") is None, reason="numactl is not installed")
def test_numa_agrees_with_numactl(facts: Dict[str, Any]) -> None:
    before = _numactl_nodes()
    from hosttune.detect import collect

    ours = {n.id: n for n in collect(probe_torch=False, use_nvml=False).numa.nodes}
    after = _numactl_nodes()
    assert sorted(ours) == sorted(before) == [n["id"] for n in facts["numa"]["nodes"]]
    for nid, node in ours.items():
        assert list(node.cpus) == before[nid]["cpus"]
        # Some VMs hot-add memory while we run: numactl's figure before and after brackets ours.
        sizes: List[int] = [before[nid]["size"], after[nid]["size"]]
        assert min(sizes) <= node.memory_mb <= max(sizes)


def test_allowed_cpus_are_this_process_affinity(facts: Dict[str, Any]) -> None:
    # The child's affinity is inherited from us, so its allowed set is ours (∩ online).
    assert set(facts["cpu"]["allowed_cpus"]) == set(os.sched_getaffinity(0))


def test_live_only_fields_are_filled(facts: Dict[str, Any]) -> None:
    assert facts["root"] == "/" and facts["kernel"]["release"] == os.uname().release
    assert facts["limits"]["nofile_soft"] is not None
    assert any(m["mount"] == "/" and m["size_mb"] for m in facts["storage"])
    assert facts["nvidia"]["nvml"] in ("ok", "library_not_found", "driver_not_loaded", "version_mismatch",
                                       "no_permission", "error")


def test_py_cpuinfo_fallback_names_this_cpu() -> None:
    """The slow last resort (only used when /proc/cpuinfo names no model): it works with the installed py-cpuinfo."""
    pytest.importorskip("cpuinfo")
    from hosttune.detect.cpu import cpuinfo_model_fallback

    model = cpuinfo_model_fallback()
    lscpu = dict(line.split(":", 1) for line in _run("lscpu").splitlines() if ":" in line)
    assert model and model.split()[0] == lscpu["Model name"].split()[0]
