"""hosttune.detect.nvidia on captured trees (issue 21): the driver from NVML or /proc, the CUDA toolkit (version.json,
version.txt, /usr/local/cuda first, then the newest cuda-X.Y), system cuDNN/NCCL from headers then sonames, Fabric
Manager installed (its running state is live only) and the NVSwitch count, as the whole Nvidia value."""

import os
from pathlib import Path
from typing import Dict

from conftest import build_tree

from hosttune.detect import nvidia
from hosttune.detect.hostio import HostIO
from hosttune.facts import Nvidia

PROC = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Wed Mar 6 2024\n"


def io_of(tmp_path: Path, files: Dict[str, str], links: Dict[str, str] = {}) -> HostIO:  # noqa: B006
    return HostIO(build_tree(tmp_path, files, links))


def test_a_full_captured_host(tmp_path: Path) -> None:
    files = {"proc/driver/nvidia/version": PROC,
             "usr/local/cuda-12.4/version.json": '{"cuda": {"version": "12.4.1"}}',
             "usr/local/cuda-11.8/version.json": '{"cuda": {"version": "11.8.0"}}',
             "usr/include/x86_64-linux-gnu/cudnn_version_v9.h":
                 "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n",
             "usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5": "", "usr/lib/x86_64-linux-gnu/libnccl.so.2": "",
             "usr/bin/nv-fabricmanager": ""}
    io = io_of(tmp_path, files, {"usr/local/cuda": "cuda-12.4"})
    got = nvidia.probe(io, {"nvml": "skipped", "nvswitches": 6})
    assert got == Nvidia(driver="535.161.08", cuda_driver=None, nvml="skipped", nvml_error=None, cuda_toolkit="12.4.1",
                         cuda_toolkit_path="/usr/local/cuda-12.4", cudnn="9.1.0", nccl="2.21.5",
                         fabric_manager_installed=True, fabric_manager_running=None, nvswitches=6)


def test_nvml_driver_wins_and_empty_host(tmp_path: Path) -> None:
    io = io_of(tmp_path, {"proc/driver/nvidia/version": PROC, "usr/sbin/nv-fabricmanager": ""})
    got = nvidia.probe(io, {"driver": "550.54.15", "cuda_driver": "12.4", "nvml": "ok", "nvml_error": None})
    assert (got.driver, got.cuda_driver, got.nvml, got.fabric_manager_installed) == ("550.54.15", "12.4", "ok", True)
    assert got.nvswitches == 0
    empty = nvidia.probe(io_of(tmp_path / "e", {"etc/x": ""}), {})
    assert empty == Nvidia(nvml="skipped", fabric_manager_running=None)


def test_toolkit_order(tmp_path: Path) -> None:
    files = {"usr/local/cuda-11.8/version.txt": "CUDA Version 11.8.89\n",
             "usr/local/cuda-12.1/version.json": '{"cuda": {"version": "12.1.0"}}',
             "usr/local/cuda-12.2/version.json": "not json",
             "usr/local/cuda-12.2/version.txt": "CUDA Version 12.2.1\n",
             "usr/local/cudnn/version.json": '{"cuda": {"version": "99"}}'}
    assert nvidia._toolkit(io_of(tmp_path, files)) == {"version": "12.2.1", "path": "/usr/local/cuda-12.2"}
    files["usr/local/cuda/version.txt"] = "CUDA Version 10.2.89\n"
    assert nvidia._toolkit(io_of(tmp_path / "b", files)) == {"version": "10.2.89", "path": "/usr/local/cuda"}
    only_nvcc = {"usr/local/cuda-12.4/bin/nvcc": "#!/bin/sh\necho 'release 12.4, V12.4.131'\n"}
    assert nvidia._toolkit(io_of(tmp_path / "c", only_nvcc)) == {"version": None, "path": None}  # never run


def test_library_versions_header_first_then_soname(tmp_path: Path) -> None:
    files = {"usr/local/cuda/include/nccl.h": "#define NCCL_MAJOR 2\n#define NCCL_MINOR 18\n#define NCCL_PATCH 3\n",
             "usr/lib64/libnccl.so.2.21.5": "", "usr/lib64/libcudnn.so.8.9.7": "", "usr/lib64/libcudnn.so.8": "",
             "usr/include/cudnn.h": "no version here\n"}
    io = io_of(tmp_path, files)
    assert nvidia._library_version(io, ["nccl.h"], "NCCL", "libnccl") == "2.18.3"
    assert nvidia._library_version(io, ["cudnn_version.h", "cudnn.h"], "CUDNN", "libcudnn") == "8.9.7"
    assert nvidia._library_version(io, ["x.h"], "X", "libx") is None


def test_fabric_manager_comm_is_truncated_like_the_kernel() -> None:
    assert nvidia.FABRIC_MANAGER_COMM == "nv-fabricmanage"
    running = False
    for pid in os.listdir("/proc"):
        try:
            running = running or (pid.isdigit() and Path(f"/proc/{pid}/comm").read_text().strip() == "nv-fabricmanage")
        except OSError:
            continue
    assert nvidia.fabric_manager_running(HostIO(Path("/"))) is running
