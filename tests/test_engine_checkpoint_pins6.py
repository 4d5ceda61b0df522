"""Pins of mutation round 5 (issue 21) on hosttune/engine/checkpoint.py (bench/mutants.py
r5a-engine-rng-cuda-missing): a checkpoint whose RNG file holds no CUDA state (written by a CPU run) resumed by a
rank on a GPU puts back its python, numpy, torch and loader streams exactly and says nothing; it is not reseeded
with a 'not bit-exactly' warning. The resuming rank's Runtime names a CUDA device, which makes it take the GPU path;
the CUDA generator itself is never touched in that case, so this runs on the CPU build. In-process."""

import os
import random
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from torch import nn  # noqa: E402

from hosttune.engine import checkpoint as ckpt  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.runtime import Runtime  # noqa: E402
from hosttune.engine.state import TrainState, resume_offset  # noqa: E402


def _train_state() -> TrainState:
    model = nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return TrainState(model, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0),
                      torch.amp.GradScaler("cpu", enabled=False), torch.Generator())


def _draws(gen: torch.Generator) -> Tuple[Any, ...]:
    return (random.random(), float(np.random.rand()), torch.rand(3).tolist(),
            torch.randint(0, 1 << 30, (2,), generator=gen).tolist())


def _saved_by_a_cpu_run(tmp_path: Path) -> Tuple[Dict[str, Any], Tuple[Any, ...]]:
    """The rank file a CPU run writes (through the real save and read), and what its streams draw next."""
    random.seed(2)
    np.random.seed(3)
    torch.manual_seed(4)
    gen = torch.Generator().manual_seed(5)
    rank = {"rng": ckpt.rng_state(False), "loader": gen.get_state()}
    assert "cuda" not in rank["rng"]
    expected = _draws(gen)  # (the snapshot holds copies)
    ckpt.atomic_save(rank, tmp_path / "rng-rank0.pt")
    return torch.load(tmp_path / "rng-rank0.pt", weights_only=True), expected


def _resume(rank: Dict[str, Any], device: torch.device, tmp_path: Path, said: List[str]) -> Tuple[int, TrainState]:
    random.seed(99)
    np.random.seed(99)
    torch.manual_seed(99)  # the resuming process's streams start elsewhere
    st = _train_state()
    state = {"config": {"micro_batch_size": 4, "grad_accum": 1}, "world_size": 1, "pos": 2, "samples": 8,
             "epoch": 0, "rng": rank, "rng_problem": ""}
    rt = Runtime(1, 0, 0, device, None, False, tmp_path)
    return resume_offset(state, tmp_path, Config(micro_batch_size=4), rt, st, said.append), st


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_cpu_checkpoint_resumes_exactly_on_any_device(device: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    rank, expected = _saved_by_a_cpu_run(tmp_path)
    said: List[str] = []
    dev = torch.device(device, 0) if device == "cuda" else torch.device("cpu")
    offset, st = _resume(rank, dev, tmp_path, said)
    assert offset == 8 and said == []
    assert "not bit-exactly" not in capsys.readouterr().err
    assert _draws(st.loader_gen) == expected


def test_set_rng_state_without_cuda_state_restores_the_others() -> None:
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    saved = ckpt.rng_state(False)
    gen = torch.Generator()
    expected = _draws(gen)
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    ckpt.set_rng_state(saved, cuda=True)  # a GPU rank, a checkpoint without CUDA state: no error
    assert _draws(torch.Generator()) == expected


def test_cuda_state_is_ignored_by_a_cpu_rank() -> None:
    saved = dict(ckpt.rng_state(False), cuda="not for this rank")
    torch.manual_seed(1)
    want = torch.rand(2).tolist()
    torch.manual_seed(1)
    saved["torch"] = torch.get_rng_state()
    torch.manual_seed(2)
    ckpt.set_rng_state(saved, cuda=False)  # the CUDA entry is never read on a CPU rank
    assert torch.rand(2).tolist() == want


def test_a_malformed_rank_file_reseeds_and_warns(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rank, _ = _saved_by_a_cpu_run(tmp_path)
    del rank["rng"]["numpy"]
    said: List[str] = []
    offset, _ = _resume(rank, torch.device("cpu"), tmp_path, said)
    assert offset == 8
    err = capsys.readouterr().err
    assert "rng-rank0.pt is unreadable (malformed RNG state): resuming continues, but not bit-exactly" in err
    seeded = random.random()
    random.seed(Config().seed)  # rank 0 is reseeded from the run's seed
    assert seeded == random.random()


# ---- what load() accepts and how it says what it does not ------------------------------------------------------------

CPU = torch.device("cpu")


def _shared(**over: Any) -> Dict[str, Any]:
    state: Dict[str, Any] = {"model": {"w": torch.ones(2)}, "optimizer": {}, "scheduler": {}, "scaler": {},
                             "step": 4, "epoch": 1, "pos": 2, "samples": 8, "world_size": 1, "config": {}}
    state.update(over)
    return {k: v for k, v in state.items() if v is not _DROP}


_DROP = object()


def _step_dir(tmp_path: Path, state: Any, rng: Any = _DROP) -> Path:
    d = tmp_path / "checkpoints" / "step-0000004"
    d.mkdir(parents=True)
    ckpt.atomic_save(state, d / "state.pt")
    if rng is not _DROP:
        ckpt.atomic_save(rng, d / "rng-rank0.pt")
    return d


@pytest.mark.parametrize("state, reason", [
    ([1, 2], "state.pt holds list, not a checkpoint"),
    (_shared(step=True), "state.pt has no valid 'step'"),
    (_shared(model=_DROP), "state.pt has no valid 'model'"),
    (_shared(optimizer=[]), "state.pt has no valid 'optimizer'"),
    (_shared(pos=-1), "state.pt has a negative step, epoch or position"),
    (_shared(epoch=-1), "state.pt has a negative step, epoch or position"),
    (_shared(samples=-1), "state.pt has no valid 'samples'"),
    (_shared(world_size=0), "state.pt has no valid 'world_size'"),
    (_shared(world_size=False), "state.pt has no valid 'world_size'"),
    (_shared(config=[]), "state.pt has no valid 'config'"),
    (_shared(shard="zero3"), "state.pt has no valid 'shard'"),
    (_shared(shard="fsdp"), "dcp/.metadata is missing"),
])
def test_a_state_that_does_not_fit_is_unusable_with_its_reason(tmp_path: Path, state: Any, reason: str) -> None:
    d = _step_dir(tmp_path, state)
    with pytest.raises(ckpt.Unusable) as exc:
        ckpt.load(d, 0, CPU)
    assert str(exc.value).startswith(reason), str(exc.value)


def test_an_older_checkpoint_without_samples_or_world_size_loads(tmp_path: Path) -> None:
    d = _step_dir(tmp_path, _shared(samples=_DROP, world_size=_DROP, config=_DROP), rng={"rng": {}})
    state = ckpt.load(d, 0, CPU)
    assert state["step"] == 4 and state["dir"] == d and state["rng"] == {"rng": {}} and state["rng_problem"] == ""


def test_the_rank_files_problems_are_named_and_the_shared_state_still_loads(tmp_path: Path) -> None:
    d = _step_dir(tmp_path, _shared(), rng=[1])
    state = ckpt.load(d, 0, CPU)
    assert state["rng"] is None and state["rng_problem"] == "unreadable (holds list)"
    state = ckpt.load(d, 1, CPU)  # a rank the run that wrote it did not have
    assert state["rng"] is None and state["rng_problem"] == "missing"
    (d / "rng-rank0.pt").unlink()
    os.mkfifo(d / "rng-rank0.pt")  # refused without blocking on the open
    state = ckpt.load(d, 0, CPU)
    assert state["rng"] is None and state["rng_problem"] == "unreadable (rng-rank0.pt is not a regular file)"
    (d / "rng-rank0.pt").unlink()
    (d / "rng-rank0.pt").write_bytes(b"PK\x03\x04 not a zip")
    assert ckpt.load(d, 0, CPU)["rng_problem"].startswith("unreadable (rng-rank0.pt is truncated, corrupt or not "
                                                          "written by hosttune")


def test_a_missing_or_linked_state_file_is_unusable(tmp_path: Path) -> None:
    d = _step_dir(tmp_path, _shared())
    target = tmp_path / "elsewhere.pt"
    os.replace(d / "state.pt", target)
    with pytest.raises(ckpt.Unusable, match="^state.pt is missing$"):
        ckpt.load(d, 0, CPU)
    (d / "state.pt").symlink_to(target)  # never followed
    with pytest.raises(ckpt.Unusable, match=r"^state.pt cannot be read \("):
        ckpt.load(d, 0, CPU)


def test_load_latest_skips_newer_unusable_checkpoints_with_their_reasons(tmp_path: Path) -> None:
    good = _step_dir(tmp_path, _shared())
    bad = tmp_path / "checkpoints" / "step-0000009"
    bad.mkdir()
    (bad / "state.pt").write_bytes(b"")
    (tmp_path / "checkpoints" / ".tmp-step-0000012").mkdir()  # a crashed save: not a checkpoint
    path, state, skipped = ckpt.load_latest(tmp_path / "checkpoints", 0, CPU)
    assert path == good and state is not None and state["step"] == 4
    assert [(p.name, r.split(" (")[0]) for p, r in skipped] == [
        ("step-0000009", "state.pt is truncated, corrupt or not written by hosttune")]
    none = ckpt.load_latest(tmp_path / "nothing", 0, CPU)
    assert none == (None, None, [])


def test_another_ranks_refusal_skips_a_checkpoint_this_rank_could_load(tmp_path: Path) -> None:
    _step_dir(tmp_path, _shared())
    path, state, skipped = ckpt.load_latest(tmp_path / "checkpoints", 0, CPU, agree=lambda ok: False)
    assert path is None and state is None
    assert [(p.name, r) for p, r in skipped] == [("step-0000004", "unreadable on another rank")]


def test_set_aside_never_overwrites_an_earlier_unusable_copy(tmp_path: Path) -> None:
    names = []
    for _ in range(3):
        d = tmp_path / "step-0000004"
        d.mkdir()
        (d / "mark").write_text(str(len(names)))
        names.append(ckpt.set_aside(d).name)
    assert names == ["step-0000004.unusable", "step-0000004.unusable-1", "step-0000004.unusable-2"]
    assert [(tmp_path / n / "mark").read_text() for n in names] == ["0", "1", "2"]
    assert ckpt.list_checkpoints(tmp_path) == []


# ---- saves that cannot complete -------------------------------------------------------------------------------------


def _save(ckpt_dir: Path, step: int, agree=ckpt._alone) -> Path:
    return ckpt.save(ckpt_dir, step, 0, lambda: _shared(step=step), {"rng": {}}, 3, agree)


def test_a_checkpoints_directory_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    d = tmp_path / "file" / "checkpoints"
    with pytest.raises(ckpt.CheckpointError) as exc:
        _save(d, 4)
    assert str(exc.value) == (f"cannot save checkpoint step-0000004 in {d}: Not a directory; "
                              f"no earlier checkpoint exists")


def test_another_ranks_failed_write_keeps_the_existing_checkpoints(tmp_path: Path) -> None:
    d = tmp_path / "checkpoints"
    _save(d, 4)
    votes: List[bool] = []

    def agree(ok: bool) -> bool:  # rank 0's view of the collective: another rank could not write its file
        votes.append(ok)
        return ok and len(votes) != 2

    with pytest.raises(ckpt.CheckpointError, match="another rank failed to write its part; the existing checkpoints "
                                                   "are kept"):
        _save(d, 6, agree)
    assert votes == [True, True]
    assert sorted(p.name for p in d.iterdir()) == ["step-0000004"]  # no staging directory left behind
    assert ckpt.load(d / "step-0000004", 0, CPU)["step"] == 4


def test_a_stale_old_copy_is_removed_when_its_step_is_complete(tmp_path: Path) -> None:
    d = tmp_path / "checkpoints"
    _save(d, 4)
    (d / ".replaced-step-0000004").mkdir()  # a crash after the new copy was renamed in, before the old one went
    (d / ".tmp-step-0000005").mkdir()  # a crashed save
    _save(d, 6)
    assert sorted(p.name for p in d.iterdir()) == ["step-0000004", "step-0000006"]
    assert ckpt.latest_checkpoint(d) == d / "step-0000006"
