"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/models.py: each bundled block computes what
its architecture says, checked against the same layers applied by hand (eval mode, random normalisation statistics
and affine parameters, so that no layer is an identity): the residual CNN block (conv-bn-relu-conv-bn plus the
shortcut, then relu), the pre-LayerNorm transformer block, GPT's whole forward (positions, final LayerNorm, tied
head), and the initialisation (zero biases, GPT-2's scaled residual projections)."""

import math

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from hosttune.engine.models import GPT, BasicBlock, Block  # noqa: E402


def _randomise(model: nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
            m.weight.data = torch.rand(m.weight.shape, generator=g) + 0.5
            m.bias.data = torch.randn(m.bias.shape, generator=g)
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean = torch.randn(m.running_mean.shape, generator=g)
            m.running_var = torch.rand(m.running_var.shape, generator=g) + 0.5


def _bn(m: nn.BatchNorm2d, x: torch.Tensor) -> torch.Tensor:
    return F.batch_norm(x, m.running_mean, m.running_var, m.weight, m.bias, False, 0.0, m.eps)


@pytest.mark.parametrize("cin,cout,stride", [(4, 4, 1), (4, 8, 2)])
def test_the_residual_block_by_hand(cin: int, cout: int, stride: int) -> None:
    torch.manual_seed(0)
    b = BasicBlock(cin, cout, stride).eval()
    _randomise(b, 1)
    assert (b.short is None) is (stride == 1 and cin == cout)
    x = torch.randn(2, cin, 8, 8)
    out = _bn(b.bn2, F.conv2d(F.relu(_bn(b.bn1, F.conv2d(x, b.conv1.weight, None, stride, 1))), b.conv2.weight,
                              None, 1, 1))
    short = x if b.short is None else _bn(b.short[1], F.conv2d(x, b.short[0].weight, None, stride))
    with torch.no_grad():
        assert torch.allclose(b(x), F.relu(out + short), atol=1e-5)


def _attn(blk: Block, x: torch.Tensor, n_head: int) -> torch.Tensor:
    b, t, c = x.shape
    q, k, v = F.linear(x, blk.attn.qkv.weight, blk.attn.qkv.bias).split(c, dim=2)
    q, k, v = (z.view(b, t, n_head, c // n_head).transpose(1, 2) for z in (q, k, v))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(c // n_head)
    att = att.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
    y = (att @ v).transpose(1, 2).reshape(b, t, c)
    return F.linear(y, blk.attn.proj.weight, blk.attn.proj.bias)


def _block(blk: Block, x: torch.Tensor, n_head: int) -> torch.Tensor:
    x = x + _attn(blk, F.layer_norm(x, x.shape[-1:], blk.ln1.weight, blk.ln1.bias), n_head)
    h = F.layer_norm(x, x.shape[-1:], blk.ln2.weight, blk.ln2.bias)
    fc, proj = blk.mlp[0], blk.mlp[2]
    assert fc.out_features == 4 * x.shape[-1] and isinstance(blk.mlp[1], nn.GELU)
    return x + F.linear(F.gelu(F.linear(h, fc.weight, fc.bias)), proj.weight, proj.bias)


def test_the_transformer_block_and_gpt_by_hand() -> None:
    torch.manual_seed(0)
    model = GPT(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16).eval()
    _randomise(model, 2)
    for p in model.parameters():  # non-zero biases too
        if p.dim() == 1:
            p.data.normal_(0, 0.1)
    idx = torch.randint(0, 11, (3, 6))
    x = model.tok.weight[idx] + model.pos.weight[:6]
    with torch.no_grad():
        for blk in model.blocks:
            got = blk(x)
            x = _block(blk, x, 2)
            assert torch.allclose(got, x, atol=1e-5)
        want = F.linear(F.layer_norm(x, (16,), model.ln_f.weight, model.ln_f.bias), model.tok.weight)
        assert torch.allclose(model(idx), want, atol=1e-5)
    assert model.head.weight is model.tok.weight and model.head.bias is None


def test_gpt_initialisation() -> None:
    torch.manual_seed(0)
    model = GPT(vocab_size=65, block_size=64, n_layer=8, n_head=4, n_embd=128)
    for name, p in model.named_parameters():
        if name.endswith(".bias") and "ln" not in name:  # the Linear layers' (LayerNorm's start at zero anyway)
            assert torch.count_nonzero(p) == 0, name
    std = {n: p.std().item() for n, p in model.named_parameters()}
    assert std["blocks.3.attn.proj.weight"] == pytest.approx(0.02 / 4, rel=0.1)
    assert std["blocks.3.mlp.2.weight"] == pytest.approx(0.02 / 4, rel=0.1)
    assert std["blocks.3.mlp.0.weight"] == pytest.approx(0.02, rel=0.1)
    assert std["tok.weight"] == pytest.approx(0.02, rel=0.1) and std["pos.weight"] == pytest.approx(0.02, rel=0.1)
