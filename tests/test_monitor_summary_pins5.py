"""Pins for hosttune/monitor/summary.py (issue 21, round 5): how long each sample stands for, percentiles, the
metrics table's exact rows and what it leaves out, every threshold condition at its line, the time above each, the
picture series and temperature lines, and one job's GPUs (energy from the counter or from power, throttle, XIDs,
gaps)."""

from typing import Any, Dict, List

import pytest

from hosttune.monitor import summary
from hosttune.monitor.config import Thresholds

T = Thresholds()


def recs(*ts: float) -> List[Dict[str, Any]]:
    return [{"ts": t} for t in ts]


def test_durations_cap_gaps_at_three_typical_intervals() -> None:
    assert summary.durations([]) == [] and summary.durations(recs(5)) == [0.0]
    assert summary.durations(recs(0, 1, 2, 10)) == [1, 1, 3, 1]
    assert summary.durations(recs(0, 1, 3)) == [1, 2, 2]  # the upper median of an even count
    assert summary.durations(recs(0, 2, 4, 10)) == [2, 2, 6, 2]  # exactly 3 typical: kept
    assert summary.durations(recs(5, 5, 5)) == [0, 0, 1.0]  # no typical interval: 1 s


@pytest.mark.parametrize("values, q, expected", [
    ([1, 2, 3, 4], 50, 2.5), ([1, 2, 3, 4], 95, 3.85), ([1, 2, 3, 4], 0, 1), ([1, 2, 3, 4], 100, 4), ([7], 99, 7),
    ([0, 10], 25, 2.5),
])
def test_percentile_linear(values: List[float], q: float, expected: float) -> None:
    assert summary.percentile(values, q) == pytest.approx(expected)


def test_metrics_rows_exact() -> None:
    samples = [{"ts": i, "host": {"load1": v}} for i, v in enumerate([4, 1, 3, 2])]
    assert summary._metrics(samples) == {"host.load1": {"min": 1.0, "mean": 2.5, "max": 4.0, "p50": 2.5,
                                                        "p95": 3.85, "p99": 3.97, "samples": 4}}
    assert summary._metrics([]) == {}
    small = summary._metrics([{"ts": 0, "host": {"load1": 0.0}}, {"ts": 1, "host": {"load1": 0.001234}}])
    assert small["host.load1"] == {"min": 0.0, "mean": 0.001, "max": 0.001234, "p50": 0.001, "p95": 0.001,
                                   "p99": 0.001, "samples": 2}  # three decimals


def test_numbers_leave_out_static_boolean_text_and_lost() -> None:
    rec = {"host": {"mem_total_bytes": 1, "swap_total_bytes": 1, "shm_total_bytes": 1, "load1": 2, "flag": True,
                    "name": "x", "cpu_temps_c": {"pkg": 50}, "disks": {"/": {"used_pct": 10, "total_bytes": 5},
                                                                       "/b": {"total_bytes": 5}},
                    "disk_io": {"sda": {"read_mb_s": 1.5, "busy": False, "dev": "x"}}},
           "gpus": [{"index": 0, "temperature_c": 50, "memory_total_mb": 8, "power_limit_w": 300, "energy_j": 5,
                     "last_xid": 79, "temp_slowdown_c": 90, "clock_event_reasons": 4, "remapped_rows_pending": 0,
                     "remapped_rows_failure": 0, "retired_pages_pending": 0, "uuid": "GPU-a", "ok": True},
                    {"index": 1, "lost": True, "temperature_c": 99}]}
    assert dict(summary._numbers(rec)) == {"host.load1": 2.0, "cpu_temp.pkg": 50.0, "disk./.used_pct": 10.0,
                                           "disk_io.sda.read_mb_s": 1.5, "gpu0.temperature_c": 50.0}


def conds(rec: Dict[str, Any], t: Thresholds = T) -> Dict[str, bool]:
    return dict(summary._conditions(rec, t))


def test_memory_conditions_hold_at_the_line() -> None:
    assert conds({"host": {"mem_used_pct": 90.0}}) == {"host memory >= 90 %": True}
    assert conds({"host": {"mem_used_pct": 89.99}}) == {"host memory >= 90 %": False}
    assert conds({"gpus": [{"index": 2, "memory_used_pct": 90}]}) == {"gpu2 memory >= 90 %": True}
    assert conds({"gpus": [{"index": 2, "memory_used_pct": 80}]}, Thresholds(memory_pct=80)) == \
        {"gpu2 memory >= 80 %": True}
    assert conds({"host": {}}) == {} and conds({"gpus": [{"index": 0, "lost": True, "memory_used_pct": 99}]}) == {}


def test_temperature_conditions_use_the_gpus_own_lines() -> None:
    g = {"index": 0, "temp_slowdown_c": 90}
    assert conds({"gpus": [dict(g, temperature_c=79.9)]}) == {"gpu0 temperature >= 80 C (warning)": False,
                                                              "gpu0 temperature >= 90 C (critical)": False}
    assert conds({"gpus": [dict(g, temperature_c=80)]}) == {"gpu0 temperature >= 80 C (warning)": True,
                                                            "gpu0 temperature >= 90 C (critical)": False}
    assert conds({"gpus": [dict(g, temperature_c=90)]}) == {"gpu0 temperature >= 80 C (warning)": True,
                                                            "gpu0 temperature >= 90 C (critical)": True}
    assert conds({"gpus": [{"index": 1, "temperature_c": 85}]}) == {"gpu1 temperature >= 75 C (warning)": True,
                                                                    "gpu1 temperature >= 85 C (critical)": True}


def test_clock_event_conditions_one_per_group() -> None:
    got = conds({"gpus": [{"index": 0, "clock_event_reasons": 0x4}]})
    assert got == {"gpu0 hardware slowdown (cooling or power-supply fault) (critical)": False,
                   "gpu0 software thermal slowdown (warning)": False,
                   "gpu0 software power capping (notice)": True}
    assert all(v is False for v in conds({"gpus": [{"index": 0, "clock_event_reasons": 0}]}).values())


def test_summarize_time_above_and_events() -> None:
    samples = [{"ts": 0, "time": "a", "host": {"mem_used_pct": 95}},
               {"ts": 10, "time": "b", "host": {"mem_used_pct": 50}, "events": [{"kind": "x"}]},
               {"ts": 20, "time": "c", "host": {"mem_used_pct": 95}}]
    got = summary.summarize(samples, T)
    assert got["samples"] == 3 and got["first"] == 0 and got["last"] == 20 and got["covered_seconds"] == 30
    assert got["above"] == [{"condition": "host memory >= 90 %", "seconds": 20.0, "fraction": 0.6667}]
    assert got["events"] == [{"kind": "x", "ts": 10, "time": "b"}]
    assert got["metrics"]["host.mem_used_pct"]["max"] == 95.0
    empty = summary.summarize([], T)
    assert empty == {"samples": 0, "first": None, "last": None, "covered_seconds": 0, "metrics": {}, "above": [],
                     "events": []}
    one = summary.summarize(samples[:1], T)
    assert one["above"] == [{"condition": "host memory >= 90 %", "seconds": 0.0, "fraction": 0.0}]


def test_series_panels() -> None:
    samples = [{"ts": 1, "gpus": [{"index": 0, "temperature_c": 50, "memory_used_pct": 10}, {"index": 1}],
                "host": {"cpu_temps_c": {"pkg": 40}, "mem_used_pct": 20, "swap_total_bytes": 200,
                         "swap_used_bytes": 50}},
               {"ts": 2, "host": {"swap_total_bytes": 0, "swap_used_bytes": 0}}]
    temps, mems = summary.series(samples)
    assert temps == {"GPU 0": [(1, 50.0)], "CPU pkg": [(1, 40.0)]}
    assert mems == {"GPU 0 memory": [(1, 10.0)], "host memory": [(1, 20.0)], "swap used": [(1, 25.0)]}


def test_temperature_lines() -> None:
    assert summary.temperature_lines([], T) == [(75.0, "warning"), (85.0, "critical")]
    g = [{"gpus": [{"index": 0, "temperature_c": 50, "temp_slowdown_c": 95},
                   {"index": 1, "temperature_c": 50, "temp_slowdown_c": 85},
                   {"index": 2, "temp_slowdown_c": 100}]}]  # no temperature: no lines of its own
    assert summary.temperature_lines(g, T) == [(75.0, "warning"), (85.0, "critical"), (95.0, "critical")]
    assert summary.temperature_lines(g, Thresholds(gpu_temp_crit_c=70)) == [(60.0, "warning"), (70.0, "critical")]


def test_rising_counts_increases_within_runs() -> None:
    assert summary._rising([(10, False), (15, True), (12, True), (20, True)]) == 13
    assert summary._rising([(10, False), (15, False), (18, True)]) == 3
    assert summary._rising([(5, True)]) == 0 and summary._rising([]) == 0
    assert summary._rising([(5, False), (5, True)]) == 0


def gpu(job: str = "7", **kw: Any) -> Dict[str, Any]:
    return dict({"index": 0, "uuid": "GPU-a", "jobs": [{"job": job, "kind": "slurm", "user": "u"}]}, **kw)


def test_job_summary_from_the_energy_counter() -> None:
    samples = [
        {"ts": 0, "gpus": [gpu(utilization_gpu_pct=50, memory_used_mb=100, power_w=100, energy_j=1000,
                               throttle_seconds={"power": 1.0, "thermal": 2.0}, xid_errors=0,
                               processes=[{"job": "7", "used_memory_mb": 30}, {"job": "8", "used_memory_mb": 5}])]},
        {"ts": 10, "gpus": [gpu(utilization_gpu_pct=100, memory_used_mb=300, power_w=200, energy_j=2500,
                                throttle_seconds={"power": 4.0, "thermal": 2.0}, xid_errors=1)],
         "events": [{"kind": "gpu_xid", "subject": "gpu0", "xid": 79}, {"kind": "gpu_xid", "subject": "gpu1"}]},
        {"ts": 20, "gpus": [gpu("other", energy_j=9999)]},
    ]
    got = summary.job_summary(samples, "7")
    assert got["job"] == "7" and got["first"] == 0 and got["last"] == 10
    assert got["xid_events"] == [{"kind": "gpu_xid", "subject": "gpu0", "xid": 79, "ts": 10, "time": None}]
    (g,) = got["gpus"]
    assert g == {"gpu": 0, "uuid": "GPU-a", "kind": "slurm", "user": "u", "samples": 2, "seconds": 20.0,
                 "utilization_pct": {"mean": 75.0, "max": 100.0}, "memory_used_mb": {"mean": 200.0, "max": 300.0},
                 "power_w": {"mean": 150.0, "max": 200.0}, "job_memory_used_mb": {"mean": 30.0, "max": 30.0},
                 "energy_j": 1500.0, "energy_from": "counter", "throttle_seconds": {"power": 3.0},
                 "xid_errors": 1}


def test_job_summary_from_power_and_across_a_gap() -> None:
    samples = [{"ts": 0, "gpus": [gpu(power_w=100)]}, {"ts": 10, "gpus": [gpu(power_w=300)]},
               {"ts": 20, "gpus": [gpu("x")]}, {"ts": 30, "gpus": [gpu(power_w=0)]}]
    (g,) = summary.job_summary(samples, "7")["gpus"]
    assert g["energy_from"] == "power" and g["energy_j"] == 100 * 10 + 300 * 10 and g["xid_errors"] is None
    assert g["throttle_seconds"] == {} and "job_memory_used_mb" not in g and "utilization_pct" not in g
    gap = [{"ts": 0, "gpus": [gpu(energy_j=100)]}, {"ts": 10, "gpus": [gpu(energy_j=200)]},
           {"ts": 20, "gpus": [gpu("x")]}, {"ts": 30, "gpus": [gpu(energy_j=900)]}]
    (g,) = summary.job_summary(gap, "7")["gpus"]
    assert g["energy_j"] == 100.0  # the job left the GPU between: the counter's rise then is not the job's
    lost = [{"ts": 0, "gpus": [gpu(lost=True)]}]
    assert summary.job_summary(lost, "7") == {"job": "7", "first": 0, "last": 0, "gpus": [], "xid_events": []}
    assert summary.job_summary([], "7") == {"job": "7", "first": None, "last": None, "gpus": [], "xid_events": []}


def test_job_summary_does_not_count_a_counter_across_a_monitor_gap() -> None:
    samples = [{"ts": t, "gpus": [gpu(energy_j=e, xid_errors=x)]}
               for t, e, x in ((0, 100, 0), (10, 200, 0), (20, 300, 1), (100, 1000, 5), (110, 1100, 5))]
    (g,) = summary.job_summary(samples, "7")["gpus"]
    assert g["energy_j"] == 300.0 and g["xid_errors"] == 1 and g["seconds"] == 10 + 10 + 30 + 10 + 10
