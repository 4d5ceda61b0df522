"""Where the system's cuDNN and NCCL are looked for (issue 21): every include directory (headers first) and every
library directory (sonames), each alone in a captured tree, as distros and the CUDA toolkit install them
(hosttune.detect.nvidia)."""

from pathlib import Path

import pytest

from hosttune.detect import nvidia
from hosttune.detect.hostio import HostIO

INCLUDE_DIRS = ["/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu",
                "/usr/local/cuda/include"]
LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/powerpc64le-linux-gnu", "/usr/lib64",
            "/usr/lib", "/usr/local/lib", "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
            "/usr/local/cuda/targets/sbsa-linux/lib"]


def _put(root: Path, rel: str, text: str = "") -> HostIO:
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return HostIO(root)


@pytest.mark.parametrize("d", INCLUDE_DIRS)
def test_each_include_dir_is_searched(tmp_path: Path, d: str) -> None:
    header = "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 3\n#define CUDNN_PATCHLEVEL 1\n"
    io = _put(tmp_path, f"{d}/cudnn_version.h", header)
    _put(tmp_path, f"{d}/nccl.h", "#define NCCL_MAJOR 2\n#define NCCL_MINOR 23\n#define NCCL_PATCH 4\n")
    got = nvidia.probe(io, {})
    assert (got.cudnn, got.nccl) == ("9.3.1", "2.23.4")


@pytest.mark.parametrize("d", LIB_DIRS)
def test_each_library_dir_is_searched(tmp_path: Path, d: str) -> None:
    _put(tmp_path, f"{d}/libcudnn.so.8")
    io = _put(tmp_path, f"{d}/libcudnn.so.8.9.7")
    _put(tmp_path, f"{d}/libnccl.so.2.19.3")
    got = nvidia.probe(io, {})
    assert (got.cudnn, got.nccl) == ("8.9.7", "2.19.3")


def test_the_lists_are_these() -> None:
    assert list(nvidia.INCLUDE_DIRS) == INCLUDE_DIRS and list(nvidia.LIB_DIRS) == LIB_DIRS


def test_a_header_with_only_a_major_version(tmp_path: Path) -> None:
    io = _put(tmp_path, "/usr/include/cudnn_version.h", "#define CUDNN_MAJOR 9\n")
    _put(tmp_path, "/usr/lib64/libcudnn.so.8.9.7")
    assert nvidia.probe(io, {}).cudnn == "9"  # the header wins over an older soname


def test_the_newest_toolkit_folder_by_number(tmp_path: Path) -> None:
    for v, ver in (("9.2", "9.2.148"), ("12.4", "12.4.1"), ("11.8", "11.8.0"), ("12.10", "12.10.0")):
        _put(tmp_path, f"/usr/local/cuda-{v}/version.txt", f"CUDA Version {ver}\n")
    assert nvidia._toolkit(HostIO(tmp_path)) == {"version": "12.10.0", "path": "/usr/local/cuda-12.10"}
