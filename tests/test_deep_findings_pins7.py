"""Pins for hosttune.doctor.deep.findings (issue 21, practice round HDOC): every finding reads its own measurement's
result key: an error or a hang on that key is that finding's fail (whole Finding: actual, expected, the by-hand
command of the key's group)."""

from typing import Any, Callable, Dict

import pytest

from hosttune.doctor.deep import findings as F
from hosttune.doctor.deep.runner import JobResult
from hosttune.doctor.model import Finding

# key -> (the finding of a job, its expected text, the probe's --measure group)
CASES: Dict[str, Any] = {
    "gpu_compute": (lambda j: F.compute_finding(j, {}, {}), "matmul >= 70% of the dense peak", "gpu_compute"),
    "gpu_copies": (lambda j: F.copies_finding(j, {}, {}, {}), "pinned copies near the PCIe link rate", "gpu_copies"),
    "p2p": (lambda j: F.p2p_finding(j, [], None), "peer access between GPUs", "p2p"),
    "allreduce gloo": (lambda j: F.allreduce_finding(j, "gloo", None, "correct sums"), "correct sums", "allreduce"),
    "allreduce nccl": (lambda j: F.allreduce_finding(j, "nccl", 50.0, "NVLink"), "busbw >= 50.0 GB/s (NVLink)",
                       "allreduce"),
    "cpu_matmul": (lambda j: F.cpu_matmul_finding(j, 4, 2.0, (), None, None), "fp32 matmul near the CPU's peak",
                   "cpu"),
    "cpu_triad": (F.membw_finding, "memory bandwidth", "cpu"),
    "cpu_bf16": (lambda j: F.bf16_finding(j, ()), "bf16 autocast not slower than fp32", "cpu"),
    "disk": (lambda j: F.disk_finding(j, {}), "sequential read at the disk kind's rate", "disk"),
    "shm": (F.shm_finding, ">= 1000 MB/s write and read", "shm"),
}
INFO = {"event": "result", "what": "info", "devices": []}
HINT = "python3 -m hosttune.doctor.deep.probe_torch --measure "


@pytest.mark.parametrize("key", sorted(CASES))
def test_an_error_on_its_key_is_its_fail(key: str) -> None:
    finding: Callable[[JobResult], Finding] = CASES[key][0]
    expected, group = CASES[key][1:]
    job = JobResult(name="j", events=(INFO, {"event": "error", "what": f"{key} x", "error": "Boom: E1"}),
                    returncode=0)
    assert finding(job) == Finding(status="fail", actual=f"{key} x: Boom: E1", expected=expected,
                                   fix=f"run the measurement by hand to see the whole error: {HINT}{group}")


@pytest.mark.parametrize("key", sorted(CASES))
def test_a_hang_in_its_key_is_its_fail(key: str) -> None:
    finding: Callable[[JobResult], Finding] = CASES[key][0]
    expected, group = CASES[key][1:]
    job = JobResult(name="j", events=(INFO, {"event": "start", "what": f"{key} y"}), timed_out=True, timeout_s=20.0)
    assert finding(job) == Finding(
        status="fail", actual=f"j probe timed out after 20 s while measuring {key} y (process tree killed)",
        expected=expected, fix=f"something blocks: run the probe by hand ({HINT}{group}) and look at the GPU/disk it "
                               "waits for (nvidia-smi, dmesg)")


@pytest.mark.parametrize("key", sorted(k for k in CASES if not k.startswith("allreduce")))
def test_another_keys_error_is_not_its_own(key: str) -> None:
    """An error of some other measurement only: nothing measured, the job ended well: a skip naming the probe."""
    finding: Callable[[JobResult], Finding] = CASES[key][0]
    other = "zzz_other"
    job = JobResult(name="j", events=(INFO, {"event": "error", "what": other, "error": "E"}), returncode=0)
    assert finding(job) == Finding(status="skip", actual="not measured: the j probe ended with exit status 0",
                                   expected=CASES[key][1])


def test_allreduce_without_its_result_is_torchruns_failure() -> None:
    job = JobResult(name="allreduce_nccl", events=(INFO, {"event": "error", "what": "zzz", "error": "E"}),
                    returncode=0, stderr_tail="W: x\n  Connection refused here  \n\n")
    assert F.allreduce_finding(job, "nccl", 50.0, "NVLink") == Finding(
        status="fail", actual="torchrun: Connection refused here", expected="busbw >= 50.0 GB/s (NVLink)",
        fix="rerun with NCCL_DEBUG=INFO to see the transport NCCL chose (P2P/NVLS vs SHM/NET); check "
            "NCCL_P2P_DISABLE / NCCL_SHM_DISABLE, nvidia.fabric_manager on NVSwitch hosts, and nvidia.acs")
    job = JobResult(name="allreduce_gloo", returncode=0)
    f = F.allreduce_finding(job, "gloo", None, "correct sums")
    assert (f.status, f.actual, f.expected) == ("fail", "torchrun: exit status 0", "correct sums")


H100 = "NVIDIA H100 80GB HBM3"


def compute_row(gpu: int, dtype: str, tflops: float) -> Dict[str, Any]:
    return {"event": "result", "what": f"gpu_compute gpu{gpu} {dtype}", "gpu": gpu, "dtype": dtype,
            "flops": tflops * 1e12, "seconds": 1.0, "name": H100}


def test_compute_whole_finding_gpus_in_index_order_with_nvml_events() -> None:
    """Rows arrive GPU1 first; the line lists GPU0 first. cuda:0 is NVML GPU1: its clock events are GPU0's."""
    rows = (compute_row(1, "bf16", 700.0), compute_row(1, "fp16", 300.0), compute_row(0, "bf16", 800.0),
            {"event": "result", "what": "gpu_compute gpu0 tf32", "gpu": 0, "dtype": "tf32", "unsupported": True})
    job = JobResult(name="gpu", events=rows, returncode=0)
    assert F.compute_finding(job, {1: 0x20, 0: 0}, {0: 1, 1: 0}) == Finding(
        status="warn",
        actual="TFLOP/s GPU0 bf16 800 (81%), tf32 n/a; GPU1 bf16 700 (71%), fp16 300 (30%); NVML clock events "
               "during the run: GPU0: software thermal slowdown (sw_thermal_slowdown)",
        expected="H100 SXM >= 70% of dense bf16 989.4 / fp16 989.4 / tf32 494.7 TFLOP/s (NVIDIA H100 Tensor Core "
                 "GPU datasheet (SXM column; sparse/2))",
        fix="look at what holds the clocks down: nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE; other "
            "processes on the GPU (nvidia-smi); cooling and power-supply state (see nvidia.clock_reasons)")
