"""Pins (issue 21, round 8 practice) for hosttune/monitor/summary.py series(): a reading of 0 (an idle GPU's memory,
a cold sensor, no host memory in use) is a point of its series like any other, only a missing reading is none."""

from hosttune.monitor import summary


def test_zero_readings_are_points_of_the_series() -> None:
    samples = [{"ts": 10, "host": {"mem_used_pct": 0.0, "cpu_temps_c": {"pkg": 0}, "swap_total_bytes": 100,
                                   "swap_used_bytes": 0},
                "gpus": [{"index": 0, "temperature_c": 0, "memory_used_pct": 0.0},
                         {"index": 1, "temperature_c": None, "memory_used_pct": None}]},
               {"ts": 20, "host": {"mem_used_pct": 50.0, "cpu_temps_c": {"pkg": 45}},
                "gpus": [{"index": 0, "temperature_c": 30, "memory_used_pct": 12.5}, {"index": 1, "lost": True}]}]
    temps, mems = summary.series(samples)
    assert temps == {"GPU 0": [(10, 0.0), (20, 30.0)], "CPU pkg": [(10, 0.0), (20, 45.0)]}
    assert mems == {"GPU 0 memory": [(10, 0.0), (20, 12.5)], "host memory": [(10, 0.0), (20, 50.0)],
                    "swap used": [(10, 0.0)]}
