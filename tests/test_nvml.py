"""hosttune.nvml against the fake pynvml: normal reads, unsupported fields, lost GPUs, init failures."""

from typing import Any

import pytest
from conftest import a100

from hosttune import nvml


def test_static_and_sample_read_a_healthy_gpu(fake_nvml: Any) -> None:
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "3B", 0)]})
    with nvml.Nvml() as n:
        assert n.driver_version() == "550.54.15"
        assert n.cuda_driver_version() == "12.4"
        assert n.count() == 1
        st = n.static(0)
        assert st["pci_bus_id"] == "0000:3b:00.0"
        assert st["memory_mb"] == 81920 and st["ecc_enabled"] is True and st["persistence_mode"] is True
        s = n.sample(0)
        assert s["temperature_c"] == 38 and s["power_w"] == 65.0 and s["power_limit_w"] == 400.0
        assert s["remapped_rows_pending"] is False and s["pcie_gen"] == 4
        assert nvml.reason_names(s["clock_event_reasons"]) == ["gpu_idle"]


def test_not_supported_fields_are_left_out_and_not_asked_again(fake_nvml: Any) -> None:
    import pynvml

    gpu = a100(0, "3B", errors={"nvmlDeviceGetPowerUsage": "NOT_SUPPORTED"}, ecc=None, remapped_rows=None)
    fake_nvml({"driver": "535.1", "cuda_driver": 12020, "devices": [gpu]})
    with nvml.Nvml() as n:
        first = n.sample(0)
        n.sample(0)
        assert "power_w" not in first and "ecc_uncorrected_volatile" not in first
        assert "remapped_rows_pending" not in first
        assert pynvml.fake_calls()["nvmlDeviceGetPowerUsage"] == 1
        assert "power_w" in n.unsupported(0)


def test_lost_gpu_raises_gpu_lost(fake_nvml: Any) -> None:
    fake_nvml({"driver": "535.1", "cuda_driver": 12020, "devices": [a100(0, "3B", lost=True)]})
    with nvml.Nvml() as n, pytest.raises(nvml.GpuLost):
        n.sample(0)


@pytest.mark.parametrize(
    "error,status",
    [
        ("DRIVER_NOT_LOADED", "driver_not_loaded"),
        ("LIB_RM_VERSION_MISMATCH", "version_mismatch"),
        ("NO_PERMISSION", "no_permission"),
        ("LIBRARY_NOT_FOUND", "library_not_found"),
        ("UNKNOWN", "error"),
    ],
)
def test_init_failures_become_a_status(fake_nvml: Any, error: str, status: str) -> None:
    fake_nvml({"init_error": error})
    with pytest.raises(nvml.NvmlUnavailable) as info:
        nvml.Nvml()
    assert info.value.status == status


def test_no_scenario_is_a_host_without_the_library(fake_nvml: Any) -> None:
    import pynvml

    pynvml.fake_configure(None)
    with pytest.raises(nvml.NvmlUnavailable) as info:
        nvml.Nvml()
    assert info.value.status == "library_not_found"


def test_fake_raises_uninitialized_before_init(fake_nvml: Any) -> None:
    import pynvml

    fake_nvml({"driver": "1", "devices": []})
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetCount()
    err = pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
    assert isinstance(err, pynvml.NVMLError_NotSupported) and str(err) == "Not Supported"


@pytest.mark.parametrize(
    "raw,norm", [("00000000:3B:00.0", "0000:3b:00.0"), (b"0000:AF:00.0", "0000:af:00.0"), ("3b:00.0", "0000:3b:00.0")]
)
def test_normalize_bus_id(raw: Any, norm: str) -> None:
    assert nvml.normalize_bus_id(raw) == norm


def test_slowdown_threshold_is_read_once_as_a_static_field(fake_nvml: Any) -> None:
    import pynvml

    gpu = a100(0, "3B", temperature_thresholds={"slowdown": 90, "shutdown": 95})
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [gpu]})
    with nvml.Nvml() as n:
        assert n.static(0)["temp_slowdown_c"] == 90
        n.sample(0)
        n.sample(0)
        assert pynvml.fake_calls()["nvmlDeviceGetTemperatureThreshold"] == 1  # static only, never per sample
        assert "temp_slowdown_c" not in n.sample(0)


def test_slowdown_threshold_not_supported_is_left_out(fake_nvml: Any) -> None:
    fake_nvml({"driver": "535.1", "cuda_driver": 12020, "devices": [a100(0, "3B")]})  # no thresholds: NotSupported
    with nvml.Nvml() as n:
        st = n.static(0)
        assert "temp_slowdown_c" not in st and st["name"] == "NVIDIA A100-SXM4-80GB"
        assert "temp_slowdown" in n.unsupported(0)


def test_fake_temperature_threshold_follows_nvml_h(fake_nvml: Any) -> None:
    """nvml.h: SHUTDOWN = 0, SLOWDOWN = 1; an unknown threshold type is INVALID_ARGUMENT, an unreported one
    NOT_SUPPORTED (what the real nvidia-ml-py raises)."""
    import pynvml

    fake_nvml({"driver": "1", "devices": [a100(0, "3B", temperature_thresholds={"slowdown": 87, "shutdown": 92}),
                                          a100(1, "5E")]})
    assert (pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN) == (0, 1)
    assert nvml.TEMPERATURE_THRESHOLD_SLOWDOWN == pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
    pynvml.nvmlInit()
    try:
        h0, h1 = pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.nvmlDeviceGetHandleByIndex(1)
        assert pynvml.nvmlDeviceGetTemperatureThreshold(h0, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN) == 87
        assert pynvml.nvmlDeviceGetTemperatureThreshold(h0, pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN) == 92
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceGetTemperatureThreshold(h0, pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX)
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceGetTemperatureThreshold(h1, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            pynvml.nvmlDeviceGetTemperatureThreshold(h0, pynvml.NVML_TEMPERATURE_THRESHOLD_COUNT)
    finally:
        pynvml.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetTemperatureThreshold(h0, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)


def test_detected_gpu_carries_its_slowdown_threshold(fake_nvml: Any, tmp_path: Any) -> None:
    import pynvml

    from hosttune.detect.gpu import probe_nvml
    from hosttune.detect.hostio import HostIO

    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "3B", temperature_thresholds={"slowdown": 90}), a100(1, "5E")]})
    gpus, info = probe_nvml(HostIO(tmp_path), pynvml)
    assert info["nvml"] == "ok" and gpus is not None
    assert [g.temp_slowdown_c for g in gpus] == [90, None]
