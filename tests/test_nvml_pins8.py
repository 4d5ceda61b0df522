"""hosttune.nvml pins (issue 21, practice round HDET8), through the NVML fake (tests/fakes/pynvml.py): the name each
query is remembered under when the GPU cannot answer it (the whole `unsupported()` list), and the event mask an XID
event set registers."""

import json
import os
from typing import Any

import pytest
from conftest import a100

from hosttune import nvml

# every per-device query sample(health=True) makes, by the fake's function name
_SAMPLE_FNS = (
    "nvmlDeviceGetTemperature", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetClockInfo", "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetPcieReplayCounter", "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetViolationStatus", "nvmlDeviceGetNvLinkState",
)


def _host(fake_nvml: Any, *devices: Any) -> None:
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": list(devices)})


def test_a_gpu_that_answers_nothing_gives_an_empty_sample_and_names_every_query_once(fake_nvml: Any) -> None:
    import pynvml

    _host(fake_nvml, a100(0, "3B", errors={fn: "NOT_SUPPORTED" for fn in _SAMPLE_FNS}), a100(1, "5E"))
    with nvml.Nvml() as n:
        assert n.sample(0, health=True, nvlinks=2) == {}
        assert n.unsupported(0) == [
            "clock_event_reasons", "ecc_uncorrected_volatile", "energy", "field_values", "mem_clock_mhz", "memory",
            "nvlink0", "nvlink1", "pcie_gen", "pcie_replay", "pcie_width", "power_limit_w", "power_w", "processes",
            "remapped_rows", "retired_pages_pending", "sm_clock_mhz", "temperature_c", "utilization",
            "violation_board_limit", "violation_low_utilization", "violation_power", "violation_reliability",
            "violation_sync_boost", "violation_thermal", "violation_total_app_clocks", "violation_total_base_clocks",
        ]
        assert n.unsupported(1) == [] and n.unsupported(-1) == []
        before = pynvml.fake_calls()
        assert n.sample(0, health=True, nvlinks=2) == {}
        after = pynvml.fake_calls()
    assert {fn: after.get(fn, 0) - before.get(fn, 0) for fn in _SAMPLE_FNS} == dict.fromkeys(_SAMPLE_FNS, 0)


def test_utilization_is_its_own_query_not_tied_to_memory(fake_nvml: Any) -> None:
    """Memory info not answered, utilisation answered (and the other way round): each field stands alone."""
    _host(fake_nvml, a100(0, "3B", utilization=[61, 22], errors={"nvmlDeviceGetMemoryInfo": "NOT_SUPPORTED"}),
          a100(1, "5E", utilization=None))
    with nvml.Nvml() as n:
        s0, s1 = n.sample(0), n.sample(1)
        assert (s0.get("utilization_gpu_pct"), s0.get("utilization_memory_pct"), "memory_used_mb" in s0) == (
            61, 22, False)
        assert ("utilization_gpu_pct" in s1, s1["memory_used_mb"], s1["memory_total_mb"]) == (False, 512, 81920)
        assert (n.unsupported(0), n.unsupported(1)) == (["memory"], ["utilization"])


def test_xid_event_set_registers_for_critical_xids_only(fake_nvml: Any) -> None:
    """nvmlDeviceRegisterEvents is asked for nvmlEventTypeXidCriticalError alone: registering every type the GPU
    supports would fill the set with clock and P-state events that each use up one of poll()'s `limit`."""
    _host(fake_nvml, a100(0, "3B", xids=[13]), a100(1, "5E", event_types=0x1 | 0x2 | 0x4 | 0x10))
    with nvml.Nvml() as n:
        xe = n.xid_events([0, 1])
        try:
            assert (xe.gpus, xe.why, xe.by_uuid) == ([0], "GPU 1 does not report XID events",
                                                      {"GPU-00000000-1111-2222-3333-444444444444": 0})
            assert xe.set.registered == {0: [nvml.EVENT_TYPE_XID_CRITICAL, 1]}
        finally:
            xe.close()


def test_power_in_watts_keeps_the_milliwatts(fake_nvml: Any) -> None:
    _host(fake_nvml, a100(0, "3B", power_mw=123457, power_limit_mw=299999), a100(1, "5E", power_mw=1,
                                                                                 power_limit_mw=700500))
    with nvml.Nvml() as n:
        got = [(s["power_w"], s["power_limit_w"]) for s in (n.sample(0), n.sample(1))]
    assert got == [(123.457, 299.999), (0.001, 700.5)]


def test_health_links_up_without_error_counters_has_no_error_table(fake_nvml: Any) -> None:
    """Links that answer their state but none of the error counters (NOT_SUPPORTED): `nvlink_up` alone, no empty
    `nvlink_errors`; a link past the GPU's count is None."""
    _host(fake_nvml, a100(0, "3B", nvlinks=[{"active": 1}, {"active": 0, "errors": {}}]))
    with nvml.Nvml() as n:
        assert n.health(0, nvlinks=3) == {"nvlink_up": [1, 0, None]}


def test_a_process_using_no_gpu_memory_yet_says_zero(fake_nvml: Any) -> None:
    """0 bytes is an answer (a context just created), not NVML_VALUE_NOT_AVAILABLE (None: the field is left out)."""
    procs = [{"pid": 300, "used_memory_mb": 0}, {"pid": 20, "used_memory_mb": None}, {"pid": 4000, "used_memory_mb": 7}]
    _host(fake_nvml, a100(0, "3B", processes=procs))
    with nvml.Nvml() as n:
        assert n.processes(0) == [{"pid": 20}, {"pid": 300, "used_memory_mb": 0}, {"pid": 4000, "used_memory_mb": 7}]


def test_an_xid_whose_gpu_cannot_tell_its_uuid_is_still_its_gpus(fake_nvml: Any) -> None:
    """The event's device no longer answers its UUID: the XID is still reported, for its GPU (found by the handle
    registered for it), not GPU 0's."""
    scenario = {"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "3B"), a100(1, "5E")]}
    fake_nvml(scenario)
    with nvml.Nvml() as n:
        xe = n.xid_events([0, 1])
        try:
            assert xe.gpus == [0, 1]
            scenario["devices"][1].update(xids=[79], errors={"nvmlDeviceGetUUID": "UNKNOWN"})
            scenario["devices"][0]["xids"] = [48]
            path = os.environ["HOSTTUNE_FAKE_NVML"]
            before = os.stat(path).st_mtime_ns
            with open(path, "w") as f:
                json.dump(scenario, f)
            os.utime(path, ns=(before + 10**9, before + 10**9))  # the fake re-reads its file when the mtime changes
            assert xe.poll() == [(0, 48), (1, 79)]
        finally:
            xe.close()


def test_zero_answers_are_kept(fake_nvml: Any) -> None:
    """0 is an answer (no ECC errors, no clock-event reason, an idle GPU at 0 W), never a field left out."""
    _host(fake_nvml, a100(0, "3B", temperature_c=0, power_mw=0, clock_event_reasons=0, clocks={"sm": 0, "mem": 0},
                          pcie={"gen": 0, "gen_max": 4, "width": 0, "width_max": 16}))
    with nvml.Nvml() as n:
        s = n.sample(0)
    assert s == {"temperature_c": 0, "memory_used_mb": 512, "memory_total_mb": 81920, "utilization_gpu_pct": 0,
                 "utilization_memory_pct": 0, "power_w": 0.0, "power_limit_w": 400.0, "sm_clock_mhz": 0,
                 "mem_clock_mhz": 0, "clock_event_reasons": 0, "ecc_uncorrected_volatile": 0,
                 "retired_pages_pending": False, "remapped_rows_correctable": 0, "remapped_rows_uncorrectable": 0,
                 "remapped_rows_pending": False, "remapped_rows_failure": False, "pcie_gen": 0, "pcie_width": 0,
                 "processes": []}


def test_gpu_is_lost_raises_from_any_query_and_is_not_remembered(fake_nvml: Any) -> None:
    """NVML_ERROR_GPU_IS_LOST from any query (a device's or the system's) is GpuLost naming the index asked, never a
    field quietly left out."""
    import pynvml

    _host(fake_nvml, a100(0, "3B"))

    def lost(*_: Any) -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    with nvml.Nvml() as n:
        for index in (-1, 0):
            with pytest.raises(nvml.GpuLost) as info:
                n._call(index, "x", lost)
            assert str(info.value).startswith(f"GPU {index}: ")
        assert n.unsupported(-1) == [] and n.unsupported(0) == []
