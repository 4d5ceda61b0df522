"""float8 training through torchao (hosttune/engine/float8.py): where it runs (compute capability >= 8.9, torchao,
not amp=fp16, not CPU offload) and the one line where it does not, the module filter (Linear layers with both
dimensions multiples of 16, never the output head), and the swap itself where torchao installs (emulated float8
GEMMs on CPU, torchao's own switch). The CUDA paths are not run on a GPU here: the capability is faked."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine import float8  # noqa: E402
from hosttune.engine.config import Config, ConfigError  # noqa: E402
from hosttune.engine.errors import EngineError  # noqa: E402
from hosttune.engine.models import GPT  # noqa: E402


@pytest.mark.parametrize("device,capability,torchao,amp,offload,refused", [
    ("cuda", (9, 0), True, "auto", "none", None),  # H100/H200
    ("cuda", (8, 9), True, "bf16", "none", None),  # L4/L40/RTX 40xx
    ("cuda", (10, 0), True, "off", "none", None),  # B200, fp32 around the float8 matmuls
    ("cpu", None, True, "auto", "none", "this run is on cpu"),
    ("cuda", (8, 0), True, "auto", "none", "this GPU is 8.0"),  # A100: no float8 tensor cores
    ("cuda", (8, 6), True, "auto", "none", "this GPU is 8.6"),
    ("cuda", (9, 0), False, "auto", "none", "pip install torchao"),
    ("cuda", (9, 0), True, "fp16", "none", "not amp=fp16"),
    ("cuda", (9, 0), True, "auto", "cpu", "offload=cpu is not supported"),
])
def test_where_float8_runs(device, capability, torchao, amp, offload, refused) -> None:
    why = float8.refusal(device, capability, torchao, amp, offload)
    if refused is None:
        assert why is None
    else:
        assert why is not None and refused in why and "\n" not in why and why.startswith("float8=true")


def test_config_refuses_what_it_can_tell_without_a_device() -> None:
    assert Config(float8=True).float8 and not Config().float8
    with pytest.raises(ConfigError, match="float8=true needs a CUDA GPU"):
        Config(float8=True, device="cpu")
    with pytest.raises(ConfigError, match="not amp=fp16"):
        Config(float8=True, amp="fp16", device="cuda")


def _gpt() -> GPT:
    return GPT(vocab_size=65, block_size=64, n_layer=2, n_head=4, n_embd=128)


def test_the_filter_takes_16_aligned_linears_and_never_the_head() -> None:
    model = _gpt()
    keep = float8.module_filter(model)
    chosen = [name for name, m in model.named_modules() if keep(m, name)]
    assert chosen == ["blocks.0.attn.qkv", "blocks.0.attn.proj", "blocks.0.mlp.0", "blocks.0.mlp.2",
                      "blocks.1.attn.qkv", "blocks.1.attn.proj", "blocks.1.mlp.0", "blocks.1.mlp.2"]
    assert float8.output_head(model) == "head" and not keep(model.head, "head")
    assert not keep(model.tok, "tok")  # embeddings are not Linear
    odd = nn.Sequential(nn.Linear(128, 130), nn.Linear(130, 64), nn.Linear(64, 64), nn.Linear(64, 10))
    keep = float8.module_filter(odd, skip=("2",))
    assert [n for n, m in odd.named_modules() if keep(m, n)] == []  # 130 is not a multiple of 16; "2" skipped
    assert [n for n, m in odd.named_modules() if float8.module_filter(odd)(m, n)] == ["2"]  # "3" is the head


def test_the_start_line_says_what_was_converted_and_asks_for_compile() -> None:
    names = [f"blocks.{i}.mlp.0" for i in range(6)]
    line = float8.start_line(names, compiled=False)
    assert "6 Linear layer(s)" in line and "and 2 more" in line and "compile=true" in line
    assert "compile=true" not in float8.start_line(names, compiled=True)


def test_float8_on_a_cpu_run_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's CLI run in this process (tests/_enginemainhelp.py; issue 21: torch is here already; the real
    process's EngineError -> one line, exit 2: test_engine_images' real-CLI test), on a host without a usable GPU
    (also on a GPU machine: CUDA is reported unavailable, as CUDA_VISIBLE_DEVICES="" did for the process)."""
    from _enginemainhelp import engine_here

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = engine_here("--preset", "gpt-tiny", "--set", "float8=true", "--set", "steps=1", "--set",
                      f"run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode == 2, out
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "float8=true needs a CUDA GPU" in lines[0] and "Traceback" not in out.stderr
    assert lines[0].startswith("hosttune.engine: error: "), lines
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_convert_without_torchao_is_one_clear_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torchao", None)  # import torchao raises ImportError
    monkeypatch.setitem(sys.modules, "torchao.float8", None)
    with pytest.raises(EngineError, match="pip install torchao"):
        float8.convert(_gpt())


def test_convert_refuses_a_model_with_nothing_to_convert() -> None:
    pytest.importorskip("torchao.float8")
    with pytest.raises(EngineError, match="nothing would train in float8"):
        float8.convert(nn.Sequential(nn.Linear(10, 30), nn.Linear(30, 10)))


def test_the_swap_on_cpu_with_emulated_float8_gemms() -> None:
    ao = pytest.importorskip("torchao.float8")
    from torchao.float8.float8_linear import Float8Linear

    torch.manual_seed(0)
    model = _gpt()
    ref = _gpt()
    ref.load_state_dict(model.state_dict())
    chosen = float8.convert(model, emulate=True)
    assert chosen == [n for n, m in model.named_modules() if isinstance(m, Float8Linear)]
    assert len(chosen) == 8 and type(model.head) is nn.Linear and model.head.weight is model.tok.weight
    assert set(model.state_dict()) == set(ref.state_dict())  # checkpoints keep their keys
    idx = torch.randint(0, 65, (4, 64))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(idx).float().logsumexp(-1).mean()
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters() if p.requires_grad)
    with torch.no_grad():  # float8 rounds: close to the bf16 model, not equal
        with torch.autocast("cpu", dtype=torch.bfloat16):
            a, b = model(idx).float(), ref(idx).float()
    assert (a - b).abs().max() < 0.5 * b.abs().max() and not torch.equal(a, b)
    assert ao is not None
