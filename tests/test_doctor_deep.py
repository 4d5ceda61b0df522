"""doctor --deep: every CPU measurement for real on this machine (small sizes), the GPU paths' parsing, formulas
and thresholds on recorded probe output (tests/recorded/deep: 8x H100 SXM, 1x L4, a driver too old for torch's
CUDA), and the three ways torch can let a measurement down: it does not import, its first CUDA call raises, a
measurement hangs. Each gives exactly one failing finding; what depended on it is skipped and says why."""

import dataclasses
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List

import psutil
import pytest
from _ranks import free_port
from conftest import a100, run_cli

from hosttune.detect import collect
from hosttune.doctor import Context, Finding, run_checks
from hosttune.doctor.deep import DEEP_CHECKS, DeepOptions, DeepRun, findings, host
from hosttune.doctor.deep.runner import JobResult, parse_events, run_job
from hosttune.facts import Facts, Gpu, Nvidia
from hosttune.policy import bandwidth, cpu_peak, gpu_peak

REPO = Path(__file__).resolve().parents[1]
RECORDED = Path(__file__).resolve().parent / "recorded" / "deep"
PROBE = REPO / "hosttune" / "doctor" / "deep" / "probe_torch.py"
BY_ID = {c.id: c for c in DEEP_CHECKS}
SMALL = dict(small=True, seconds=0.05, progress=False)
MiB = 1 << 20


def recorded(name: str, job: str = "gpu", **over: Any) -> JobResult:
    return JobResult(name=job, events=parse_events((RECORDED / name).read_text()), returncode=0, **over)


@pytest.fixture(scope="module")
def facts() -> Facts:
    return collect(Path("/"))


def gpu_facts(base: Facts, name: str, n: int, gen: int, width: int) -> Facts:
    buses = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"] if n > 1 else ["82"]
    gpus = tuple(Gpu(index=i, name=name, pci_bus_id=f"0000:{buses[i]}:00.0", source="nvml", pcie_gen_max=gen,
                     pcie_width_max=width, pci_class="0x030200") for i in range(n))
    return dataclasses.replace(base, gpus=gpus, nvidia=Nvidia(driver="550.54.15", cuda_driver="12.4", nvml="ok"))


def run_deep(facts: Facts, ids: List[str], data: Any = (), **opts: Any) -> Dict[str, Any]:
    ctx = Context(facts=facts, env={}, data=tuple(data), python=opts.pop("python", None))
    ctx.deep = DeepRun(ctx, DeepOptions(**{**SMALL, **opts}))
    try:
        report = run_checks(ctx, [BY_ID[i] for i in ids])
    finally:
        ctx.deep.close()
    return {r.id: r for r in report.results}


# ---- policy: the one peak table and the formulas ---------------------------------------------------------------
@pytest.mark.parametrize("name, key, bf16", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 989.4),
    ("NVIDIA H100 PCIe", "H100 PCIe", 756.5),
    ("NVIDIA H100 NVL", "H100 NVL", 835.5),
    ("NVIDIA H200", "H200 SXM", 989.4),
    ("NVIDIA H200 NVL", "H200 NVL", 835.5),
    ("NVIDIA GH200 480GB", "GH200", 989.4),
    ("NVIDIA B200", "B200", 2250.0),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB", 312.0),
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB", 312.0),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB", 312.0),
    ("NVIDIA L40S", "L40S", 362.05),
    ("NVIDIA L40", "L40", 181.0),
    ("NVIDIA L4", "L4", 121.0),
    ("NVIDIA A10G", "A10G", 70.0),
    ("NVIDIA A10", "A10", 125.0),
    ("NVIDIA A30", "A30", 165.0),
    ("NVIDIA A40", "A40", 149.7),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", 364.2),
    ("Tesla V100-SXM2-32GB", "V100 SXM2", None),
    ("Tesla T4", "T4", None),
])
def test_peak_table_tells_the_variants_apart(name: str, key: str, bf16: Any) -> None:
    entry = gpu_peak.match(name)
    assert entry is not None and entry.key == key and entry.source
    assert gpu_peak.dense_peak_tflops(name, "bf16") == bf16
    assert gpu_peak.dense_peak_tflops(name, "torch.bfloat16") == bf16


def test_peak_table_dtypes_and_unknowns() -> None:
    assert gpu_peak.dense_peak_tflops("Tesla V100-SXM2-32GB", "fp16") == 125.0
    assert gpu_peak.dense_peak_tflops("Tesla T4", "tf32") is None  # no TF32 on Turing
    assert gpu_peak.dense_peak_tflops("NVIDIA H100 80GB HBM3", "tf32") == 494.7
    assert gpu_peak.dense_peak_tflops("NVIDIA H100 80GB HBM3", "float32") == 66.9
    assert gpu_peak.match("Quadro RTX 6000") is None and gpu_peak.match("AMD Instinct MI300X") is None
    assert gpu_peak.dense_peak_tflops("NVIDIA L4", "int8") is None


def test_nccl_tests_bus_bandwidth() -> None:
    # doc/PERFORMANCE.md: busbw = algbw * 2(n-1)/n; 1 GiB in 10 ms over 8 ranks
    algbw = (1 << 30) / 0.010 / 1e9
    assert bandwidth.algbw_gbps(1 << 30, 0.010) == pytest.approx(algbw)
    assert bandwidth.allreduce_busbw_gbps(1 << 30, 0.010, 8) == pytest.approx(algbw * 1.75)
    assert bandwidth.allreduce_busbw_gbps(1 << 30, 0.010, 2) == pytest.approx(algbw)
    assert bandwidth.allreduce_busbw_gbps(1 << 30, 0.010, 1) == 0.0


def test_pcie_expectation_per_gen_and_width() -> None:
    assert bandwidth.pcie_raw_gbps(4, 16) == pytest.approx(31.51, abs=0.01)
    assert bandwidth.pcie_expected_gbps(4, 16) == pytest.approx(25.2, abs=0.05)
    assert bandwidth.pcie_expected_gbps(5, 16) == pytest.approx(50.4, abs=0.05)
    assert bandwidth.pcie_expected_gbps(3, 16) == pytest.approx(12.6, abs=0.05)
    assert bandwidth.pcie_expected_gbps(4, 8) == pytest.approx(bandwidth.pcie_expected_gbps(4, 16) / 2)
    assert bandwidth.pcie_expected_gbps(2, 16) == pytest.approx(8 * 0.8)
    assert bandwidth.pcie_expected_gbps(None, 16) is None and bandwidth.pcie_expected_gbps(9, 16) is None


def test_cpu_peak_from_isa() -> None:
    assert cpu_peak.flops_per_cycle(["avx", "avx2", "fma"])[0] == 32
    assert cpu_peak.flops_per_cycle(["avx2", "fma", "avx512f"], "GenuineIntel")[0] == 64
    assert cpu_peak.flops_per_cycle(["avx2", "fma", "avx512f"], "AuthenticAMD")[0] == 32  # Zen 4
    assert cpu_peak.flops_per_cycle(["avx"])[0] == 16 and cpu_peak.flops_per_cycle([])[0] == 8
    assert cpu_peak.flops_per_cycle(["asimd"], arch="aarch64")[0] == 16
    peak, how = cpu_peak.peak_gflops(2, 2.45, ["avx2", "fma"])
    assert peak == pytest.approx(156.8) and "AVX2 FMA" in how
    assert cpu_peak.has_bf16(["amx_bf16"]) and not cpu_peak.has_bf16(["avx2"])


def test_cpu_clock_sources() -> None:
    assert host.parse_model_ghz("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz") == 2.5
    assert host.parse_model_ghz("AMD EPYC 7763 64-Core Processor") is None
    assert host.parse_cpuinfo_mhz("cpu MHz\t\t: 2445.426\ncpu MHz\t\t: 3100.000\n") == 3100.0


# ---- GPU findings on recorded probe output ----------------------------------------------------------------------
def test_h100x8_recorded_healthy(facts: Facts) -> None:
    job = recorded("h100-sxm-x8.gpu.jsonl")
    idx = {i: i for i in range(8)}
    f = findings.compute_finding(job, {}, idx)
    assert f.status == "pass", f
    assert "GPU0 bf16 722 (73%), fp16 741 (75%), tf32 389 (79%)" in f.actual and "GPU7 bf16 724 (73%)" in f.actual
    assert "H100 SXM" in f.expected and "989.4" in f.expected and "datasheet" in f.expected
    links = {i: (5, 16) for i in range(8)}
    c = findings.copies_finding(job, links, {0: {"pcie_gen": 5, "pcie_width": 16}}, idx)
    assert c.status == "pass" and "GPU0 pinned 53.8/54.6, pageable 21.3/12.9 GB/s (link gen5 x16" in c.actual
    assert "gen5 x16: 50.4" in c.expected
    p = findings.p2p_finding(job, ["NVIDIA H100 80GB HBM3"] * 8, None)
    assert p.status == "pass" and "56/56 pairs peer-accessible" in p.actual and "NVLink 450" in p.expected
    ar = findings.allreduce_finding(recorded("h100-sxm-x8.allreduce.jsonl", "allreduce_nccl"), "nccl",
                                    450 * bandwidth.NVLINK_WARN_FRACTION, "60% of NVLink")
    assert ar.status == "pass" and "8 ranks, 256 MiB: busbw 362 GB/s (algbw 207" in ar.actual, ar
    assert "busbw >= 270 GB/s" in ar.expected


def test_h100x8_slow_gpu_with_hw_slowdown_fails_and_names_the_reason() -> None:
    job = recorded("h100-sxm-x8.gpu.jsonl")
    events = [dict(e) for e in job.events]
    for e in events:
        if e.get("what") == "gpu_compute gpu5 bf16" and e["event"] == "result":
            e["seconds"] = e["seconds"] * 729 / 455  # 455 TFLOP/s: 46% of peak
    slow = dataclasses.replace(job, events=tuple(events))
    f = findings.compute_finding(slow, {5: 0x8 | 0x4 | 0x1}, {i: i for i in range(8)})
    assert f.status == "fail", f  # hardware slowdown is critical (policy.gpu_health)
    assert "GPU5 bf16 455 (46%)" in f.actual, f
    assert "GPU5: hardware slowdown" in f.actual and "hw_slowdown" in f.actual and "sw_power_cap" in f.actual
    assert "nvidia-smi -q -d PERFORMANCE" in f.fix
    f = findings.compute_finding(slow, {}, {i: i for i in range(8)})
    assert f.status == "warn" and "46%" in f.actual


def test_l4_recorded_and_a_slow_link() -> None:
    job = recorded("l4-x1.gpu.jsonl")
    f = findings.compute_finding(job, {0: 0x4}, {0: 0})
    assert f.status == "pass" and "GPU0 bf16 92 (76%)" in f.actual and "L4 >= 70%" in f.expected
    assert "software power capping" not in f.actual or "GPU0" in f.actual
    c = findings.copies_finding(job, {0: (4, 16)}, {}, {0: 0})
    assert c.status == "pass" and "gen4 x16: 25.2" in c.expected
    # the same copies behind a link that trains to gen4 x16 but should be gen5 x16: below 75% of 50.4
    c = findings.copies_finding(job, {0: (5, 16)}, {0: {"pcie_gen": 4, "pcie_width": 16}}, {0: 0})
    assert c.status == "warn" and "link gen4 x16 while copying" in c.actual and "nvidia.pcie_link" in c.fix
    c = findings.copies_finding(job, {}, {}, {0: 0})
    assert c.status == "pass" and "PCIe link unknown" in c.expected


def test_volta_has_no_bf16_row() -> None:
    events = parse_events("\n".join(json.dumps(e) for e in [
        {"event": "result", "what": "gpu_compute gpu0 bf16", "gpu": 0, "dtype": "bf16", "unsupported": True},
        {"event": "result", "what": "gpu_compute gpu0 fp16", "gpu": 0, "dtype": "fp16", "n": 8192, "iters": 10,
         "seconds": 0.11, "flops": 2.0 * 8192 ** 3 * 10, "name": "Tesla V100-SXM2-32GB"},
    ]))
    f = findings.compute_finding(JobResult(name="gpu", events=events, returncode=0), {}, {0: 0})
    assert f.status == "pass" and "bf16 n/a" in f.actual and "fp16 100 (80%)" in f.actual


def test_recorded_cuda_error_is_the_actual_value() -> None:
    f = findings.torch_finding(recorded("driver-too-old.torch.jsonl", "torch"), 2, "/opt/train/bin/python3")
    assert f.status == "fail" and f.actual.startswith("first CUDA call: RuntimeError: The NVIDIA driver on your "
                                                      "system is too old (found version 11040)")
    assert "update the NVIDIA driver" in f.fix and "2 GPU(s)" in f.expected


def test_torch_on_a_gpu_host_sees_all_and_bf16_by_capability() -> None:
    f = findings.torch_finding(recorded("h100-sxm-x8.gpu.jsonl"), 8, None)
    assert f.status == "pass" and "8x NVIDIA H100 80GB HBM3 cc 9.0, bf16" in f.actual
    f = findings.torch_finding(recorded("l4-x1.gpu.jsonl"), 2, None)
    assert f.status == "warn" and "fewer GPUs" in f.fix


def test_wired_checks_on_a_recorded_8_gpu_host(facts: Facts) -> None:
    """The checks themselves (index maps, PCIe and NVLink expectations from the facts) with the jobs recorded."""
    fx = gpu_facts(facts, "NVIDIA H100 80GB HBM3", 8, 5, 16)
    ctx = Context(facts=fx, env={})
    run = DeepRun(ctx, DeepOptions(progress=False))
    run.jobs.update(torch=recorded("h100-sxm-x8.gpu.jsonl", "torch"), gpu=recorded("h100-sxm-x8.gpu.jsonl"),
                    allreduce_nccl=recorded("h100-sxm-x8.allreduce.jsonl", "allreduce_nccl"))
    ctx.deep = run
    ids = ["torch.deep_cuda", "nvidia.deep_compute", "nvidia.deep_copies", "nvidia.deep_p2p",
           "nvidia.deep_allreduce", "cpu.deep_allreduce"]
    got = {r.id: r for r in run_checks(ctx, [BY_ID[i] for i in ids]).results}
    assert {i: got[i].status for i in ids} == {
        "torch.deep_cuda": "pass", "nvidia.deep_compute": "pass", "nvidia.deep_copies": "pass",
        "nvidia.deep_p2p": "pass", "nvidia.deep_allreduce": "pass", "cpu.deep_allreduce": "skip"}
    assert "busbw >= 270 GB/s (60% of NVLink 450 GB/s per GPU" in got["nvidia.deep_allreduce"].expected
    assert "GPU host" in got["cpu.deep_allreduce"].actual


def test_nvlink_down_warns() -> None:
    up = [{"link": k, "up": True} for k in range(18)]
    assert findings.nvlink_finding({0: up, 1: up}).status == "pass"
    down = [dict(x, up=(x["link"] != 3)) for x in up]
    f = findings.nvlink_finding({0: up, 1: down})
    assert f.status == "warn" and "GPU1 17/18" in f.actual and "GPU1 link 3" in f.actual
    assert findings.nvlink_finding({}).status == "skip"


def test_nvlink_state_through_nvml(facts: Facts, fake_nvml: Any) -> None:
    links = [{"active": 1, "errors": {"replay": 0}} for _ in range(12)]
    down = [dict(x, active=0 if k == 7 else 1) for k, x in enumerate(links)]
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "1B", nvlinks=links), a100(1, "1C", nvlinks=down)]})
    fx = gpu_facts(facts, "NVIDIA A100-SXM4-80GB", 2, 4, 16)
    r = run_deep(fx, ["nvidia.deep_nvlink"])["nvidia.deep_nvlink"]
    assert r.status == "warn" and "GPU0 12/12, GPU1 11/12 links up" in r.actual and "GPU1 link 7" in r.actual, r


def test_clock_events_sampled_while_each_gpu_computes(facts: Facts, fake_nvml: Any) -> None:
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "18", clock_event_reasons=0x4), a100(1, "2A", clock_event_reasons=0x40)]})
    fx = gpu_facts(facts, "NVIDIA A100-SXM4-80GB", 2, 4, 16)
    run = DeepRun(Context(facts=fx, env={}), DeepOptions(progress=False))
    run._open_nvml()
    info = {"event": "result", "what": "info", "devices": [{"index": 0, "pci_bus_id": "0000:2a:00.0"}]}
    run._sample_nvml("gpu_compute gpu0 bf16", [info])  # cuda:0 is NVML's GPU1 here (bus 2a)
    run._sample_nvml("gpu_copies gpu0 pinned h2d", [info])
    run.close()
    assert run.clock_events == {1: 0x40} and run.pcie_seen == {1: {"pcie_gen": 4, "pcie_width": 16}}


def test_a_hang_in_one_gpu_measurement_fails_that_check_only() -> None:
    events = recorded("l4-x1.gpu.jsonl").events
    cut = [e for e in events if not e["what"].startswith(("gpu_compute gpu0 tf32", "gpu_copies"))]
    cut.append({"event": "start", "what": "gpu_compute gpu0 tf32"})
    job = JobResult(name="gpu", events=tuple(cut), timed_out=True, timeout_s=38.0, returncode=-9)
    f = findings.compute_finding(job, {}, {0: 0})
    c = findings.copies_finding(job, {0: (4, 16)}, {}, {0: 0})
    # what finished is still judged; the check that owns the hung measurement...
    assert f.status == "pass" or "tf32" not in f.actual
    hang = findings.absent(job, "gpu_compute gpu0 tf32")
    assert hang.status == "fail" and "timed out after 38 s while measuring gpu_compute gpu0 tf32" in hang.actual
    # ...and the ones that never ran are skips pointing at it
    assert c.status == "skip" and "hung in gpu_compute gpu0 tf32" in c.actual


# The probe's GPU functions against real torch's API, with "cuda" mapped onto the CPU: a wrong call (a misspelt
# torch function, an argument torch does not take) shows here, not first on somebody's GPU host.
CUDA_ON_CPU = """
import json, sys, types
sys.path.insert(0, sys.argv[1])
import torch
import probe_torch as p

cpu = torch.device("cpu")
real_device = torch.device
class Props:
    def __init__(self, i):
        self.name, self.major, self.minor, self.total_memory = "NVIDIA L4", 8, 9, 23034 << 20
        self.pci_bus_id, self.pci_device_id, self.pci_domain_id = 0x82 + i, 0, 0
def device(kind, index=None):
    return cpu if str(kind).startswith("cuda") else real_device(kind) if index is None else real_device(kind, index)
c = torch.cuda
c.init = lambda: None
c.is_available = lambda: True
c.device_count = lambda: 2
c.get_device_properties = Props
c.get_device_name = lambda i: Props(i).name
c.synchronize = lambda *a: None
c.empty_cache = lambda: None
c.set_device = lambda d: None
c.can_device_access_peer = lambda a, b: True
torch.device = device
real_zeros = torch.zeros
torch.zeros = lambda *a, device=None, **k: real_zeros(*a, **k)
torch.Tensor.pin_memory = lambda self: self
torch.version.cuda = "12.4"
out = {"info": p.torch_info(), "mm": p.gpu_matmul(1, "tf32", 64, 0.01),
       "copy": p.gpu_copy(0, "pinned", "d2h", 1 << 20, 0.01), "matrix": p.p2p_matrix(),
       "p2p": p.p2p_copy(0, 1, 1 << 20, 0.01)}
print(json.dumps(out))
"""


@pytest.mark.integration  # the probe under the real torch interpreter (make check leaves it out)
def test_probe_gpu_paths_run_against_real_torch(facts: Facts, tmp_path: Path) -> None:
    if facts.torch is None or not facts.torch.version:
        pytest.skip("no torch on this machine")
    (tmp_path / "shim.py").write_text(CUDA_ON_CPU)
    done = subprocess.run([facts.torch.python, str(tmp_path / "shim.py"), str(PROBE.parent)], capture_output=True,
                          text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert [d["pci_bus_id"] for d in out["info"]["devices"]] == ["0000:82:00.0", "0000:83:00.0"]
    assert out["info"]["devices"][0]["bf16"] and out["info"]["cuda_error"] is None
    assert out["mm"]["flops"] == 2.0 * 64 ** 3 * out["mm"]["iters"] and out["mm"]["name"] == "NVIDIA L4"
    assert out["copy"]["bytes"] >= 3 * MiB and out["matrix"]["matrix"] == [[True, True], [True, True]]
    assert out["p2p"]["peer"] is True and out["p2p"]["seconds"] > 0


# ---- real measurements on this machine ----------------------------------------------------------------------------
CPU_IDS = ["torch.deep_cuda", "cpu.deep_matmul", "cpu.deep_membw", "cpu.deep_bf16", "cpu.deep_allreduce",
           "storage.deep_read", "storage.deep_shm", "os.deep_container", "nvidia.deep_compute"]


@pytest.fixture(scope="module")
def cpu_run(facts: Facts, tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    data = tmp_path_factory.mktemp("data")
    with open(data / "shard-0.bin", "wb") as fh:  # on this machine's root file system (not tmpfs)
        fh.write(os.urandom(24 * MiB))
    (data / "small.txt").write_text("x")
    return run_deep(facts, CPU_IDS, data=[str(data)])


@pytest.mark.slow
@pytest.mark.integration  # the whole deep CPU run for real (make check leaves it out)
def test_cpu_measurements_run_for_real(cpu_run: Dict[str, Any], facts: Facts) -> None:
    for cid in CPU_IDS[:-1]:
        r = cpu_run[cid]
        assert r.status in ("pass", "warn"), (cid, r)
        assert r.status == "pass" or r.fix, (cid, r)
    assert cpu_run["nvidia.deep_compute"].status == "skip"
    t = cpu_run["torch.deep_cuda"].actual
    assert facts.torch is not None and t.startswith(f"torch {facts.torch.version} imports in")
    assert "no GPU on this host" in t


@pytest.mark.slow
@pytest.mark.integration  # the whole deep CPU run for real (make check leaves it out)
def test_cpu_matmul_and_membw_shape(cpu_run: Dict[str, Any]) -> None:
    m = cpu_run["cpu.deep_matmul"]
    assert "GFLOP/s fp32 (256x256 matmul" in m.actual and "% of peak" in m.actual
    assert "FLOP/cycle" in m.expected and "cores x" in m.expected
    b = cpu_run["cpu.deep_membw"]
    assert b.actual.startswith("triad ") and "GB/s" in b.actual and "GB/s per thread" in b.expected


@pytest.mark.slow
@pytest.mark.integration  # the whole deep CPU run for real (make check leaves it out)
def test_bf16_trap_on_this_cpu(cpu_run: Dict[str, Any], facts: Facts) -> None:
    r = cpu_run["cpu.deep_bf16"]
    assert "bf16 autocast" in r.actual and "vs fp32" in r.actual and "x0.8" in r.expected
    if not cpu_peak.has_bf16(facts.cpu.flags):  # this machine: AVX2 only, bf16 emulated (perf-notes x0.03-0.10)
        assert r.status == "warn" and "no avx512_bf16/amx_bf16" in r.actual and "amp=off" in r.fix


@pytest.mark.slow
@pytest.mark.integration  # the whole deep CPU run for real (make check leaves it out)
def test_gloo_allreduce_two_ranks(cpu_run: Dict[str, Any]) -> None:
    r = cpu_run["cpu.deep_allreduce"]
    assert r.status == "pass" and r.actual.startswith("2 ranks, 4 MiB: busbw ") and "correct sums" in r.expected


@pytest.mark.integration
@pytest.mark.slow  # cpu_run: the whole deep CPU run (matmul, membw, bf16, 2-rank all-reduce), not only the reads
def test_storage_reads_bypass_the_cache(cpu_run: Dict[str, Any], facts: Facts) -> None:
    r = cpu_run["storage.deep_read"]
    assert "MB/s over" in r.actual and "(O_DIRECT)" in r.actual, r
    s = cpu_run["storage.deep_shm"]
    assert s.actual.startswith("write ") and "read " in s.actual and ">= 1000 MB/s" in s.expected


def test_read_without_o_direct_drops_the_cache_and_says_so(tmp_path: Path) -> None:
    """The fallback for file systems that refuse O_DIRECT (tmpfs before Linux 6.6, some FUSE mounts)."""
    shm = tmp_path / "f.bin"
    shm.write_bytes(os.urandom(16 * MiB))
    done = subprocess.run([sys.executable, "-I", str(PROBE), "--json", "--measure", "disk", "--file", str(shm),
                           "--no-direct"], capture_output=True, text=True, timeout=60, cwd="/")
    job = JobResult(name="disk", events=parse_events(done.stdout), returncode=done.returncode)
    f = findings.disk_finding(job, {str(shm): "tmpfs"})
    assert "page cache dropped with posix_fadvise" in f.actual and "O_DIRECT refused" in f.expected, f


@pytest.mark.slow
@pytest.mark.integration  # the whole deep CPU run for real (make check leaves it out)
def test_container_detection_matches_the_markers(cpu_run: Dict[str, Any]) -> None:
    r = cpu_run["os.deep_container"]
    markers = [p for p in ("/.dockerenv", "/run/.containerenv") if os.path.exists(p)]
    if markers:
        assert "inside a" in r.actual and markers[0] in r.actual
    assert host.parse_daemon_json('{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}') == (True, False)
    assert host.parse_daemon_json('{"features": {"cdi": true}}') == (False, True)
    assert host.parse_daemon_json("not json") == (False, False)


def tree(root: Path, files: Dict[str, str]) -> Path:
    """A host tree under `root` (made, even with no files): each path's text; files under a bin/ executable."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if "/bin/" in rel:
            path.chmod(0o755)
    return root


def test_container_toolkit_pieces_and_fixes(tmp_path: Path, facts: Facts) -> None:
    from hosttune.detect.hostio import HostIO
    from hosttune.doctor.fixes import container_toolkit_install

    deb = Context(facts=dataclasses.replace(facts, distro=dataclasses.replace(facts.distro, family="debian")), env={})
    rhel = Context(facts=dataclasses.replace(facts, distro=dataclasses.replace(facts.distro, family="rhel")), env={})
    bare = host.toolkit(HostIO(tree(tmp_path / "bare", {"/usr/bin/docker": "#!/bin/sh\n"})))
    f = findings.toolkit_finding(bare, container_toolkit_install(deb))
    assert f.status == "warn" and "nvidia-ctk missing" in f.actual
    assert "apt-get install -y nvidia-container-toolkit" in f.fix and "signed-by=" in f.fix
    assert "dnf install -y nvidia-container-toolkit" in container_toolkit_install(rhel)
    half = host.toolkit(HostIO(tree(tmp_path / "half", {"/usr/bin/docker": "", "/usr/bin/podman": "",
                                                         "/usr/bin/nvidia-ctk": "", "/etc/docker/daemon.json": "{}"})))
    f = findings.toolkit_finding(half, "")
    assert f.status == "warn" and "no CDI spec" in f.actual and "no nvidia runtime" in f.actual
    assert f.fix.splitlines() == ["nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
                                  "nvidia-ctk runtime configure --runtime=docker && systemctl restart docker"]
    spec = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n"
    done = host.toolkit(HostIO(tree(tmp_path / "done", {
        "/usr/bin/docker": "", "/usr/bin/nvidia-ctk": "", "/var/run/cdi/nvidia.yaml": spec,
        "/etc/docker/daemon.json": '{"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}}'})))
    f = findings.toolkit_finding(done, "")
    assert f.status == "pass" and "/var/run/cdi/nvidia.yaml" in f.actual
    none = host.toolkit(HostIO(tree(tmp_path / "none", {"/etc/hostname": "x\n"})))
    assert findings.toolkit_finding(none, "").status == "skip"


# ---- torch lets us down: one finding each --------------------------------------------------------------------------
def fake_torch(root: Path, body: str) -> Path:
    pkg = root / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(body))
    return root


def test_torch_that_does_not_import(facts: Facts, tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    got = run_deep(facts, ["torch.deep_cuda", "cpu.deep_matmul", "cpu.deep_bf16", "cpu.deep_allreduce"],
                   python=str(tmp_path / "venv" / "bin" / "python3"))
    bad = [r for r in got.values() if r.status in ("fail", "warn")]
    assert [r.id for r in bad] == ["torch.deep_cuda"], got
    assert "import torch failed" in bad[0].actual and "No module named 'torch'" in bad[0].actual
    assert "-m pip install torch" in bad[0].fix
    assert all("torch.deep_cuda" in got[i].actual for i in ("cpu.deep_matmul", "cpu.deep_bf16",
                                                            "cpu.deep_allreduce"))


def test_cuda_call_that_raises(facts: Facts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = fake_torch(tmp_path / "site", """
        __version__ = "2.5.1+cu124"
        class version:
            cuda = "12.4"
        def get_num_threads():
            return 4
        class cuda:
            @staticmethod
            def is_available():
                return False
            @staticmethod
            def init():
                raise RuntimeError("CUDA driver initialization failed, you might not have a CUDA gpu. "
                                   "(Triggered internally at cuda/CUDAFunctions.cpp:108.) error 802: system not "
                                   "yet initialized")
        class backends:
            pass
    """)
    monkeypatch.setenv("PYTHONPATH", str(root))
    fx = gpu_facts(facts, "NVIDIA H100 80GB HBM3", 8, 5, 16)
    got = run_deep(fx, ["torch.deep_cuda", "nvidia.deep_compute", "nvidia.deep_copies", "nvidia.deep_p2p",
                        "nvidia.deep_allreduce"], python=sys.executable)
    bad = [r for r in got.values() if r.status in ("fail", "warn")]
    assert [r.id for r in bad] == ["torch.deep_cuda"], got
    assert bad[0].actual.startswith("first CUDA call: RuntimeError: CUDA driver initialization failed")
    assert "nvidia-fabricmanager" in bad[0].fix
    assert all(got[i].status == "skip" and "torch.deep_cuda" in got[i].actual
               for i in ("nvidia.deep_compute", "nvidia.deep_copies", "nvidia.deep_allreduce"))


def test_measurement_that_hangs(facts: Facts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = fake_torch(tmp_path / "site", """
        import time
        time.sleep(120)
    """)
    monkeypatch.setenv("PYTHONPATH", str(root))
    ctx = Context(facts=facts, env={}, python=sys.executable)
    ctx.deep = DeepRun(ctx, DeepOptions(**SMALL, timeouts={"torch": 2.0}))
    started = time.monotonic()
    try:
        report = run_checks(ctx, [BY_ID[i] for i in ("torch.deep_cuda", "cpu.deep_matmul", "cpu.deep_membw")])
        script_dir = os.path.dirname(ctx.deep.script())
        left = [p for p in psutil.process_iter(["cmdline"]) if script_dir in " ".join(p.info["cmdline"] or [])]
    finally:
        ctx.deep.close()
    assert time.monotonic() - started < 60
    got = {r.id: r for r in report.results}
    bad = [r for r in got.values() if r.status in ("fail", "warn")]
    assert [r.id for r in bad] == ["torch.deep_cuda"], got
    assert "torch probe timed out after 2 s while measuring info (process tree killed)" in bad[0].actual
    assert got["cpu.deep_matmul"].status == "skip" and "hung in info" in got["cpu.deep_matmul"].actual
    assert not left, left


def test_time_budget_skips_instead_of_failing(facts: Facts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_torch(tmp_path / "site", "import time\ntime.sleep(120)\n")))
    got = run_deep(facts, ["torch.deep_cuda", "cpu.deep_matmul", "storage.deep_shm"], python=sys.executable,
                   budget_s=1.5)
    assert got["torch.deep_cuda"].status == "skip" and "time budget ran out" in got["torch.deep_cuda"].actual
    assert got["cpu.deep_matmul"].status == "skip"
    assert got["storage.deep_shm"].status == "skip" and "time budget" in got["storage.deep_shm"].actual


def test_runner_kills_workers_in_their_own_sessions(tmp_path: Path) -> None:
    """torchrun starts its ranks with start_new_session=True: a timeout must reach them too."""
    child = ("import json, os, subprocess, sys, time\n"
             "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], start_new_session=True)\n"
             "print(json.dumps({'event': 'start', 'what': 'nap', 'pid': p.pid}), flush=True)\n"
             "time.sleep(120)\n")
    res = run_job("nap", [sys.executable, "-c", child], env=dict(os.environ), timeout=60.0,
                  measure_limit=lambda what: 1.5)  # the measurement's own limit, well inside the job's
    assert res.timed_out and res.hung_on == "nap" and res.timeout_s == 1.5 and res.elapsed_s < 30
    assert "timed out after 1.5 s while measuring nap" in res.failure()
    pid = res.events[0]["pid"]
    for _ in range(50):
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.1)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


# ---- the command line ----------------------------------------------------------------------------------------------
def hosttune(*args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "hosttune", *args], capture_output=True, text=True, timeout=120,
                          cwd=str(REPO))


def test_cli_deep_storage_group_json(tmp_path: Path) -> None:
    data = tmp_path / "d.bin"
    data.write_bytes(os.urandom(12 * MiB))
    done = hosttune("doctor", "--deep", "--only", "storage", "--json", "--data", str(data))
    assert done.returncode in (0, 1), done.stderr
    out = json.loads(done.stdout)
    by = {f["id"]: f for f in out["findings"]}
    assert {"storage.deep_read", "storage.deep_shm", "storage.shm", "storage.data"} <= set(by)
    assert {f["id"].split(".")[0] for f in out["findings"]} == {"storage"}
    assert "MB/s" in by["storage.deep_read"]["actual"] and by["storage.deep_read"]["expected"]
    assert done.stderr == ""  # no progress line when stderr is not a terminal


def test_cli_deep_refuses_root_and_explains(tmp_path: Path) -> None:
    # doctor's CLI in this process (an exception would be raised, not printed): the answers are the subject, and
    # test_doctor_cli.py keeps a real process for a bad usage's one line (three children cost 1.4 CPU-s: issue 21)
    done = run_cli(["doctor", "--deep", "--root", str(tmp_path)])
    assert done.returncode == 2 and "--deep measures this machine" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = run_cli(["doctor", "--explain", "cpu.deep_bf16"])
    assert done.returncode == 0 and "10-30x" in done.stdout
    done = run_cli(["doctor", "--skip", "cpu.deep_bf16", "--only", "os", "--json"])
    assert done.returncode in (0, 1)


# ---- the findings' lines, at their edges (fabricated probe results: pure functions, no GPU) ----------------------
def job_of(*results: Dict[str, Any], name: str = "gpu") -> JobResult:
    return JobResult(name=name, events=tuple(dict(r, event="result") for r in results), returncode=0)


def exact_amount(rate: float, unit: float) -> float:
    """An amount whose `amount / 1.0 / unit` is exactly `rate` in floating point (the findings' own formula with
    seconds = 1), so a test can sit exactly on a line."""
    amount = rate * unit
    for _ in range(64):
        got = amount / 1.0 / unit
        if got == rate:
            return amount
        amount = math.nextafter(amount, math.inf if got < rate else -math.inf)
    raise AssertionError(f"no amount gives exactly {rate!r}")


def allreduce_row(correct: Any = True, **over: Any) -> Dict[str, Any]:
    row = {"what": "allreduce gloo", "backend": "gloo", "world": 2, "bytes": 4.0 * MiB, "iters": 5,
           "seconds": 0.001}
    if correct is not None:
        row["correct"] = correct
    return dict(row, **over)


@pytest.mark.parametrize("expected_busbw", [None, 0.001])
def test_allreduce_with_wrong_sums_fails_however_fast(expected_busbw: Any) -> None:
    f = findings.allreduce_finding(job_of(allreduce_row(False), name="allreduce_gloo"), "gloo", expected_busbw,
                                   "correct sums")
    assert f.status == "fail" and f.actual.endswith("; WRONG SUMS") and "GLOO_SOCKET_IFNAME" in f.fix, f
    ok = findings.allreduce_finding(job_of(allreduce_row(True), name="allreduce_gloo"), "gloo", expected_busbw,
                                    "correct sums")
    assert ok.status == "pass" and "WRONG" not in ok.actual, ok


def test_allreduce_without_a_correctness_answer_fails() -> None:
    row = allreduce_row(None, what="allreduce nccl", backend="nccl")
    f = findings.allreduce_finding(job_of(row, name="allreduce_nccl"), "nccl", None, "x")
    assert f.status == "fail" and "WRONG SUMS" in f.actual and "NCCL_DEBUG=INFO" in f.fix


# A rank whose all_reduce returns wrong sums (here: one added to what gloo returned), run through the probe's own
# measurement in a real one-rank gloo group: the probe must say correct=false, which the finding turns into a fail.
# One interpreter measures both modes, each in its own group on its own port (issue 21: a torch start-up each).
WRONG_SUMS = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import torch.distributed as dist
import probe_torch as p

real = dist.all_reduce
def wrong(tensor, *a, **k):
    out = real(tensor, *a, **k)
    tensor.add_(1)
    return out
for arg in sys.argv[2:]:
    mode, port = arg.split(":")
    os.environ["MASTER_PORT"] = port
    dist.all_reduce = wrong if mode == "wrong" else real
    print(json.dumps(dict(p.allreduce("gloo", 1 << 16, 2), mode=mode)), flush=True)
"""
ALLREDUCE_MODES = [("wrong", False), ("right", True)]


@pytest.fixture(scope="module")
def allreduce_rows(facts: Facts, tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Dict[str, Any]]:
    """mode -> the probe's row, both modes measured by one interpreter."""
    if facts.torch is None or not facts.torch.version:
        pytest.skip("no torch on this machine")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
               GLOO_SOCKET_IFNAME="lo")
    script = tmp_path_factory.mktemp("wrong-sums") / "wrong.py"
    script.write_text(WRONG_SUMS)
    done = subprocess.run([facts.torch.python, str(script), str(PROBE.parent),
                           *[f"{mode}:{free_port()}" for mode, _ in ALLREDUCE_MODES]],
                          capture_output=True, text=True, timeout=180, cwd="/", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["mode"] for r in rows] == [mode for mode, _ in ALLREDUCE_MODES], done.stdout[-2000:]
    return {r.pop("mode"): r for r in rows}


@pytest.mark.integration  # the probe's all-reduce under the real torch interpreter (make check leaves it out)
@pytest.mark.parametrize("mode, correct", ALLREDUCE_MODES)
def test_probe_catches_an_allreduce_returning_wrong_sums(allreduce_rows: Dict[str, Dict[str, Any]], mode: str,
                                                         correct: bool) -> None:
    row = allreduce_rows[mode]
    assert row["correct"] is correct and row["world"] == 1, (mode, row)
    f = findings.allreduce_finding(job_of(dict(row, what="allreduce gloo"), name="allreduce_gloo"), "gloo", None,
                                   "correct sums")
    assert f.status == ("pass" if correct else "fail"), (mode, f)


A10G = "NVIDIA A10G"  # dense bf16 peak 70 TFLOP/s: 49 TFLOP/s is exactly 70 % of it


def compute_job(tflops: float, name: str = A10G, dtype: str = "bf16") -> JobResult:
    return job_of({"what": f"gpu_compute gpu0 {dtype}", "gpu": 0, "dtype": dtype, "n": 8192, "iters": 10,
                   "seconds": 1.0, "flops": exact_amount(tflops, 1e12), "name": name})


def test_matmul_line_is_exactly_70_percent() -> None:
    entry = gpu_peak.match(A10G)
    assert entry is not None and entry.bf16 == 70.0
    at = 70.0 * 0.70
    assert at / 70.0 == 0.70  # the fabricated result sits exactly on the line
    f = findings.compute_finding(compute_job(at), {}, {0: 0})
    assert f.status == "pass" and "bf16 49 (70%)" in f.actual and ">= 70% of dense" in f.expected, f
    below = math.nextafter(at, 0.0)
    f = findings.compute_finding(compute_job(below), {}, {0: 0})
    assert f.status == "warn" and "nvidia-smi -q -d PERFORMANCE" in f.fix, f
    assert findings.compute_finding(compute_job(at * 0.99), {}, {0: 0}).status == "warn"
    assert findings.compute_finding(compute_job(at * 1.01), {}, {0: 0}).status == "pass"


@pytest.mark.parametrize("dtype, peak", [("fp16", 70.0), ("tf32", 35.0)])
def test_matmul_line_holds_for_every_dtype(dtype: str, peak: float) -> None:
    line = peak * 0.70
    assert findings.compute_finding(compute_job(line * 1.001, dtype=dtype), {}, {0: 0}).status == "pass"
    assert findings.compute_finding(compute_job(line * 0.999, dtype=dtype), {}, {0: 0}).status == "warn"


def copies_job(h2d: float, d2h: float, pageable: float = 1.0) -> JobResult:
    rows = []
    for kind, direction, gbps in (("pinned", "h2d", h2d), ("pinned", "d2h", d2h), ("pageable", "h2d", pageable),
                                  ("pageable", "d2h", pageable)):
        rows.append({"what": f"gpu_copies gpu0 {kind} {direction}", "gpu": 0, "kind": kind, "direction": direction,
                     "bytes": exact_amount(gbps, 1e9), "seconds": 1.0})
    return job_of(*rows)


GEN4_X16 = bandwidth.pcie_expected_gbps(4, 16)  # 25.2 GB/s: coded rate x 80 %
COPY_LINE = GEN4_X16 * 0.75  # the documented line: 75 % of it


def copies(h2d: float, d2h: float, pageable: float = 1.0) -> Finding:
    return findings.copies_finding(copies_job(h2d, d2h, pageable), {0: (4, 16)}, {}, {0: 0})


def test_copy_line_is_exactly_75_percent_of_the_link() -> None:
    f = copies(COPY_LINE, COPY_LINE)
    assert f.status == "pass" and ">= 75% of GPU0 gen4 x16: 25.2 GB/s" in f.expected, f
    below = math.nextafter(COPY_LINE, 0.0)
    assert copies(below, COPY_LINE).status == "warn"
    assert copies(COPY_LINE * 0.99, COPY_LINE * 0.99).status == "warn"
    assert copies(COPY_LINE * 1.01, COPY_LINE * 1.01).status == "pass"


@pytest.mark.parametrize("h2d, d2h", [(2.0, 0.9), (0.9, 2.0), (2.0, 0.0)])
def test_a_link_slow_in_one_direction_only_warns(h2d: float, d2h: float) -> None:
    f = copies(COPY_LINE * h2d, COPY_LINE * d2h)
    assert f.status == "warn" and "nvidia.pcie_link" in f.fix, f


def test_slow_pageable_copies_alone_do_not_warn() -> None:
    """Pageable copies stage through a pinned buffer and are shown, not judged: only pinned ones meet the line."""
    f = copies(COPY_LINE * 2, COPY_LINE * 2, pageable=COPY_LINE * 0.1)
    assert f.status == "pass", f
