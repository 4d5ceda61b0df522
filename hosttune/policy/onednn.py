"""Which CPU instruction sets torch's kernels may use here, and so which bf16 path a CPU run takes: the rule that
doctor (the `torch.onednn` check), `facts` and the engine (`amp=auto` on CPU, the line it says at start) share.

Two libraries decide, each with its own environment cap:
- ATen's vectorised kernels (elementwise ops, reductions) pick a capability once at start
  (aten/src/ATen/native/DispatchStub.cpp, compute_cpu_capability): `ATEN_CPU_CAPABILITY` (default, avx2, avx512)
  if set, else AVX512 when the CPU has AVX-512 BW/VL/DQ + FMA, else AVX2 with AVX2 + FMA, else DEFAULT.
  torch.backends.cpu.get_cpu_capability() reports the result. A value above the hardware is taken as given: the
  first vectorised op then dies of an illegal instruction (SIGILL).
- oneDNN (torch's matmuls, convolutions and bf16 GEMMs on x86) dispatches at run time up to the best ISA the CPU
  has, capped by `ONEDNN_MAX_CPU_ISA` (older name `DNNL_MAX_CPU_ISA`; oneDNN developer guide, "CPU Dispatcher
  Control"): SSE41 < AVX < AVX2 < AVX2_VNNI < AVX2_VNNI_2 < AVX512_CORE < AVX512_CORE_VNNI < AVX512_CORE_BF16 <
  AVX10_1_512 (= AVX512_CORE_FP16) < AVX10_1_512_AMX (= AVX512_CORE_AMX) < AVX10_1_512_AMX_FP16; DEFAULT/ALL is no
  cap. Native bf16 math needs AVX512_CORE_BF16 (avx512_bf16) or AVX512_CORE_AMX (amx_bf16 tiles); below them bf16
  is converted to fp32 and back around every op (perf-notes: bf16 autocast at x0.03-0.10 of fp32 on AVX2), which
  is why `amp=auto` trains such a CPU in fp32.

The flags are /proc/cpuinfo's names (facts keeps hosttune.detect.cpu.FLAGS_OF_INTEREST of them; it has no
avx512dq, which every CPU with avx512bw and avx512vl has: Skylake-SP on, Zen 4 on).
"""

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Tuple

# oneDNN's ISA ladder, lowest first, with the flags each step needs (all of them) and the aliases oneDNN accepts.
ONEDNN_ISAS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("SSE41", ("sse4_1",)),
    ("AVX", ("avx",)),
    ("AVX2", ("avx2",)),
    ("AVX2_VNNI", ("avx2", "avx_vnni")),
    ("AVX512_CORE", ("avx512f", "avx512bw", "avx512vl")),
    ("AVX512_CORE_VNNI", ("avx512f", "avx512bw", "avx512vl", "avx512_vnni")),
    ("AVX512_CORE_BF16", ("avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16")),
    ("AVX10_1_512", ("avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16")),
    ("AVX10_1_512_AMX", ("avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16")),
)
ALIASES = {"AVX512_CORE_FP16": "AVX10_1_512", "AVX512_CORE_AMX": "AVX10_1_512_AMX",
           "AVX512_CORE_AMX_FP16": "AVX10_1_512_AMX_FP16", "AVX2_VNNI_2": "AVX2_VNNI"}
NO_CAP = ("", "DEFAULT", "ALL")
ATEN_LEVELS = ("DEFAULT", "AVX2", "AVX512")
_GETENV_BUFFER = 32  # oneDNN getenv_string_user: `const int len = 32; char value_str[len];`


@dataclass(frozen=True)
class Bf16Path:
    """How bf16 math runs on this CPU: `native` or emulated, the flag that gives it, and why in one phrase."""

    native: bool
    via: str  # "amx_bf16", "avx512_bf16", or "" when emulated
    why: str  # the path's kernels, or why there is no native path ("bf16 would be emulated" is left to callers)


@dataclass(frozen=True)
class Cap:
    """An environment variable that keeps torch below what the CPU has (or above it: `over`)."""

    var: str
    value: str
    has: str  # what the CPU has at that level (oneDNN ISA or ATen capability)
    over: bool = False  # set above the hardware: illegal instruction at the first such op


def _rank(isa: str) -> int:
    names = [n for n, _ in ONEDNN_ISAS] + ["AVX10_1_512_AMX_FP16"]
    isa = ALIASES.get(isa, isa)
    return names.index(isa) if isa in names else -1


def cpu_isa(flags: Sequence[str]) -> str:
    """The best oneDNN ISA these flags give ("" when not even SSE4.1 is listed, e.g. a non-x86 CPU)."""
    have = set(flags) | ({"sse4_1"} if "sse4_2" in flags else set())  # facts keeps sse4_2, which implies 4.1
    best = ""
    for name, need in ONEDNN_ISAS:
        if all(f in have for f in need):
            best = name
    return best


def onednn_cap(env: Mapping[str, str]) -> Tuple[str, str]:
    """(variable, upper-cased value) of the cap oneDNN reads, ONEDNN_MAX_CPU_ISA before DNNL_MAX_CPU_ISA;
    ("", "") when neither is set. oneDNN's getenv_string_user takes a name only when its value is 1 to 31
    characters long (src/common/utils.cpp: getenv() into a 32-byte buffer must return > 0): an empty or longer
    ONEDNN_MAX_CPU_ISA is passed over for DNNL_MAX_CPU_ISA."""
    for var in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        value = env.get(var, "")
        if 0 < len(value) < _GETENV_BUFFER:
            return var, value.strip().upper()
    return "", ""


def effective_isa(flags: Sequence[str], env: Mapping[str, str]) -> str:
    """What oneDNN dispatches to: the CPU's best ISA, lowered to the cap where one is set (an unknown cap value
    is ignored, as oneDNN ignores it)."""
    best = cpu_isa(flags)
    _, value = onednn_cap(env)
    if value in NO_CAP or _rank(value) < 0 or not best:
        return best
    return best if _rank(best) <= _rank(value) else ALIASES.get(value, value)


def aten_capability(flags: Sequence[str], env: Mapping[str, str]) -> str:
    """torch.backends.cpu.get_cpu_capability() on x86: ATEN_CPU_CAPABILITY when it is a valid value, else the
    hardware's level."""
    wanted = env.get("ATEN_CPU_CAPABILITY", "").strip().upper()
    if wanted in ATEN_LEVELS:
        return wanted
    return hardware_aten(flags)


def hardware_aten(flags: Sequence[str]) -> str:
    have = set(flags)
    if {"avx512bw", "avx512vl", "fma"} <= have:
        return "AVX512"
    return "AVX2" if {"avx2", "fma"} <= have else "DEFAULT"


def caps(flags: Sequence[str], env: Mapping[str, str]) -> Tuple[Cap, ...]:
    """The environment caps that change what torch uses on this CPU (below it, or above it)."""
    out = []
    var, value = onednn_cap(env)
    best = cpu_isa(flags)
    if var and value not in NO_CAP and _rank(value) >= 0 and best and _rank(value) < _rank(best):
        out.append(Cap(var, value, best))
    hw = hardware_aten(flags)
    wanted = env.get("ATEN_CPU_CAPABILITY", "").strip().upper()
    if wanted in ATEN_LEVELS and wanted != hw:
        out.append(Cap("ATEN_CPU_CAPABILITY", wanted, hw, over=ATEN_LEVELS.index(wanted) > ATEN_LEVELS.index(hw)))
    return tuple(out)


def bf16_path(flags: Sequence[str], env: Optional[Mapping[str, str]] = None) -> Bf16Path:
    """The bf16 path a CPU run takes: AMX tiles, AVX-512 BF16, or emulation (and whether a cap is why). The
    hardware is read from the two flags alone (every CPU with them has the AVX-512 base they build on); a cap
    set below the level a path needs takes that path away."""
    env = env or {}
    var, value = onednn_cap(env)
    limit = _rank(value) if value not in NO_CAP and _rank(value) >= 0 else len(ONEDNN_ISAS)
    have = set(flags)
    paths = (("amx_bf16", "AVX10_1_512_AMX", "oneDNN AMX kernels"),
             ("avx512_bf16", "AVX512_CORE_BF16", "oneDNN AVX-512 BF16 kernels"))
    for flag, isa, why in paths:
        if flag in have and _rank(isa) <= limit:
            return Bf16Path(True, flag, why)
    for flag, isa, _ in paths:
        if flag in have:
            return Bf16Path(False, "", f"{var}={value} caps oneDNN below {isa} (this CPU has {flag})")
    return Bf16Path(False, "", "this CPU has no avx512_bf16/amx_bf16")


def cpuinfo_flags(cpuinfo: str) -> Tuple[str, ...]:
    """The first `flags` line of /proc/cpuinfo text (x86; other architectures have `Features`)."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return tuple(line.split(":", 1)[1].split())
    return ()


def summary(version: Optional[str], flags: Sequence[str], env: Mapping[str, str]) -> str:
    """One line: torch's oneDNN, the ISA oneDNN and ATen dispatch to here, and the bf16 path (facts, doctor)."""
    path = bf16_path(flags, env)
    bf16 = f"{path.via} ({path.why})" if path.native else f"emulated ({path.why})"
    return (f"onednn={version or '-'}  isa={effective_isa(flags, env) or '-'}  "
            f"aten={aten_capability(flags, env)}  bf16={bf16}")
