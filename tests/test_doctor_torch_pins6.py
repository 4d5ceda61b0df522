"""torch checks, each rule at its boundary (issue 21): PYTORCH_CUDA_ALLOC_CONF key by key (ints above 20, powers of
two up to 128, fractions below 1 and up to 1, bracketed division lists, choices), the debug switches' values, the
version cut at 2.6, and the image decoder's verdict for each probe answer (hosttune.doctor.checks.torch)."""

from typing import Any, Dict, List

import pytest
from _doctorhelp import R, cpu_host, gpu_host, run_one

from hosttune.doctor import Context
from hosttune.doctor.checks import torch as torch_checks
from hosttune.doctor.checks.torch import image_decoder_finding, parse_alloc_conf
from hosttune.facts import Distro, TorchInstall


@pytest.mark.parametrize("text,errors", [
    ("", []), (" , ,", []),
    ("expandable_segments:True", []), ("expandable_segments:false", []), ("expandable_segments:1", []),
    ("expandable_segments:yes", ["expandable_segments:yes (bool)"]),
    ("expandable_segments:TRUE", ["expandable_segments:TRUE (bool)"]),
    ("max_split_size_mb:20", ["max_split_size_mb:20 (int>20)"]), ("max_split_size_mb:21", []),
    ("max_split_size_mb:abc", ["max_split_size_mb:abc (int>20)"]),
    ("max_split_size_mb:-5", ["max_split_size_mb:-5 (int>20)"]),
    ("max_non_split_rounding_mb:0", []), ("max_non_split_rounding_mb:x", ["max_non_split_rounding_mb:x (int)"]),
    ("pinned_num_register_threads:128", []), ("pinned_num_register_threads:1", []),
    ("pinned_num_register_threads:64", []),
    ("pinned_num_register_threads:256", ["pinned_num_register_threads:256 (pow2<=128)"]),
    ("pinned_num_register_threads:0", ["pinned_num_register_threads:0 (pow2<=128)"]),
    ("pinned_num_register_threads:96", ["pinned_num_register_threads:96 (pow2<=128)"]),
    ("pinned_num_register_threads:x", ["pinned_num_register_threads:x (pow2<=128)"]),
    ("garbage_collection_threshold:0.6", []), ("garbage_collection_threshold:0.999", []),
    ("garbage_collection_threshold:1.0", ["garbage_collection_threshold:1.0 (fraction)"]),
    ("garbage_collection_threshold:0", ["garbage_collection_threshold:0 (fraction)"]),
    ("garbage_collection_threshold:x", ["garbage_collection_threshold:x (fraction)"]),
    ("per_process_memory_fraction:1.0", []), ("per_process_memory_fraction:1", []),
    ("per_process_memory_fraction:0.5", []),
    ("per_process_memory_fraction:1.5", ["per_process_memory_fraction:1.5 (fraction1)"]),
    ("per_process_memory_fraction:0.0", ["per_process_memory_fraction:0.0 (fraction1)"]),
    ("roundup_power2_divisions:4", []), ("roundup_power2_divisions:1", []),
    ("roundup_power2_divisions:3", ["roundup_power2_divisions:3 (divisions)"]),
    ("roundup_power2_divisions:x", ["roundup_power2_divisions:x (divisions)"]),
    ("roundup_power2_divisions:[256:1,512:2,>:8]", []), ("roundup_power2_divisions:[ 256:1 , >:4 ]", []),
    ("roundup_power2_divisions:[256:1", ["roundup_power2_divisions:[256:1 (divisions)"]),
    ("roundup_power2_divisions:[a:1]", ["roundup_power2_divisions:[a:1] (divisions)"]),
    ("roundup_power2_divisions:[256-1]", ["roundup_power2_divisions:[256-1] (divisions)"]),
    ("roundup_power2_divisions:[]", []),
    ("backend:native", []), ("backend:cudaMallocAsync", []),
    ("backend:cudamallocasync", ["backend:cudamallocasync (one of native,cudaMallocAsync)"]),
    ("nokey", ["'nokey' is not key:value"]),
    ("release_lock_on_cudamalloc:0,pinned_use_background_threads:2",
     ["pinned_use_background_threads:2 (bool)"]),
    ("roundup_power2_divisions:[256:1,>:4],max_split_size_mb:10,expandable_segments:True",
     ["max_split_size_mb:10 (int>20)"]),
    (" max_split_size_mb : 512 ", []),
    # digits str.isdigit() takes and int() refuses: a wrong value, not a crashed check
    ("max_split_size_mb:\u00b2", ["max_split_size_mb:\u00b2 (int>20)"]),
    ("pinned_num_register_threads:\u00b2", ["pinned_num_register_threads:\u00b2 (pow2<=128)"]),
    ("roundup_power2_divisions:\u0664", ["roundup_power2_divisions:\u0664 (divisions)"]),
    ("max_split_size_mb:" + "9" * 5000, ["max_split_size_mb:" + "9" * 5000 + " (int>20)"]),
])
def test_alloc_conf_errors(text: str, errors: List[str]) -> None:
    assert parse_alloc_conf(text) == (errors, [])


def test_alloc_conf_unknown_keys_and_every_known_key() -> None:
    assert parse_alloc_conf("foo:1,expandable_segments:True,bar:x") == ([], ["foo", "bar"])
    assert parse_alloc_conf("Expandable_segments:True") == ([], ["Expandable_segments"])
    good = {"backend": "native", "max_split_size_mb": "512", "max_non_split_rounding_mb": "1024",
            "roundup_power2_divisions": "2", "garbage_collection_threshold": "0.5", "expandable_segments": "True",
            "pinned_use_cuda_host_register": "False", "pinned_num_register_threads": "8",
            "pinned_use_background_threads": "true", "pinned_max_round_threshold_mb": "64",
            "pinned_max_cached_size_mb": "128", "release_lock_on_cudamalloc": "1",
            "graph_capture_record_stream_reuse": "0", "per_process_memory_fraction": "0.9"}
    assert set(good) == set(torch_checks.ALLOC_KEYS)
    assert parse_alloc_conf(",".join(f"{k}:{v}" for k, v in good.items())) == ([], [])


def test_alloc_conf_finding_names_each_variable() -> None:
    env = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:8", "PYTORCH_ALLOC_CONF": "x:1"}
    f = run_one("torch.alloc_conf", cpu_host(), env=env)
    assert (f.status, f.actual, f.expected) == (
        "fail", "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:8; PYTORCH_ALLOC_CONF=x:1 -> PYTORCH_CUDA_ALLOC_CONF: "
        "max_split_size_mb:8 (int>20)", "key:value,... with known keys")
    assert f.fix == "fix or unset it, e.g. export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    f = run_one("torch.alloc_conf", cpu_host(), env={"PYTORCH_ALLOC_CONF": "x:1", "PYTORCH_CUDA_ALLOC_CONF": ""})
    assert (f.status, f.actual, f.expected) == ("warn", "PYTORCH_ALLOC_CONF=x:1 -> unknown key PYTORCH_ALLOC_CONF: x",
                                                "known keys")
    f = run_one("torch.alloc_conf", cpu_host(), env={"PYTORCH_ALLOC_CONF": "expandable_segments:True"})
    assert (f.status, f.actual, f.expected, f.fix) == ("pass", "PYTORCH_ALLOC_CONF=expandable_segments:True",
                                                       "valid", "")
    f = run_one("torch.alloc_conf", cpu_host(), env={"PYTORCH_CUDA_ALLOC_CONF": ""})
    assert (f.status, f.actual, f.expected) == ("pass", "unset", "unset or valid")


@pytest.mark.parametrize("env,on", [
    ({"CUDA_LAUNCH_BLOCKING": "0", "NCCL_DEBUG": "WARN", "NCCL_DEBUG_SUBSYS": "", "TORCH_LOGS": "",
      "TORCH_DISTRIBUTED_DEBUG": "OFF", "PYTORCH_DEBUG": "", "TORCH_USE_CUDA_DSA": "0"}, ""),
    ({"CUDA_LAUNCH_BLOCKING": "1"}, "CUDA_LAUNCH_BLOCKING=1"),
    ({"NCCL_DEBUG": "info"}, "NCCL_DEBUG=info"), ({"NCCL_DEBUG": "TRACE"}, "NCCL_DEBUG=TRACE"),
    ({"NCCL_DEBUG_SUBSYS": "ALL"}, "NCCL_DEBUG_SUBSYS=ALL"),
    ({"TORCH_DISTRIBUTED_DEBUG": "detail"}, "TORCH_DISTRIBUTED_DEBUG=detail"),
    ({"TORCH_DISTRIBUTED_DEBUG": "INFO"}, "TORCH_DISTRIBUTED_DEBUG=INFO"),
    ({"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, "PYTORCH_NO_CUDA_MEMORY_CACHING=1"),
    ({"TORCH_COMPILE_DEBUG": "1"}, "TORCH_COMPILE_DEBUG=1"), ({"TORCH_LOGS": "+dynamo"}, "TORCH_LOGS=+dynamo"),
    ({"TORCH_SHOW_CPP_STACKTRACES": "1"}, "TORCH_SHOW_CPP_STACKTRACES=1"),
    ({"TORCH_USE_CUDA_DSA": "1"}, "TORCH_USE_CUDA_DSA=1"), ({"CUDA_DEVICE_DEBUG": "1"}, "CUDA_DEVICE_DEBUG=1"),
    ({"PYTORCH_DEBUG": "1"}, "PYTORCH_DEBUG=1"),
    ({"TORCH_LOGS": "x", "CUDA_LAUNCH_BLOCKING": "1"}, "CUDA_LAUNCH_BLOCKING=1 TORCH_LOGS=x"),
])
def test_debug_switches(env: Dict[str, str], on: str) -> None:
    f = run_one("torch.debug_env", cpu_host(), env=env)
    if not on:
        assert (f.status, f.actual, f.expected, f.fix) == ("pass", "none set", "none set", "")
        return
    names = " ".join(s.split("=")[0] for s in on.split())
    assert (f.status, f.actual, f.expected) == ("warn", on, "none set")
    assert f.fix == f"unset {names}   # and remove them from ~/.bashrc, /etc/environment, job scripts"


@pytest.mark.parametrize("version,status", [
    ("2.6.0", "pass"), ("2.6.0+cu124", "pass"), ("2.5.1", "warn"), ("2.10.0", "pass"), ("1.13.1", "warn"),
    ("3.0.0", "pass"), ("2.6", "pass"), ("2", "warn"),
])
def test_torch_version_cut_at_2_6(version: str, status: str) -> None:
    f = run_one("torch.version", cpu_host(torch=TorchInstall(python="/opt/v/bin/python", version=version)))
    assert (f.status, f.actual, f.expected) == (status, f"{version} (/opt/v/bin/python)", ">= 2.6")
    if status == "warn":
        assert f.fix == "/opt/v/bin/python -m pip install --upgrade 'torch>=2.6'"


def test_torch_version_other_shapes() -> None:
    f = run_one("torch.version", cpu_host(torch=TorchInstall(python="venv/bin/python", version="2.1.0")))
    assert f.fix == "python3 -m pip install --upgrade 'torch>=2.6'   # with your training interpreter"
    f = run_one("torch.version", cpu_host(torch=TorchInstall(python="/p y/python", error="No module named torch")))
    assert (f.status, f.actual) == ("warn", "/p y/python: torch probe failed: No module named torch")
    assert f.fix == "'/p y/python' -c 'import torch'   # shows the error"
    f = run_one("torch.version", cpu_host(torch=TorchInstall(python="python3")))
    assert f.actual == "python3: torch probe failed: no version"
    assert f.fix == "python3 -c 'import torch'   # shows the error; run it with your training interpreter"
    f = run_one("torch.version", cpu_host(torch=None), python="/usr/bin/python3.12")
    assert (f.status, f.actual) == ("warn", "no torch in /usr/bin/python3.12")
    assert f.fix == ("python3 -m venv ~/venv && ~/venv/bin/pip install torch   # then: hosttune doctor --python "
                     "~/venv/bin/python")
    f = run_one("torch.version", cpu_host(torch=None))
    assert f.actual == "no torch in the first python3 on PATH"
    f = run_one("torch.version", cpu_host(torch=None), live=False)
    assert (f.status, f.actual, f.expected) == ("skip", "torch not probed on a captured host", ">= 2.6")


def test_venv_states() -> None:
    t = TorchInstall(python="/usr/bin/python3", version="2.6.0")
    f = run_one("torch.venv", cpu_host(torch=R(t, in_venv=False)))
    assert (f.status, f.actual, f.expected) == ("warn", "/usr/bin/python3 is not in a venv or conda env",
                                                "a venv or conda env")
    assert f.fix == ("python3 -m venv /opt/train && /opt/train/bin/pip install torch   # then train with "
                     "/opt/train/bin/python")
    f = run_one("torch.venv", cpu_host(torch=R(t, in_venv=True)))
    assert (f.status, f.actual) == ("pass", "/usr/bin/python3 (venv/conda)")
    f = run_one("torch.venv", cpu_host(torch=R(t, in_venv=None)))
    assert (f.status, f.actual) == ("skip", "no torch interpreter probed")


@pytest.mark.parametrize("raw,status,actual", [
    ("", "warn", "CUDA_VISIBLE_DEVICES='' hides every GPU"),
    (" -1 ", "warn", "CUDA_VISIBLE_DEVICES=' -1 ' hides every GPU"),
    ("0,1", "pass", "CUDA_VISIBLE_DEVICES=0,1 (2 GPUs)"),
    ("1", "pass", "CUDA_VISIBLE_DEVICES=1 (1 GPUs)"),
])
def test_cuda_visible_on_a_gpu_host(raw: str, status: str, actual: str) -> None:
    f = run_one("torch.cuda_visible_devices", gpu_host(), env={"CUDA_VISIBLE_DEVICES": raw})
    assert (f.status, f.actual) == (status, actual)
    assert f.fix == ("unset CUDA_VISIBLE_DEVICES" if status == "warn" else "")


def test_cuda_visible_stops_at_a_missing_gpu_and_on_a_cpu_host() -> None:
    f = run_one("torch.cuda_visible_devices", gpu_host(), env={"CUDA_VISIBLE_DEVICES": "0,7,1"})
    assert f.status == "fail"
    assert f.actual.startswith("CUDA_VISIBLE_DEVICES=0,7,1: no GPU 7 (")
    assert "CUDA stops there and sees 1 of 2 GPUs)" in f.actual
    assert (f.expected, f.fix) == ("entries among 0,1 or unique GPU UUID prefixes", "export CUDA_VISIBLE_DEVICES=0,1")
    f = run_one("torch.cuda_visible_devices", cpu_host(), env={"CUDA_VISIBLE_DEVICES": "0"})
    assert (f.status, f.actual, f.expected, f.fix) == ("warn", "CUDA_VISIBLE_DEVICES=0 on a host without NVIDIA GPUs",
                                                       "unset", "unset CUDA_VISIBLE_DEVICES")
    f = run_one("torch.cuda_visible_devices", cpu_host(), env={"CUDA_VISIBLE_DEVICES": "-1"})
    assert (f.status, f.actual, f.fix) == ("pass", "CUDA_VISIBLE_DEVICES='-1' hides every GPU", "")
    f = run_one("torch.cuda_visible_devices", cpu_host(), env={})
    assert (f.status, f.actual, f.expected) == ("pass", "unset (all GPUs visible)", "unset or existing GPUs")


def _decoder(data: Dict[str, Any], family: str = "debian", python: str = "/opt/t/bin/python") -> Any:
    facts = cpu_host(distro=Distro(id="x", version="1", family=family))
    return image_decoder_finding(Context(facts=facts, env={}), python, data)


EXPECTED = "PyTurboJPEG + libturbojpeg, or Pillow with libjpeg-turbo"


def test_image_decoder_verdicts() -> None:
    f = _decoder({"error": "timed out"})
    assert (f.status, f.actual, f.expected, f.fix) == (
        "warn", "/opt/t/bin/python: image decoder probe failed: timed out", EXPECTED,
        "/opt/t/bin/python -c 'import PIL, turbojpeg'   # shows the error")
    f = _decoder({"executable": "/real/python3",
                  "turbojpeg": {"version": "1.7.2", "library": "/usr/lib/libturbojpeg.so.0"}})
    assert (f.status, f.actual, f.fix) == ("pass", "PyTurboJPEG 1.7.2 + libturbojpeg", "")
    f = _decoder({"pillow": {"version": "10.3.0", "libjpeg_turbo": True}})
    assert (f.status, f.actual) == ("pass", "Pillow 10.3.0 (libjpeg-turbo)")
    f = _decoder({"pillow": {"version": "9.0", "simd": True, "libjpeg_turbo": False}})
    assert (f.status, f.actual) == ("pass", "pillow-simd 9.0 (libjpeg, not libjpeg-turbo)")
    f = _decoder({"pillow": {"version": "9.0"}})
    assert (f.status, f.actual) == ("warn", "Pillow 9.0 (libjpeg, not libjpeg-turbo): JPEG decoding without SIMD")
    assert f.fix == ("apt-get install -y libturbojpeg0\n/opt/t/bin/python -m pip install 'PyTurboJPEG<2' Pillow"
                     "   # then image_decoder=auto uses it")
    f = _decoder({}, family="rhel")
    assert (f.status, f.actual) == ("skip", "no Pillow, no PyTurboJPEG in /opt/t/bin/python: needed only to train on "
                                            "image folders")
    assert f.fix == ("dnf install -y turbojpeg\n/opt/t/bin/python -m pip install 'PyTurboJPEG<2' Pillow"
                     "   # then image_decoder=auto uses it")


def test_image_decoder_turbojpeg_without_its_library() -> None:
    f = _decoder({"executable": "/e/python", "turbojpeg": {"version": "2.0", "library": None,
                                                           "error": "needs libjpeg-turbo 3.0"},
                  "pillow": {"version": "10.0", "libjpeg_turbo": True}})
    assert (f.status, f.actual) == ("warn", "PyTurboJPEG 2.0 + no usable libturbojpeg (needs libjpeg-turbo 3.0); "
                                            "Pillow 10.0 (libjpeg-turbo): image_decoder=turbojpeg fails")
    assert f.fix == ("apt-get install -y libturbojpeg0\n/e/python -m pip install 'PyTurboJPEG<2'   # PyTurboJPEG 2 "
                     "needs libjpeg-turbo 3, 1.x drives 2.x")
    f = _decoder({"turbojpeg": {}}, python="python3")
    # an empty answer about PyTurboJPEG is no PyTurboJPEG
    assert f.status == "skip"
    f = _decoder({"turbojpeg": {"version": "1.7", "error": "cannot load"}}, python="rel/python")
    assert f.actual == "PyTurboJPEG 1.7 + no usable libturbojpeg (cannot load): image_decoder=turbojpeg fails"
    assert f.fix.endswith("\npython3 -m pip install PyTurboJPEG   # PyTurboJPEG 2 needs libjpeg-turbo 3, "
                          "1.x drives 2.x")


def test_image_decoder_skips_off_the_live_host_and_without_python() -> None:
    f = run_one("torch.image_decoder", cpu_host(), live=False)
    assert (f.status, f.actual, f.expected) == ("skip", "the training python is not probed on a captured host",
                                                "a fast JPEG decoder")
    ctx = Context(facts=cpu_host(torch=TorchInstall(python="/from/probe")), env={}, python="/from/flag")
    assert torch_checks.training_python(ctx) == "/from/flag"
    ctx = Context(facts=cpu_host(torch=TorchInstall(python="/from/probe")), env={})
    assert torch_checks.training_python(ctx) == "/from/probe"
    ctx = Context(facts=cpu_host(torch=TorchInstall(python="")), env={"PATH": ""})
    assert torch_checks.training_python(ctx) == torch_checks.torchenv.default_python()


def test_onednn_caps_below_warn_and_above_fail() -> None:
    t = TorchInstall(python="/p", version="2.6.0", onednn="3.5.3")
    f = cpu_host(torch=t)
    f = R(f, cpu=R(f.cpu, flags=("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16"), arch="x86_64"))
    got = run_one("torch.onednn", f, env={"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert (got.status, got.expected) == ("warn", "no ISA cap below the CPU")
    assert got.actual.endswith("; ONEDNN_MAX_CPU_ISA=AVX2 below this CPU's AVX512_CORE")
    assert got.fix == "unset ONEDNN_MAX_CPU_ISA   # and remove it from ~/.bashrc, /etc/environment and job scripts"
    got = run_one("torch.onednn", f, env={"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "default"})
    assert got.status == "warn"
    assert got.fix == ("unset ONEDNN_MAX_CPU_ISA ATEN_CPU_CAPABILITY   # and remove them from ~/.bashrc, "
                       "/etc/environment and job scripts")
    no_avx512 = R(f, cpu=R(f.cpu, flags=("avx2", "fma")))
    got = run_one("torch.onednn", no_avx512, env={"ATEN_CPU_CAPABILITY": "avx512"})
    assert (got.status, got.expected) == ("fail", "no ISA cap above the CPU")
    assert got.actual.endswith("; ATEN_CPU_CAPABILITY=AVX512 above this CPU's AVX2")
    got = run_one("torch.onednn", f, env={})
    assert (got.status, got.fix) == ("pass", "")
    got = run_one("torch.onednn", R(f, cpu=R(f.cpu, arch="aarch64")))
    assert (got.status, got.actual) == ("skip", "oneDNN ISA caps are x86 ones; this CPU is aarch64")
    got = run_one("torch.onednn", cpu_host(torch=R(t, error="boom")))
    assert (got.status, got.actual) == ("skip", "no torch probed")


def test_onednn_one_cap_above_fails_beside_one_below() -> None:
    f = cpu_host(torch=TorchInstall(python="/p", version="2.6.0", onednn="3.5.3"))
    f = R(f, cpu=R(f.cpu, flags=("avx2", "fma"), arch="x86_64"))
    got = run_one("torch.onednn", f, env={"ONEDNN_MAX_CPU_ISA": "SSE41", "ATEN_CPU_CAPABILITY": "avx512"})
    assert (got.status, got.expected) == ("fail", "no ISA cap above the CPU")
    assert got.actual.endswith("; ONEDNN_MAX_CPU_ISA=SSE41 below this CPU's AVX2; ATEN_CPU_CAPABILITY=AVX512 above "
                               "this CPU's AVX2")
