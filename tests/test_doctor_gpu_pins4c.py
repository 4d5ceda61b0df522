"""Pins for doctor's nvidia.temperature on a host with GPUs at different levels (issue 21: mutation round 4's
r4a-doctor-gpu-temp-warn-list, which tests/test_doctor_checks_pins4.py's temp_75/temp_84 rows catch, and its
neighbours): the finding names every GPU that is not cool, warm ones beside hot ones, a cool one not at all; the
status is the worst; expected and fix give each distinct set of lines once."""
from typing import Any, Dict

from _doctorhelp import R, dgpu, gpu_host, run_one

from hosttune.facts import Facts


def temps(*gpus: Dict[str, Any]) -> Facts:
    return R(gpu_host(), gpus=tuple(dgpu(i, **kw) for i, kw in enumerate(gpus)))


def test_a_warm_gpu_beside_a_hot_one_is_named_too() -> None:
    f = run_one("nvidia.temperature", temps({"temperature_c": 80}, {"temperature_c": 90}, {"temperature_c": 41}))
    assert f.status == "fail"
    assert f.actual == "GPU0 (0000:1b:00.0): 80 C; GPU1 (0000:1c:00.0): 90 C"
    assert f.expected == "below 75 C (warn from 75 C, fail from 85 C: default lines: the GPU reports no slowdown " \
                         "threshold)"
    assert f.fix.endswith("# warn from 75 C, fail from 85 C (default lines)")


def test_warm_gpus_with_their_own_thresholds_warn_each_with_its_lines() -> None:
    f = run_one("nvidia.temperature", temps({"temperature_c": 80}, {"temperature_c": 85, "temp_slowdown_c": 95},
                                            {"temperature_c": 76}))
    assert f.status == "warn"
    assert f.actual == "GPU0 (0000:1b:00.0): 80 C; GPU1 (0000:1c:00.0): 85 C; GPU2 (0000:1d:00.0): 76 C"
    assert f.fix.endswith("# warn from 75 C, fail from 85 C (default lines); warn from 85 C, fail from 95 C "
                          "(the GPU slowdown threshold)")
