"""Pins for doctor's torch.cuda_visible_devices check (issue 21: the neighbours of mutation round 4's
r4a-doctor-cuda-visible-minus1, which tests/test_doctor_checks_pins4.py's cvd-minus-one row catches): a value CUDA
reads as no GPU at all (empty, blank, -1, with spaces around) is reported as hiding every GPU, a warning with the fix
on a GPU host and a pass on a host without GPUs."""
import pytest
from _doctorhelp import cpu_host, gpu_host, run_one

CHECK = "torch.cuda_visible_devices"


@pytest.mark.parametrize("raw", ["", " ", "-1", " -1 "], ids=["empty", "blank", "minus-one", "spaced-minus-one"])
def test_a_value_that_hides_every_gpu_says_so(raw: str) -> None:
    f = run_one(CHECK, gpu_host(), env={"CUDA_VISIBLE_DEVICES": raw})
    assert (f.status, f.actual, f.fix) == ("warn", f"CUDA_VISIBLE_DEVICES={raw!r} hides every GPU",
                                           "unset CUDA_VISIBLE_DEVICES"), f
    f = run_one(CHECK, cpu_host(), env={"CUDA_VISIBLE_DEVICES": raw})
    assert (f.status, f.actual, f.fix) == ("pass", f"CUDA_VISIBLE_DEVICES={raw!r} hides every GPU", ""), f
