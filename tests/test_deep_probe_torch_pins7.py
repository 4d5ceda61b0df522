"""Pins for hosttune.doctor.deep.probe_torch (issue 21, practice round HDOC): torch_info's whole device list, a GPU
on PCI bus 0 included, and p2p_copy's buffers and direction (a stand-in `torch` module: no torch import, no GPU
here)."""

import sys
import types
from typing import Any, List

import pytest

from hosttune.doctor.deep import probe_torch as p

MiB = 1 << 20


class Props:
    def __init__(self, name: str, major: int, bus: Any, domain: int = 0, device: int = 0) -> None:
        self.name, self.major, self.minor, self.total_memory = name, major, 0, 80 * 1024 * MiB + 5
        if bus is not None:
            self.pci_bus_id, self.pci_domain_id, self.pci_device_id = bus, domain, device


def stand_in(monkeypatch: pytest.MonkeyPatch, props: List[Props]) -> None:
    t = types.ModuleType("torch")
    t.__version__ = "2.7.1+cu126"  # type: ignore[attr-defined]
    t.version = types.SimpleNamespace(cuda="12.6")  # type: ignore[attr-defined]
    t.get_num_threads = lambda: 4  # type: ignore[attr-defined]
    t.backends = types.SimpleNamespace(cpu=types.SimpleNamespace(get_cpu_capability=lambda: "AVX512"))  # type: ignore
    t.distributed = types.SimpleNamespace(is_available=lambda: True, is_gloo_available=lambda: True,  # type: ignore
                                          is_nccl_available=lambda: True)

    class Tensor:
        def add_(self, x: Any) -> "Tensor":
            return self

    t.zeros = lambda n, device: Tensor()  # type: ignore[attr-defined]
    t.cuda = types.SimpleNamespace(is_available=lambda: True, init=lambda: None,  # type: ignore[attr-defined]
                                   device_count=lambda: len(props), get_device_properties=lambda i: props[i],
                                   synchronize=lambda i=None: None)
    monkeypatch.setitem(sys.modules, "torch", t)


def test_torch_info_devices_with_a_gpu_on_bus_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in(monkeypatch, [Props("NVIDIA A100-SXM4-80GB", 8, 0x00), Props("NVIDIA A100-SXM4-80GB", 8, 0xc1, 1, 3),
                           Props("Tesla V100", 7, None)])
    info = p.torch_info()
    assert info["devices"] == [
        {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "capability": [8, 0], "bf16": True, "memory_mb": 81920,
         "pci_bus_id": "0000:00:00.0"},
        {"index": 1, "name": "NVIDIA A100-SXM4-80GB", "capability": [8, 0], "bf16": True, "memory_mb": 81920,
         "pci_bus_id": "0001:c1:03.0"},
        {"index": 2, "name": "Tesla V100", "capability": [7, 0], "bf16": False, "memory_mb": 81920},
    ]
    assert info["cuda_error"] is None and info["cuda_available"] is True and info["cuda"] == "12.6"
    assert (info["gloo"], info["nccl"], info["threads"], info["cpu_capability"]) == (True, True, 4, "AVX512")


def test_p2p_copy_buffers_and_direction(monkeypatch: pytest.MonkeyPatch) -> None:
    log: List[Any] = []

    class Buf:
        def __init__(self, device: Any) -> None:
            self.device = device

        def copy_(self, other: "Buf", non_blocking: bool = False) -> None:
            log.append(("copy", other.device, self.device))

    t = types.ModuleType("torch")
    t.uint8 = "u8"  # type: ignore[attr-defined]
    t.device = lambda kind, i: (kind, i)  # type: ignore[attr-defined]
    t.empty = lambda n, dtype, device: log.append(("empty", n, dtype, device)) or Buf(device)  # type: ignore
    t.cuda = types.SimpleNamespace(synchronize=lambda i: None,  # type: ignore[attr-defined]
                                   can_device_access_peer=lambda i, j: (i, j) == (2, 5))
    monkeypatch.setitem(sys.modules, "torch", t)
    got = p.p2p_copy(2, 5, 4096, 0.0)
    assert log[:3] == [("empty", 4096, "u8", ("cuda", 2)), ("empty", 4096, "u8", ("cuda", 5)),
                       ("copy", ("cuda", 2), ("cuda", 5))]
    assert set(log[3:]) == {("copy", ("cuda", 2), ("cuda", 5))} and len(log) - 3 >= 3
    assert got["src"] == 2 and got["dst"] == 5 and got["peer"] is True
    assert got["bytes"] == 4096.0 * (len(log) - 3)
