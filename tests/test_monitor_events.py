"""hosttune/monitor/events.py's GPU events as whole values (kind, subject, level, state, message, value): every
condition one GPU entry of a sample can start, hold, raise, clear or report once."""

from typing import Any, Dict, List

from hosttune.monitor.config import Thresholds
from hosttune.monitor.events import Alerts, Event


def _gpu(**fields: Any) -> Dict[str, Any]:
    return {"gpus": [dict({"index": 1, "uuid": "GPU-ab"}, **fields)]}


def test_temperature_memory_and_clock_events_start_and_clear_with_their_messages() -> None:
    alerts = Alerts(Thresholds())
    ev = alerts.update(_gpu(temperature_c=91, temp_slowdown_c=90, memory_used_pct=95.5, clock_event_reasons=0x20))
    assert ev == [
        Event("gpu_temperature", "gpu1", "critical", "start",
              "GPU 1 (GPU-ab) temperature 91 C (critical threshold: >= 90 C, the GPU's slowdown threshold)", 91),
        Event("gpu_memory", "gpu1", "warning", "start", "GPU 1 (GPU-ab) memory 95.5 % used (threshold 90 %)", 95.5),
        Event("gpu_throttle_thermal", "gpu1", "warning", "start",
              "GPU 1 (GPU-ab) clocks reduced by software thermal slowdown: sw_thermal_slowdown", None),
    ]
    ev = alerts.update(_gpu(temperature_c=50, temp_slowdown_c=90, memory_used_pct=10.0, clock_event_reasons=0))
    assert ev == [
        Event("gpu_temperature", "gpu1", "info", "clear", "GPU 1 (GPU-ab) temperature back to 50 C", 50),
        Event("gpu_memory", "gpu1", "info", "clear", "GPU 1 (GPU-ab) memory back to 10.0 % used", 10.0),
        Event("gpu_throttle_thermal", "gpu1", "info", "clear", "GPU 1 (GPU-ab) software thermal slowdown ended", None),
    ]


def test_counters_are_one_event_per_increase_and_flags_start_and_clear() -> None:
    alerts = Alerts(Thresholds())
    first = alerts.update(_gpu(uuid=None, ecc_uncorrected_volatile=0, remapped_rows_uncorrectable=2,
                               remapped_rows_pending=True, remapped_rows_failure=False, retired_pages_pending=True))
    assert first == [
        Event("gpu_remapped_rows", "gpu1", "warning", "once",
              "GPU 1 has 2 row remapping(s) for uncorrectable errors (since driver load)", 2),
        Event("gpu_remap_pending", "gpu1", "warning", "start", "GPU 1 row remapping pending: reset the GPU", None),
        Event("gpu_retire_pending", "gpu1", "warning", "start", "GPU 1 page retirement pending: reset the GPU", None),
    ]
    then = alerts.update(_gpu(ecc_uncorrected_volatile=1, remapped_rows_uncorrectable=3, remapped_rows_pending=False,
                              remapped_rows_failure=True, retired_pages_pending=None))
    assert then == [
        Event("gpu_ecc", "gpu1", "critical", "once", "GPU 1 (GPU-ab): 1 new uncorrected ECC error(s) (total 1)", 1),
        Event("gpu_remapped_rows", "gpu1", "critical", "once",
              "GPU 1 (GPU-ab): 1 new row remapping(s) for uncorrectable errors (total 3)", 3),
        Event("gpu_remap_pending", "gpu1", "info", "clear", "GPU 1 (GPU-ab) remapped rows pending cleared", None),
        Event("gpu_remap_failure", "gpu1", "critical", "start",
              "GPU 1 (GPU-ab) row remapping failed: replace the GPU", None),
    ]
    assert alerts.update(_gpu(ecc_uncorrected_volatile=1, remapped_rows_uncorrectable=3)) == []


def test_a_lost_gpu_is_said_once_and_ends_what_was_in_force_for_it() -> None:
    alerts = Alerts(Thresholds())
    alerts.update({"gpus": [dict(_gpu(memory_used_pct=99.0)["gpus"][0]), {"index": 2, "memory_used_pct": 99.0}]})
    assert set(alerts.active) == {("gpu_memory", "gpu1"), ("gpu_memory", "gpu2")}
    lost: List[Event] = alerts.update(_gpu(lost=True, memory_used_pct=99.0))
    assert lost == [Event("gpu_lost", "gpu1", "critical", "once",
                          "GPU 1 (GPU-ab) is lost (NVML: GPU is lost); no longer sampled: check dmesg for Xid 79")]
    assert set(alerts.active) == {("gpu_memory", "gpu2")}
    assert alerts.update(_gpu(lost=True)) == []
