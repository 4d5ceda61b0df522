"""Pins (issue 21, round 6) for hosttune/policy (cuda_visible.py, onednn.py, gpu_health.py, cpu.py, bandwidth.py):
what CUDA_VISIBLE_DEVICES leaves visible and the notes on a MIG instance of an unknown GPU (kept to the end), a
UUID prefix given without `GPU-`, the alias and the spaces in a oneDNN cap, the temperature lines from a tiny
slowdown threshold, and the cores and workers of a cpuset that splits a core."""

from typing import Optional, Tuple

from hosttune.facts import Cpu, Gpu
from hosttune.policy import bandwidth, cpu, gpu_health, onednn
from hosttune.policy import cuda_visible as cv

GPUS = [Gpu(index=i, uuid=f"GPU-{i}aaa-1111", pci_bus_id=f"0000:0{i}:00.0") for i in (1, 0)]


def _idx(v: cv.Visible) -> Tuple[Optional[int], ...]:
    return tuple(g.index if g is not None else None for g in v.gpus)


def test_a_mig_instance_of_an_unknown_gpu_is_noted_and_the_notes_reach_the_end() -> None:
    v = cv.select(GPUS, "MIG-GPU-9999/1/0,0")
    assert _idx(v) == (None, 0) and v.stopped_at is None and v.why == ""
    assert v.notes == ("MIG-GPU-9999/1/0: MIG instance of a GPU not known here",)
    assert v.known == (GPUS[1],) and not v.hides_all
    stopped = cv.select(GPUS, "MIG-GPU-9999/1/0,7")
    assert stopped.notes == v.notes and stopped.why == "index 7 is past the 2 GPU(s)" and stopped.stopped_at == "7"
    assert _idx(cv.select(GPUS, "mig-GPU-0aaa-1111/1/0")) == (0,)
    assert cv.select(GPUS, "mig-GPU-0aaa-1111/1/0").notes == ()


def test_a_uuid_prefix_without_gpu_and_the_bus_order() -> None:
    assert _idx(cv.select(GPUS, "0aaa,1")) == (0, 1)
    assert _idx(cv.select(GPUS, "gpu-1AAA")) == (1,)
    assert _idx(cv.select(GPUS, None)) == (0, 1) and cv.select(GPUS, None).raw is None
    v = cv.select(GPUS, "1,0,5")
    assert _idx(v) == (1, 0) and (v.stopped_at, v.why) == ("5", "index 5 is past the 2 GPU(s)")
    for raw in ("GPU-", "xyz"):
        v = cv.select(GPUS, raw)
        assert v.gpus == () and v.why == "is neither an index nor a GPU UUID" and v.hides_all
    v = cv.select(GPUS, "aaa")
    assert (v.stopped_at, v.why) == ("aaa", "matches no GPU")
    v = cv.select(GPUS, "0, 0")
    assert _idx(v) == (0,) and v.why == "names a GPU twice"
    assert cv.select(GPUS, " , 0").why == "an empty entry"
    two = [Gpu(index=0, uuid="GPU-ab-1"), Gpu(index=1, uuid="GPU-ab-2")]
    assert cv.select(two, "GPU-ab").why == "is an ambiguous UUID prefix (2 GPUs match)"


def test_onednn_cap_values_are_stripped_upper_cased_and_aliased() -> None:
    flags = ["avx2", "avx_vnni", "avx512f", "avx512bw", "avx512vl"]
    assert onednn.onednn_cap({"ONEDNN_MAX_CPU_ISA": " avx2_vnni_2 "}) == ("ONEDNN_MAX_CPU_ISA", "AVX2_VNNI_2")
    assert onednn.effective_isa(flags, {"ONEDNN_MAX_CPU_ISA": " avx2_vnni_2 "}) == "AVX2_VNNI"
    assert onednn.caps(flags, {"DNNL_MAX_CPU_ISA": " avx2_vnni_2 "}) == (
        onednn.Cap("DNNL_MAX_CPU_ISA", "AVX2_VNNI_2", "AVX512_CORE"),)
    assert onednn.ALIASES["AVX2_VNNI_2"] == "AVX2_VNNI"
    assert onednn._rank("AVX512_CORE_AMX") == onednn._rank("AVX10_1_512_AMX") == 8
    assert onednn._rank("AVX512_CORE_FP16") == 7 and onednn._rank("AVX10_1_512_AMX_FP16") == 9
    assert onednn._rank("NOPE") == -1
    path = onednn.bf16_path(["avx512_bf16"], {"ONEDNN_MAX_CPU_ISA": "avx512_core_vnni "})
    assert path == onednn.Bf16Path(False, "", "ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI caps oneDNN below "
                                              "AVX512_CORE_BF16 (this CPU has avx512_bf16)")


def test_temperature_lines_from_a_slowdown_threshold_at_or_below_the_margin_are_the_tables() -> None:
    table = gpu_health.TempLimits(gpu_health.FALLBACK_WARN_C, gpu_health.FALLBACK_CRIT_C, "table")
    assert gpu_health.temperature_limits(gpu_health.WARN_MARGIN_C) == table
    assert gpu_health.temperature_limits(5) == table and gpu_health.temperature_limits(None) == table
    assert gpu_health.temperature_limits(11) == gpu_health.TempLimits(1.0, 11.0, "nvml")
    assert gpu_health.temperature_limits(90, crit_c=80) == gpu_health.TempLimits(70.0, 80.0, "config")
    assert gpu_health.temperature_limits(90, warn_c=60) == gpu_health.TempLimits(60.0, 90.0, "config")


def test_a_cpuset_that_splits_a_core() -> None:
    c = Cpu(online=(0, 1, 2, 3), logical=4, physical=2, cores=((0, 2), (1, 3)), allowed_cpus=(0, 1, 3))
    assert cpu.allowed_cores(c) == [(0,), (1, 3)] and cpu.thread_budget(c) == 2 and cpu.workers(c) == 0
    lone = Cpu(online=(0, 1, 2, 3, 4), logical=5, physical=2, cores=((0, 2), (1, 3)), allowed_cpus=(4, 0, 9))
    assert cpu.allowed_cores(lone) == [(0,), (4,), (9,)]
    big = Cpu(online=tuple(range(16)), logical=16, physical=8, cores=tuple((i, i + 8) for i in range(8)),
              allowed_cpus=tuple(range(16)))
    assert cpu.workers(big) == 4 and cpu.usable_cpus(big) == 16 and cpu.thread_budget(big) == 8
    six = Cpu(online=tuple(range(12)), logical=12, physical=6, cores=tuple((i, i + 6) for i in range(6)),
              allowed_cpus=tuple(range(12)))
    assert cpu.workers(six) == 3  # half of the 6 physical cores, not of the 12 logical CPUs
    assert cpu.workers(Cpu(online=(), logical=0, physical=0, cores=(), allowed_cpus=())) is None


def test_disk_read_figure_of_an_unknown_kind_is_none() -> None:
    assert bandwidth.disk_expected_mbps("") is None and bandwidth.disk_expected_mbps("hdd") == 100.0
