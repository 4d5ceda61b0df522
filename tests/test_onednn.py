"""torch's oneDNN and CPU ISA (hosttune/policy/onednn.py): the ISA oneDNN and ATen dispatch to for a CPU's flags and
the environment caps, the bf16 path (AMX, AVX-512 BF16, emulated), the `facts` row, the probe's oneDNN version and
doctor's torch.onednn check. CPU-independent: the CPUs are fake /proc/cpuinfo flag sets; the live tests compare
with what torch itself says on this machine (torch.backends.cpu.get_cpu_capability(), torch.__config__.show())."""

import json
import os
import re
import subprocess
import sys

import pytest
from _doctorhelp import R, cpu_host, same, table_test

from hosttune.commands.facts import render
from hosttune.detect import torchenv
from hosttune.facts import Cpu, Facts, TorchInstall
from hosttune.policy import onednn

# flag sets as /proc/cpuinfo shows them (the ones facts keeps)
EPYC_AVX2 = ("sse4_2", "avx", "avx2", "fma", "f16c")  # Zen 2/3: this project's CI machine
CASCADE_LAKE = EPYC_AVX2 + ("avx512f", "avx512bw", "avx512vl", "avx512_vnni")
COOPER_LAKE = CASCADE_LAKE + ("avx512_bf16",)
SAPPHIRE_RAPIDS = COOPER_LAKE + ("avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")
ZEN4 = COOPER_LAKE  # avx512_bf16 without AMX


@pytest.mark.parametrize("flags,isa,aten", [
    (EPYC_AVX2, "AVX2", "AVX2"),
    (CASCADE_LAKE, "AVX512_CORE_VNNI", "AVX512"),
    (COOPER_LAKE, "AVX512_CORE_BF16", "AVX512"),
    (SAPPHIRE_RAPIDS, "AVX10_1_512_AMX", "AVX512"),
    (("sse4_2", "avx"), "AVX", "DEFAULT"),
    ((), "", "DEFAULT"),
])
def test_the_isa_a_cpu_gives(flags, isa, aten) -> None:
    assert onednn.cpu_isa(flags) == isa
    assert onednn.effective_isa(flags, {}) == isa
    assert onednn.aten_capability(flags, {}) == aten


@pytest.mark.parametrize("flags,env,native,via,said", [
    (SAPPHIRE_RAPIDS, {}, True, "amx_bf16", "oneDNN AMX kernels"),
    (ZEN4, {}, True, "avx512_bf16", "oneDNN AVX-512 BF16 kernels"),
    (EPYC_AVX2, {}, False, "", "this CPU has no avx512_bf16/amx_bf16"),
    (CASCADE_LAKE, {}, False, "", "no avx512_bf16/amx_bf16"),
    # a cap under AMX leaves AVX-512 BF16; under that, emulation, and the variable is named
    (SAPPHIRE_RAPIDS, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}, True, "avx512_bf16", "AVX-512 BF16"),
    (SAPPHIRE_RAPIDS, {"ONEDNN_MAX_CPU_ISA": "avx512_core_amx"}, True, "amx_bf16", "AMX"),  # alias, any case
    (SAPPHIRE_RAPIDS, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, False, "", "ONEDNN_MAX_CPU_ISA=AVX2 caps oneDNN below"),
    (ZEN4, {"DNNL_MAX_CPU_ISA": "AVX512_CORE"}, False, "", "DNNL_MAX_CPU_ISA=AVX512_CORE"),
    # ONEDNN_ wins over the old DNNL_ name; DEFAULT/ALL and unknown values are no cap
    (ZEN4, {"ONEDNN_MAX_CPU_ISA": "ALL", "DNNL_MAX_CPU_ISA": "AVX2"}, True, "avx512_bf16", ""),
    (ZEN4, {"ONEDNN_MAX_CPU_ISA": "DEFAULT"}, True, "avx512_bf16", ""),
    (ZEN4, {"ONEDNN_MAX_CPU_ISA": "AVX9000"}, True, "avx512_bf16", ""),
])
def test_the_bf16_path(flags, env, native, via, said) -> None:
    path = onednn.bf16_path(flags, env)
    assert (path.native, path.via) == (native, via), path
    assert said in path.why


def test_caps_below_and_above_the_cpu() -> None:
    assert onednn.caps(SAPPHIRE_RAPIDS, {}) == ()
    assert onednn.caps(EPYC_AVX2, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"}) == ()  # a cap above the CPU: no effect
    (cap,) = onednn.caps(SAPPHIRE_RAPIDS, {"ONEDNN_MAX_CPU_ISA": "avx2"})
    assert (cap.var, cap.value, cap.has, cap.over) == ("ONEDNN_MAX_CPU_ISA", "AVX2", "AVX10_1_512_AMX", False)
    (cap,) = onednn.caps(CASCADE_LAKE, {"ATEN_CPU_CAPABILITY": "avx2"})
    assert (cap.var, cap.value, cap.has, cap.over) == ("ATEN_CPU_CAPABILITY", "AVX2", "AVX512", False)
    (cap,) = onednn.caps(EPYC_AVX2, {"ATEN_CPU_CAPABILITY": "avx512"})  # torch obeys it: SIGILL
    assert cap.over and onednn.aten_capability(EPYC_AVX2, {"ATEN_CPU_CAPABILITY": "avx512"}) == "AVX512"
    assert onednn.caps(EPYC_AVX2, {"ATEN_CPU_CAPABILITY": "avx2"}) == ()  # what it has anyway
    assert onednn.aten_capability(EPYC_AVX2, {"ATEN_CPU_CAPABILITY": "sse9"}) == "AVX2"  # invalid: ignored
    assert onednn.effective_isa(SAPPHIRE_RAPIDS, {"DNNL_MAX_CPU_ISA": "AVX512_CORE_FP16"}) == "AVX10_1_512"


def test_cpuinfo_flags_reads_the_first_flags_line() -> None:
    text = "processor\t: 0\nflags\t\t: fpu avx2 amx_bf16\n\nprocessor\t: 1\nflags\t\t: fpu\n"
    assert onednn.cpuinfo_flags(text) == ("fpu", "avx2", "amx_bf16")
    assert onednn.cpuinfo_flags("Features\t: fp asimd sve\n") == ()  # aarch64: no x86 flags line


def test_the_facts_row() -> None:
    f = Facts(cpu=Cpu(flags=SAPPHIRE_RAPIDS), torch=TorchInstall(python="/v/bin/python", version="2.13.0",
                                                                  onednn="3.12.0"), root="/nonexistent-root")
    row = [r for r in render(f).splitlines() if r.startswith("torch cpu")]
    assert row and row[0].split(None, 2)[2] == ("onednn=3.12.0  isa=AVX10_1_512_AMX  aten=AVX512  "
                                                 "bf16=amx_bf16 (oneDNN AMX kernels)")
    # no torch, or a failed probe: no row
    assert "torch cpu" not in render(R(f, torch=None))
    assert "torch cpu" not in render(R(f, torch=TorchInstall(python="/x", error="timeout")))


def test_the_probe_reads_the_onednn_version_from_the_headers_torch_ships(tmp_path) -> None:
    site = tmp_path / "site"
    inc = site / "torch" / "include" / "oneapi" / "dnnl"
    inc.mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("")
    (site / "torch" / "version.py").write_text("__version__ = '2.13.0+cpu'\ncuda = None\n")
    (inc / "dnnl_version.h").write_text("/* c */\n#define DNNL_VERSION_MAJOR 3\n#define DNNL_VERSION_MINOR 7\n"
                                        "#define DNNL_VERSION_PATCH 1\n")
    out = subprocess.run([sys.executable, "-I", "-c", torchenv.PROBE, str(site)], capture_output=True, text=True,
                         check=True, cwd="/")
    data = json.loads(out.stdout)
    assert data["torch"]["onednn"] == "3.7.1"
    assert torchenv.from_probe("python3", data, None, []).onednn == "3.7.1"
    (inc / "dnnl_version.h").unlink()  # a torch built without oneDNN ships no such header
    out = subprocess.run([sys.executable, "-I", "-c", torchenv.PROBE, str(site)], capture_output=True, text=True,
                         check=True, cwd="/")
    assert torchenv.from_probe("python3", json.loads(out.stdout), None, []).onednn is None


def _torch_says(env: dict) -> dict:
    code = ("import json, re, torch; print(json.dumps({'cap': torch.backends.cpu.get_cpu_capability(), "
            "'config': torch.__config__.show()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    if out.returncode != 0:
        pytest.skip(f"torch does not import here: {out.stderr.strip()[-200:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _this_cpu_flags() -> tuple:
    try:
        with open("/proc/cpuinfo") as fh:
            return onednn.cpuinfo_flags(fh.read())
    except OSError:
        pytest.skip("no /proc/cpuinfo")


def _without_a_cap() -> dict:
    return {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}


@pytest.fixture(scope="module")
def torch_uncapped() -> dict:
    """What a torch without ATEN_CPU_CAPABILITY says, asked once for the module (issue 21: a torch start-up each)."""
    pytest.importorskip("torch")
    return _torch_says(_without_a_cap())


# integration: a torch interpreter per ISA cap, end to end (make check leaves it out; make test runs it)
@pytest.mark.integration
@pytest.mark.parametrize("aten", [None, "default", "avx2"])
def test_the_aten_capability_is_what_torch_says_on_this_machine(aten, request) -> None:
    pytest.importorskip("torch")
    flags = _this_cpu_flags()
    if not {"avx2", "fma"} <= set(flags):
        pytest.skip("the comparison is for x86 CPUs with AVX2")
    env = _without_a_cap()
    if aten:
        env["ATEN_CPU_CAPABILITY"] = aten
    said = _torch_says(env) if aten else request.getfixturevalue("torch_uncapped")
    assert said["cap"] == onednn.aten_capability(flags, env)


def test_the_probe_names_the_onednn_torch_was_built_with(torch_uncapped: dict) -> None:
    out = subprocess.run([sys.executable, "-I", "-c", torchenv.PROBE], capture_output=True, text=True, check=True,
                         cwd="/")
    ours = json.loads(out.stdout)["torch"]["onednn"]
    m = re.search(r"(?:oneDNN|MKL-DNN) v(\d+\.\d+(?:\.\d+)?)", torch_uncapped["config"])
    if m is None:
        assert ours is None  # a torch built without oneDNN
    else:
        assert ours == m.group(1) or ours == m.group(1) + ".0"


# doctor's torch.onednn (the table shape of tests/test_doctor_*.py)
def cpu(flags, **torch):
    return lambda f: R(f, cpu=R(f.cpu, flags=flags, arch="x86_64"), torch=R(f.torch, onednn="3.12.0", **torch))


CASES = [
    ("torch.onednn", cpu_host, cpu(SAPPHIRE_RAPIDS), {}, "pass", "bf16=amx_bf16"),
    ("torch.onednn", cpu_host, cpu(EPYC_AVX2), {}, "pass", "bf16=emulated (this CPU has no avx512_bf16/amx_bf16)"),
    ("torch.onednn", cpu_host, cpu(SAPPHIRE_RAPIDS), {"env": {"ONEDNN_MAX_CPU_ISA": "AVX2"}}, "warn",
     "unset ONEDNN_MAX_CPU_ISA"),
    ("torch.onednn", cpu_host, cpu(CASCADE_LAKE), {"env": {"ATEN_CPU_CAPABILITY": "default"}}, "warn",
     "ATEN_CPU_CAPABILITY=DEFAULT below this CPU's AVX512"),
    ("torch.onednn", cpu_host, cpu(EPYC_AVX2), {"env": {"ATEN_CPU_CAPABILITY": "avx512"}}, "fail",
     "ATEN_CPU_CAPABILITY=AVX512 above this CPU's AVX2"),
    ("torch.onednn", cpu_host, lambda f: R(f, torch=None), {}, "skip", "no torch"),
    ("torch.onednn", cpu_host, lambda f: R(f, cpu=R(f.cpu, arch="aarch64")), {}, "skip", "aarch64"),
    ("torch.onednn", cpu_host, same, {"live": False}, "skip", "environment belongs to this shell"),
]

test_check = table_test(CASES)
