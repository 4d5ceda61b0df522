"""Every `doctor --deep` finding function on fabricated probe results, each finding pinned whole (issue 21): status,
actual, expected and fix word for word, at the lines that decide them (70% of the GEMM peak, 75% of the PCIe rate,
40%/50% of the P2P rate, the bf16 ratio, the disk floor, 8 MiB not timed, the shm floor), plus how a missing
result reads (an error, a hang, the budget, a start error, a crash). No GPU, torch or subprocess.

To regenerate after a deliberate change of wording: `python3 tests/test_doctor_deep_findings_pins4.py` prints
GOLDEN; review the diff row by row before pasting it back."""

from typing import Any, Callable, Dict, List, Tuple

import pytest

from hosttune.doctor.deep import findings as F
from hosttune.doctor.deep.host import Toolkit
from hosttune.doctor.deep.runner import JobResult
from hosttune.policy import bandwidth, cpu_peak

MiB = 1 << 20
Row = Tuple[str, str, str, str]


def res(what: str, **kw: Any) -> Dict[str, Any]:
    return dict(kw, event="result", what=what)


def err(what: str, error: str) -> Dict[str, Any]:
    return {"event": "error", "what": what, "error": error}


def start(what: str) -> Dict[str, Any]:
    return {"event": "start", "what": what}


def job(*events: Dict[str, Any], name: str = "gpu", **kw: Any) -> JobResult:
    kw.setdefault("returncode", 0)
    return JobResult(name=name, events=tuple(events), **kw)


INFO = res("info", version="2.6.0", import_s=1.25, cuda="12.4",
           devices=[{"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": [9, 0], "bf16": True},
                    {"index": 1, "name": "NVIDIA H100 80GB HBM3", "capability": [9, 0], "bf16": True}])
H100 = "NVIDIA H100 80GB HBM3"


def gemm(gpu: int, dtype: str, tflops: float, name: str = H100) -> Dict[str, Any]:
    return res("gpu_compute", gpu=gpu, dtype=dtype, name=name, flops=tflops * 1e12, seconds=1.0)


def copy(gpu: int, kind: str, direction: str, gbps: float) -> Dict[str, Any]:
    return res("gpu_copies", gpu=gpu, kind=kind, direction=direction, bytes=gbps * 1e9, seconds=1.0)


def copies(gpu: int, pinned: float, pageable: float = 10.0) -> List[Dict[str, Any]]:
    return [copy(gpu, "pinned", "h2d", pinned), copy(gpu, "pinned", "d2h", pinned + 1),
            copy(gpu, "pageable", "h2d", pageable), copy(gpu, "pageable", "d2h", pageable)]


def p2p(matrix: List[List[bool]], *rates: Tuple[int, int, float]) -> JobResult:
    return job(res("p2p matrix", matrix=matrix),
               *[res(f"p2p {s}->{d}", src=s, dst=d, bytes=g * 1e9, seconds=1.0) for s, d, g in rates])


def allreduce(busbw: float, correct: bool = True, world: int = 2) -> JobResult:
    size = 64.0 * MiB
    secs = size / (busbw * 1e9) * 2 * (world - 1) / world
    return job(res("allreduce nccl", world=world, bytes=size, seconds=secs, correct=correct), name="allreduce")


def disk(path: str, mbps: float, nbytes: float = 1e9, method: str = "O_DIRECT") -> Dict[str, Any]:
    return res(f"disk {path}", path=path, bytes=nbytes, seconds=nbytes / mbps / 1e6 if mbps else 0.0, method=method)


def tk(**kw: Any) -> Toolkit:
    base: Dict[str, Any] = dict(nvidia_ctk="1.16.2", docker="/usr/bin/docker", podman=None,
                                cdi_specs=("/etc/cdi/nvidia.yaml",), docker_nvidia_runtime=True, docker_cdi=False)
    base.update(kw)
    return Toolkit(**base)


AMX = ("avx512f", "avx512_bf16", "amx_bf16")
LINE = bandwidth.SHM_MBPS
PCIE5 = bandwidth.pcie_expected_gbps(5, 16) or 0.0
TRIAD = cpu_peak.MEMBW_PER_THREAD_GBPS

CASES: List[Tuple[str, Callable[[], Any]]] = [
    # ---- absent: why there is no result
    ("absent-error", lambda: F.absent(job(start("gpu_copies"), err("gpu_copies", "CUDA OOM")), "gpu_copies", "x")),
    ("absent-budget", lambda: F.absent(job(start("gpu_copies"), timed_out=True, budget_cut=True, timeout_s=12.4),
                                       "gpu_copies", "x")),
    ("absent-hung-here", lambda: F.absent(job(start("gpu_copies 1"), timed_out=True, timeout_s=30), "gpu_copies")),
    ("absent-hung-elsewhere", lambda: F.absent(job(start("p2p 0->1"), timed_out=True, timeout_s=30), "gpu_copies")),
    ("absent-hung-prefix-only", lambda: F.absent(job(start("gpu_copiesX"), timed_out=True, timeout_s=30),
                                                 "gpu_copies")),
    ("absent-timeout-nothing-open", lambda: F.absent(job(timed_out=True, timeout_s=30), "gpu_copies")),
    ("absent-start-error", lambda: F.absent(job(start_error="no interpreter"), "gpu_copies")),
    ("absent-no-info", lambda: F.absent(job(), "gpu_copies")),
    ("absent-info-error", lambda: F.absent(job(err("info", "boom"), name="cpu"), "cpu_matmul")),
    ("absent-info-itself", lambda: F.absent(job(returncode=1, stderr_tail="a\nTraceback\nValueError: x\n"), "info")),
    ("absent-cpu-exit", lambda: F.absent(job(INFO, name="cpu", returncode=3, stderr_tail="oops\n\n"), "cpu_matmul")),
    ("absent-cpu-clean", lambda: F.absent(job(INFO, name="cpu"), "cpu_matmul")),
    # ---- torch
    ("torch-no-module", lambda: F.torch_finding(job(err("info", "No module named 'torch'")), 2, "/opt/v/bin/python")),
    ("torch-import-error", lambda: F.torch_finding(job(err("info", "libcudart.so.12: cannot open")), 0, None)),
    ("torch-hung", lambda: F.torch_finding(job(start("info"), timed_out=True, timeout_s=60), 1, "/usr/bin/python3")),
    ("torch-budget", lambda: F.torch_finding(job(start("info"), timed_out=True, budget_cut=True, timeout_s=5), 1,
                                             None)),
    ("torch-crash", lambda: F.torch_finding(job(returncode=-11), 1, "/usr/bin/python3")),
    ("torch-start-budget", lambda: F.torch_finding(job(start_error="the time budget is spent"), 1, None)),
    ("torch-cpu-host", lambda: F.torch_finding(job(INFO), 0, None)),
    ("torch-cpu-build", lambda: F.torch_finding(job(res("info", version="2.6.0+cpu", import_s=0.5, cuda=None)), 2,
                                                None)),
    ("torch-cuda-error", lambda: F.torch_finding(job(res("info", version="2.6.0", import_s=1, cuda="12.4",
                                                         cuda_error="CUDA driver version is insufficient")), 2, None)),
    ("torch-device-error", lambda: F.torch_finding(job(res("info", version="2.6.0", import_s=1, cuda="12.4", devices=[
        {"index": 0, "name": "A", "error": "MIG instance missing"}, {"index": 1, "name": "B", "error": "x"},
        {"index": 2, "name": "C", "error": "y"}])), 3, None)),
    ("torch-fewer", lambda: F.torch_finding(job(INFO), 4, None)),
    ("torch-ok", lambda: F.torch_finding(job(INFO), 2, None)),
    ("torch-mixed", lambda: F.torch_finding(job(res("info", version="2.6.0", import_s=1, cuda="12.4", devices=[
        {"index": 0, "name": "T4", "capability": [7, 5], "bf16": False},
        {"index": 1, "name": "H100", "capability": [9, 0], "bf16": True},
        {"index": 2, "name": "T4", "capability": [7, 5]}])), 3, None)),
    # ---- compute
    ("compute-none", lambda: F.compute_finding(job(INFO), {}, {})),
    ("compute-fast", lambda: F.compute_finding(job(gemm(0, "bf16", 800), gemm(0, "fp16", 800), gemm(1, "tf32", 400),
                                                   gemm(1, "fp8", 1, name=H100) | {"unsupported": True}), {}, {})),
    ("compute-70", lambda: F.compute_finding(job(gemm(0, "bf16", 989.4 * 0.70 + 0.01)), {}, {})),
    ("compute-69", lambda: F.compute_finding(job(gemm(0, "bf16", 989.4 * 0.69)), {}, {})),
    ("compute-unknown-gpu", lambda: F.compute_finding(job(gemm(0, "bf16", 50, name="Mystery GPU")), {}, {})),
    ("compute-zero-seconds", lambda: F.compute_finding(job(res("gpu_compute", gpu=0, dtype="bf16", name=H100,
                                                                flops=1e12, seconds=0)), {}, {})),
    ("compute-power-cap", lambda: F.compute_finding(job(gemm(0, "bf16", 800), gemm(1, "bf16", 800)), {3: 0x4},
                                                    {0: 2, 1: 3})),
    ("compute-hw-slowdown", lambda: F.compute_finding(job(gemm(0, "bf16", 800)), {0: 0x8 | 0x1}, {})),
    # ---- copies
    ("copies-none", lambda: F.copies_finding(job(err("gpu_copies", "x")), {}, {}, {})),
    ("copies-fast", lambda: F.copies_finding(job(*copies(0, PCIE5), *copies(1, PCIE5)), {0: (5, 16), 1: (5, 16)},
                                             {0: {"pcie_gen": 5, "pcie_width": 16}, 1: {"pcie_gen": 4}}, {})),
    ("copies-75", lambda: F.copies_finding(job(*copies(0, PCIE5 * 0.75 + 0.01)), {0: (5, 16)}, {}, {})),
    ("copies-74", lambda: F.copies_finding(job(*copies(0, PCIE5 * 0.74)), {0: (5, 16)}, {}, {})),
    ("copies-remapped", lambda: F.copies_finding(job(*copies(0, 20.0)), {0: (4, 8), 3: (5, 16)}, {}, {0: 3})),
    ("copies-no-link", lambda: F.copies_finding(job(*copies(0, 200.0)), {}, {}, {})),
    # ---- p2p
    ("p2p-none", lambda: F.p2p_finding(job(), [], None)),
    ("p2p-nvlink-ok", lambda: F.p2p_finding(p2p([[1, 1], [1, 1]], (0, 1, 200.0), (1, 0, 300.0)), [H100], None)),
    ("p2p-nvlink-slow", lambda: F.p2p_finding(p2p([[1, 1], [1, 1]], (0, 1, 20.0)), [H100], None)),
    ("p2p-nvlink-no-peer", lambda: F.p2p_finding(p2p([[1, 0], [1, 1]], (0, 1, 200.0)), [H100], None)),
    ("p2p-many-no-peer", lambda: F.p2p_finding(p2p([[0] * 4 for _ in range(4)]), ["NVIDIA L4"], 25.0)),
    ("p2p-pcie-ok", lambda: F.p2p_finding(p2p([[1, 1], [1, 1]], (0, 1, 20.0)), ["NVIDIA L4"], 25.0)),
    ("p2p-pcie-slow", lambda: F.p2p_finding(p2p([[1, 1], [1, 1]], (0, 1, 12.0)), ["NVIDIA L4"], 25.0)),
    ("p2p-pcie-some-no-peer", lambda: F.p2p_finding(p2p([[1, 0, 1], [1, 1, 1], [1, 1, 1]]), ["NVIDIA L4"], None)),
    # ---- all-reduce
    ("allreduce-none-crash", lambda: F.allreduce_finding(job(name="allreduce", returncode=1,
                                                             stderr_tail="x\nRuntimeError: NCCL error\n"),
                                                         "nccl", 100.0, "NVLink")),
    ("allreduce-none-quiet", lambda: F.allreduce_finding(job(name="allreduce", returncode=1), "gloo", None, "loop")),
    ("allreduce-none-timeout", lambda: F.allreduce_finding(job(name="allreduce", timed_out=True, timeout_s=9),
                                                           "nccl", 100.0, "NVLink")),
    ("allreduce-ok", lambda: F.allreduce_finding(allreduce(150.0), "nccl", 100.0, "NVLink")),
    ("allreduce-slow", lambda: F.allreduce_finding(allreduce(80.0, world=4), "nccl", 100.0, "NVLink")),
    ("allreduce-wrong", lambda: F.allreduce_finding(allreduce(150.0, correct=False), "nccl", 100.0, "NVLink")),
    ("allreduce-no-line", lambda: F.allreduce_finding(allreduce(1.5), "nccl", None, "no expectation")),
    # ---- CPU
    ("matmul-none", lambda: F.cpu_matmul_finding(job(name="cpu"), 8, 2.0, AMX, "GenuineIntel", "x86_64")),
    ("matmul-no-clock", lambda: F.cpu_matmul_finding(job(res("cpu_matmul", flops=1e12, seconds=1.0, n=2048,
                                                             threads=8), name="cpu"), 8, None, AMX, None, None)),
    ("matmul-fast", lambda: F.cpu_matmul_finding(job(res("cpu_matmul", flops=5e12, seconds=1.0, n=4096, threads=8),
                                                     name="cpu"), 8, 2.0, AMX, "GenuineIntel", "x86_64")),
    ("matmul-slow", lambda: F.cpu_matmul_finding(job(res("cpu_matmul", flops=1e11, seconds=1.0, n=4096, threads=8),
                                                     name="cpu"), 8, 2.0, ("avx2", "fma"), "AuthenticAMD", "x86_64")),
    ("triad-none", lambda: F.membw_finding(job(name="cpu", returncode=0))),
    ("triad-ok", lambda: F.membw_finding(job(res("cpu_triad", bytes=TRIAD * 4e9, seconds=1.0, threads=4,
                                                 elems=8 << 20), name="cpu"))),
    ("triad-slow", lambda: F.membw_finding(job(res("cpu_triad", bytes=TRIAD * 4e9 - 1e8, seconds=1.0, threads=4,
                                                   elems=8 << 20), name="cpu"))),
    ("triad-no-threads", lambda: F.membw_finding(job(res("cpu_triad", bytes=1e9, seconds=1.0, elems=1 << 20),
                                                     name="cpu"))),
    ("bf16-fast", lambda: F.bf16_finding(job(res("cpu_bf16", fp32_gflops=100.0, bf16_gflops=300.0), name="cpu"),
                                         AMX)),
    ("bf16-slow-no-hw", lambda: F.bf16_finding(job(res("cpu_bf16", fp32_gflops=100.0, bf16_gflops=5.0), name="cpu"),
                                               ("avx2",))),
    ("bf16-slow-hw", lambda: F.bf16_finding(job(res("cpu_bf16", fp32_gflops=100.0, bf16_gflops=5.0), name="cpu"),
                                            AMX)),
    ("bf16-zero-fp32", lambda: F.bf16_finding(job(res("cpu_bf16", fp32_gflops=0.0, bf16_gflops=5.0), name="cpu"),
                                              AMX)),
    ("bf16-none", lambda: F.bf16_finding(job(name="cpu"), AMX)),
    # ---- storage
    ("disk-none", lambda: F.disk_finding(job(name="disk"), {})),
    ("disk-fast-nvme", lambda: F.disk_finding(job(disk("/data", 3000.0), name="disk"), {"/data": "nvme"})),
    ("disk-slow-hdd", lambda: F.disk_finding(job(disk("/mnt/hdd", 10.0, method="fadvise"), name="disk"),
                                             {"/mnt/hdd": "hdd"})),
    ("disk-small", lambda: F.disk_finding(job(disk("/tiny", 500.0, nbytes=(8 << 20) - 1), disk("/d", 0.0),
                                              name="disk"), {})),
    ("disk-8mib", lambda: F.disk_finding(job(disk("/tiny", 500.0, nbytes=8 << 20), name="disk"), {"/tiny": "ssd"})),
    ("disk-error-and-hang", lambda: F.disk_finding(job(disk("/a", 3000.0), err("disk /b", "EIO"), start("disk /c"),
                                                       name="disk", timed_out=True, timeout_s=20),
                                                   {"/a": "nvme"})),
    ("disk-unknown-kind", lambda: F.disk_finding(job(disk("/x", 1.0), name="disk"), {})),
    ("shm-none", lambda: F.shm_finding(job(name="cpu"))),
    ("shm-ok", lambda: F.shm_finding(job(res("shm", bytes=LINE * 1e6, write_s=0.5, read_s=1.0), name="cpu"))),
    ("shm-slow", lambda: F.shm_finding(job(res("shm", bytes=LINE * 1e6, write_s=1.01, read_s=0.1), name="cpu"))),
    ("shm-no-read", lambda: F.shm_finding(job(res("shm", bytes=256 * MiB, write_s=0.01), name="cpu"))),
    # ---- NVLink, toolkit
    ("nvlink-none", lambda: F.nvlink_finding({})),
    ("nvlink-ok", lambda: F.nvlink_finding({0: [{"link": 0, "up": 1}, {"link": 1, "up": 1}],
                                            1: [{"link": 0, "up": 1}, {"link": 1, "up": 1}]})),
    ("nvlink-down", lambda: F.nvlink_finding({1: [{"link": 0, "up": 1}, {"link": 1, "up": 0}, {"link": 2, "up": 0}],
                                              0: [{"link": 0, "up": 0}]})),
    ("toolkit-no-engine", lambda: F.toolkit_finding(tk(docker=None), "apt-get install nvidia-container-toolkit")),
    ("toolkit-no-ctk", lambda: F.toolkit_finding(tk(nvidia_ctk=None, podman="/usr/bin/podman"), "dnf install x")),
    ("toolkit-ok", lambda: F.toolkit_finding(tk(), "x")),
    ("toolkit-cdi-only", lambda: F.toolkit_finding(tk(docker_nvidia_runtime=False, docker_cdi=True), "x")),
    ("toolkit-bare", lambda: F.toolkit_finding(tk(cdi_specs=(), docker_nvidia_runtime=False), "x")),
    ("toolkit-podman-no-cdi", lambda: F.toolkit_finding(tk(docker=None, podman="/p", cdi_specs=(),
                                                           docker_nvidia_runtime=False), "x")),
]

CUDA_TEXTS = ["CUDA driver version is insufficient for CUDA runtime version", "The NVIDIA driver is too old",
              "error 802: system not yet initialized", "MIG mode has no instance", "Operation not permitted",
              "no CUDA-capable device is detected", "No CUDA GPUs are available", "forward compatibility was attempted",
              "unknown error", "something else"]

# ---- the findings (generated by _regenerate, then reviewed) ----------------------------------------------------
GOLDEN: Dict[str, Row] = {'absent-error': ('fail',
                  'gpu_copies: CUDA OOM',
                  'x',
                  'run the measurement by hand to see the whole error: python3 -m hosttune.doctor.deep.probe_torch '
                  '--measure gpu_copies'),
 'absent-budget': ('skip',
                   'not measured: the gpu probe stopped while measuring gpu_copies: the time budget ran out (12 s '
                   'were left)',
                   'x',
                   ''),
 'absent-hung-here': ('fail',
                      'gpu probe timed out after 30 s while measuring gpu_copies 1 (process tree killed)',
                      '',
                      'something blocks: run the probe by hand (python3 -m hosttune.doctor.deep.probe_torch '
                      '--measure gpu_copies) and look at the GPU/disk it waits for (nvidia-smi, dmesg)'),
 'absent-hung-elsewhere': ('skip', 'not measured: the gpu probe was stopped (hung in p2p 0->1)', '', ''),
 'absent-hung-prefix-only': ('skip', 'not measured: the gpu probe was stopped (hung in gpu_copiesX)', '', ''),
 'absent-timeout-nothing-open': ('skip', 'not measured: the gpu probe was stopped', '', ''),
 'absent-start-error': ('skip', 'not measured: no interpreter', '', ''),
 'absent-no-info': ('skip', 'needs a working torch (see torch.deep_cuda)', '', ''),
 'absent-info-error': ('skip', 'needs a working torch (see torch.deep_cuda)', '', ''),
 'absent-info-itself': ('fail', 'not measured: the gpu probe ended with exit status 1: ValueError: x', '',
                        ('run the measurement by hand to see the whole error: python3 -m '
                         'hosttune.doctor.deep.probe_torch --measure info')),
 'absent-cpu-exit': ('fail', 'not measured: the cpu probe ended with exit status 3: oops', '',
                     ('run the measurement by hand to see the whole error: python3 -m '
                      'hosttune.doctor.deep.probe_torch --measure cpu')),
 'absent-cpu-clean': ('skip', 'not measured: the cpu probe ended with exit status 0', '', ''),
 'torch-no-module': ('fail',
                     "import torch failed in /opt/v/bin/python: No module named 'torch'",
                     'import torch; CUDA initialises 2 GPU(s)',
                     '/opt/v/bin/python -m pip install torch'),
 'torch-import-error': ('fail',
                        'import torch failed in python3: libcudart.so.12: cannot open',
                        'import torch',
                        "run `python3 -c 'import torch'` for the whole error"),
 'torch-hung': ('fail',
                'gpu probe timed out after 60 s while measuring info (process tree killed)',
                'import torch; CUDA initialises 1 GPU(s)',
                'something blocks: run the probe by hand (python3 -m hosttune.doctor.deep.probe_torch --measure '
                'info) and look at the GPU/disk it waits for (nvidia-smi, dmesg)'),
 'torch-budget': ('skip',
                  'not measured: the gpu probe stopped while measuring info: the time budget ran out (5 s were left)',
                  'import torch; CUDA initialises 1 GPU(s)',
                  ''),
 'torch-crash': ('fail',
                 'not measured: the gpu probe ended with exit status -11',
                 'import torch; CUDA initialises 1 GPU(s)',

                 ('run the measurement by hand to see the whole error: python3 -m '
                  'hosttune.doctor.deep.probe_torch --measure info')),
 'torch-start-budget': ('skip',
                        'not measured: the time budget is spent',
                        'import torch; CUDA initialises 1 GPU(s)',
                        ''),
 'torch-cpu-host': ('pass', 'torch 2.6.0 imports in 1.2 s; no GPU on this host', 'import torch', ''),
 'torch-cpu-build': ('fail',
                     'torch 2.6.0+cpu imports in 0.5 s but it is a CPU-only build; 2 GPU(s) present',
                     'import torch; CUDA initialises 2 GPU(s)',
                     'see nvidia.torch_build for the CUDA wheel to install'),
 'torch-cuda-error': ('fail',
                      'first CUDA call: CUDA driver version is insufficient',
                      'import torch; CUDA initialises 2 GPU(s)',
                      'update the NVIDIA driver (see nvidia.driver_cuda) or install a torch built for an older CUDA'),
 'torch-device-error': ('fail',
                        'cuda:0 (A): MIG instance missing (+2 more)',
                        'import torch; CUDA initialises 3 GPU(s)',
                        'MIG is on but no instance is usable: create GPU/compute instances (nvidia-smi mig -cgi ... '
                        '-C) or disable MIG (nvidia-smi -mig 0)'),
 'torch-fewer': ('warn',
                 'torch 2.6.0 imports in 1.2 s, CUDA 12.4: 2 GPU(s): 2x NVIDIA H100 80GB HBM3 cc 9.0, bf16',
                 'import torch; CUDA initialises 4 GPU(s)',
                 'CUDA sees fewer GPUs than NVML/PCI: check CUDA_VISIBLE_DEVICES, MIG mode and nvidia-smi'),
 'torch-ok': ('pass',
              'torch 2.6.0 imports in 1.2 s, CUDA 12.4: 2 GPU(s): 2x NVIDIA H100 80GB HBM3 cc 9.0, bf16',
              'import torch; CUDA initialises 2 GPU(s)',
              ''),
 'torch-mixed': ('pass',
                 'torch 2.6.0 imports in 1.0 s, CUDA 12.4: 3 GPU(s): 2x T4 cc 7.5, no bf16; 1x H100 cc 9.0, bf16',
                 'import torch; CUDA initialises 3 GPU(s)',
                 ''),
 'compute-none': ('skip',
                  'not measured: the gpu probe ended with exit status 0',
                  'matmul >= 70% of the dense peak',
                  ''),
 'compute-fast': ('pass',
                  'TFLOP/s GPU0 bf16 800 (81%), fp16 800 (81%); GPU1 tf32 400 (81%), fp8 n/a',
                  'H100 SXM >= 70% of dense bf16 989.4 / fp16 989.4 / tf32 494.7 TFLOP/s (NVIDIA H100 Tensor Core '
                  'GPU datasheet (SXM column; sparse/2))',
                  ''),
 'compute-70': ('pass',
                'TFLOP/s GPU0 bf16 693 (70%)',
                'H100 SXM >= 70% of dense bf16 989.4 / fp16 989.4 / tf32 494.7 TFLOP/s (NVIDIA H100 Tensor Core GPU '
                'datasheet (SXM column; sparse/2))',
                ''),
 'compute-69': ('warn',
                'TFLOP/s GPU0 bf16 683 (69%)',
                'H100 SXM >= 70% of dense bf16 989.4 / fp16 989.4 / tf32 494.7 TFLOP/s (NVIDIA H100 Tensor Core GPU '
                'datasheet (SXM column; sparse/2))',
                'look at what holds the clocks down: nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE; other '
                'processes on the GPU (nvidia-smi); cooling and power-supply state (see nvidia.clock_reasons)'),
 'compute-unknown-gpu': ('pass',
                         'TFLOP/s GPU0 bf16 50.0',
                         'no dense peak known for this GPU model (hosttune.policy.gpu_peak)',
                         ''),
 'compute-zero-seconds': ('warn',
                          'TFLOP/s GPU0 bf16 0 (0%)',
                          'H100 SXM >= 70% of dense bf16 989.4 / fp16 989.4 / tf32 494.7 TFLOP/s (NVIDIA H100 Tensor '
                          'Core GPU datasheet (SXM column; sparse/2))',
                          'look at what holds the clocks down: nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE; '
                          'other processes on the GPU (nvidia-smi); cooling and power-supply state (see '
                          'nvidia.clock_reasons)'),
 'compute-power-cap': ('pass',
                       'TFLOP/s GPU0 bf16 800 (81%); GPU1 bf16 800 (81%); NVML clock events during the run: GPU1: '
                       'software power capping (sw_power_cap)',
                       'H100 SXM >= 70% of dense bf16 989.4 / fp16 989.4 / tf32 494.7 TFLOP/s (NVIDIA H100 Tensor '
                       'Core GPU datasheet (SXM column; sparse/2))',
                       ''),
 'compute-hw-slowdown': ('fail',
                         'TFLOP/s GPU0 bf16 800 (81%); NVML clock events during the run: GPU0: hardware slowdown '
                         '(cooling or power-supply fault) (hw_slowdown)',
                         'H100 SXM >= 70% of dense bf16 989.4 / fp16 989.4 / tf32 494.7 TFLOP/s (NVIDIA H100 Tensor '
                         'Core GPU datasheet (SXM column; sparse/2))',
                         'look at what holds the clocks down: nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE; '
                         'other processes on the GPU (nvidia-smi); cooling and power-supply state (see '
                         'nvidia.clock_reasons)'),
 'copies-none': ('fail',
                 'gpu_copies: x',
                 'pinned copies near the PCIe link rate',
                 'run the measurement by hand to see the whole error: python3 -m hosttune.doctor.deep.probe_torch '
                 '--measure gpu_copies'),
 'copies-fast': ('pass',
                 'H2D/D2H GPU0 pinned 50.4/51.4, pageable 10.0/10.0 GB/s (link gen5 x16 while copying); GPU1 pinned '
                 '50.4/51.4, pageable 10.0/10.0 GB/s (link gen4 x? while copying)',
                 'pinned H2D/D2H >= 75% of GPU0 gen5 x16: 50.4, GPU1 gen5 x16: 50.4 GB/s (PCIe coded rate x 80%)',
                 ''),
 'copies-75': ('pass',
               'H2D/D2H GPU0 pinned 37.8/38.8, pageable 10.0/10.0 GB/s',
               'pinned H2D/D2H >= 75% of GPU0 gen5 x16: 50.4 GB/s (PCIe coded rate x 80%)',
               ''),
 'copies-74': ('warn',
               'H2D/D2H GPU0 pinned 37.3/38.3, pageable 10.0/10.0 GB/s',
               'pinned H2D/D2H >= 75% of GPU0 gen5 x16: 50.4 GB/s (PCIe coded rate x 80%)',
               'a slow link: check nvidia.pcie_link (downtrained gen/width), the slot and riser, the BIOS PCIe '
               "setting; copies across sockets (numactl --cpunodebind to the GPU's node)"),
 'copies-remapped': ('warn',
                     'H2D/D2H GPU0 pinned 20.0/21.0, pageable 10.0/10.0 GB/s',
                     'pinned H2D/D2H >= 75% of GPU0 gen5 x16: 50.4 GB/s (PCIe coded rate x 80%)',
                     'a slow link: check nvidia.pcie_link (downtrained gen/width), the slot and riser, the BIOS PCIe '
                     "setting; copies across sockets (numactl --cpunodebind to the GPU's node)"),
 'copies-no-link': ('pass',
                    'H2D/D2H GPU0 pinned 200/201, pageable 10.0/10.0 GB/s',
                    'PCIe link unknown (NVML gave no max gen/width)',
                    ''),
 'p2p-none': ('skip', 'needs a working torch (see torch.deep_cuda)', 'peer access between GPUs', ''),
 'p2p-nvlink-ok': ('pass',
                   '2 GPUs, 2/2 pairs peer-accessible; copies 200-300 GB/s (slowest 0->1)',
                   'all pairs peer-accessible, copies >= 180 GB/s (40% of NVLink 450 GB/s)',
                   ''),
 'p2p-nvlink-slow': ('warn',
                     '2 GPUs, 2/2 pairs peer-accessible; copies 20.0-20.0 GB/s (slowest 0->1)',
                     'all pairs peer-accessible, copies >= 180 GB/s (40% of NVLink 450 GB/s)',
                     'P2P off or slow: see nvidia.acs and nvidia.iommu (ACS on switch ports and IOMMU translation '
                     'force peer traffic through the root complex); nvidia-smi topo -m shows the paths; NVLink '
                     'hosts: nvidia-smi nvlink -s'),
 'p2p-nvlink-no-peer': ('warn',
                        '2 GPUs, 1/2 pairs peer-accessible (no P2P: 0->1); copies 200-200 GB/s (slowest 0->1)',
                        'all pairs peer-accessible, copies >= 180 GB/s (40% of NVLink 450 GB/s)',
                        'P2P off or slow: see nvidia.acs and nvidia.iommu (ACS on switch ports and IOMMU translation '
                        'force peer traffic through the root complex); nvidia-smi topo -m shows the paths; NVLink '
                        'hosts: nvidia-smi nvlink -s'),
 'p2p-many-no-peer': ('warn',
                      '4 GPUs, 0/12 pairs peer-accessible (no P2P: 0->1, 0->2, 0->3, 1->0, 1->2, 1->3 ...)',
                      'copies >= 12.5 GB/s (50% of the PCIe link)',
                      'P2P off or slow: see nvidia.acs and nvidia.iommu (ACS on switch ports and IOMMU translation '
                      'force peer traffic through the root complex); nvidia-smi topo -m shows the paths; NVLink '
                      'hosts: nvidia-smi nvlink -s'),
 'p2p-pcie-ok': ('pass',
                 '2 GPUs, 2/2 pairs peer-accessible; copies 20.0-20.0 GB/s (slowest 0->1)',
                 'copies >= 12.5 GB/s (50% of the PCIe link)',
                 ''),
 'p2p-pcie-slow': ('warn',
                   '2 GPUs, 2/2 pairs peer-accessible; copies 12.0-12.0 GB/s (slowest 0->1)',
                   'copies >= 12.5 GB/s (50% of the PCIe link)',
                   'P2P off or slow: see nvidia.acs and nvidia.iommu (ACS on switch ports and IOMMU translation '
                   'force peer traffic through the root complex); nvidia-smi topo -m shows the paths; NVLink hosts: '
                   'nvidia-smi nvlink -s'),
 'p2p-pcie-some-no-peer': ('pass', '3 GPUs, 5/6 pairs peer-accessible (no P2P: 0->1)', 'peer copies work', ''),
 'allreduce-none-crash': ('fail',
                          'not measured: the allreduce probe ended with exit status 1: RuntimeError: NCCL error',
                          'busbw >= 100 GB/s (NVLink)',

                          ('run the measurement by hand to see the whole error: python3 -m '
                           'hosttune.doctor.deep.probe_torch --measure allreduce')),
 'allreduce-none-quiet': ('fail', 'not measured: the allreduce probe ended with exit status 1', 'loop',
                          ('run the measurement by hand to see the whole error: python3 -m '
                           'hosttune.doctor.deep.probe_torch --measure allreduce')),
 'allreduce-none-timeout': ('skip',
                            'not measured: the allreduce probe was stopped',
                            'busbw >= 100 GB/s (NVLink)',
                            ''),
 'allreduce-ok': ('pass',
                  '2 ranks, 64 MiB: busbw 150 GB/s (algbw 150, 0.45 ms per all-reduce)',
                  'busbw >= 100 GB/s (NVLink)',
                  ''),
 'allreduce-slow': ('warn',
                    '4 ranks, 64 MiB: busbw 80.0 GB/s (algbw 53.3, 1.26 ms per all-reduce)',
                    'busbw >= 100 GB/s (NVLink)',
                    'rerun with NCCL_DEBUG=INFO to see the transport NCCL chose (P2P/NVLS vs SHM/NET); check '
                    'NCCL_P2P_DISABLE / NCCL_SHM_DISABLE, nvidia.fabric_manager on NVSwitch hosts, and nvidia.acs'),
 'allreduce-wrong': ('fail',
                     '2 ranks, 64 MiB: busbw 150 GB/s (algbw 150, 0.45 ms per all-reduce); WRONG SUMS',
                     'busbw >= 100 GB/s (NVLink)',
                     'rerun with NCCL_DEBUG=INFO to see the transport NCCL chose (P2P/NVLS vs SHM/NET); check '
                     'NCCL_P2P_DISABLE / NCCL_SHM_DISABLE, nvidia.fabric_manager on NVSwitch hosts, and nvidia.acs'),
 'allreduce-no-line': ('pass',
                       '2 ranks, 64 MiB: busbw 1.5 GB/s (algbw 1.5, 44.74 ms per all-reduce)',
                       'no expectation',
                       ''),
 'matmul-none': ('skip',
                 'not measured: the cpu probe ended with exit status 0',
                 "fp32 matmul near the CPU's peak",
                 ''),
 'matmul-no-clock': ('pass',
                     '1000.0 GFLOP/s fp32 (2048x2048 matmul, 8 threads)',
                     'no clock known: peak not computed',
                     ''),
 'matmul-fast': ('pass',
                 '5000.0 GFLOP/s fp32 (4096x4096 matmul, 8 threads) = 488% of peak',
                 '>= 40% of 1024 GFLOP/s (8 cores x 2.00 GHz x 64 FLOP/cycle (AVX-512 FMA))',
                 ''),
 'matmul-slow': ('warn',
                 '100.0 GFLOP/s fp32 (4096x4096 matmul, 8 threads) = 20% of peak',
                 '>= 40% of 512 GFLOP/s (8 cores x 2.00 GHz x 32 FLOP/cycle (AVX2 FMA))',
                 'something takes the cores: other processes (top), a cgroup quota (cpu.cgroup_limit), '
                 'OMP_NUM_THREADS (cpu.omp_threads), the governor (os.governor); or the clock is lower than the CPU '
                 'reports'),
 'triad-none': ('skip', 'not measured: the cpu probe ended with exit status 0', 'memory bandwidth', ''),
 'triad-ok': ('pass', 'triad 8.0 GB/s (4 threads, 96 MiB arrays)', '>= 8 GB/s (2 GB/s per thread)', ''),
 'triad-slow': ('warn',
                'triad 7.9 GB/s (4 threads, 96 MiB arrays)',
                '>= 8 GB/s (2 GB/s per thread)',
                'memory far away or scarce: numactl -H (a node without memory, memory on the other socket); a single '
                'populated channel (dmidecode -t memory); memory pressure (free -m)'),
 'triad-no-threads': ('warn',
                      'triad 1.0 GB/s (1 threads, 12 MiB arrays)',
                      '>= 2 GB/s (2 GB/s per thread)',
                      'memory far away or scarce: numactl -H (a node without memory, memory on the other socket); a '
                      'single populated channel (dmidecode -t memory); memory pressure (free -m)'),
 'bf16-fast': ('pass',
               'bf16 autocast 300.0 vs fp32 100.0 GFLOP/s (x3.00); avx512_bf16/amx_bf16 present',
               'bf16 >= x0.8 of fp32',
               ''),
 'bf16-slow-no-hw': ('warn',
                     'bf16 autocast 5.0 vs fp32 100.0 GFLOP/s (x0.05); no avx512_bf16/amx_bf16',
                     'bf16 >= x0.8 of fp32',
                     "train in fp32 on this CPU: hosttune's engine --set amp=off (torch.autocast('cpu') only where "
                     'the CPU has avx512_bf16 or amx_bf16)'),
 'bf16-slow-hw': ('warn',
                  'bf16 autocast 5.0 vs fp32 100.0 GFLOP/s (x0.05); avx512_bf16/amx_bf16 present',
                  'bf16 >= x0.8 of fp32',
                  'the CPU has bf16 units but torch does not use them: check torch.backends.cpu.get_cpu_capability() '
                  'and ONEDNN_MAX_CPU_ISA'),
 'bf16-zero-fp32': ('warn',
                    'bf16 autocast 5.0 vs fp32 0.0 GFLOP/s (x0.00); avx512_bf16/amx_bf16 present',
                    'bf16 >= x0.8 of fp32',
                    'the CPU has bf16 units but torch does not use them: check '
                    'torch.backends.cpu.get_cpu_capability() and ONEDNN_MAX_CPU_ISA'),
 'bf16-none': ('skip',
               'not measured: the cpu probe ended with exit status 0',
               'bf16 autocast not slower than fp32',
               ''),
 'disk-none': ('skip',
               'not measured: the disk probe ended with exit status 0',
               "sequential read at the disk kind's rate",
               ''),
 'disk-fast-nvme': ('pass', '/data (nvme): 3000 MB/s over 1000 MB (O_DIRECT)', 'nvme >= 1000 MB/s', ''),
 'disk-slow-hdd': ('warn',
                   '/mnt/hdd (hdd): 10 MB/s over 1000 MB (page cache dropped with posix_fadvise)',
                   'hdd >= 100 MB/s (O_DIRECT refused by the file system: clean cached pages dropped instead)',
                   'stage the data on local NVMe, or read it in large sequential shards (WebDataset/tar) with more '
                   'DataLoader workers; see storage.data'),
 'disk-small': ('pass',
                '/tiny: only 8.4 MB to read, not timed; /d: only 1000.0 MB to read, not timed',
                'a rate for the disk kind',
                ''),
 'disk-8mib': ('pass', '/tiny (ssd): 500 MB/s over 8 MB (O_DIRECT)', 'ssd >= 300 MB/s', ''),
 'disk-error-and-hang': ('fail',
                         '/a (nvme): 3000 MB/s over 1000 MB (O_DIRECT); /b: EIO; /c: hung (read killed after 20 s)',
                         'nvme >= 1000 MB/s',
                         'a read failed or hung: check the file system (dmesg, mount) and permissions'),
 'disk-unknown-kind': ('pass', '/x (unknown): 1 MB/s over 1000 MB (O_DIRECT)', 'a rate for the disk kind', ''),
 'shm-none': ('skip', 'not measured: the cpu probe ended with exit status 0', '>= 1000 MB/s write and read', ''),
 'shm-ok': ('pass', 'write 2000 MB/s, read 1000 MB/s (954 MiB)', '>= 1000 MB/s write and read', ''),
 'shm-slow': ('warn',
              'write 990 MB/s, read 10000 MB/s (954 MiB)',
              '>= 1000 MB/s write and read',
              'memory pressure or a tiny /dev/shm: free -m; see storage.shm'),
 'shm-no-read': ('warn',
                 'write 26844 MB/s, read 0 MB/s (256 MiB)',
                 '>= 1000 MB/s write and read',
                 'memory pressure or a tiny /dev/shm: free -m; see storage.shm'),
 'nvlink-none': ('skip', 'no NVLink on these GPUs (NVML reports none)', '', ''),
 'nvlink-ok': ('pass', 'GPU0 2/2, GPU1 2/2 links up', 'every NVLink up on every GPU', ''),
 'nvlink-down': ('warn',
                 'GPU0 0/1, GPU1 1/3 links up; down: GPU0 link 0; GPU1 link 1,2',
                 'every NVLink up on every GPU',
                 'nvidia-smi nvlink -s and -e (errors); on NVSwitch hosts check nvidia.fabric_manager; a link that '
                 'stays down after a reboot is a hardware (baseboard/bridge) fault'),
 'toolkit-no-engine': ('skip', 'no docker or podman on this host', '', ''),
 'toolkit-no-ctk': ('warn',
                    'docker and podman installed, nvidia-ctk missing',
                    'nvidia-ctk installed; CDI spec for nvidia.com/gpu; docker: nvidia runtime or CDI',
                    'dnf install x'),
 'toolkit-ok': ('pass',
                'nvidia-ctk 1.16.2; /etc/cdi/nvidia.yaml',
                'nvidia-ctk installed; CDI spec for nvidia.com/gpu; docker: nvidia runtime or CDI',
                ''),
 'toolkit-cdi-only': ('pass',
                      'nvidia-ctk 1.16.2; /etc/cdi/nvidia.yaml',
                      'nvidia-ctk installed; CDI spec for nvidia.com/gpu; docker: nvidia runtime or CDI',
                      ''),
 'toolkit-bare': ('warn',
                  'nvidia-ctk 1.16.2; no CDI spec; no CDI spec for nvidia.com/gpu in /etc/cdi or /var/run/cdi; '
                  "docker's daemon.json has no nvidia runtime",
                  'nvidia-ctk installed; CDI spec for nvidia.com/gpu; docker: nvidia runtime or CDI',
                  'nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml\n'
                  'nvidia-ctk runtime configure --runtime=docker && systemctl restart docker'),
 'toolkit-podman-no-cdi': ('warn',
                           'nvidia-ctk 1.16.2; no CDI spec; no CDI spec for nvidia.com/gpu in /etc/cdi or '
                           '/var/run/cdi',
                           'nvidia-ctk installed; CDI spec for nvidia.com/gpu; docker: nvidia runtime or CDI',
                           'nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml')}

CUDA_FIX: Dict[str, str] = {
    'CUDA driver version is insufficient for CUDA runtime version': 'update the NVIDIA driver (see nvidia.driver_cuda) '
                                                                 'or install a torch built for an older CUDA',
 'The NVIDIA driver is too old': 'update the NVIDIA driver (see nvidia.driver_cuda) or install a torch built for an '
                                 'older CUDA',
 'error 802: system not yet initialized': 'NVSwitch host: start Fabric Manager (systemctl enable --now '
                                          'nvidia-fabricmanager)',
 'MIG mode has no instance': 'MIG is on but no instance is usable: create GPU/compute instances (nvidia-smi mig -cgi '
                             '... -C) or disable MIG (nvidia-smi -mig 0)',
 'Operation not permitted': 'the user cannot open /dev/nvidia*: ls -l /dev/nvidia*; add the user to the group owning '
                            'them (often video) or fix the device modes (NVreg_DeviceFileMode)',
 'no CUDA-capable device is detected': 'CUDA sees no GPU: check CUDA_VISIBLE_DEVICES (torch.cuda_visible_devices) '
                                       'and nvidia-smi',
 'No CUDA GPUs are available': 'CUDA sees no GPU: check CUDA_VISIBLE_DEVICES (torch.cuda_visible_devices) and '
                               'nvidia-smi',
 'forward compatibility was attempted': 'reload the driver or reboot (a driver upgrade without reboot; nvidia.nvml '
                                        'shows a mismatch)',
 'unknown error': 'reload the driver or reboot (a driver upgrade without reboot; nvidia.nvml shows a mismatch)',
 'something else': "run `python3 -c 'import torch; torch.zeros(1).cuda()'` in the training interpreter for the full "
                   'error'}


def _row(f: Any) -> Row:
    return (f.status, f.actual, f.expected, f.fix)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_finding(name: str, make: Callable[[], Any]) -> None:
    assert _row(make()) == GOLDEN[name]


def test_cuda_fixes() -> None:
    assert {t: F.cuda_fix(t) for t in CUDA_TEXTS} == CUDA_FIX


def test_every_case_has_its_finding() -> None:
    assert sorted(GOLDEN) == sorted(c[0] for c in CASES)
    assert {r[0] for r in GOLDEN.values()} == {"pass", "warn", "fail", "skip"}


def _regenerate() -> None:
    import pprint

    print("GOLDEN: Dict[str, Row] = " + pprint.pformat({n: _row(m()) for n, m in CASES}, width=118, sort_dicts=False))
    print()
    print("CUDA_FIX: Dict[str, str] = " + pprint.pformat({t: F.cuda_fix(t) for t in CUDA_TEXTS}, width=118,
                                                         sort_dicts=False))


if __name__ == "__main__":
    _regenerate()


def test_allreduce_without_a_result_names_torchruns_last_words() -> None:
    fix = ("gloo needs this host's name to resolve to a local address (getent hosts $(hostname)); "
           "GLOO_SOCKET_IFNAME=lo pins it to loopback")
    quiet_exit = JobResult(name="allreduce", returncode=0, stderr_tail="x\n  Gloo connect failed  \n\n")
    assert _row(F.allreduce_finding(quiet_exit, "gloo", None, "loopback")) == \
        ("fail", "torchrun: Gloo connect failed", "loopback", fix)
    assert _row(F.allreduce_finding(JobResult(name="allreduce", returncode=0), "gloo", None, "loopback")) == \
        ("fail", "torchrun: exit status 0", "loopback", fix)


def test_a_failed_measurement_names_the_probe_group_that_runs_it() -> None:
    """Each absent result's fix is a command that runs: the probe's --measure takes groups (cpu, not cpu_matmul)."""
    err = job({"event": "error", "what": "cpu_triad", "error": "boom"}, name="cpu")
    for f in (F.absent(err, "cpu_triad"), F.absent(job(name="cpu", returncode=3), "cpu_bf16")):
        assert f.status == "fail" and f.fix.endswith("probe_torch --measure cpu"), f
