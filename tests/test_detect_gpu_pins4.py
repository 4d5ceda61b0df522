"""hosttune.detect.gpu pinned on captured PCI trees and the fake NVML (issue 21): which PCI functions are GPUs or
NVSwitches, their NUMA locality (local_cpulist, else the mask, else unknown), NVML's view merged with sysfs, the
fast path without samples, a lost GPU skipped and noted, and NVML unavailable falling back to the PCI scan."""

from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import a100, build_tree

from hosttune.detect import gpu
from hosttune.detect.hostio import HostIO
from hosttune.facts import Gpu

P = "sys/bus/pci/devices"


def dev(bdf: str, vendor: str, cls: str, **extra: str) -> Dict[str, str]:
    out = {f"{P}/{bdf}/vendor": vendor + "\n", f"{P}/{bdf}/class": cls + "\n", f"{P}/{bdf}/device": "0x20b0\n"}
    out.update({f"{P}/{bdf}/{k}": v for k, v in extra.items()})
    return out


def pci_tree(tmp_path: Path) -> HostIO:
    files: Dict[str, str] = {}
    files.update(dev("0000:3b:00.0", "0x10de", "0x030200", numa_node="1\n", local_cpulist="4-7\n"))
    files.update(dev("0000:1b:00.0", "0x10de", "0x030000", numa_node="-1\n", local_cpus="0000000f\n"))
    files.update(dev("0000:5e:00.0", "0x10de", "0x068000"))  # NVSwitch
    files.update(dev("0000:5f:00.0", "0x10de", "0x068000"))
    files.update(dev("0000:00:1f.3", "0x8086", "0x040300"))  # audio
    files.update(dev("0000:3b:00.1", "0x10de", "0x040300"))  # the GPU's audio function
    files[f"{P}/0000:99:00.0/class"] = "0x030200\n"  # no vendor: not identifiable
    files.update(dev("0000:af:00.0", "0x10de", "0x038000"))  # a display controller; no locality files
    return HostIO(build_tree(tmp_path, files))


def test_scan_pci(tmp_path: Path) -> None:
    io = pci_tree(tmp_path)
    gpus, switches = gpu.scan_pci(io)
    assert switches == 2
    assert gpus == [
        Gpu(index=0, pci_bus_id="0000:1b:00.0", numa_node=-1, local_cpus=(0, 1, 2, 3), device_id="0x20b0",
            pci_class="0x030000", source="pci"),
        Gpu(index=1, pci_bus_id="0000:3b:00.0", numa_node=1, local_cpus=(4, 5, 6, 7), device_id="0x20b0",
            pci_class="0x030200", source="pci"),
        Gpu(index=2, pci_bus_id="0000:af:00.0", numa_node=-1, local_cpus=(), device_id="0x20b0",
            pci_class="0x038000", source="pci"),
    ]
    assert gpu.device_locality(io, "0000:af:00.0") == (-1, ())
    assert io.missing == []


def test_no_pci_folder_is_noted(tmp_path: Path) -> None:
    io = HostIO(build_tree(tmp_path, {"etc/x": ""}))
    assert gpu.scan_pci(io) == ([], 0)
    assert io.missing == ["gpus.pci: /sys/bus/pci/devices not found"]


def test_a_foreign_root_never_asks_nvml(tmp_path: Path) -> None:
    io = pci_tree(tmp_path)
    gpus, info, switches = gpu.probe(io)
    assert [g.source for g in gpus] == ["pci"] * 3 and switches == 2
    assert info == {"nvml": "skipped", "nvml_error": None, "driver": None, "cuda_driver": None}
    assert gpu.nvidia_base(info, switches) == {"driver": None, "cuda_driver": None, "nvml": "skipped",
                                               "nvml_error": None, "nvswitches": 2}


def test_nvml_view_with_sysfs_locality(tmp_path: Path, fake_nvml: Any) -> None:
    import pynvml

    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "1B", temperature_c=55, clock_event_reasons=0x4,
                                temperature_thresholds={"slowdown": 88}),
                           a100(1, "3B", lost=True), a100(2, "AF", errors={"nvmlDeviceGetName": "UNKNOWN"})]})
    io = pci_tree(tmp_path)
    gpus, info, switches = gpu.probe(io, module=pynvml)
    assert info == {"nvml": "ok", "nvml_error": None, "driver": "550.54.15", "cuda_driver": "12.4"}
    assert [g.index for g in gpus] == [0, 2]  # the lost GPU 1 is left out and noted
    assert io.missing == ["gpu1: GPU 1: GPU is lost"]
    g = gpus[0]
    assert (g.name, g.pci_bus_id, g.numa_node, g.local_cpus, g.source) == \
        ("NVIDIA A100-SXM4-80GB", "0000:1b:00.0", -1, (0, 1, 2, 3), "nvml")
    assert (g.memory_mb, g.persistence_mode, g.ecc_enabled, g.ecc_pending) == (81920, True, True, True)
    assert (g.pcie_gen, g.pcie_gen_max, g.pcie_width, g.pcie_width_max) == (4, 4, 16, 16)
    assert (g.temperature_c, g.temp_slowdown_c, g.clock_event_reasons) == (55, 88, 0x4)
    assert (g.ecc_uncorrected_volatile, g.retired_pages_pending, g.remapped_rows_pending,
            g.remapped_rows_failure) == (0, False, False, False)
    assert (g.device_id, g.pci_class) == ("0x20b0", "0x030000")
    assert gpus[1].name is None and gpus[1].numa_node == -1 and gpus[1].pci_class == "0x038000"


def test_fast_path_reads_no_sample(tmp_path: Path, fake_nvml: Any) -> None:
    import pynvml

    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "3B")]})
    gpus, info, _ = gpu.probe(pci_tree(tmp_path), module=pynvml, sample=False)
    g = gpus[0]
    assert g.numa_node == 1 and g.local_cpus == (4, 5, 6, 7) and g.memory_mb == 81920
    assert (g.temperature_c, g.pcie_gen, g.clock_event_reasons, g.remapped_rows_failure) == (None, None, None, None)
    assert "nvmlDeviceGetTemperature" not in pynvml.fake_calls()


@pytest.mark.parametrize("error,status", [("DRIVER_NOT_LOADED", "driver_not_loaded"),
                                          ("LIB_RM_VERSION_MISMATCH", "version_mismatch")])
def test_nvml_unavailable_falls_back_to_pci(tmp_path: Path, fake_nvml: Any, error: str, status: str) -> None:
    import pynvml

    fake_nvml({"init_error": error})
    gpus, info, switches = gpu.probe(pci_tree(tmp_path), module=pynvml)
    assert [g.source for g in gpus] == ["pci"] * 3 and switches == 2
    assert info["nvml"] == status and info["nvml_error"].startswith("nvmlInit: ")
    assert info["driver"] is None and info["cuda_driver"] is None
    gpus, info, _ = gpu.probe(pci_tree(tmp_path / "b"), use_nvml=False, module=pynvml)
    assert info["nvml"] == "skipped"
