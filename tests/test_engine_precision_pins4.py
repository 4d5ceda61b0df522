"""Pins (issue 21, round 4) for hosttune/engine/precision.py and shapes.py: the dtype per (amp, device), the start
line on a GPU, the scaler, MFU's dtype, and the shape warning's first-conv rule and cut. CPU only."""

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from hosttune.engine import precision  # noqa: E402
from hosttune.engine.errors import EngineError  # noqa: E402
from hosttune.engine.shapes import odd_shapes, shape_warning  # noqa: E402
from hosttune.policy.onednn import Bf16Path  # noqa: E402

CUDA = torch.device("cuda", 0)
CPU = torch.device("cpu")
NATIVE = Bf16Path(True, "avx512_bf16", "AVX-512 BF16 kernels")
EMULATED = Bf16Path(False, "", "no bf16 instructions")


@pytest.mark.parametrize("cap, want", [((9, 0), torch.bfloat16), ((8, 0), torch.bfloat16), ((7, 5), torch.float16),
                                       ((7, 0), torch.float16), ((6, 1), None), ((8, 9), torch.bfloat16)])
def test_auto_on_cuda_by_capability(cap: tuple, want: object) -> None:
    assert precision.resolve_amp("auto", CUDA, cap) is want


def test_asked_dtypes_on_cuda_and_cpu() -> None:
    assert precision.resolve_amp("bf16", CUDA, (6, 1)) is torch.bfloat16
    assert precision.resolve_amp("fp16", CUDA, (6, 1)) is torch.float16
    assert precision.resolve_amp("off", CUDA, (9, 0)) is None
    assert precision.resolve_amp("off", CPU, cpu_path=NATIVE) is None
    assert precision.resolve_amp("bf16", CPU, cpu_path=EMULATED) is torch.bfloat16
    assert precision.resolve_amp("auto", CPU, cpu_path=NATIVE) is torch.bfloat16
    assert precision.resolve_amp("auto", CPU, cpu_path=EMULATED) is None
    with pytest.raises(EngineError, match=r"^amp=fp16 needs CUDA \(GradScaler\); on CPU use amp=bf16 or amp=off$"):
        precision.resolve_amp("fp16", CPU, cpu_path=NATIVE)


def test_the_start_line_on_a_gpu() -> None:
    assert precision.amp_note("auto", CUDA, torch.bfloat16) == "amp: bf16 on cuda (amp=auto)"
    assert precision.amp_note("fp16", CUDA, torch.float16) == "amp: fp16 on cuda (amp=fp16)"
    assert precision.amp_note("auto", CUDA, None) == "amp off on cuda (amp=auto)"
    assert precision.amp_note("off", CPU, None, NATIVE) == "amp off: amp=off asked for (fp32)"
    assert precision.amp_note("auto", CPU, torch.bfloat16, NATIVE) == (
        "amp: bf16 on CPU (avx512_bf16: AVX-512 BF16 kernels)")
    assert precision.amp_note("bf16", CPU, torch.bfloat16, EMULATED) == (
        "amp: bf16 on CPU as asked (amp=bf16), emulated: no bf16 instructions; amp=auto would train in fp32")
    assert precision.amp_note("auto", CPU, None, EMULATED) == "amp off: no bf16 instructions, bf16 would be emulated"


def test_cpu_bf16_path_reads_the_flags_given() -> None:
    flags = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512bw avx512vl avx512_bf16\n"
    assert precision.cpu_bf16_path(flags, {}).native is True
    assert precision.cpu_has_fast_bf16(flags) is True
    assert precision.cpu_has_fast_bf16("flags\t\t: fpu sse avx2\n") is False
    assert precision.cpu_bf16_path("flags\t\t: fpu sse avx2\n", {}).native is False


def test_the_autocast_context() -> None:
    on = precision.autocast(CPU, torch.bfloat16)
    assert on.fast_dtype == torch.bfloat16 and on._enabled is True
    off = precision.autocast(CPU, None)
    assert off._enabled is False


def test_mfu_dtype() -> None:
    assert precision.mfu_dtype(torch.bfloat16, False, True) == "bf16"
    assert precision.mfu_dtype(torch.float16, False, True) == "fp16"
    assert precision.mfu_dtype(torch.bfloat16, False, False) == "bf16"
    assert precision.mfu_dtype(None, False, True) == "tf32" and precision.mfu_dtype(None, False, False) == "fp32"


class Convs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3)  # 3 input channels: the image's own, never named
        self.mid = nn.Conv2d(12, 16, 3)  # a later conv: its input channels are a choice
        self.fc = nn.Linear(16, 8)


def test_only_the_first_convolutions_input_channels_are_exempt() -> None:
    assert odd_shapes(Convs(), 8) == ["mid (in_channels 12)"]
    stem = nn.Sequential(nn.Conv2d(3, 10, 3))
    assert odd_shapes(stem, 16) == ["0 (out_channels 10)"]
    assert odd_shapes(nn.Embedding(64, 12), 8) == ["Embedding (embedding_dim 12)"]  # the root module: its type
    assert odd_shapes(nn.Linear(8, 8), 9) == ["micro_batch_size 9"]
    assert odd_shapes(nn.Linear(8, 8), 16) == []


def test_six_layers_are_named_and_the_seventh_is_counted() -> None:
    six = nn.Sequential(*[nn.Linear(8, 9) if i % 2 == 0 else nn.Linear(9, 8) for i in range(6)])
    line = shape_warning(six, 8, "cuda", amp=True)
    assert line is not None and "more" not in line and line.count("features 9") == 6
    assert line.startswith("hosttune.engine: warning: not multiples of 8, so tensor cores run them slower")
    assert line.endswith("5 (in_features 9); pad the vocabulary and choose sizes that are multiples of 8")
    seven = shape_warning(six, 7, "cuda", amp=True)
    assert seven is not None and "; and 1 more; pad" in seven and "micro_batch_size" not in seven
