"""`hosttune facts` as a user runs it: exit codes, one-line errors, the JSON contract, the readable summary.

The errors, this host's facts and NVML's run as real processes; the JSON and the summary of a tree on disk (--root)
run in-process through the same CLI (issue 21: an interpreter start each, and nothing of the process is read)."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List

from conftest import DISTROS, run_cli

from hosttune.commands.facts import render
from hosttune.facts import (
    Allocators,
    Cgroup,
    Cpu,
    Distro,
    Facts,
    Gpu,
    Kernel,
    Memory,
    Mount,
    Numa,
    NumaNode,
    Nvidia,
    Tools,
    TorchInstall,
    Tuned,
)


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
    done = run_cli(["facts", "--json", "--root", str(hwloc_tree("16amd64-8n2c-cpusets"))])
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
    done = run_cli(["facts", "--json", "--root", str(tmp_path)])
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["missing"] and data["cpu"]["model"] == "X"
    text = run_cli(["facts", "--root", str(tmp_path)])
    assert text.returncode == 0 and "missing" in text.stdout


def test_summary_on_a_distro_root_and_live() -> None:
    done = run_cli(["facts", "--root", str(DISTROS / "ubuntu24")])
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
    done = run_cli(["facts", "--root", str(root)])
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\u202e" not in done.stdout
    assert "Evil\\x1b[2J" in done.stdout and "Bad\\x1b[31mOS" in done.stdout


def _full(**over: object) -> Facts:
    base = dict(
        root="/captured", hostname="node7",
        distro=Distro(id="ubuntu", version="24.04", version_best="24.04.1", codename="noble", name="Ubuntu",
                      family="debian"),
        kernel=Kernel(release="6.8.0", thp="madvise", numa_balancing=1, swappiness=60,
                      governors=("performance", "powersave")),
        cpu=Cpu(model="EPYC 9654", vendor="AuthenticAMD", arch="x86_64", flags=("avx2", "avx512f"), logical=8,
                physical=4, packages=1, smt=True, allowed_cpus=(0, 1, 2, 3, 6), quota_cpus=2.5,
                cgroup=Cgroup(version=2)),
        numa=Numa(nodes=(NumaNode(id=0, cpus=(0, 1, 2, 3), memory_mb=1024), NumaNode(id=1, memory_mb=512))),
        gpus=(Gpu(index=0, name="H200", pci_bus_id="0000:3b:00.0", numa_node=0, memory_mb=143771),
              Gpu(index=1, pci_bus_id="0000:5e:00.0", device_id="0x2335"),
              Gpu(index=2, pci_bus_id="0000:86:00.0", numa_node=1)),
        nvidia=Nvidia(driver="550.54.15", cuda_driver="12.4", nvml="ok", cuda_toolkit="12.4.1", cudnn="9.1",
                      nccl="2.21", nvswitches=4, fabric_manager_installed=True),
        torch=TorchInstall(python="/usr/bin/python3", version="2.4.0", cuda="12.4", cudnn="90100", nccl="2.21.5",
                           cuda_available=True, device_count=3),
        allocators=Allocators(jemalloc="/usr/lib/libjemalloc.so.2", gomp="/usr/lib/libgomp.so.1"),
        tools=Tools(numactl="/usr/bin/numactl", torchrun="/venv/bin/torchrun"),
        storage=(Mount(mount="/", fstype="ext4", device="nvme0n1", kind="nvme", size_mb=1000),
                 Mount(mount="/tmp", fstype="tmpfs", kind="tmpfs", size_mb=10),
                 Mount(mount="/dev/shm", fstype="tmpfs", kind="tmpfs", size_mb=20),
                 Mount(mount="/data", fstype="nfs", kind="network")),
        memory=Memory(total_mb=2048, available_mb=1024, swap_total_mb=0, shm_mb=20),
        tuned=Tuned(installed=True, running=True, profile="throughput-performance", mode="manual"),
        missing=("gpu nvml: library not found", "hwloc: absent"),
    )
    base.update(over)
    return Facts(**base)  # type: ignore[arg-type]


def test_a_bare_facts_draws_every_unknown_as_a_question_mark_or_a_dash() -> None:
    assert render(Facts()).splitlines() == [
        "host           ?",
        "distro         unknown  family=unknown",
        "kernel         ?  thp=?  numa_balancing=?  swappiness=?  governor=-",
        "cpu            ? (?, ?)",
        "cpu topology   0 package(s), 0 cores, 0 logical, smt=off",
        "cpu flags      -",
        "cpu allowed    - (0)  quota=none  no cgroup",
        "gpus           none",
        "nvidia driver  none  cuda=-  nvml=skipped",
        "cuda toolkit   none  cudnn=-  nccl=-",
        "torch          not found",
        "allocators     jemalloc=no  tcmalloc=no  tcmalloc_minimal=no  iomp5=no  gomp=no",
        "tools          numactl=no  nvidia-smi=no  torchrun=no",
        "memory         ? MiB total, ? MiB available, swap ? MiB, /dev/shm ? MiB",
        "tuned          not installed",
    ]


def test_a_full_captured_host_draws_every_row() -> None:
    assert render(_full()).splitlines() == [
        "host              node7 (/captured)",
        "distro            Ubuntu 24.04.1 (noble) family=debian",
        "kernel            6.8.0  thp=madvise  numa_balancing=1  swappiness=60  governor=performance,powersave",
        "cpu               EPYC 9654 (AuthenticAMD, x86_64)",
        "cpu topology      1 package(s), 4 cores, 8 logical, smt=on",
        "cpu flags         avx2 avx512f",
        "cpu allowed       0-3,6 (5)  quota=2.5  cgroup v2",
        "numa node0        cpus 0-3  1024 MiB",
        "numa node1        cpus -  512 MiB",
        "gpu0              H200  0000:3b:00.0  numa=0  143771 MiB",
        "gpu1              NVIDIA 0x2335  0000:5e:00.0  numa=-1",
        "gpu2              NVIDIA GPU  0000:86:00.0  numa=1",
        "nvidia driver     550.54.15  cuda=12.4  nvml=ok",
        "cuda toolkit      12.4.1  cudnn=9.1  nccl=2.21  nvswitches=4 fabricmanager=yes",
        "torch             2.4.0 cuda=12.4 cudnn=90100 nccl=2.21.5 cuda_available=True devices=3 (/usr/bin/python3)",
        "torch cpu         onednn=-  isa=AVX2  aten=DEFAULT  bf16=emulated (this CPU has no avx512_bf16/amx_bf16)",
        "allocators        jemalloc=yes  tcmalloc=no  tcmalloc_minimal=no  iomp5=no  gomp=yes",
        "tools             numactl=/usr/bin/numactl  nvidia-smi=no  torchrun=/venv/bin/torchrun",
        "memory            2048 MiB total, 1024 MiB available, swap 0 MiB, /dev/shm 20 MiB",
        "tuned             running  profile=throughput-performance  mode=manual",
        "storage /         nvme (ext4, nvme0n1)  1000 MiB",
        "storage /dev/shm  tmpfs (tmpfs)  20 MiB",
        "storage /data     network (nfs)",
        "missing           gpu nvml: library not found",
        "missing           hwloc: absent",
    ]


def test_the_torch_row_names_a_failed_probe_and_a_root_that_was_not_probed() -> None:
    def torch_row(f: Facts) -> str:
        return next(line for line in render(f).splitlines() if line.startswith("torch"))

    assert torch_row(_full(torch=TorchInstall(python="/opt/py", error="timeout"))).split(None, 1)[1] == \
        "error: timeout (/opt/py)"
    assert torch_row(_full(torch=None)).split(None, 1)[1] == "not probed (--root)"
    assert torch_row(_full(root="/", torch=None)).split(None, 1)[1] == "not found"


def test_the_host_distro_cuda_and_tuned_rows_in_their_other_shapes() -> None:
    lines = render(_full(root="/", distro=Distro(id="rocky", version="9", family="rhel"),
                         nvidia=Nvidia(cuda_toolkit="12.1", nvswitches=2),
                         tuned=Tuned(installed=True))).splitlines()
    assert lines[0].split(None, 1)[1] == "node7"
    assert lines[1].split(None, 1)[1] == "rocky 9 family=rhel"
    assert "cuda toolkit      12.1  cudnn=-  nccl=-  nvswitches=2 fabricmanager=no" in lines
    assert "tuned             state unknown  profile=-  mode=-" in lines
    stopped = render(_full(tuned=Tuned(installed=True, running=False, profile="balanced"))).splitlines()
    assert "tuned             not running  profile=balanced  mode=-" in stopped


def test_host_text_cannot_drive_the_terminal() -> None:
    out = render(_full(cpu=Cpu(model="X\x1b[2Jwiped"), hostname="h\x1b]0;t\x07"))
    assert "\x1b" not in out and "\x07" not in out
