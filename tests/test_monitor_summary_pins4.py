"""Pins of mutation round 4 (issue 21) on hosttune/monitor/summary.py: how long a sample counts, which readings
become metrics, the percentiles, the time above each line, the pictures' series, and one job's share of its GPUs,
value for value (pure: samples in, numbers out)."""

from typing import Any, Dict, List, Optional

from hosttune.monitor import summary as S
from hosttune.monitor.config import Thresholds
from hosttune.policy import gpu_health


def test_durations_cap_a_gap_at_three_typical_intervals() -> None:
    assert S.durations([]) == []
    assert S.durations([{"ts": 5}]) == [0.0]
    assert S.durations([{"ts": 0}, {"ts": 10}, {"ts": 20}, {"ts": 1000}, {"ts": 1010}]) == [10, 10, 30, 10, 10]
    assert S.durations([{"ts": 0}, {"ts": 10}, {"ts": 40}, {"ts": 41}]) == [10, 30, 1, 10]  # 30 = 3 x 10: kept
    assert S.durations([{"ts": 0}, {"ts": 10}, {"ts": 41}, {"ts": 42}]) == [10, 30, 1, 10]  # 31: capped
    assert S.durations([{"ts": 0}, {"ts": 0}, {"ts": 0}]) == [0, 0, 1.0]  # a zero typical interval counts as 1 s


def test_percentile_is_numpys_linear() -> None:
    assert S.percentile([1, 2, 3, 4], 50) == 2.5
    assert abs(S.percentile([1, 2, 3, 4], 95) - 3.85) < 1e-9
    assert S.percentile([1, 2, 3, 4], 100) == 4 and S.percentile([1, 2, 3, 4], 0) == 1
    assert S.percentile([5], 99) == 5.0
    assert S.percentile([0, 10], 25) == 2.5


def test_which_readings_are_metrics() -> None:
    rec = {"ts": 0, "host": {"mem_used_pct": 50, "mem_total_bytes": 9, "swap_total_bytes": 1, "shm_total_bytes": 2,
                             "flag": True, "name": "x", "cpu_temps_c": {"pkg": 40},
                             "disks": {"/": {"used_pct": 10}, "/x": {}},
                             "disk_io": {"sda": {"read_mb_s": 1, "ok": True, "s": "x"}}},
           "gpus": [{"index": 0, "temperature_c": 70, "energy_j": 5, "last_xid": 79, "memory_total_mb": 8,
                     "power_limit_w": 300, "lost": False, "ecc": True, "name": "x"},
                    {"index": 1, "lost": True, "temperature_c": 99}]}
    assert list(S._numbers(rec)) == [("host.mem_used_pct", 50.0), ("cpu_temp.pkg", 40.0), ("disk./.used_pct", 10.0),
                                     ("disk_io.sda.read_mb_s", 1.0), ("gpu0.temperature_c", 70.0)]
    assert list(S._numbers({"ts": 0})) == []


def test_the_metrics_table() -> None:
    samples = [{"ts": i, "host": {"mem_used_pct": v}} for i, v in enumerate([4.0, 1.0, 3.0, 2.0])]
    s = S.summarize(samples, Thresholds())
    assert s["metrics"] == {"host.mem_used_pct": {"min": 1.0, "mean": 2.5, "max": 4.0, "p50": 2.5, "p95": 3.85,
                                                  "p99": 3.97, "samples": 4}}
    assert (s["samples"], s["first"], s["last"], s["covered_seconds"]) == (4, 0, 3, 4)


def _gpu(temp: Optional[float] = None, **kw: Any) -> Dict[str, Any]:
    return {"index": 0, "temperature_c": temp, **kw}


def test_time_above_each_line_at_the_line_counts() -> None:
    t = Thresholds()
    samples = [{"ts": 0, "host": {"mem_used_pct": 90.0}, "gpus": [_gpu(75.0, memory_used_pct=89.9)]},
               {"ts": 10, "host": {"mem_used_pct": 89.9}, "gpus": [_gpu(85.0, memory_used_pct=90.0)]},
               {"ts": 20, "host": {"mem_used_pct": 10.0}, "gpus": [_gpu(74.9)]},
               {"ts": 30, "gpus": [{"index": 0, "lost": True, "temperature_c": 99.0}]}]
    above = {a["condition"]: (a["seconds"], a["fraction"]) for a in S.summarize(samples, t)["above"]}
    assert above == {"host memory >= 90 %": (10.0, 0.25), "gpu0 temperature >= 75 C (warning)": (20.0, 0.5),
                     "gpu0 temperature >= 85 C (critical)": (10.0, 0.25), "gpu0 memory >= 90 %": (10.0, 0.25)}


def test_a_gpus_own_slowdown_line_and_clock_events() -> None:
    samples = [{"ts": 0, "gpus": [_gpu(85.0, temp_slowdown_c=95.0, clock_event_reasons=0)]},
               {"ts": 10, "gpus": [_gpu(85.0, temp_slowdown_c=95.0, clock_event_reasons=0xFFFFFFFF)]}]
    s = S.summarize(samples, Thresholds())
    above = {a["condition"]: a["seconds"] for a in s["above"]}
    assert above["gpu0 temperature >= 85 C (warning)"] == 20.0
    assert above["gpu0 temperature >= 95 C (critical)"] == 0.0
    on = {kind for kind, _l, _b, _w in gpu_health.clock_events(0xFFFFFFFF)}
    for kind, _mask, level, what in gpu_health.CLOCK_EVENT_GROUPS:
        assert above[f"gpu0 {what} ({level})"] == (10.0 if kind in on else 0.0)
    assert S.summarize([], Thresholds()) == {"samples": 0, "first": None, "last": None, "covered_seconds": 0,
                                             "metrics": {}, "above": [], "events": []}


def test_events_carry_their_samples_time() -> None:
    samples = [{"ts": 5, "time": "t5", "events": [{"kind": "a"}, {"kind": "b"}]}, {"ts": 6}, {"ts": 7, "events": []}]
    assert S.summarize(samples, Thresholds())["events"] == [{"kind": "a", "ts": 5, "time": "t5"},
                                                             {"kind": "b", "ts": 5, "time": "t5"}]


def test_series_of_both_panels() -> None:
    samples = [{"ts": 1, "host": {"swap_total_bytes": 200, "swap_used_bytes": 50, "mem_used_pct": 3,
                                  "cpu_temps_c": {"pkg": 41}},
                "gpus": [{"index": 2, "temperature_c": 1, "memory_used_pct": 2}, {"index": 3}]},
               {"ts": 2, "host": {"swap_total_bytes": 0, "mem_used_pct": None}},
               {"ts": 3, "host": {"swap_total_bytes": 100}}]
    temps, mems = S.series(samples)
    assert temps == {"GPU 2": [(1, 1.0)], "CPU pkg": [(1, 41.0)]}
    assert mems == {"GPU 2 memory": [(1, 2.0)], "host memory": [(1, 3.0)], "swap used": [(1, 25.0), (3, 0.0)]}


def test_temperature_lines() -> None:
    t = Thresholds()
    assert S.temperature_lines([], t) == [(75.0, "warning"), (85.0, "critical")]

    def gpus(*slowdowns: Optional[float]) -> List[Dict[str, Any]]:
        return [{"gpus": [{"temperature_c": 50, "temp_slowdown_c": s} for s in slowdowns]}]
    assert S.temperature_lines(gpus(90, 95), t) == [(80.0, "warning"), (85.0, "warning"), (90.0, "critical"),
                                                    (95.0, "critical")]
    assert S.temperature_lines(gpus(90, None), t) == [(75.0, "warning"), (80.0, "warning"), (85.0, "critical"),
                                                      (90.0, "critical")]
    # one GPU's critical line wins over another's warning at the same value, whatever the order
    assert S.temperature_lines(gpus(95, 85), t) == [(75.0, "warning"), (85.0, "critical"), (95.0, "critical")]
    # a GPU without a temperature reading brings no lines
    assert S.temperature_lines([{"gpus": [{"temp_slowdown_c": 90}]}], t) == [(75.0, "warning"), (85.0, "critical")]
    assert S.temperature_lines([], Thresholds(gpu_temp_crit_c=70.0)) == [(60.0, "warning"), (70.0, "critical")]


def test_rising_counts_increases_within_runs_only() -> None:
    assert S._rising([(1, False), (3, True), (2, True), (5, True), (9, False), (10, True)]) == 6.0
    assert S._rising([(1, False), (1, True)]) == 0.0
    assert S._rising([(4, False)]) == 0.0 and S._rising([]) == 0.0
    assert S._stats([]) == {} and S._stats([1.0, 2.0, 4.0]) == {"mean": 2.333, "max": 4.0}


def _g(i: int, job: Optional[str], **kw: Any) -> Dict[str, Any]:
    return {"index": i, "uuid": f"U{i}", "jobs": [{"job": job, "kind": "slurm", "user": "ann"}] if job else [],
            **kw}


def test_one_jobs_share_of_its_gpus() -> None:
    samples = [
        {"ts": 0, "gpus": [_g(0, "7", utilization_gpu_pct=10, memory_used_mb=100, power_w=100, energy_j=1000,
                              throttle_seconds={"thermal": 1.0}, xid_errors=0,
                              processes=[{"job": "7", "used_memory_mb": 50}, {"job": "8", "used_memory_mb": 5}]),
                           _g(1, "8", power_w=50)]},
        {"ts": 10, "gpus": [_g(0, "7", utilization_gpu_pct=30, memory_used_mb=300, power_w=200, energy_j=3000,
                               throttle_seconds={"thermal": 4.0, "power": 0.0}, xid_errors=2,
                               processes=[{"job": "7", "used_memory_mb": 70}]),
                            _g(1, "7", power_w=60)]},
        {"ts": 20, "gpus": [_g(0, None), _g(1, "7", power_w=80)]},
        {"ts": 30, "time": "t30", "gpus": [_g(0, "7", energy_j=500, xid_errors=1, throttle_seconds={"thermal": 0.5})],
         "events": [{"kind": "gpu_xid", "subject": "gpu0", "message": "Xid 79"}, {"kind": "gpu_xid", "subject": "gpu3"},
                    {"kind": "gpu_temp", "subject": "gpu0"}]},
        {"ts": 1000, "gpus": [_g(0, "7", energy_j=900, xid_errors=3, throttle_seconds={"thermal": 2.5}),
                              {"index": 1, "lost": True, "jobs": [{"job": "7"}]}]},
    ]
    assert S.job_summary(samples, "7") == {
        "job": "7", "first": 0, "last": 1000,
        "gpus": [{"gpu": 0, "uuid": "U0", "kind": "slurm", "user": "ann", "samples": 4, "seconds": 60,
                  "utilization_pct": {"mean": 20.0, "max": 30.0}, "memory_used_mb": {"mean": 200.0, "max": 300.0},
                  "power_w": {"mean": 150.0, "max": 200.0}, "job_memory_used_mb": {"mean": 60.0, "max": 70.0},
                  # 1000 -> 3000 counts; 500 (a restart after a break) and 900 (across the 970 s gap) do not
                  "energy_j": 2000.0, "energy_from": "counter", "throttle_seconds": {"thermal": 3.0},
                  "xid_errors": 2},
                 {"gpu": 1, "uuid": "U1", "kind": "slurm", "user": "ann", "samples": 2, "seconds": 20,
                  "power_w": {"mean": 70.0, "max": 80.0}, "energy_j": 1400.0, "energy_from": "power",
                  "throttle_seconds": {}, "xid_errors": None}],
        "xid_events": [{"kind": "gpu_xid", "subject": "gpu0", "message": "Xid 79", "ts": 30, "time": "t30"}]}
    assert S.job_summary(samples, "9") == {"job": "9", "first": None, "last": None, "gpus": [], "xid_events": []}
    assert S.job_summary([], "7") == {"job": "7", "first": None, "last": None, "gpus": [], "xid_events": []}


def test_a_job_gpu_with_one_energy_reading_and_no_power_has_no_energy() -> None:
    out = S.job_summary([{"ts": 0, "gpus": [_g(0, "7", energy_j=5)]}], "7")["gpus"][0]
    assert "energy_j" not in out and "energy_from" not in out and out["seconds"] == 0.0
