"""What the torch probe's answer becomes (issue 21): the cuDNN/NCCL version from wheels or sonames, whether CUDA is
usable (the driver's CUDA major against torch's), the TorchInstall built from each shape of answer, and the env lib
dir (hosttune.detect.torchenv)."""

from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from hosttune.detect import torchenv
from hosttune.detect.hostio import HostIO
from hosttune.facts import Gpu, TorchInstall

GPUS = (Gpu(index=0), Gpu(index=1), Gpu(index=2))


@pytest.mark.parametrize("version,parts,short", [
    ("9.1.0.70", 3, "9.1.0"), ("2.21.5+cuda12.4", 3, "2.21.5"), ("9", 3, "9"), ("12.4.127", 2, "12.4"),
    ("2.21.5", 1, "2"),
])
def test_short(version: str, parts: int, short: str) -> None:
    assert torchenv._short(version, parts) == short


@pytest.mark.parametrize("torch,what,version", [
    ({"dists": {"nvidia-cudnn-cu12": "9.1.0.70", "nvidia-nccl-cu12": "2.21.5"}}, "cudnn", "9.1.0"),
    ({"dists": {"nvidia-cudnn-cu12": "9.1.0.70", "nvidia-nccl-cu12": "2.21.5"}}, "nccl", "2.21.5"),
    ({"dists": {"nvidia-cudnn-cu13": "9.5.0", "nvidia-cudnn-cu12": "9.1.0.70"}}, "cudnn", "9.1.0"),
    ({"dists": {"nvidia-cudnn-frontend": "1.0"}, "libs": ["libcudnn.so.8", "libcudnn.so.8.9.2"]}, "cudnn", "8.9.2"),
    ({"libs": ["libcudnn.so.8.9.2", "libcudnn.so.8"]}, "cudnn", "8.9.2"),
    ({"libs": ["libnccl.so.2", "libnccl.so.2.x", "libcudnn_ops.so.9.1.0"]}, "nccl", "2"),
    ({"libs": ["libcudnn_ops.so.9.1.0", "libcudnn.so.9.1.0-rc"]}, "cudnn", None),
    ({}, "nccl", None),
])
def test_lib_version_wheels_first_then_the_most_specific_soname(torch: Dict[str, Any], what: str,
                                                                 version: Optional[str]) -> None:
    assert torchenv._lib_version(torch, what) == version


@pytest.mark.parametrize("torch_cuda,driver_cuda,gpus,usable", [
    ("12.4", "12.4", GPUS, True), ("12.4", "12.2", GPUS, True), ("12.4", "13.0", GPUS, True),
    ("12.4", "11.8", GPUS, False), ("12.4", None, GPUS, False), (None, "12.4", GPUS, False),
    ("12.4", "12.4", (), False), ("x", "12.4", GPUS, False), ("12.4", "x.y", GPUS, False), ("", "12.4", GPUS, False),
])
def test_infer_cuda(torch_cuda: Optional[str], driver_cuda: Optional[str], gpus: Any, usable: bool) -> None:
    assert torchenv.infer_cuda(torch_cuda, driver_cuda, gpus) is usable


def test_major() -> None:
    assert torchenv._major("12.4") == 12 and torchenv._major("13") == 13
    assert torchenv._major(None) is None and torchenv._major("") is None and torchenv._major("cu") is None


def test_from_probe_shapes() -> None:
    assert torchenv.from_probe("/py", {"error": "timed out"}, "12.4", GPUS) == TorchInstall(python="/py",
                                                                                          error="timed out")
    assert torchenv.from_probe("/py", {"torch": None, "executable": "/x"}, "12.4", GPUS) is None
    assert torchenv.from_probe("/py", {}, "12.4", GPUS) is None
    data = {"executable": "/venv/bin/python3.11", "in_venv": True,
            "torch": {"__version__": "2.6.0+cu124", "cuda": "12.4", "onednn": "3.5.3",
                      "dists": {"nvidia-cudnn-cu12": "9.1.0.70", "nvidia-nccl-cu12": "2.21.5"}}}
    assert torchenv.from_probe("/py", data, "12.6", GPUS[:2]) == TorchInstall(
        python="/venv/bin/python3.11", version="2.6.0+cu124", cuda="12.4", cudnn="9.1.0", nccl="2.21.5",
        cuda_available=True, device_count=2, in_venv=True, onednn="3.5.3")
    old_driver = torchenv.from_probe("/py", data, "11.8", GPUS)
    assert (old_driver.cuda_available, old_driver.device_count) == (False, 0)  # type: ignore[union-attr]
    cpu = {"in_venv": False, "torch": {"__version__": "2.6.0+cpu", "cuda": None, "onednn": "",
                                       "libs": ["libcudnn.so.9"]}}
    assert torchenv.from_probe("/usr/bin/python3", cpu, "12.4", GPUS) == TorchInstall(
        python="/usr/bin/python3", version="2.6.0+cpu", in_venv=False)


def test_env_lib_dirs() -> None:
    assert torchenv.env_lib_dirs({"prefix": "/opt/conda/envs/t"}) == ["/opt/conda/envs/t/lib"]
    assert torchenv.env_lib_dirs({"prefix": ""}) == [] and torchenv.env_lib_dirs({}) == []


def test_no_probe_under_a_foreign_root(tmp_path: Path) -> None:
    io = HostIO(tmp_path)
    assert torchenv.run_probe(io, "/usr/bin/python3") == {"error": "not probed with a foreign root"}
    assert torchenv.run_image_probe(io, "/usr/bin/python3") == {"error": "not probed with a foreign root"}
    assert io.missing == []


def test_probe_path_keeps_pythonpath_entries_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    paths, dropped = torchenv.probe_path({"PYTHONPATH": "/a::/b:", "PATH": "/usr/bin"})
    assert paths == ["/a", "/b"] and "PYTHONPATH" not in dropped
    assert torchenv.probe_path({"PATH": "/usr/bin"})[0] == []
