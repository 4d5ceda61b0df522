"""Pins of mutation round 3 (issue 21) on hosttune/policy/onednn.py: behaviours the module's own tests let through
(bench/mutants.py r3-onednn-*). Pure: fake /proc/cpuinfo flag sets, no torch."""

from hosttune.policy import onednn

ZEN4 = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16")
# Knights Landing / Knights Mill: AVX-512 F, CD, ER, PF without BW/VL, so ATen's AVX512 kernels cannot run there
KNIGHTS_LANDING = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512cd", "avx512er", "avx512pf")


def test_an_unknown_cap_value_leaves_the_isa_onednn_dispatches_to() -> None:
    # oneDNN ignores a value it does not know: it dispatches to the CPU's best, and the summary says that
    for value in ("AVX9000", "avx512_core_bogus"):
        assert onednn.effective_isa(ZEN4, {"ONEDNN_MAX_CPU_ISA": value}) == "AVX512_CORE_BF16"
        assert onednn.caps(ZEN4, {"ONEDNN_MAX_CPU_ISA": value}) == ()
        assert "isa=AVX512_CORE_BF16 " in onednn.summary("3.12.0", ZEN4, {"ONEDNN_MAX_CPU_ISA": value})


def test_avx512f_without_bw_and_vl_is_not_atens_avx512_level() -> None:
    # aten/src/ATen/cpu/Utils.cpp is_avx512_supported: AVX-512 BW, VL, DQ (+ FMA); F alone is AVX2 for ATen
    assert onednn.hardware_aten(KNIGHTS_LANDING) == "AVX2"
    assert onednn.aten_capability(KNIGHTS_LANDING, {}) == "AVX2"
    (cap,) = onednn.caps(KNIGHTS_LANDING, {"ATEN_CPU_CAPABILITY": "avx512"})
    assert cap.over and cap.has == "AVX2"  # doctor's failure: torch would die of SIGILL


def test_sse4_2_alone_is_onednns_sse41_level() -> None:
    # facts keeps sse4_2 (not sse4_1), which implies it: a Westmere-class CPU without AVX still has oneDNN's SSE41
    assert onednn.cpu_isa(("sse4_2", "fma")) == "SSE41"
    assert onednn.effective_isa(("sse4_2",), {}) == "SSE41"
    assert onednn.cpu_isa(("fma",)) == ""  # nothing oneDNN dispatches to by these flags
