"""NVIDIA GPUs: through NVML on a live host, else from the PCI tree (vendor 0x10de, display/3D class)."""

from typing import Any, Dict, List, Optional, Tuple

from hosttune.detect.hostio import HostIO
from hosttune.facts import Gpu, Nvidia
from hosttune.nvml import GpuLost, Nvml, NvmlUnavailable, normalize_bus_id

PCI_DIR = "/sys/bus/pci/devices"
NVIDIA_VENDOR = "0x10de"
NVSWITCH_CLASS = "0x0680"  # "bridge, other": how NVSwitches show up


def is_nvidia_gpu(vendor: Optional[str], pci_class: Optional[str]) -> bool:
    """vendor 0x10de and class 0x03xxxx (VGA 0x0300, 3D controller 0x0302, display 0x0380)."""
    if (vendor or "").lower() != NVIDIA_VENDOR or not pci_class:
        return False
    return pci_class.lower().startswith("0x03")


def is_nvswitch(vendor: Optional[str], pci_class: Optional[str]) -> bool:
    return (vendor or "").lower() == NVIDIA_VENDOR and (pci_class or "").lower().startswith(NVSWITCH_CLASS)


def device_locality(io: HostIO, bdf: str) -> Tuple[int, Tuple[int, ...]]:
    """(numa_node, local CPUs) of a PCI device; -1 / () when sysfs does not say (single-node boxes, some BIOSes)."""
    d = f"{PCI_DIR}/{bdf}"
    node = io.read_int(f"{d}/numa_node")
    cpus = io.cpus(f"{d}/local_cpulist", f"pci {bdf}", f"{d}/local_cpus") or []
    return (node if node is not None else -1), tuple(cpus)


def scan_pci(io: HostIO) -> Tuple[List[Gpu], int]:
    """(NVIDIA GPUs in bus order, number of NVSwitches). Devices without a vendor file are not identifiable."""
    gpus: List[Gpu] = []
    switches = 0
    if not io.isdir(PCI_DIR):
        io.note("gpus.pci", f"{PCI_DIR} not found")
        return gpus, 0
    for bdf in io.listdir(PCI_DIR):
        d = f"{PCI_DIR}/{bdf}"
        vendor = io.read(f"{d}/vendor")
        pci_class = io.read(f"{d}/class")
        if is_nvswitch(vendor, pci_class):
            switches += 1
            continue
        if not is_nvidia_gpu(vendor, pci_class):
            continue
        node, cpus = device_locality(io, bdf)
        gpus.append(Gpu(index=len(gpus), pci_bus_id=normalize_bus_id(bdf), numa_node=node, local_cpus=cpus,
                        vendor_id=NVIDIA_VENDOR, device_id=io.read(f"{d}/device"), pci_class=pci_class,
                        source="pci"))
    return gpus, switches


def probe_nvml(io: HostIO, module: Any = None, sample: bool = True) -> Tuple[Optional[List[Gpu]], Dict[str, Any]]:
    """(GPUs from NVML or None when NVML is unavailable, {nvml, nvml_error, driver, cuda_driver}).

    `sample=False` (the launcher's fast path) asks only the static queries: no temperature, link or error counters.
    """
    info: Dict[str, Any] = {"nvml": "ok", "nvml_error": None, "driver": None, "cuda_driver": None}
    try:
        session = Nvml(module)
    except NvmlUnavailable as exc:
        info.update(nvml=exc.status, nvml_error=str(exc))
        return None, info
    gpus: List[Gpu] = []
    try:
        info["driver"] = session.driver_version()
        info["cuda_driver"] = session.cuda_driver_version()
        for index in range(session.count()):
            try:
                st = session.static(index)
                now = session.sample(index) if sample else {}
            except GpuLost as exc:
                io.note(f"gpu{index}", str(exc))
                continue
            except session.nv.NVMLError as exc:
                io.note(f"gpu{index}", f"NVML: {exc}")
                continue
            bdf = st.get("pci_bus_id") or ""
            node, cpus = device_locality(io, bdf) if bdf else (-1, ())
            pci_dir = f"{PCI_DIR}/{bdf}"
            gpus.append(Gpu(
                index=index, name=st.get("name"), uuid=st.get("uuid"), pci_bus_id=bdf, numa_node=node,
                local_cpus=cpus, memory_mb=st.get("memory_mb"), persistence_mode=st.get("persistence_mode"),
                ecc_enabled=st.get("ecc_enabled"), ecc_pending=st.get("ecc_pending"),
                pcie_gen=now.get("pcie_gen"), pcie_gen_max=st.get("pcie_gen_max"),
                pcie_width=now.get("pcie_width"), pcie_width_max=st.get("pcie_width_max"),
                temperature_c=now.get("temperature_c"), temp_slowdown_c=st.get("temp_slowdown_c"),
                clock_event_reasons=now.get("clock_event_reasons"),
                ecc_uncorrected_volatile=now.get("ecc_uncorrected_volatile"),
                retired_pages_pending=now.get("retired_pages_pending"),
                remapped_rows_pending=now.get("remapped_rows_pending"),
                remapped_rows_failure=now.get("remapped_rows_failure"),
                device_id=io.read(f"{pci_dir}/device"), pci_class=io.read(f"{pci_dir}/class"), source="nvml",
            ))
    finally:
        session.close()
    return gpus, info


def probe(io: HostIO, use_nvml: bool = True, module: Any = None,
          sample: bool = True) -> Tuple[Tuple[Gpu, ...], Dict[str, Any], int]:
    """(gpus, NVML info for Nvidia, nvswitch count). NVML only on a live host (or with an explicit `module`)."""
    pci_gpus, switches = scan_pci(io)
    info: Dict[str, Any] = {"nvml": "skipped", "nvml_error": None, "driver": None, "cuda_driver": None}
    if use_nvml and (io.live or module is not None):
        nvml_gpus, info = probe_nvml(io, module, sample)
        if nvml_gpus is not None:
            return tuple(nvml_gpus), info, switches
    return tuple(pci_gpus), info, switches


def nvidia_base(info: Dict[str, Any], switches: int) -> Dict[str, Any]:
    return {"driver": info.get("driver"), "cuda_driver": info.get("cuda_driver"), "nvml": info["nvml"],
            "nvml_error": info.get("nvml_error"), "nvswitches": switches}


__all__ = ["Nvidia", "probe", "scan_pci"]
