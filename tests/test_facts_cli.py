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


def test_live_gpus_through_nvml_in_a_child_process(fake_nvml: Any, monkeypatch: Any) -> None:
    """The installed command with NVML answering (the fake pynvml on PYTHONPATH): GPUs, driver and torch's view."""
    from conftest import a100

    env = fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
                     "devices": [a100(0, "3B", 0), a100(1, "AF", 1, name="NVIDIA H100 80GB HBM3")]})
    done = subprocess.run([sys.executable, "-m", "hosttune", "facts", "--json"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["nvidia"]["nvml"] == "ok" and data["nvidia"]["driver"] == "550.54.15"
    assert data["nvidia"]["cuda_driver"] == "12.4"
    assert [(g["index"], g["name"], g["pci_bus_id"], g["source"]) for g in data["gpus"]] == [
        (0, "NVIDIA A100-SXM4-80GB", "0000:3b:00.0", "nvml"), (1, "NVIDIA H100 80GB HBM3", "0000:af:00.0", "nvml")]
    # This machine has no such PCI devices in /sys, so their NUMA node is unknown rather than invented.
    assert all(g["numa_node"] == -1 for g in data["gpus"])
    # torch here is a CPU wheel: two healthy GPUs do not make CUDA available to it.
    assert data["torch"] is None or data["torch"]["cuda_available"] is False


def test_facts_text_shows_control_characters_escaped(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "proc/cpuinfo").write_text("processor\t: 0\nmodel name\t: Evil\x1b[2J\x1b]0;owned\x07 CPU\n")
    (root / "etc/os-release").write_text('NAME="Bad\x1b[31mOS"\nID=bad\x1b[0m\nVERSION_ID="1"\n')
    (root / "etc/hostname").write_text("host\x1b[1A\u202e\n")
    done = hosttune("facts", "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\u202e" not in done.stdout
    assert "Evil\\x1b[2J" in done.stdout and "Bad\\x1b[31mOS" in done.stdout
