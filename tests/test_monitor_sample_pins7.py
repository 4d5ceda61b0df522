"""Pins (issue 21, round 7 practice) for hosttune/monitor/sample.py: gpu_fields() whole: identity, the slowdown
threshold only when known, every reading NVML gave (a None reading stays in the entry: "read, not available" is not
"not read"), and the derived memory percentage and clock-event names."""

from hosttune.monitor.sample import gpu_fields


def test_gpu_fields_whole_entry() -> None:
    static = {"index": 2, "uuid": "GPU-a", "temp_slowdown_c": 90, "name": "ignored: identity is index and uuid"}
    dynamic = {"temperature_c": 41, "memory_used_mb": 512, "memory_total_mb": 81920, "power_w": None,
               "clock_event_reasons": 0x4 | 0x1, "utilization_gpu_pct": None}
    assert gpu_fields(static, dynamic) == {
        "index": 2, "uuid": "GPU-a", "temp_slowdown_c": 90, "temperature_c": 41, "memory_used_mb": 512,
        "memory_total_mb": 81920, "power_w": None, "clock_event_reasons": 5, "utilization_gpu_pct": None,
        "memory_used_pct": 0.62, "clock_event_reason_names": ["gpu_idle", "sw_power_cap"]}


def test_gpu_fields_without_threshold_uuid_or_memory_total() -> None:
    assert gpu_fields({"index": 0, "temp_slowdown_c": None}, {"memory_used_mb": None, "memory_total_mb": 0}) == {
        "index": 0, "uuid": None, "memory_used_mb": None, "memory_total_mb": 0}
    assert gpu_fields({"index": 1}, {"memory_used_mb": 10, "memory_total_mb": 0}) == {
        "index": 1, "uuid": None, "memory_used_mb": 10, "memory_total_mb": 0}
