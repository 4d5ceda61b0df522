"""Selective activation checkpointing (issue 25, "what trainers expect"; hosttune/engine/ac.py): ac_mode full,
selective_layer (every ac_every-th block) and selective_op (per op, torchtitan's policy). Each mode gives the
gradients of the run without checkpointing bit for bit (dropout on: the same masks), and recomputes what it says
and nothing else: counted by forward calls of the blocks, and by the ops a dispatch-mode observer sees run during
backward beyond those of the run without checkpointing. The hardware FLOPs (HFU) count exactly those recomputed
matmuls; the model FLOPs (MFU) none of them."""

import json
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from hosttune.engine import ac, metrics  # noqa: E402
from hosttune.engine.api import fit  # noqa: E402
from hosttune.engine.config import ConfigError, load_config  # noqa: E402
from hosttune.engine.models import GPT, lm_loss  # noqa: E402

aten = torch.ops.aten
VOCAB, T, N_LAYER, N_HEAD, C = 64, 16, 4, 2, 32
# The blocks' Linear layers by their weight's (in, out) as addmm sees it (the transposed weight is its third input).
QKV, PROJ, FC1, FC2 = (C, 3 * C), (C, C), (C, 4 * C), (4 * C, C)


class OpLog(TorchDispatchMode):
    """Every aten op that runs, with its tensor inputs' shapes."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: List[Tuple[Any, Tuple[Tuple[int, ...], ...]]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Optional[Dict[str, Any]] = None) -> Any:
        self.ops.append((func, tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor))))
        return func(*args, **(kwargs or {}))


def model(mode: Optional[str], every: int = 1, dropout: float = 0.1) -> Any:
    torch.manual_seed(0)
    m = GPT(VOCAB, T, N_LAYER, N_HEAD, C, dropout)
    ac.configure(m, mode is not None, mode or "full", every)
    return m.train()


def step(m: Any) -> Dict[str, Any]:
    """One forward and backward on a fixed batch with a fixed RNG: the gradients, each block's forward calls, the
    elements autograd kept for backward outside checkpointed regions (selective_op's kept outputs are held by its
    own cache, not counted), and the ops backward ran."""
    calls = [0] * N_LAYER
    for i, block in enumerate(m.blocks):
        # A pre-hook: a recompute stops early (torch's early_stop) once backward has what it needs, before the end.
        block.register_forward_pre_hook(lambda *_, i=i: calls.__setitem__(i, calls[i] + 1))
    kept = [0]

    def pack(t: Any) -> Any:
        kept[0] += t.numel()
        return t

    x = torch.randint(0, VOCAB, (4, T), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(2)  # the dropout masks
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = lm_loss(m(x), x)
    with OpLog() as log:
        loss.backward()
    return {"grads": {n: p.grad.clone() for n, p in m.named_parameters()}, "calls": calls, "kept": kept[0],
            "backward": Counter(log.ops)}


@pytest.fixture(scope="module")
def runs() -> Dict[Any, Dict[str, Any]]:
    """One step without checkpointing (None) and one in each mode, shared by the tests below."""
    return {mode: step(model(*mode) if mode else model(None))
            for mode in (None, ("full", 1), ("selective_layer", 2), ("selective_op", 1))}


@pytest.fixture(scope="module")
def plain(runs: Dict[Any, Dict[str, Any]]) -> Dict[str, Any]:
    return runs[None]


def recomputed(run: Dict[str, Any], plain: Dict[str, Any]) -> Counter:
    """The ops that ran in backward beyond plain backward's: the recomputed forward."""
    return run["backward"] - plain["backward"]


def count(ops: Counter, *funcs: Any) -> int:
    return sum(n for (f, _), n in ops.items() if f in funcs)


def matmul_weights(ops: Counter) -> Counter:
    """The recomputed Linear matmuls, by their weight's shape (addmm: bias, input, weight.t())."""
    return Counter({shapes[2]: n for (f, shapes), n in ops.items() if f == aten.addmm.default})


ATTENTION = tuple(ac.ATTENTION_OPS)


@pytest.mark.parametrize("mode, every", [("full", 1), ("selective_layer", 2), ("selective_op", 1)])
def test_every_mode_gives_the_gradients_of_the_run_without_checkpointing_bit_for_bit(
        runs: Dict[Any, Dict[str, Any]], plain: Dict[str, Any], mode: str, every: int) -> None:
    run = runs[(mode, every)]
    assert run["grads"].keys() == plain["grads"].keys()
    for name, grad in plain["grads"].items():
        assert torch.equal(run["grads"][name], grad), name


def test_full_recomputes_every_block(runs: Dict[Any, Dict[str, Any]], plain: Dict[str, Any]) -> None:
    run = runs[("full", 1)]
    assert run["calls"] == [2] * N_LAYER  # each block's forward runs again in backward
    again = recomputed(run, plain)
    # Attention: one fused op per block, or on CPU with dropout the math kernel's two bmm.
    assert count(again, *ATTENTION) in (N_LAYER, 2 * N_LAYER) and count(again, aten.gelu.default) == N_LAYER
    assert matmul_weights(again)[QKV] == N_LAYER and matmul_weights(again)[FC1] == N_LAYER


def test_selective_layer_recomputes_only_every_nth_block(runs: Dict[Any, Dict[str, Any]],
                                                         plain: Dict[str, Any]) -> None:
    run, full = runs[("selective_layer", 2)], runs[("full", 1)]
    assert run["calls"] == [1, 2, 1, 2]  # torchtitan's count: the 2nd and 4th block
    again, again_full = recomputed(run, plain), recomputed(full, plain)
    assert 2 * count(again, *ATTENTION) == count(again_full, *ATTENTION) > 0
    assert count(again, aten.gelu.default) == 2
    assert 2 * sum(matmul_weights(again).values()) == sum(matmul_weights(again_full).values())
    assert plain["kept"] > run["kept"] > full["kept"]


def test_selective_op_recomputes_the_cheap_ops_and_every_other_matmul_only(runs: Dict[Any, Dict[str, Any]],
                                                                          plain: Dict[str, Any]) -> None:
    run = runs[("selective_op", 1)]
    assert run["calls"] == [2] * N_LAYER  # every block is checkpointed ...
    again = recomputed(run, plain)
    assert count(again, *ATTENTION) == 0  # ... but attention is kept (on CPU with dropout: the math kernel's bmm),
    assert count(again, aten.bernoulli_.float) >= N_LAYER  # dropout draws again, from the restored RNG stream,
    weights = matmul_weights(again)
    assert weights[QKV] == 0 and weights[FC1] == 0  # the 1st and 3rd matmul of each block are kept,
    assert weights[PROJ] == N_LAYER  # the 2nd is recomputed (the residual add after it is needed by ln2)
    assert weights[FC2] <= N_LAYER  # (the 4th only where backward needs its output: early stop may skip it)
    assert count(again, aten.gelu.default) == N_LAYER and count(again, aten.native_layer_norm.default) >= N_LAYER


def test_the_op_policy_keeps_attention_and_odd_matmuls_and_never_a_random_draw() -> None:
    from torch.utils.checkpoint import CheckpointPolicy

    save, recompute = CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_RECOMPUTE
    policy = ac.op_policy()
    q = torch.zeros(1, 1, 4, 8)
    flash = aten._scaled_dot_product_flash_attention.default  # CUDA's kernel; only its schema is read here
    assert policy(None, flash, q, q, q, 0.0, True) == save
    # With dropout it draws random numbers: kept, it would not draw again in the recompute, and the dropout after it
    # would draw another mask than in forward (CUDA only: on CPU dropout takes the math kernel).
    assert policy(None, flash, q, q, q, 0.1, True) == recompute
    assert policy(None, flash, q, q, q, dropout_p=0.1) == recompute
    assert policy(None, aten.bernoulli_.float, q, 0.5) == recompute
    assert policy(None, aten.gelu.default, q) == recompute
    assert [policy(None, aten.addmm.default) for _ in range(4)] == [save, recompute, save, recompute]
    assert [ac.op_policy()(None, aten.mm.default) for _ in range(2)] == [save, save]  # each block call starts over


def no_autocast() -> Any:
    return torch.autocast("cpu", enabled=False)


def matmul_flops(ops: Counter) -> int:
    return sum(2 * shapes[1][0] * shapes[1][1] * shapes[2][1] * n for (f, shapes), n in ops.items()
               if f == aten.addmm.default)


@pytest.fixture(scope="module")
def step_flops() -> Any:
    """count_step_flops of model(mode, every) on one fixed batch, each (mode, every, recompute) counted once for the
    module: the cases below share the plain model's and the full mode's counts (each count costs a second of CPU)."""
    x = torch.randint(0, VOCAB, (4, T), generator=torch.Generator().manual_seed(1))
    counted: Dict[Tuple[Optional[str], int, bool], int] = {}

    def get(mode: Optional[str], every: int = 1, recompute: bool = False) -> int:
        if (mode, every, recompute) not in counted:
            counted[(mode, every, recompute)] = metrics.count_step_flops(model(mode, every), (x, x), lm_loss,
                                                                         no_autocast, recompute=recompute)
        return counted[(mode, every, recompute)]

    return get


@pytest.mark.parametrize("mode, every", [("selective_layer", 2), ("selective_op", 1)])
def test_hardware_flops_count_what_the_mode_recomputes_and_model_flops_none_of_it(
        runs: Dict[Any, Dict[str, Any]], plain: Dict[str, Any], step_flops: Any, mode: str, every: int) -> None:
    model_flops = step_flops(None)
    assert step_flops(mode, every) == model_flops
    hardware = step_flops(mode, every, recompute=True)
    full = step_flops("full", recompute=True)
    if mode == "selective_layer":  # half of the identical blocks
        assert 2 * (hardware - model_flops) == full - model_flops
    else:  # the recomputed matmuls the observer saw (attention is kept)
        assert hardware - model_flops == matmul_flops(recomputed(runs[(mode, every)], plain)) > 0
    assert model_flops < hardware < full


def test_a_run_reports_the_hfu_of_its_mode(tmp_path: Path) -> None:
    """The engine's wiring (config -> build -> metrics): a selective_op run's hfu/mfu is the FLOP ratio of a model
    checkpointed per op, which is below the full mode's."""
    run = tmp_path / "run"
    fit(config=load_config("gpt-tiny", None, [
        "n_layer=2", "n_embd=32", "n_head=2", "block_size=16", "micro_batch_size=4", "steps=1", "eval_batches=1",
        "log_interval=1", "warmup_steps=0", "amp=off", "device=cpu", "num_workers=0", "peak_tflops=0.000001",
        "dropout=0", "activation_checkpointing=true", "ac_mode=selective_op", f"run_dir={run}"]))
    rec = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    (logged,) = [r for r in rec if "step_time_s" in r]
    x = torch.randint(0, VOCAB, (4, 16))

    def ratio(mode: str) -> float:
        torch.manual_seed(0)
        m = GPT(VOCAB, 16, 2, 2, 32, 0.0)
        ac.configure(m, True, mode, 1)
        return (metrics.count_step_flops(m, (x, x), lm_loss, no_autocast, recompute=True)
                / metrics.count_step_flops(m, (x, x), lm_loss, no_autocast))

    # hfu and mfu are logged rounded to 5 decimals and shrink as the step gets slower (a busy machine): a peak of
    # 1 MFLOP/s keeps them far above the rounding, and the ratio is checked within what the rounding allows.
    r = ratio("selective_op")
    assert logged["mfu"] > 0
    assert abs(logged["hfu"] - r * logged["mfu"]) <= 5e-6 * (1 + r) + 1e-12
    assert 1 < r < ratio("full")


def test_the_settings_are_checked() -> None:
    for bad, needle in ((["ac_mode=selective_op"], "needs activation_checkpointing=true"),
                        (["activation_checkpointing=true", "ac_every=2"], "needs ac_mode=selective_layer"),
                        (["activation_checkpointing=true", "ac_mode=layer"], "ac_mode must be one of"),
                        (["activation_checkpointing=true", "ac_mode=selective_layer", "ac_every=0"],
                         "ac_every must be >= 1")):
        with pytest.raises(ConfigError, match=needle):
            load_config("gpt-tiny", None, bad)
    cfg = load_config("gpt-tiny", None, ["activation_checkpointing=true", "ac_mode=selective_layer", "ac_every=3"])
    assert (cfg.ac_mode, cfg.ac_every) == ("selective_layer", 3)
