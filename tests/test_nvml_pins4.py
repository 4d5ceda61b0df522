"""hosttune.nvml pinned field by field against the fake pynvml (issue 21): every unit conversion, the health
fields, NVLink counting, processes, XID events and the not-asked-again cache, each asserted to its exact value."""

import json
import os
from typing import Any

import pytest
from conftest import a100

from hosttune import nvml

MB = 1024 * 1024


def _host(fake_nvml: Any, *devices: Any, **top: Any) -> None:
    scenario = {"driver": "550.54.15", "cuda_driver": 12040, "devices": list(devices)}
    scenario.update(top)
    fake_nvml(scenario)


def test_reason_names_decode_each_bit_and_nothing_for_zero_or_none() -> None:
    assert nvml.reason_names(None) == [] and nvml.reason_names(0) == []
    assert nvml.reason_names(0x1) == ["gpu_idle"]
    assert nvml.reason_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert nvml.reason_names(0x1FF) == ["gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
                                        "sync_boost", "sw_thermal_slowdown", "hw_thermal_slowdown",
                                        "hw_power_brake_slowdown", "display_clock_setting"]  # nvml.h's bits 0-8
    assert nvml.reason_names(0x200) == []


@pytest.mark.parametrize("raw,norm", [
    (b"00000000:3B:00.0", "0000:3b:00.0"),
    ("0001:AF:00.1", "0001:af:00.1"),
    (":3b:00.0", "0000:3b:00.0"),
    ("3B:00.0", "0000:3b:00.0"),
    (" 0000:3b:00.0\n", "0000:3b:00.0"),
    ("weird", "weird"),
])
def test_normalize_bus_id_every_shape(raw: Any, norm: str) -> None:
    assert nvml.normalize_bus_id(raw) == norm


@pytest.mark.parametrize("value,text", [(12040, "12.4"), (11080, "11.8"), (12090, "12.9"), (13000, "13.0")])
def test_cuda_driver_version_is_major_dot_minor(fake_nvml: Any, value: int, text: str) -> None:
    _host(fake_nvml, cuda_driver=value)
    with nvml.Nvml() as n:
        assert n.cuda_driver_version() == text


def test_static_reads_every_field_exactly(fake_nvml: Any) -> None:
    gpu = a100(0, "3B", ecc=[1, 0], persistence_mode=0, memory_total_mb=40960,
               pcie={"gen": 3, "gen_max": 4, "width": 8, "width_max": 16},
               temperature_thresholds={"slowdown": 87, "shutdown": 92})
    _host(fake_nvml, gpu)
    with nvml.Nvml() as n:
        st = n.static(0)
    assert st == {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": gpu["uuid"], "pci_bus_id": "0000:3b:00.0",
                  "memory_mb": 40960, "persistence_mode": False, "ecc_enabled": True, "ecc_pending": False,
                  "pcie_gen_max": 4, "pcie_width_max": 16, "temp_slowdown_c": 87}


def test_static_without_answers_gives_none_not_a_crash(fake_nvml: Any) -> None:
    gpu = a100(0, "3B", ecc=None, errors={"nvmlDeviceGetName": "NOT_SUPPORTED",
                                          "nvmlDeviceGetPersistenceMode": "NOT_SUPPORTED"})
    _host(fake_nvml, gpu)
    with nvml.Nvml() as n:
        st = n.static(0)
    assert st["name"] is None and st["persistence_mode"] is None
    assert st["ecc_enabled"] is None and st["ecc_pending"] is None
    assert "temp_slowdown_c" not in st


def test_sample_reads_every_field_exactly(fake_nvml: Any) -> None:
    gpu = a100(0, "3B", memory_used_mb=1536, utilization=[77, 31], power_mw=123456, power_limit_mw=300000,
               clocks={"sm": 1200, "mem": 1500, "graphics": 1200}, clock_event_reasons=0x44,
               ecc_uncorrected_volatile=3, retired_pages_pending=1, remapped_rows=[5, 2, 1, 0],
               pcie={"gen": 3, "gen_max": 4, "width": 8, "width_max": 16}, temperature_c=71)
    _host(fake_nvml, gpu)
    with nvml.Nvml() as n:
        s = n.sample(0)
    assert s == {"temperature_c": 71, "memory_used_mb": 1536, "memory_total_mb": 81920,
                 "utilization_gpu_pct": 77, "utilization_memory_pct": 31, "power_w": 123.456,
                 "power_limit_w": 300.0, "sm_clock_mhz": 1200, "mem_clock_mhz": 1500, "clock_event_reasons": 0x44,
                 "ecc_uncorrected_volatile": 3, "retired_pages_pending": True, "remapped_rows_correctable": 5,
                 "remapped_rows_uncorrectable": 2, "remapped_rows_pending": True, "remapped_rows_failure": False,
                 "pcie_gen": 3, "pcie_width": 8, "processes": []}


def test_unsupported_is_per_gpu_and_per_field(fake_nvml: Any) -> None:
    import pynvml

    _host(fake_nvml, a100(0, "3B", errors={"nvmlDeviceGetPowerUsage": "NOT_SUPPORTED"}), a100(1, "5E"))
    with nvml.Nvml() as n:
        assert "power_w" not in n.sample(0)
        assert n.sample(1)["power_w"] == 65.0  # GPU 1 is still asked
        n.sample(0)
        assert pynvml.fake_calls()["nvmlDeviceGetPowerUsage"] == 2  # GPU 0 once, GPU 1 once
        assert n.unsupported(0) == ["power_w"] and n.unsupported(1) == []


@pytest.mark.parametrize("error,cached", [("NO_PERMISSION", True), ("FUNCTION_NOT_FOUND", True), ("NO_DATA", True),
                                          ("UNKNOWN", False), ("TIMEOUT", False)])
def test_which_errors_stop_the_asking(fake_nvml: Any, error: str, cached: bool) -> None:
    _host(fake_nvml, a100(0, "3B", errors={"nvmlDeviceGetPowerUsage": error}))
    with nvml.Nvml() as n:
        assert "power_w" not in n.sample(0)
        assert ("power_w" in n.unsupported(0)) is cached


def test_a_missing_function_is_unsupported_not_an_error(fake_nvml: Any) -> None:
    _host(fake_nvml, a100(0, "3B"))
    with nvml.Nvml() as n:
        assert n._call(0, "x", None) is None
        assert n.unsupported(0) == ["x"]

        def old(*_: Any) -> None:
            raise AttributeError("nvmlDeviceGetThing")

        assert n._call(0, "y", old) is None
        assert n.unsupported(0) == ["x", "y"]
        assert n._call(-1, "z", lambda: 7) == 7


def test_a_lost_gpu_on_a_query_and_on_the_handle(fake_nvml: Any) -> None:
    _host(fake_nvml, a100(0, "3B", lost=True))
    with nvml.Nvml() as n:
        with pytest.raises(nvml.GpuLost, match="GPU 0"):
            n.handle(0)
    with nvml.Nvml() as n:
        with pytest.raises(pynvml_error()):
            n.handle(5)  # a bad index is not a lost GPU: the error goes up as it is


def pynvml_error() -> Any:
    import pynvml

    return pynvml.NVMLError


def test_handles_are_fetched_once(fake_nvml: Any) -> None:
    import pynvml

    _host(fake_nvml, a100(0, "3B"))
    with nvml.Nvml() as n:
        assert n.handle(0) is n.handle(0)
        n.static(0)
        n.sample(0)
        assert pynvml.fake_calls()["nvmlDeviceGetHandleByIndex"] == 1


def test_count_and_driver(fake_nvml: Any) -> None:
    _host(fake_nvml, a100(0, "3B"), a100(1, "5E"), a100(2, "86"))
    with nvml.Nvml() as n:
        assert n.count() == 3 and n.driver_version() == "550.54.15"


def test_processes_sorted_by_pid_with_memory_in_mb(fake_nvml: Any) -> None:
    gpu = a100(0, "3B", processes=[{"pid": 900, "used_memory_mb": 2048}, {"pid": 12, "used_memory_mb": None},
                                   {"pid": 345, "used_memory_mb": 1}])
    _host(fake_nvml, gpu, a100(1, "5E"))
    with nvml.Nvml() as n:
        assert n.processes(0) == [{"pid": 12}, {"pid": 345, "used_memory_mb": 1}, {"pid": 900, "used_memory_mb": 2048}]
        assert n.processes(1) == []
        assert n.sample(0)["processes"][0] == {"pid": 12}
        assert n.sample(1)["processes"] == []


def _links(*active: int) -> Any:
    return [{"active": a, "errors": {"replay": i, "recovery": 10 + i, "crc_flit": 20 + i, "crc_data": 30 + i}}
            for i, a in enumerate(active)]


def test_nvlink_count_stops_at_the_first_link_that_does_not_answer(fake_nvml: Any) -> None:
    _host(fake_nvml, a100(0, "3B", nvlinks=_links(1, 0, 1)), a100(1, "5E"))
    with nvml.Nvml() as n:
        assert n.nvlink_count(0) == 3  # a down link (active 0) still counts
        assert n.nvlink_count(1) == 0


def test_nvlink_count_uses_the_modules_max_links(fake_nvml: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import pynvml

    _host(fake_nvml, a100(0, "3B", nvlinks=_links(*([1] * 20))))
    with nvml.Nvml() as n:
        assert n.nvlink_count(0) == 20  # past nvml.h 12.x's 18: the module's 36 wins
        monkeypatch.setattr(pynvml, "NVML_NVLINK_MAX_LINKS", 4)
        assert n.nvlink_count(0) == 4


def test_nvlink_count_without_the_function_is_zero(fake_nvml: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import pynvml

    _host(fake_nvml, a100(0, "3B", nvlinks=_links(1)))
    monkeypatch.delattr(pynvml, "nvmlDeviceGetNvLinkState")
    with nvml.Nvml() as n:
        assert n.nvlink_count(0) == 0


def test_health_reads_every_field_exactly(fake_nvml: Any) -> None:
    gpu = a100(0, "3B", energy_mj=123456789, pcie_replay=7, memory_temperature_c=64,
               violations_ns={"power": 2_500_000_000, "thermal": 0, "total_base_clocks": 1_000_000_000},
               nvlinks=_links(1, 0))
    _host(fake_nvml, gpu)
    with nvml.Nvml() as n:
        h = n.health(0, 2)
    assert h == {"energy_j": 123456.789, "pcie_replay_errors": 7, "memory_temperature_c": 64,
                 "throttle_seconds": {"power": 2.5, "thermal": 0.0, "total_base_clocks": 1.0},
                 "nvlink_up": [1, 0],
                 "nvlink_errors": {"replay": [0, 1], "recovery": [10, 11], "crc_flit": [20, 21],
                                   "crc_data": [30, 31]}}


def test_health_leaves_out_what_the_gpu_cannot_report(fake_nvml: Any) -> None:
    _host(fake_nvml, a100(0, "3B"))
    with nvml.Nvml() as n:
        assert n.health(0, 0) == {}
        assert n.health(0, 2) == {}  # links past the GPU's count: no nvlink_up at all


def test_health_link_that_does_not_answer_is_none_and_counters_not_asked(fake_nvml: Any) -> None:
    import pynvml

    links = _links(1)
    links[0]["errors"] = {"replay": 4}
    _host(fake_nvml, a100(0, "3B", nvlinks=links))
    with nvml.Nvml() as n:
        h = n.health(0, 2)
    assert h["nvlink_up"] == [1, None]
    assert h["nvlink_errors"] == {"replay": [4, None]}  # counters no link reports are left out
    # link 0: 5 counters asked (ecc_data included); link 1 never asked for counters
    assert pynvml.fake_calls()["nvmlDeviceGetNvLinkErrorCounter"] == 5


def test_sample_with_health_merges_health(fake_nvml: Any) -> None:
    _host(fake_nvml, a100(0, "3B", pcie_replay=2, nvlinks=_links(1)))
    with nvml.Nvml() as n:
        assert "pcie_replay_errors" not in n.sample(0)
        s = n.sample(0, health=True, nvlinks=1)
    assert s["pcie_replay_errors"] == 2 and s["nvlink_up"] == [1] and s["temperature_c"] == 38


def _rewrite(scenario: Any) -> None:
    """The fake re-reads $HOSTTUNE_FAKE_NVML when its mtime changes: the host changes under a live session."""
    path = os.environ["HOSTTUNE_FAKE_NVML"]
    before = os.stat(path).st_mtime_ns
    with open(path, "w") as f:
        json.dump(scenario, f)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_xid_events_deliver_new_xids_by_gpu(fake_nvml: Any) -> None:
    scenario = {"driver": "550.54.15", "cuda_driver": 12040,
                "devices": [a100(0, "3B", xids=[13]), a100(1, "5E"),
                            a100(2, "86", event_types=0x1)]}
    fake_nvml(scenario)
    with nvml.Nvml() as n:
        ev = n.xid_events([0, 1, 2])
        assert ev.gpus == [0, 1]
        assert ev.why == "GPU 2 does not report XID events"
        assert ev.poll() == []  # XID 13 came before registration
        scenario["devices"][0]["xids"] = [13, 79, 48]
        scenario["devices"][1]["xids"] = [31]
        _rewrite(scenario)
        assert ev.poll(limit=2) == [(0, 79), (0, 48)]  # at most `limit`
        assert ev.poll() == [(1, 31)]
        assert ev.poll() == []
        ev.close()
        assert ev.set is None
        assert ev.poll() == []
        ev.close()  # twice is harmless


def test_xid_events_with_no_supporting_gpu(fake_nvml: Any) -> None:
    _host(fake_nvml, a100(0, "3B", event_types=0x3, xids=[79]))
    with nvml.Nvml() as n:
        ev = n.xid_events([0])
        assert ev.gpus == [] and ev.poll() == []
        assert "GPU 0" in ev.why


def test_a_gpu_lost_mid_query_raises_gpu_lost_everywhere(fake_nvml: Any) -> None:
    gpu = a100(0, "3B", nvlinks=_links(1, 1), errors={"nvmlDeviceGetNvLinkState": "GPU_IS_LOST",
                                                      "nvmlDeviceGetTemperature": "GPU_IS_LOST"})
    _host(fake_nvml, gpu)
    with nvml.Nvml() as n:
        with pytest.raises(nvml.GpuLost, match="GPU 0"):
            n.nvlink_count(0)
        with pytest.raises(nvml.GpuLost, match="GPU 0"):
            n.sample(0)
        assert n.unsupported(0) == []  # lost is not "unsupported": asked again next time
        with pytest.raises(nvml.GpuLost):
            n.sample(0)


def test_xid_registration_skips_a_lost_gpu_silently(fake_nvml: Any) -> None:
    _host(fake_nvml, a100(0, "3B", errors={"nvmlDeviceRegisterEvents": "GPU_IS_LOST"}),
          a100(1, "5E", errors={"nvmlDeviceRegisterEvents": "UNKNOWN"}), a100(2, "86"))
    with nvml.Nvml() as n:
        ev = n.xid_events([0, 1, 2])
        assert ev.gpus == [2]
        assert ev.why.startswith("GPU 1: nvmlDeviceRegisterEvents")
        assert list(ev.by_uuid.values()) == [2]


def test_no_pynvml_at_all_is_library_not_found(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "hosttune._vendor.pynvml", None)  # None in sys.modules: ImportError
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(nvml.NvmlUnavailable) as info:
        nvml.Nvml()
    assert info.value.status == "library_not_found"


def test_clock_reasons_new_name_first_old_name_as_fallback(fake_nvml: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import pynvml

    _host(fake_nvml, a100(0, "3B", clock_event_reasons=0x44))
    with nvml.Nvml() as n:
        assert n.sample(0)["clock_event_reasons"] == 0x44
    calls = pynvml.fake_calls()
    assert calls.get("nvmlDeviceGetCurrentClocksEventReasons") == 1
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" not in calls
    monkeypatch.delattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons")  # nvidia-ml-py < 12.535
    _host(fake_nvml, a100(0, "3B", clock_event_reasons=0x8))
    with nvml.Nvml() as n:
        assert n.sample(0)["clock_event_reasons"] == 0x8


def test_every_perf_policy_is_read_under_its_name(fake_nvml: Any) -> None:
    names = list(nvml.PERF_POLICIES.values())
    _host(fake_nvml, a100(0, "3B", violations_ns={name: (i + 1) * 10**9 for i, name in enumerate(names)}))
    with nvml.Nvml() as n:
        got = n.health(0)["throttle_seconds"]
    assert got == {name: float(i + 1) for i, name in enumerate(names)}
    assert names == ["power", "thermal", "sync_boost", "board_limit", "low_utilization", "reliability",
                     "total_app_clocks", "total_base_clocks"]
    assert list(nvml.PERF_POLICIES) == [0, 1, 2, 3, 4, 5, 10, 11]
