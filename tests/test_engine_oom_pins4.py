"""Pins (issue 21, round 4) for hosttune/engine/oom.py: the whole advice list for each stage a run can be at, and the
report's lines (CPU device: no allocator summary)."""

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import oom  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402

FRAG = "reduce fragmentation: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (hosttune's profiles set it)"
ZERO1 = "shard the optimizer state across ranks (AdamW keeps two fp32 values per parameter): --set shard=zero1"
FSDP = "shard parameters, gradients and optimizer state (FSDP): --set shard=fsdp"
OFFLOAD = "keep the sharded state in host memory, at the cost of PCIe traffic: --set offload=cpu"
AC = "recompute activations instead of storing them: --set activation_checkpointing=true"
AMP = "halve activation memory with mixed precision: --set amp=auto"
ALL_ON = "everything is on: the model needs more GPUs (more ranks to shard over) or larger GPUs"


def cfg(**kw: Any) -> Any:
    base = dict(micro_batch_size=1, grad_accum=1, amp="bf16", model="gpt-tiny", activation_checkpointing=False,
                ac_mode="full", ac_every=1, shard="none", offload="none")
    return SimpleNamespace(**{**base, **kw})


def test_a_fresh_gpt_run_gets_every_step_cheapest_first() -> None:
    assert oom.oom_advice(cfg(micro_batch_size=8, grad_accum=3, amp="off")) == [
        "halve the micro-batch and keep the effective batch: --set micro_batch_size=4 --set grad_accum=6",
        AMP, AC, ZERO1, FSDP, FRAG]


def test_a_micro_batch_of_two_halves_to_one_and_three_shrinks_to_one() -> None:
    assert oom.oom_advice(cfg(micro_batch_size=2))[0] == (
        "halve the micro-batch and keep the effective batch: --set micro_batch_size=1 --set grad_accum=2")
    assert oom.oom_advice(cfg(micro_batch_size=3, grad_accum=2))[0] == (
        "shrink the micro-batch and keep the effective batch: --set micro_batch_size=1 --set grad_accum=6")


def test_mixed_precision_is_only_advised_when_off() -> None:
    for amp in ("auto", "bf16", "fp16"):
        assert AMP not in oom.oom_advice(cfg(amp=amp))


def test_resnet_is_never_told_to_checkpoint_activations() -> None:
    assert oom.oom_advice(cfg(model="resnet-tiny")) == [ZERO1, FSDP, FRAG]
    assert oom.oom_advice(cfg(model="resnet-tiny", activation_checkpointing=True, ac_mode="selective_op")) == [
        ZERO1, FSDP, FRAG]


def test_selective_checkpointing_is_told_to_go_full() -> None:
    assert oom.oom_advice(cfg(activation_checkpointing=True, ac_mode="selective_op"))[0] == (
        "recompute every block, not only some of its activations (ac_mode=selective_op): --set ac_mode=full")
    assert oom.oom_advice(cfg(activation_checkpointing=True, ac_mode="selective_layer", ac_every=2))[0] == (
        "recompute every block, not only some of its activations (ac_mode=selective_layer): --set ac_mode=full "
        "--set ac_every=1")
    assert oom.oom_advice(cfg(activation_checkpointing=True)) == [ZERO1, FSDP, FRAG]


def test_the_sharding_stages_in_turn() -> None:
    full = dict(activation_checkpointing=True)
    assert oom.oom_advice(cfg(shard="zero1", **full)) == [FSDP, FRAG]
    assert oom.oom_advice(cfg(shard="fsdp", **full)) == [OFFLOAD, FRAG]
    assert oom.oom_advice(cfg(shard="fsdp", offload="", **full)) == [OFFLOAD, FRAG]
    assert oom.oom_advice(cfg(shard="fsdp", offload="cpu", **full)) == [ALL_ON, FRAG]
    # not everything on: a micro-batch left to shrink, or selective checkpointing, is said instead
    assert ALL_ON not in oom.oom_advice(cfg(shard="fsdp", offload="cpu", micro_batch_size=2, **full))
    assert ALL_ON not in oom.oom_advice(cfg(shard="fsdp", offload="cpu", activation_checkpointing=True,
                                            ac_mode="selective_op"))
    assert ALL_ON not in oom.oom_advice(cfg(shard="fsdp", offload="cpu"))


def test_a_config_without_shard_fields_is_read_as_none() -> None:
    c = SimpleNamespace(micro_batch_size=1, grad_accum=1, amp="bf16", model="gpt-tiny", activation_checkpointing=True,
                        ac_mode="full", ac_every=1)
    assert oom.oom_advice(c) == [ZERO1, FSDP, FRAG]
    assert oom.oom_advice(cfg(shard=None, offload=None, activation_checkpointing=True)) == [ZERO1, FSDP, FRAG]


def test_the_snapshot_comes_first(tmp_path: Path) -> None:
    p = tmp_path / "oom-snapshot.pickle"
    advice = oom.oom_advice(cfg(activation_checkpointing=True), p)
    assert advice == [oom.snapshot_advice(p), ZERO1, FSDP, FRAG]
    assert advice[0] == (f"see which tensors held the memory, and where they were allocated: open the memory "
                         f"snapshot {p} at https://pytorch.org/memory_viz (drag the file onto the page; it stays "
                         f"in the browser)")


def test_the_report_on_a_cpu_device() -> None:
    c = Config(micro_batch_size=4, grad_accum=1, amp="off", device="cpu")
    exc = RuntimeError("CUDA out of memory. Tried to allocate 2 GiB\nmore detail")
    lines = oom.oom_report(exc, c, torch.device("cpu")).splitlines()
    assert lines[0] == "hosttune.engine: error: out of GPU memory (CUDA out of memory. Tried to allocate 2 GiB)"
    assert lines[1] == "advice:"
    assert lines[2] == ("  - halve the micro-batch and keep the effective batch: --set micro_batch_size=2 "
                        "--set grad_accum=2")
    assert lines[-1] == f"  - {FRAG}"
    assert oom.oom_report(RuntimeError(), c, torch.device("cpu")).splitlines()[0] == (
        "hosttune.engine: error: out of GPU memory (OOM)")


def test_snapshot_paths_per_rank(tmp_path: Path) -> None:
    assert oom.snapshot_path(tmp_path, 0, 1) == tmp_path / "oom-snapshot.pickle"
    assert oom.snapshot_path(tmp_path, 3, 4) == tmp_path / "oom-snapshot-rank3.pickle"
    assert oom.snapshot_path(tmp_path, 0, 2) == tmp_path / "oom-snapshot-rank0.pickle"


def test_the_snapshot_file_is_mode_0644_and_named_on_the_exception(tmp_path: Path) -> None:
    class Memory:
        def _snapshot(self) -> Any:
            return {"segments": [], "device_traces": []}

    exc = RuntimeError("oom")
    path = oom.record_oom(exc, Memory(), tmp_path, 1, 2)
    assert path == tmp_path / "oom-snapshot-rank1.pickle"
    assert (path.stat().st_mode & 0o777) == 0o644
    assert getattr(exc, oom.SNAPSHOT_ATTR) == path
    assert oom.record_oom(RuntimeError("oom"), None, tmp_path, 0, 1) is None
