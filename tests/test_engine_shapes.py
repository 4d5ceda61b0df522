"""The multiples-of-8 warning (hosttune/engine/shapes.py) and the precision line the engine says at start
(hosttune/engine/precision.py amp_note; the bf16 path from hosttune/policy/onednn.py). CPU-independent: the CUDA
device type and the CPU's flags are faked; the run-level test trains on this CPU and holds whatever it has."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine import precision  # noqa: E402
from hosttune.engine.models import GPT  # noqa: E402
from hosttune.engine.shapes import odd_shapes, shape_warning  # noqa: E402
from hosttune.policy import onednn  # noqa: E402

CPU = torch.device("cpu")


class Mixed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(65, 128)  # a character vocabulary: 65 rows
        self.fc = nn.Linear(128, 100)
        self.ok = nn.Linear(96, 64)
        self.stem = nn.Conv2d(3, 24, 3)  # the image's 3 channels are not a choice
        self.conv = nn.Conv2d(24, 30, 3)


def test_every_odd_dimension_is_named_with_its_layer() -> None:
    odd = odd_shapes(Mixed(), micro_batch_size=12)
    assert odd == ["emb (num_embeddings 65)", "fc (out_features 100)", "conv (out_channels 30)",
                   "micro_batch_size 12"]
    line = shape_warning(Mixed(), 12, "cuda", amp=True)
    assert line is not None and "\n" not in line
    for name in odd:
        assert name in line
    assert "multiples of 8" in line and "NVIDIA" in line


def test_only_cuda_runs_under_autocast_are_warned() -> None:
    assert shape_warning(Mixed(), 12, "cpu", amp=True) is None  # no tensor cores
    assert shape_warning(Mixed(), 12, "cpu", amp=False) is None
    assert shape_warning(Mixed(), 12, "cuda", amp=False) is None  # fp32 (TF32) has its own, looser rule
    aligned = nn.Sequential(nn.Embedding(64, 128), nn.Linear(128, 512), nn.Conv2d(3, 16, 3))
    assert shape_warning(aligned, 32, "cuda", amp=True) is None


def test_gpt_tiny_names_its_vocabulary_twice_and_nothing_else() -> None:
    model = GPT(vocab_size=65, block_size=64, n_layer=2, n_head=4, n_embd=128, dropout=0.0)
    assert odd_shapes(model, 32) == ["tok (num_embeddings 65)", "head (out_features 65)"]


def test_a_long_list_is_cut_and_counted() -> None:
    model = nn.Sequential(*[nn.Linear(8, 9) for _ in range(10)])
    line = shape_warning(model, 8, "cuda", amp=True)
    assert line is not None and "and 4 more" in line and "9 (" not in line


AMX = onednn.Bf16Path(True, "amx_bf16", "oneDNN AMX kernels")
AVX512 = onednn.Bf16Path(True, "avx512_bf16", "oneDNN AVX-512 BF16 kernels")
NONE = onednn.Bf16Path(False, "", "this CPU has no avx512_bf16/amx_bf16")


@pytest.mark.parametrize("amp,path,dtype,line", [
    ("auto", AMX, torch.bfloat16, "amp: bf16 on CPU (amx_bf16: oneDNN AMX kernels)"),
    ("auto", AVX512, torch.bfloat16, "amp: bf16 on CPU (avx512_bf16: oneDNN AVX-512 BF16 kernels)"),
    ("auto", NONE, None, "amp off: this CPU has no avx512_bf16/amx_bf16, bf16 would be emulated"),
    ("bf16", NONE, torch.bfloat16, "amp: bf16 on CPU as asked (amp=bf16), emulated: this CPU has no "
                                   "avx512_bf16/amx_bf16; amp=auto would train in fp32"),
    ("off", AMX, None, "amp off: amp=off asked for (fp32)"),
])
def test_the_engine_says_which_bf16_path_it_took_on_cpu(amp, path, dtype, line) -> None:
    assert precision.resolve_amp(amp, CPU, cpu_path=path) is dtype
    assert precision.amp_note(amp, CPU, dtype, path) == line


@pytest.mark.parametrize("flags,env,dtype", [
    ("fpu avx2 fma", {}, None),
    ("fpu avx2 avx512f avx512bw avx512vl avx512_bf16", {}, torch.bfloat16),
    ("fpu avx2 avx512f avx512bw avx512vl avx512_bf16 amx_tile amx_bf16", {}, torch.bfloat16),
    # a cap below the bf16 ISA makes auto train in fp32, and says so
    ("fpu avx2 avx512f avx512bw avx512vl avx512_bf16 amx_tile amx_bf16", {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
     None),
    ("fpu avx2 avx512f avx512bw avx512vl avx512_bf16", {"DNNL_MAX_CPU_ISA": "avx2"}, None),
])
def test_amp_auto_on_cpu_follows_the_flags_and_the_caps(flags, env, dtype) -> None:
    path = precision.cpu_bf16_path(f"processor\t: 0\nflags\t\t: {flags}\n", env)
    assert precision.resolve_amp("auto", CPU, cpu_path=path) is dtype
    note = precision.amp_note("auto", CPU, dtype, path)
    if env:
        assert note.startswith("amp off: ") and next(iter(env)) in note
    assert precision.cpu_has_fast_bf16(f"flags : {flags}\n", env) is (dtype is not None)


def test_a_cpu_run_says_its_precision_and_never_the_shape_warning(tmp_path: Path, capsys) -> None:
    from hosttune.engine.api import fit

    g = torch.Generator().manual_seed(0)
    x = torch.randn(96, 8, generator=g)
    data = torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())
    model = nn.Sequential(nn.Linear(8, 13), nn.ReLU(), nn.Linear(13, 3))  # odd everywhere, micro-batch 12 too
    fit(model, data, nn.functional.cross_entropy, steps=2, micro_batch_size=12, device="cpu", warmup_steps=1,
        log_interval=1, run_dir=str(tmp_path / "run"))
    err = capsys.readouterr().err
    path = precision.cpu_bf16_path()
    want = precision.amp_note("auto", CPU, torch.bfloat16 if path.native else None, path)
    assert f"hosttune.engine: {want}\n" in err
    assert "not multiples of 8" not in err
