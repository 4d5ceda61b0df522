"""Pins for mutation round 4's engine survivors (issue 21): a symlinked step directory is not a checkpoint, and a
text shard is tokenised to its last character."""
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import checkpoint as ckpt  # noqa: E402
from hosttune.engine.data import ShardedText, write_text_shards  # noqa: E402


def test_a_symlinked_step_directory_is_not_taken_as_a_checkpoint(tmp_path: Path) -> None:
    d = tmp_path / "ckpt"
    (d / "step-1").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (d / "step-9").symlink_to(elsewhere, target_is_directory=True)  # planted: the newest-looking step
    assert ckpt.list_checkpoints(d) == [d / "step-1"]


def test_a_shards_windows_reach_its_last_character(tmp_path: Path) -> None:
    text = "abcdefgh\nijklmnopz"  # one shard; 'z' appears only as its last character
    index = write_text_shards(text, tmp_path, "t", 1)
    ds = ShardedText(index, block_size=4)
    n = ds.windows(len(text))
    got = [(x, y) for _, (x, y) in zip(range(n), ds.iter_part(0, 1))]  # one pass: every window once
    assert all(len(x) == 4 and len(y) == 4 for x, y in got)
    last = ds.stoi["z"]
    assert any(int(y[-1]) == last for _, y in got)


def _train_state() -> "Any":
    from hosttune.engine import state

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    return state.TrainState(model, optimizer, scheduler, torch.amp.GradScaler("cpu", enabled=False),
                            torch.Generator().manual_seed(0))


def test_only_rank_0_sets_an_unusable_checkpoint_aside(tmp_path: Path) -> None:
    """Every rank reads the checkpoints; had every rank renamed the bad one too, the second rename of a multi-rank
    resume finds nothing to rename and that rank dies. Here the rank-1 side of such a resume, in this process (its
    barrier and agreement are a real group's only with world > 1): it falls back and leaves the renaming alone."""
    from hosttune.engine import state
    from hosttune.engine.config import Config
    from hosttune.engine.metrics import Metrics
    from hosttune.engine.runtime import Runtime

    cpu = torch.device("cpu")
    rt0 = Runtime(1, 0, 0, cpu, None, False, run_dir=tmp_path)
    st = _train_state()
    for step in (1, 2):
        st.step = step
        state.save_checkpoint(st, Config(model="custom"), rt0)
    bad = rt0.ckpt_dir / "step-0000002"
    (bad / "state.pt").write_bytes(b"not a checkpoint")
    metrics = Metrics(tmp_path, True, 4, 0)
    try:
        rt1 = Runtime(1, 1, 1, cpu, None, False, run_dir=tmp_path)
        assert state.load_checkpoint(_train_state(), Config(model="custom", resume=True), rt1, metrics, None) == 1
        assert bad.is_dir() and not bad.with_name("step-0000002.unusable").exists()  # rank 1 renamed nothing
        assert state.load_checkpoint(_train_state(), Config(model="custom", resume=True), rt0, metrics, None) == 1
    finally:
        metrics.close()
    assert not bad.exists() and bad.with_name("step-0000002.unusable").is_dir()  # rank 0 did


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the peak of the CUDA allocator needs a GPU")
def test_peak_gpu_memory_is_the_peak_not_the_current_allocation() -> None:
    from hosttune.engine.metrics import peak_memory_mb

    dev = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.reset_peak_memory_stats(dev)
    big = torch.empty(256 * 2**20, dtype=torch.uint8, device=dev)  # 256 MiB, then freed: the peak keeps it
    del big
    torch.cuda.synchronize(dev)
    assert peak_memory_mb(dev) >= 256
    assert torch.cuda.memory_allocated(dev) / 2**20 < 256  # what the current allocation would have said
