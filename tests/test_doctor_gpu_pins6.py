"""GPU health checks at their lines (issue 21): temperature exactly at the warn and fail lines (the table's and the
GPU's own slowdown threshold), the PCIe link judged only at >= 50 % utilisation, ECC off/pending and its fix, error
counters, retired pages, row remapping and persistence, each word for word (hosttune.doctor.checks.gpu)."""

from typing import Any, Dict, Optional

import pytest
from _doctorhelp import dgpu, gpu_host, run_one

from hosttune.doctor.checks import gpu as gpu_checks
from hosttune.doctor.context import Live

G0, G1 = "GPU0 (0000:1b:00.0)", "GPU1 (0000:1c:00.0)"
TABLE = "below 75 C (warn from 75 C, fail from 85 C: default lines: the GPU reports no slowdown threshold)"


def _host(g0: Dict[str, Any], g1: Optional[Dict[str, Any]] = None) -> Any:
    return gpu_host(gpus=(dgpu(0, **g0), dgpu(1, **(g1 or {}))))


@pytest.mark.parametrize("t0,slow,status,expected", [
    (74, None, "pass", TABLE), (75, None, "warn", TABLE), (84, None, "warn", TABLE), (85, None, "fail", TABLE),
    (79, 90, "pass", "below 80 C (warn from 80 C, fail from 90 C: its slowdown threshold)"),
    (80, 90, "warn", "below 80 C (warn from 80 C, fail from 90 C: its slowdown threshold)"),
    (90, 90, "fail", "below 80 C (warn from 80 C, fail from 90 C: its slowdown threshold)"),
    (76, 10, "warn", TABLE),
])
def test_temperature_lines(t0: int, slow: Optional[int], status: str, expected: str) -> None:
    f = run_one("nvidia.temperature", _host({"temperature_c": t0, "temp_slowdown_c": slow}, {"temperature_c": 30}))
    assert (f.status, f.expected) == (status, expected)
    if status == "pass":
        assert (f.actual, f.fix) == (f"max {t0} C ({G0})", "")
        return
    assert f.actual == f"{G0}: {t0} C"
    used = ("warn from 80 C, fail from 90 C (the GPU slowdown threshold)" if slow == 90
            else "warn from 75 C, fail from 85 C (default lines)")
    assert f.fix == f"check airflow, fans and inlet temperature: nvidia-smi -q -d TEMPERATURE   # {used}"


def test_temperature_worst_of_several_and_unreported() -> None:
    f = run_one("nvidia.temperature", _host({"temperature_c": 60}, {"temperature_c": 70}))
    assert (f.status, f.actual) == ("pass", f"max 70 C ({G1})")
    f = run_one("nvidia.temperature", _host({"temperature_c": 80}, {"temperature_c": 86}))
    assert (f.status, f.actual, f.expected) == ("fail", f"{G0}: 80 C; {G1}: 86 C", TABLE)
    f = run_one("nvidia.temperature", _host({"temperature_c": 80}, {"temperature_c": 86, "temp_slowdown_c": 95}))
    assert (f.status, f.actual) == ("warn", f"{G0}: 80 C; {G1}: 86 C")
    assert f.expected == TABLE + "; below 85 C (warn from 85 C, fail from 95 C: its slowdown threshold)"
    f = run_one("nvidia.temperature", _host({"temperature_c": None}, {"temperature_c": None}))
    assert (f.status, f.actual, f.expected) == ("skip", "temperature not reported", TABLE)


class Sampled(Live):
    def __init__(self, samples: Dict[int, Dict[str, Any]]) -> None:
        self.samples = samples

    def gpu_samples(self) -> Dict[int, Dict[str, Any]]:
        return self.samples


@pytest.mark.parametrize("samples,status,actual", [
    ({0: {"utilization_gpu_pct": 90, "pcie_gen": 4, "pcie_width": 16}, 1: {"utilization_gpu_pct": 49}},
     "warn", f"{G0} Gen4 x16 of Gen5 x16 at 90%"),
    ({0: {"utilization_gpu_pct": 50, "pcie_gen": 5, "pcie_width": 8}, 1: {"utilization_gpu_pct": 100}},
     "warn", f"{G0} Gen5 x8 of Gen5 x16 at 50%"),
    ({0: {"utilization_gpu_pct": 50}, 1: {"utilization_gpu_pct": 99, "pcie_gen": 5, "pcie_width": 16}},
     "pass", "2 busy GPUs at max link"),
    ({0: {"utilization_gpu_pct": 70}, 1: {"utilization_gpu_pct": 0, "pcie_gen": 1, "pcie_width": 1}},
     "pass", "1 busy GPUs at max link, 1 idle not judged"),
    ({0: {"utilization_gpu_pct": 49, "pcie_gen": 1}, 1: {}},
     "pass", "idle: not judged (2 GPUs idle; link speed drops at idle by design)"),
    ({0: {"utilization_gpu_pct": 80, "pcie_gen": 3, "pcie_width": 4}, 1: {"utilization_gpu_pct": 80, "pcie_gen": 3}},
     "warn", f"{G0} Gen3 x4 of Gen5 x16 at 80%; {G1} Gen3 x16 of Gen5 x16 at 80%"),
])
def test_pcie_is_judged_only_under_load(samples: Dict[int, Dict[str, Any]], status: str, actual: str) -> None:
    f = run_one("nvidia.pcie_link", gpu_host(), probe=Sampled(samples))
    assert (f.status, f.actual, f.expected) == (status, actual, "max gen/width under load")
    assert f.fix == ("check the slot/riser and BIOS PCIe speed setting; nvidia-smi -q -d PCIE shows the link"
                     if status == "warn" else "")


def test_ecc_mode() -> None:
    f = run_one("nvidia.ecc_mode", _host({"ecc_enabled": False, "ecc_pending": True}, {"ecc_pending": True}))
    assert (f.status, f.actual, f.fix) == ("warn", f"ECC off on {G0}", "reboot (ECC change already pending)")
    f = run_one("nvidia.ecc_mode", _host({"ecc_enabled": False, "ecc_pending": False},
                                         {"ecc_enabled": False, "ecc_pending": None}))
    assert (f.status, f.actual, f.fix) == ("warn", f"ECC off on {G0}, {G1}", "nvidia-smi -i 0,1 -e 1 && reboot")
    f = run_one("nvidia.ecc_mode", _host({"ecc_pending": False}))
    assert (f.status, f.actual, f.expected, f.fix) == ("warn", f"ECC mode change pending on {G0}",
                                                       "on, nothing pending", "reboot")
    f = run_one("nvidia.ecc_mode", _host({"ecc_enabled": None}, {"ecc_enabled": None}))
    assert (f.status, f.actual) == ("skip", "ECC mode not reported (NotSupported)")
    f = run_one("nvidia.ecc_mode", _host({"ecc_enabled": None}, {"ecc_pending": None}))
    assert (f.status, f.actual) == ("pass", "on (2 datacenter GPUs)")
    f = run_one("nvidia.ecc_mode", _host({"name": "NVIDIA GeForce RTX 4090", "ecc_enabled": False},
                                         {"name": None, "ecc_enabled": False}))
    assert (f.status, f.actual) == ("skip", "no datacenter GPU (ECC optional)")
    f = run_one("nvidia.ecc_mode", _host({"name": "NVIDIA GeForce RTX 4090", "ecc_enabled": False},
                                         {"name": "NVIDIA L40S", "ecc_enabled": False, "ecc_pending": False}))
    assert (f.status, f.actual, f.fix) == ("warn", f"ECC off on {G1}", "nvidia-smi -i 1 -e 1 && reboot")


@pytest.mark.parametrize("name,dc", [
    ("NVIDIA A100-SXM4-80GB", True), ("NVIDIA H100 80GB HBM3", True), ("NVIDIA H20", True), ("NVIDIA B200", True),
    ("NVIDIA GB200", True), ("NVIDIA L40", True), ("NVIDIA L4", True), ("Tesla V100-SXM2-16GB", True),
    ("Tesla T4", True), ("NVIDIA A2", True), ("NVIDIA RTX PRO 6000 Blackwell Server Edition", True),
    ("NVIDIA GeForce RTX 4090", False), ("NVIDIA RTX A6000", False), ("NVIDIA H2000", False), ("Quadro P1000", False),
])
def test_datacenter_names(name: str, dc: bool) -> None:
    assert bool(gpu_checks.DATACENTER.search(name)) is dc


def test_ecc_errors_retire_remap_and_persistence() -> None:
    f = run_one("nvidia.ecc_errors", _host({"ecc_uncorrected_volatile": 0}, {"ecc_uncorrected_volatile": 3}))
    assert (f.status, f.actual, f.expected) == ("fail", f"{G1}: 3", "0")
    assert f.fix == ("stop jobs on GPU 1, then nvidia-smi -r -i 1 (reset) or reboot; if errors come back: "
                     "nvidia-bug-report.sh and contact the vendor (RMA)")
    f = run_one("nvidia.ecc_errors", _host({"ecc_uncorrected_volatile": None}, {"ecc_uncorrected_volatile": 0}))
    assert (f.status, f.actual) == ("pass", "0 on 1 GPUs")
    f = run_one("nvidia.ecc_errors", _host({"ecc_uncorrected_volatile": None}, {"ecc_uncorrected_volatile": None}))
    assert (f.status, f.actual) == ("skip", "ECC counters not reported (ECC off or NotSupported)")

    f = run_one("nvidia.pending_retire", _host({"retired_pages_pending": True}, {"remapped_rows_pending": True}))
    assert (f.status, f.actual) == ("warn", f"pending on {G0}, {G1}")
    assert f.fix == "stop jobs on GPU 0,1, then nvidia-smi -r -i 0,1 (reset) or reboot"
    f = run_one("nvidia.pending_retire", _host({"retired_pages_pending": None, "remapped_rows_pending": None},
                                               {"retired_pages_pending": None, "remapped_rows_pending": False}))
    assert (f.status, f.actual) == ("pass", "nothing pending on 1 GPUs")
    none = {"retired_pages_pending": None, "remapped_rows_pending": None}
    f = run_one("nvidia.pending_retire", _host(none, none))
    assert (f.status, f.actual) == ("skip", "retired pages / remapped rows not reported (NotSupported)")

    f = run_one("nvidia.remap_failure", _host({"remapped_rows_failure": None}, {"remapped_rows_failure": True}))
    assert (f.status, f.actual) == ("fail", f"row remapping failed on {G1}")
    assert f.fix == "take the GPU out of service: nvidia-bug-report.sh, then RMA with the vendor"
    f = run_one("nvidia.remap_failure", _host({"remapped_rows_failure": None}, {"remapped_rows_failure": False}))
    assert (f.status, f.actual) == ("pass", "no failure on 1 GPUs")

    f = run_one("nvidia.persistence", _host({"persistence_mode": True}, {"persistence_mode": False}))
    assert (f.status, f.actual) == ("warn", f"off on {G1}")
    assert f.fix == ("hosttune tune apply --only persistence   # applies it and keeps it; by hand:\n"
                     "nvidia-smi -pm 1\nsystemctl enable --now nvidia-persistenced   # keep it after reboot")
    f = run_one("nvidia.persistence", _host({"persistence_mode": None}, {"persistence_mode": True}))
    assert (f.status, f.actual) == ("pass", "on (1 GPUs)")
    f = run_one("nvidia.persistence", _host({"persistence_mode": None}, {"persistence_mode": None}))
    assert (f.status, f.actual) == ("skip", "persistence mode not reported (NotSupported)")


def test_pci_only_gpus_are_not_judged_for_health() -> None:
    facts = gpu_host(gpus=(dgpu(0, source="pci", persistence_mode=False), dgpu(1, persistence_mode=True)))
    assert run_one("nvidia.persistence", facts).actual == "on (1 GPUs)"


@pytest.mark.parametrize("m0,m1,status,actual", [
    (0, 0, "pass", "none on 2 GPUs"), (0, None, "pass", "none on 1 GPUs"), (0x1, 0x1, "pass", "none on 2 GPUs"),
    (0x8, 0, "fail", f"{G0}: hw_slowdown"),
    (0x20, 0x4, "warn", f"{G0}: sw_thermal_slowdown; {G1}: sw_power_cap"),
    (0x80, 0x40, "fail", f"{G0}: hw_power_brake_slowdown; {G1}: hw_thermal_slowdown"),
    (None, None, "skip", "clock-event reasons not reported (NotSupported)"),
])
def test_clock_reasons(m0: Optional[int], m1: Optional[int], status: str, actual: str) -> None:
    f = run_one("nvidia.clock_reasons", _host({"clock_event_reasons": m0}, {"clock_event_reasons": m1}))
    assert (f.status, f.actual) == (status, actual)
    assert f.fix == ("" if status in ("pass", "skip") else "nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER; check "
                     "airflow/fans and PSU; nvidia-smi -pl shows/sets the power limit")
