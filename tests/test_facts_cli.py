"""`hosttune facts` as a user runs it: exit codes, one-line errors, the JSON contract, the readable summary."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List

from conftest import DISTROS

from hosttune.facts import Facts


def hosttune(*args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "hosttune", *args], capture_output=True, text=True, timeout=60)


def test_missing_root_is_one_line_exit_2(tmp_path: Path) -> None:
    for bad in (tmp_path / "nope", tmp_path / "file"):
        if bad.name == "file":
            bad.write_text("x")
        done = hosttune("facts", "--root", str(bad))
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("hosttune: error: --root ")
        assert "Traceback" not in done.stderr


def test_bad_python_is_one_line_exit_2(tmp_path: Path) -> None:
    done = hosttune("facts", "--python", str(tmp_path / "python9"))
    assert done.returncode == 2 and done.stderr.startswith("hosttune: error: --python ")
    assert done.stderr.count("\n") == 1


def _keys(data: Dict[str, Any], dotted: List[str]) -> None:
    for key in dotted:
        node: Any = data
        for part in key.split("."):
            assert part in node, key
            node = node[part]


def test_json_contract_on_a_captured_host(hwloc_tree: Callable[[str], Path]) -> None:
    done = hosttune("facts", "--json", "--root", str(hwloc_tree("16amd64-8n2c-cpusets")))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    _keys(data, ["schema", "distro.id", "distro.version", "distro.codename", "cpu.logical", "cpu.physical",
                 "cpu.allowed_cpus", "cpu.quota_cpus", "nvidia.driver", "nvidia.cuda_driver", "torch",
                 "allocators.jemalloc", "allocators.tcmalloc", "missing"])
    assert data["torch"] is None and data["cpu"]["logical"] == 15
    assert all({"id", "cpus", "memory_mb"} <= set(n) for n in data["numa"]["nodes"])
    assert all({"mount", "device", "kind"} <= set(m) for m in data["storage"])
    assert {m["kind"] for m in data["storage"]} <= {"nvme", "ssd", "hdd", "network", "tmpfs", "unknown"}
    # The JSON reads back into the same Facts (the launcher hands it to ranks this way).
    assert Facts.from_dict(data).to_dict() == data


def test_half_missing_tree_exits_0_with_missing(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("processor\t: 0\nmodel name\t: X\n")
    done = hosttune("facts", "--json", "--root", str(tmp_path))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["missing"] and data["cpu"]["model"] == "X"
    text = hosttune("facts", "--root", str(tmp_path))
    assert text.returncode == 0 and "missing" in text.stdout


def test_summary_on_a_distro_root_and_live() -> None:
    done = hosttune("facts", "--root", str(DISTROS / "ubuntu24"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("distro") and "24.04" in line and "family=debian" in line for line in lines)
    live = hosttune("facts")
    assert live.returncode == 0, live.stderr
    for section in ("distro", "kernel", "cpu topology", "cpu allowed", "numa node0", "torch", "allocators"):
        assert any(line.startswith(section) for line in live.stdout.splitlines()), section
    # Values line up in one column.
    starts = {len(line) - len(line.split("  ", 1)[1].lstrip()) for line in live.stdout.splitlines() if "  " in line}
    assert len(starts) == 1
