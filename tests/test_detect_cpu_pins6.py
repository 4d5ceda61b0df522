"""/proc/cpuinfo where several sources could name the model (issue 21): "model name" and an old ARM kernel's
"Processor" line win over the part table, the first processor's value wins, empty values are skipped, vendors of
ARM, x86 and POWER (hosttune.detect.cpu)."""

from typing import Optional

import pytest

from hosttune.detect import cpu


@pytest.mark.parametrize("text,model,vendor,flags", [
    ("Processor\t: ARMv7 Processor rev 4 (v7l)\nCPU implementer\t: 0x41\nCPU part\t: 0xd08\nFeatures\t: half neon\n",
     "ARMv7 Processor rev 4 (v7l)", "ARM", ["half", "neon"]),
    ("model name\t: Cortex custom\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n", "Cortex custom", "ARM", []),
    ("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\nFeatures\t: fp asimd\n", "Neoverse-N1", "ARM",
     ["fp", "asimd"]),
    ("CPU implementer\t: 0x99\nCPU part\t: 0x001\n", None, "0x99", []),
    ("model name\t:\nmodel name\t: Second\nvendor_id\t: AuthenticAMD\nflags\t: avx2 fma\n", "Second", "AuthenticAMD",
     ["avx2", "fma"]),
    ("model name\t: First\n\nmodel name\t: Other\nflags\t: lm\nflags\t: sse2\n", "First", None, ["lm"]),
    ("cpu\t\t: POWER9 (raw), altivec supported\n", "POWER9 (raw), altivec supported", "IBM", []),
    ("cpu model\t: R4000\n", "R4000", None, []),
    ("no colon here\n", None, None, []),
])
def test_parse_cpuinfo_sources(text: str, model: Optional[str], vendor: Optional[str], flags: list) -> None:
    assert cpu.parse_cpuinfo(text) == {"model": model, "vendor": vendor, "flags": flags}


@pytest.mark.parametrize("flags,model,arch", [
    (["lm"], None, "x86_64"), (["sse2"], None, "x86_64"), (["asimd"], None, "aarch64"), (["fp"], None, "aarch64"),
    ([], "POWER10", "ppc64le"), ([], "power9", "ppc64le"), ([], "R4000", None), ([], None, None),
])
def test_arch_from_cpuinfo(flags: list, model: Optional[str], arch: Optional[str]) -> None:
    assert cpu._arch_from_cpuinfo({"flags": flags, "model": model}) == arch
