"""Pin for mutation round 5's survivor in hosttune/doctor/checks/nvidia.py (issue 21): nvidia.driver_cuda against
NVIDIA's own minimums. The table below is copied from the CUDA Toolkit Release Notes, "CUDA Toolkit and Corresponding
Driver Versions" (Table 3, Linux x86_64, the GA release of each toolkit), not from hosttune: a driver exactly at the
minimum passes, one patch level below does not: it warns (minor-version compatibility, Table 2: 11.x from 450.80.02,
12.x from 525.60.13) or, below its major's minimum or before CUDA 11 (no such compatibility), fails."""

from typing import Any

import pytest
from _doctorhelp import gpu_host, run_one

from hosttune.facts import Nvidia, TorchInstall

# (torch's CUDA, the toolkit's GA driver, one patch level below it)
NVIDIA_TABLE_3 = [
    ("10.2", "440.33", "440.32"),
    ("11.1", "455.23", "455.22"),  # 11.1.0 GA; 455.32 is 11.1.1 (Update 1)'s
    ("11.2", "460.27.03", "460.27.02"),
    ("11.3", "465.19.01", "465.19.00"),
    ("11.4", "470.42.01", "470.42.00"),
    ("11.5", "495.29.05", "495.29.04"),
    ("11.6", "510.39.01", "510.39.00"),
    ("11.7", "515.43.04", "515.43.03"),
    ("11.8", "520.61.05", "520.61.04"),
    ("12.0", "525.60.13", "525.60.12"),
    ("12.1", "530.30.02", "530.30.01"),
    ("12.2", "535.54.03", "535.54.02"),
    ("12.3", "545.23.06", "545.23.05"),
    ("12.4", "550.54.14", "550.54.13"),
    ("12.5", "555.42.02", "555.42.01"),
    ("12.6", "560.28.03", "560.28.02"),
    ("12.8", "570.26", "570.25"),
    ("12.9", "575.51.03", "575.51.02"),
    ("13.0", "580.65.06", "580.65.05"),
]


def driver_cuda(driver: str, cuda: str) -> Any:
    facts = gpu_host(nvidia=Nvidia(driver=driver, nvml="ok"),
                     torch=TorchInstall(python="/opt/train/bin/python", version="2.6.0", cuda=cuda,
                                        cuda_available=True, device_count=2, in_venv=True))
    return run_one("nvidia.driver_cuda", facts)


@pytest.mark.parametrize("cuda,minimum,below", NVIDIA_TABLE_3, ids=[row[0] for row in NVIDIA_TABLE_3])
def test_a_driver_at_the_toolkits_minimum_passes_and_one_below_does_not(cuda: str, minimum: str, below: str) -> None:
    at = driver_cuda(minimum, cuda)
    assert at.status == "pass", at
    assert at.actual == f"driver {minimum}, torch built with CUDA {cuda}" and at.expected == f">= {minimum}", at
    under = driver_cuda(below, cuda)
    if cuda == "12.0":  # 12.0's driver is also the 12.x minimum: below it no CUDA 12 starts
        assert (under.status, under.expected) == ("fail", ">= 525.60.13 (CUDA 12.x)"), under
    else:
        assert under.status == ("fail" if cuda.startswith("10.") else "warn"), under
        assert under.expected == f">= {minimum} (CUDA {cuda})", under
    assert f"to >= {minimum}" in under.fix, under


def test_cuda_11_1_on_its_ga_driver_is_not_minor_version_compatibility() -> None:
    """455.23 is CUDA 11.1's own driver: a full pass, not the warn of a driver that runs 11.1 only under
    minor-version compatibility (>= 450.80.02)."""
    f = driver_cuda("455.23", "11.1")
    assert (f.status, f.actual) == ("pass", "driver 455.23, torch built with CUDA 11.1"), f
    assert driver_cuda("455.32", "11.1").status == "pass"
    warn = driver_cuda("455.22", "11.1")
    assert warn.status == "warn" and warn.actual.endswith("(minor-version compatibility only)"), warn
