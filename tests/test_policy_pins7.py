"""Pins for hosttune/policy/*.py (issue 21, practice round HTOP)."""

from typing import Dict, Tuple

import pytest

from hosttune.policy import onednn

# ---- oneDNN skips an empty (or 32+ character) ONEDNN_MAX_CPU_ISA and reads DNNL_MAX_CPU_ISA (product fix HTOP) ----
SPR = ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16")


@pytest.mark.parametrize("env,cap,isa", [
    ({"ONEDNN_MAX_CPU_ISA": "", "DNNL_MAX_CPU_ISA": "avx2"}, ("DNNL_MAX_CPU_ISA", "AVX2"), "AVX2"),
    ({"ONEDNN_MAX_CPU_ISA": "x" * 32, "DNNL_MAX_CPU_ISA": "AVX2"}, ("DNNL_MAX_CPU_ISA", "AVX2"), "AVX2"),
    ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE", "DNNL_MAX_CPU_ISA": "AVX2"}, ("ONEDNN_MAX_CPU_ISA", "AVX512_CORE"),
     "AVX512_CORE"),
    ({"ONEDNN_MAX_CPU_ISA": ""}, ("", ""), "AVX10_1_512_AMX"),
    ({"DNNL_MAX_CPU_ISA": ""}, ("", ""), "AVX10_1_512_AMX"),
    ({}, ("", ""), "AVX10_1_512_AMX"),
])
def test_the_cap_is_the_first_name_with_a_value_onednn_reads(env: Dict[str, str], cap: Tuple[str, str],
                                                              isa: str) -> None:
    assert onednn.onednn_cap(env) == cap
    assert onednn.effective_isa(SPR, env) == isa
