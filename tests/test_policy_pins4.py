"""Pins of mutation round 4 (issue 21) on hosttune/policy (bandwidth.py, cpu_peak.py, gpu_peak.py, names.py,
dirs.py): every figure and line doctor --deep and the engine's MFU compare against, each rule's boundaries, each
variable's spelling and each directory's fallback."""

import pytest

from hosttune.policy import bandwidth as bw
from hosttune.policy import cpu_peak, dirs, gpu_peak, names


def test_collective_bandwidth_formulas() -> None:
    assert bw.algbw_gbps(2e9, 1.0) == 2.0 and bw.algbw_gbps(1e9, 0.5) == 2.0
    assert bw.algbw_gbps(1e9, 0.0) == 0.0 and bw.algbw_gbps(1e9, -1.0) == 0.0
    assert bw.allreduce_busbw_gbps(8e9, 1.0, 8) == pytest.approx(8.0 * 2 * 7 / 8)
    assert bw.allreduce_busbw_gbps(8e9, 1.0, 2) == pytest.approx(8.0)
    assert bw.allreduce_busbw_gbps(8e9, 1.0, 1) == 0.0
    assert bw.allreduce_busbw_gbps(8e9, 1.0, 0) == 0.0


def test_pcie_figures() -> None:
    assert bw.PCIE_LANE_GBPS[1] == 0.25 and bw.PCIE_LANE_GBPS[2] == 0.5
    assert bw.pcie_raw_gbps(3, 16) == pytest.approx(15.754, abs=1e-3)
    assert bw.pcie_raw_gbps(4, 16) == pytest.approx(31.508, abs=1e-3)
    assert bw.pcie_raw_gbps(5, 16) == pytest.approx(63.015, abs=1e-3)
    assert bw.pcie_raw_gbps(6, 16) == pytest.approx(121.0)
    assert bw.pcie_raw_gbps(1, 1) == 0.25 and bw.pcie_raw_gbps(2, 4) == 2.0
    for gen, width in ((None, 16), (4, None), (0, 16), (4, 0), (7, 16)):
        assert bw.pcie_raw_gbps(gen, width) is None and bw.pcie_expected_gbps(gen, width) is None
    assert bw.pcie_expected_gbps(4, 16) == pytest.approx(31.508 * 0.8, abs=1e-3)
    assert (bw.PCIE_EFFICIENCY, bw.PCIE_WARN_FRACTION) == (0.80, 0.75)
    assert (bw.NVLINK_WARN_FRACTION, bw.PCIE_ALLREDUCE_WARN_FRACTION, bw.P2P_NVLINK_WARN_FRACTION,
            bw.P2P_PCIE_WARN_FRACTION) == (0.60, 0.40, 0.40, 0.50)


def test_nvlink_and_disk_figures() -> None:
    assert bw.nvlink_gbps("NVIDIA H100 80GB HBM3") == 450.0
    assert bw.nvlink_gbps("NVIDIA A100-SXM4-80GB") == 300.0
    assert bw.nvlink_gbps("Tesla V100-SXM2-32GB") == 150.0
    assert bw.nvlink_gbps("NVIDIA H100 NVL") == 300.0 and bw.nvlink_gbps("NVIDIA H200 NVL") == 450.0
    assert bw.nvlink_gbps("NVIDIA B200") == 900.0
    assert bw.nvlink_gbps("NVIDIA H100 PCIe") is None  # a PCIe card: no NVLink figure
    assert bw.nvlink_gbps("NVIDIA L4") is None and bw.nvlink_gbps("a toaster") is None
    assert bw.DISK_READ_MBPS == {"nvme": 1000.0, "ssd": 300.0, "hdd": 100.0, "network": 100.0, "tmpfs": 2000.0}
    assert bw.disk_expected_mbps("nvme") == 1000.0 and bw.disk_expected_mbps(None) is None
    assert bw.disk_expected_mbps("floppy") is None and bw.SHM_MBPS == 1000.0


@pytest.mark.parametrize("flags, vendor, arch, expected", [
    (["avx512f", "avx2", "fma"], "GenuineIntel", "x86_64", (64, "AVX-512 FMA")),
    (["avx512f", "avx2", "fma"], None, None, (64, "AVX-512 FMA")),
    (["avx512f", "avx2", "fma"], "AuthenticAMD", "x86_64", (32, "AVX-512 (256-bit units)")),
    (["avx2", "fma"], "AuthenticAMD", "x86_64", (32, "AVX2 FMA")),
    (["avx", "avx2"], "GenuineIntel", "x86_64", (16, "AVX")),  # AVX2 without FMA
    (["avx", "fma"], "GenuineIntel", "x86_64", (16, "AVX")),
    (["fma"], "GenuineIntel", "x86_64", (8, "SSE")),
    ([], None, None, (8, "SSE")),
    (["sve", "avx512f"], None, "aarch64", (32, "SVE")),
    (["asimd"], None, "aarch64", (16, "NEON")),
])
def test_flops_per_cycle(flags: list, vendor: str, arch: str, expected: tuple) -> None:
    assert cpu_peak.flops_per_cycle(flags, vendor, arch) == expected


def test_cpu_peak_and_bf16_rule() -> None:
    assert cpu_peak.peak_gflops(4, 2.5, ["avx2", "fma"]) == (320.0, "4 cores x 2.50 GHz x 32 FLOP/cycle (AVX2 FMA)")
    assert cpu_peak.has_bf16(["avx512_bf16"]) and cpu_peak.has_bf16(["amx_bf16", "avx2"])
    assert not cpu_peak.has_bf16(["avx512f", "amx_tile", "avx512_fp16"])
    assert (cpu_peak.MATMUL_WARN_FRACTION, cpu_peak.BF16_SLOW_RATIO, cpu_peak.MEMBW_PER_THREAD_GBPS) == (0.40, 0.8, 2.0)


@pytest.mark.parametrize("name, key", [
    ("NVIDIA GB200", "GB200"), ("NVIDIA B200", "B200"), ("NVIDIA GH200 480GB", "GH200"),
    ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA H200", "H200 SXM"), ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H800 PCIe", "H100 PCIe"), ("NVIDIA H100 80GB HBM2e", "H100 PCIe"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA A100-PCIE-80GB", "A100 PCIe 80GB"), ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"), ("NVIDIA A800-SXM4-80GB", "A100 SXM 80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"), ("NVIDIA A10G", "A10G"), ("NVIDIA A10", "A10"),
    ("NVIDIA A30", "A30"), ("NVIDIA A40", "A40"), ("NVIDIA RTX A6000", "RTX A6000"), ("NVIDIA L40S", "L40S"),
    ("NVIDIA L40", "L40"), ("NVIDIA L4", "L4"), ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"), ("Tesla V100S-PCIE-32GB", "V100S PCIe"),
    ("Tesla V100-PCIE-16GB", "V100 PCIe"), ("Tesla V100-SXM2-32GB", "V100 SXM2"), ("Tesla T4", "T4"),
])
def test_gpu_names_match_their_entry(name: str, key: str) -> None:
    entry = gpu_peak.match(name)
    assert entry is not None and entry.key == key


def test_gpu_peak_figures_and_dtypes() -> None:
    assert gpu_peak.match("NVIDIA L400") is None and gpu_peak.match("NVIDIA A1000") is None
    assert gpu_peak.dense_peak_tflops("a toaster") is None
    h100 = gpu_peak.match("NVIDIA H100 80GB HBM3")
    assert h100 is not None
    assert (h100.bf16, h100.fp16, h100.tf32, h100.fp32) == (989.4, 989.4, 494.7, 66.9)
    assert h100.to_dict() == {"key": "H100 SXM", "bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp32": 66.9,
                              "source": "NVIDIA H100 Tensor Core GPU datasheet (SXM column; sparse/2)"}
    assert gpu_peak.dense_peak_tflops("NVIDIA H100 80GB HBM3") == 989.4
    assert gpu_peak.dense_peak_tflops("NVIDIA H100 PCIe", "torch.float32") == 51.2
    assert gpu_peak.dense_peak_tflops("NVIDIA A100-SXM4-80GB", " TF32 ") == 156.0
    assert gpu_peak.dense_peak_tflops("NVIDIA A100-SXM4-80GB", "half") == 312.0
    assert gpu_peak.dense_peak_tflops("NVIDIA A100-SXM4-80GB", "int8") is None
    assert gpu_peak.dense_peak_tflops("Tesla V100-SXM2-32GB", "bf16") is None
    assert gpu_peak.dense_peak_tflops("Tesla T4", "torch.half") == 65.0
    assert gpu_peak.dense_peak_tflops("NVIDIA L40S", "fp32") == 91.6
    for spelling, d in (("bfloat16", "bf16"), ("torch.bfloat16", "bf16"), ("float16", "fp16"),
                        ("torch.float16", "fp16"), ("torch.half", "fp16"), ("float", "fp32"), ("float32", "fp32"),
                        ("torch.float", "fp32"), ("FP32", "fp32"), ("tf32", "tf32")):
        assert gpu_peak.normalize_dtype(spelling) == d
    assert gpu_peak.normalize_dtype("float64") is None
    assert gpu_peak._normalize("NVIDIA A100-SXM4_80GB/x,(y)") == "NVIDIA A100 SXM4 80GB X Y"


def test_every_variable_name_is_spelled_once() -> None:
    spelled = {k: v for k, v in vars(names).items() if k.isupper()}
    assert all(v == "HOSTTUNE_" + k for k, v in spelled.items()), spelled
    assert len(set(spelled.values())) == len(spelled) == 22


@pytest.mark.parametrize("fn, var, default", [
    (dirs.runtime_dir, "HOSTTUNE_RUNTIME_DIR", "/run/hosttune"),
    (dirs.state_dir, "HOSTTUNE_STATE_DIR", "/var/lib/hosttune"),
    (dirs.log_dir, "HOSTTUNE_LOG_DIR", "/var/log/hosttune"),
    (dirs.etc_dir, "HOSTTUNE_ETC_DIR", "/etc/hosttune"),
])
def test_each_directory_moves_by_its_own_absolute_variable(fn, var: str, default: str, monkeypatch) -> None:
    assert fn({}) == default
    assert fn({var: "/srv/x"}) == "/srv/x"
    assert fn({var: "rel/x"}) == default and fn({var: ""}) == default
    others = {v: "/elsewhere" for v in ("HOSTTUNE_RUNTIME_DIR", "HOSTTUNE_STATE_DIR", "HOSTTUNE_LOG_DIR",
                                        "HOSTTUNE_ETC_DIR") if v != var}
    assert fn(others) == default
    monkeypatch.setenv(var, "/from/process")
    assert fn() == "/from/process"


def test_user_cache_dir() -> None:
    assert dirs.user_cache_dir({"XDG_CACHE_HOME": "/c", "HOME": "/h"}) == "/c/hosttune"
    assert dirs.user_cache_dir({"XDG_CACHE_HOME": "c", "HOME": "/h"}) == "/h/.cache/hosttune"
    assert dirs.user_cache_dir({"HOME": "/h"}) == "/h/.cache/hosttune"
    assert dirs.user_cache_dir({"HOME": "h"}) is None and dirs.user_cache_dir({}) is None
