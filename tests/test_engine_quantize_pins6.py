"""Pins of mutation round 5 (issue 21) on hosttune/engine/quantize.py, the int8 export's pieces
(bench/mutants.py r5a-engine-int8-round, r5b-engine-int8-latency-budget): int8 conv weights are rounded to the
nearest step (not truncated toward zero), and the latency comparison times as many alternating runs as fit in its
20-second budget (never more than 15, never fewer than 3), on a clock that each forward advances (no real timing).
Small modules on CPU, in-process."""

import math
import warnings
from typing import Any, Callable, List

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from hosttune.engine import quantize  # noqa: E402


def test_int8_conv_weights_are_rounded_to_the_nearest_step() -> None:
    conv = nn.Conv2d(4, 1, 1, bias=False)
    with torch.no_grad():  # scale = 1.27 / 127 = 0.01: the steps are 0.6, -0.6, 63.7 and 127 of it
        conv.weight.copy_(torch.tensor([1.27, 0.006, -0.006, 0.637]).view(1, 4, 1, 1))
    q = quantize.Int8WeightConv2d(conv)
    assert q.weight_int8.view(-1).tolist() == [127, 1, -1, 64]
    assert q.weight_scale.tolist() == pytest.approx([0.01])


def test_int8_conv_error_is_at_most_half_a_step() -> None:
    torch.manual_seed(0)
    conv = nn.Conv2d(8, 16, 3, padding=1)
    q = quantize.Int8WeightConv2d(conv)
    scale = q.weight_scale.view(-1, 1, 1, 1)
    err = (conv.weight.detach() - q.weight_int8.float() * scale).abs()
    assert bool((err <= scale / 2 + 1e-7).all()), float((err / scale).max())
    x = torch.randn(2, 8, 5, 5)
    with torch.no_grad():
        ref, out = conv(x), q(x)
    assert out.shape == ref.shape
    assert float((out - ref).norm() / ref.norm()) < 0.01  # per-channel int8 of a random conv: ~0.3 %


def test_an_all_zero_output_channel_stays_zero() -> None:
    conv = nn.Conv2d(2, 2, 1, bias=False)
    with torch.no_grad():
        conv.weight.zero_()
        conv.weight[1] = 0.5
    q = quantize.Int8WeightConv2d(conv)
    assert q.weight_scale.tolist() == pytest.approx([1.0, 0.5 / 127])
    assert q.weight_int8.view(2, 2).tolist() == [[0, 0], [127, 127]]


class _Clock:
    """quantize's `time`: perf_counter is a counter each fake forward advances by its cost."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


def _timed(monkeypatch: pytest.MonkeyPatch, fp32_s: float, int8_s: float):
    clock = _Clock()
    monkeypatch.setattr(quantize, "time", clock)
    calls: List[str] = []

    def forward(name: str, cost: float) -> Callable[[Any], Any]:
        def run(x: Any) -> Any:
            calls.append(name)
            clock.now += cost
            return x
        return run

    fp32_ms, int8_ms, runs = quantize.latency_ms(forward("fp32", fp32_s), forward("int8", int8_s), torch.zeros(1))
    return fp32_ms, int8_ms, runs, calls


@pytest.mark.parametrize("fp32_s, int8_s, runs", [
    (0.01, 0.01, 15),  # fast: all 15 runs
    (1.0, 0.5, 13),  # 1.5 s a pair: 13 pairs fit in 20 s
    (1.5, 0.5, 10),  # 2 s a pair: 10
    (5.0, 3.0, 3),  # 8 s a pair: 2 would fit, 3 is the floor
    (60.0, 60.0, 3),
])
def test_latency_runs_fill_the_20s_budget(monkeypatch: pytest.MonkeyPatch, fp32_s: float, int8_s: float,
                                          runs: int) -> None:
    fp32_ms, int8_ms, got, calls = _timed(monkeypatch, fp32_s, int8_s)
    assert got == runs
    # 3 untimed warm-up pairs, then the timed ones, alternating fp32/int8 (both see the same machine load)
    assert calls == ["fp32", "int8"] * (quantize.WARMUP_RUNS + runs)
    assert quantize.WARMUP_RUNS == 3
    assert fp32_ms == pytest.approx(fp32_s * 1e3) and int8_ms == pytest.approx(int8_s * 1e3)


def test_a_check_reports_the_run_count_in_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, runs, _ = _timed(monkeypatch, 1.5, 0.5)
    check = quantize.Int8Check(quantize.FORMAT, "x", 8, 0.01, 1.0, quantize.INT8_TOLERANCE, 10, 40, 1500.0, 500.0,
                               runs, 1, 8, "1 Linear")
    assert "median of 10: 500 ms vs 1.5e+03 ms fp32 (3.00x as fast)" in check.line()
    assert check.ok and check.record()["runs"] == 10 and not math.isnan(check.record()["rel_error"])


# ---- compare, quantize, write ---------------------------------------------------------------------------------------


def test_outputs_of_another_shape_are_an_infinite_error() -> None:
    model = nn.Linear(4, 3)
    batches = [(torch.randn(2, 4), None)]
    rel, top1, n = quantize.compare(lambda x: torch.zeros(2, 2), model, batches)
    assert rel == math.inf and top1 == 0.0 and n == 0


def test_zero_outputs_and_nan_outputs() -> None:
    zero = nn.Linear(4, 3)
    with torch.no_grad():
        zero.weight.zero_()
        zero.bias.zero_()
    batches = [(torch.randn(2, 4), None), (torch.randn(3, 4), None)]
    assert quantize.compare(zero, zero, batches)[0] == 0.0 and quantize.compare(zero, zero, batches)[2] == 5
    assert quantize.compare(lambda x: torch.ones(len(x), 3), zero, batches)[0] == math.inf  # all of it is error
    model = nn.Linear(4, 3)
    assert quantize.compare(lambda x: torch.full((len(x), 3), math.nan), model, batches)[0] == math.inf


def test_quantize_leaves_the_model_alone_and_says_what_it_changed() -> None:
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect"),
                          nn.Flatten(), nn.Linear(2 * 4 * 4, 8), nn.ReLU(), nn.Linear(8, 3))
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    q, what = quantize.quantize(model)
    assert what == "2 Linear (dynamic int8), 1 Conv2d (int8 weights)"
    assert model.training and not q.training
    assert type(model[0]) is nn.Conv2d and type(model[3]) is nn.Linear  # the original is untouched
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert isinstance(q[0], quantize.Int8WeightConv2d) and type(q[1]) is nn.Conv2d


def test_a_model_with_only_reflect_padded_convs_has_nothing_to_quantise() -> None:
    assert not quantize.has_quantizable(nn.Sequential(nn.Conv2d(1, 1, 3, padding=1, padding_mode="reflect")))
    assert quantize.has_quantizable(nn.Sequential(nn.ReLU(), nn.Sequential(nn.Conv2d(1, 1, 1))))
    assert not quantize.has_quantizable(nn.Sequential(nn.Embedding(4, 2)))


def test_write_publishes_a_checked_torchscript_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quantize, "LATENCY_RUNS", 3)
    monkeypatch.setattr(quantize, "WARMUP_RUNS", 1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).eval()
    batches = [(torch.randn(5, 16), None), (torch.randn(3, 16), None)]
    check = quantize.write(model, batches, tmp_path, model, 1234)
    assert check.ok and not check.skipped and check.samples == 8 and check.batch == 5
    assert check.rel_error < quantize.INT8_TOLERANCE and check.fp32_bytes == 1234 and check.runs == 3
    assert check.quantized == "2 Linear (dynamic int8), 0 Conv2d (int8 weights)"
    path = tmp_path / quantize.FILE_NAME
    assert check.path == str(path) and check.bytes == path.stat().st_size
    assert path.stat().st_mode & 0o777 == 0o644
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit's own, about the user's load call
        loaded = torch.jit.load(str(path))
    x = torch.randn(7, 16)  # another batch size than the traced one: the batch dimension stays dynamic
    with torch.no_grad():
        assert float((loaded(x) - model(x)).norm() / model(x).norm()) < quantize.INT8_TOLERANCE


def test_a_skipped_check_keeps_the_callers_tolerance(tmp_path) -> None:
    check = quantize.write(nn.Sequential(nn.ReLU()), [(torch.zeros(1, 2), None)], tmp_path, nn.ReLU(), 1, 0.2)
    assert check.skipped and check.tolerance == 0.2 and check.ok
    assert check.line() == ("hosttune.engine: export check: int8: not written: the model has no Linear or Conv2d "
                            "layer to quantise")
