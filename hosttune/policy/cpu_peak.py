"""A CPU's expected peak GFLOP/s from its cores, clock and vector ISA, and the bf16 rule (doctor --deep).

peak = cores x GHz x FLOPs per cycle per core. Per-cycle figures (fp32, fused multiply-add counted as 2) follow
the vendors' optimization manuals (Intel 64 and IA-32 Architectures Optimization Reference Manual; AMD Software
Optimization Guides for Zen 2/3/4):
- AVX-512 with FMA: 2 FMA units x 16 lanes x 2 = 64 (Xeon Gold/Platinum; Zen 4 splits 512-bit ops over its
  256-bit units, so it counts as AVX2 below; Zen 5 has full 512-bit units)
- AVX2 with FMA: 2 x 8 x 2 = 32 (Haswell and later, Zen 2 and later)
- AVX without FMA: one 8-lane add + one 8-lane multiply = 16
- SSE: 8. aarch64: 2 x 128-bit FMA = 16 (Neoverse N1/N2); SVE 256-bit (V1) = 32
Cores are physical cores (SMT siblings share the FMA units), never more than the process may use. The clock is
the all-core maximum where sysfs says it, else what /proc/cpuinfo reports (under a hypervisor: the host's nominal
clock). Wide-vector code runs below the maximum clock (AVX-512 licence levels), so a healthy matmul reaches about
60-90% of this figure; below MATMUL_WARN_FRACTION something takes the cores (another job, a quota, throttling).
"""

from typing import Optional, Sequence, Tuple

MATMUL_WARN_FRACTION = 0.40
# bf16 autocast slower than fp32 by more than this factor: the CPU has no bf16 hardware path (avx512_bf16 or
# amx_bf16) and every op is emulated; perf-notes measured x0.03-0.10 on an AVX2 machine.
BF16_SLOW_RATIO = 0.8
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
# STREAM triad floor per thread: one DDR4/DDR5 channel streams 15-35 GB/s and a server gives each channel at most
# ~8-12 cores, and a single core alone streams 8-20 GB/s; below 2 GB/s per thread memory is remote (another NUMA
# node), a channel is unpopulated, or the machine is swapping.
MEMBW_PER_THREAD_GBPS = 2.0


def flops_per_cycle(flags: Sequence[str], vendor: Optional[str] = None, arch: Optional[str] = None
                    ) -> Tuple[int, str]:
    """(fp32 FLOPs per cycle per core, the ISA it comes from)."""
    have = set(flags)
    if arch and arch.startswith("aarch64"):
        return (32, "SVE") if "sve" in have else (16, "NEON")
    if "avx512f" in have and vendor != "AuthenticAMD":
        return 64, "AVX-512 FMA"
    if "avx512f" in have:  # Zen 4 runs 512-bit ops on 256-bit units; Zen 5 doubles this (not told by a flag)
        return 32, "AVX-512 (256-bit units)"
    if "avx2" in have and "fma" in have:
        return 32, "AVX2 FMA"
    if "avx" in have:
        return 16, "AVX"
    return 8, "SSE"


def peak_gflops(cores: int, ghz: float, flags: Sequence[str], vendor: Optional[str] = None,
                arch: Optional[str] = None) -> Tuple[float, str]:
    """(fp32 peak GFLOP/s, how it was computed)."""
    fpc, isa = flops_per_cycle(flags, vendor, arch)
    return cores * ghz * fpc, f"{cores} cores x {ghz:.2f} GHz x {fpc} FLOP/cycle ({isa})"


def has_bf16(flags: Sequence[str]) -> bool:
    return any(f in flags for f in BF16_FLAGS)
