"""Pins for `doctor --deep`'s findings (hosttune/doctor/deep/findings.py) from issue 21's mutation run, on fabricated
job results (no GPU, no torch run): a correct all-reduce below the expected bus bandwidth warns, GPUs without peer
access warn on an NVLink part however fast the copies, and a read too small to time is not a measurement."""

from typing import Any, Dict

from hosttune.doctor.deep import findings
from hosttune.doctor.deep.runner import JobResult
from hosttune.policy import bandwidth

MiB = 1 << 20


def job_of(*results: Dict[str, Any], name: str = "gpu") -> JobResult:
    return JobResult(name=name, events=tuple(dict(r, event="result") for r in results), returncode=0)


def allreduce(seconds: float, expected: float) -> Any:
    row = {"what": "allreduce gloo", "backend": "gloo", "world": 2, "bytes": 64.0 * MiB, "iters": 1,
           "seconds": seconds, "correct": True}
    return findings.allreduce_finding(job_of(row, name="allreduce_gloo"), "gloo", expected, "the link")


def test_a_correct_allreduce_below_the_expected_bus_bandwidth_warns() -> None:
    busbw = bandwidth.allreduce_busbw_gbps(64.0 * MiB, 0.01, 2)
    assert allreduce(0.01, busbw * 0.99).status == "pass"
    assert allreduce(0.01, busbw * 1.01).status == "warn"
    assert allreduce(0.01, busbw * 1.9).status == "warn"  # a bit slower than half: still a warning


def p2p_job(peer: bool, gbps: float) -> JobResult:
    matrix = {"what": "p2p matrix", "matrix": [[True, peer], [peer, True]]}
    pairs = [{"what": "p2p", "src": s, "dst": d, "bytes": gbps * 1e9, "seconds": 1.0} for s, d in ((0, 1), (1, 0))]
    return job_of(matrix, *pairs, name="p2p")


def test_gpus_without_peer_access_warn_on_an_nvlink_part_however_fast_the_copies() -> None:
    names = ["NVIDIA H100 80GB HBM3"]
    assert bandwidth.nvlink_gbps(names[0]) == 450.0
    assert findings.p2p_finding(p2p_job(True, 400.0), names, None).status == "pass"
    assert findings.p2p_finding(p2p_job(False, 400.0), names, None).status == "warn"
    assert findings.p2p_finding(p2p_job(True, 100.0), names, None).status == "warn"


def test_a_read_too_small_to_time_is_not_a_measurement() -> None:
    row = {"what": "disk", "path": "/data", "bytes": float(findings.MIN_DISK_BYTES - 1), "seconds": 1e-6,
           "method": "O_DIRECT"}
    f = findings.disk_finding(job_of(row, name="disk"), {"/data": "hdd"})
    assert "not timed" in f.actual and "MB/s over" not in f.actual, f
    big = dict(row, bytes=float(findings.MIN_DISK_BYTES) * 4, seconds=1.0)  # 32 MB/s: a slow disk, measured
    f = findings.disk_finding(job_of(big, name="disk"), {"/data": "hdd"})
    assert "MB/s over" in f.actual and f.status == "warn", f


def test_a_cpu_matmul_below_its_line_warns_and_above_passes() -> None:
    from hosttune.policy import cpu_peak

    peak, _how = cpu_peak.peak_gflops(4, 3.0, ["avx2", "fma"], "GenuineIntel", "x86_64")
    line = peak * cpu_peak.MATMUL_WARN_FRACTION

    def at(gflops: float) -> str:
        row = {"what": "cpu_matmul", "flops": gflops * 1e9, "seconds": 1.0, "n": 1024, "threads": 4}
        return findings.cpu_matmul_finding(job_of(row, name="cpu"), 4, 3.0, ["avx2", "fma"], "GenuineIntel",
                                           "x86_64").status

    assert (at(line * 1.01), at(line * 0.99), at(line * 0.2)) == ("pass", "warn", "warn")


def test_a_memory_triad_below_its_floor_warns() -> None:
    from hosttune.policy import cpu_peak

    floor = cpu_peak.MEMBW_PER_THREAD_GBPS * 4

    def at(gbps: float) -> str:
        row = {"what": "cpu_triad", "bytes": gbps * 1e9, "seconds": 1.0, "threads": 4, "elems": 1 << 20}
        return findings.membw_finding(job_of(row, name="cpu")).status

    assert (at(floor * 1.01), at(floor * 0.99), at(floor * 0.2)) == ("pass", "warn", "warn")


def test_bf16_slower_than_fp32_warns_and_as_fast_passes() -> None:
    def at(ratio: float) -> str:
        row = {"what": "cpu_bf16", "fp32_gflops": 100.0, "bf16_gflops": 100.0 * ratio}
        return findings.bf16_finding(job_of(row, name="cpu"), ["avx2"]).status

    assert (at(0.1), at(0.79), at(0.81), at(2.0)) == ("warn", "warn", "pass", "pass")
