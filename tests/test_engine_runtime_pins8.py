"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/runtime.py: the default run directory
(runs/<preset or model>-<time> under the working directory; an elastic restart finds its own again by the run id),
a rank's GPU (the plan's local rank modulo the visible GPUs; none visible is one line), the determinism refusal
word for word, and the cuDNN switches each setting gives (torch's process-wide flags are put back)."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import runtime  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.errors import EngineError  # noqa: E402

STAMP = "20261203-130500"


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runtime.time, "strftime", lambda fmt: STAMP if fmt == "%Y%m%d-%H%M%S" else fmt)
    for name in ("TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return tmp_path


def test_the_default_run_dir_is_runs_preset_time(in_tmp: Path) -> None:
    assert runtime.default_run_dir(Config(preset="demo"), 0, 1) == Path(f"runs/demo-{STAMP}")
    assert (in_tmp / "runs" / f"demo-{STAMP}").is_dir()
    assert runtime.default_run_dir(Config(model="resnet-tiny"), 0, 1) == Path(f"runs/resnet-tiny-{STAMP}")
    assert sorted(p.name for p in (in_tmp / "runs").iterdir()) == [f"demo-{STAMP}", f"resnet-tiny-{STAMP}"]
    assert not list((in_tmp / "runs").glob("*/.torchelastic-run-id"))


def test_an_elastic_restart_finds_its_run_dir_by_the_run_id(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job-7")
    first = runtime.default_run_dir(Config(), 0, 1)
    assert first == Path(f"runs/gpt-tiny-{STAMP}")
    assert (in_tmp / first / ".torchelastic-run-id").read_text() == "job-7\n"
    (in_tmp / "runs" / "other").mkdir()
    (in_tmp / "runs" / "other" / ".torchelastic-run-id").write_text("job-6\n")
    monkeypatch.setattr(runtime.time, "strftime", lambda fmt: "later")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    assert runtime.default_run_dir(Config(), 0, 1) == first
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job-8")  # a restart of a run never seen: a new directory
    assert runtime.default_run_dir(Config(), 0, 1) == Path("runs/gpt-tiny-later")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "0")  # a first attempt never reuses one
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job-7")
    monkeypatch.setattr(runtime.time, "strftime", lambda fmt: "third")
    assert runtime.default_run_dir(Config(), 0, 1) == Path("runs/gpt-tiny-third")


def test_a_ranks_gpu_is_its_local_rank_modulo_the_visible_ones() -> None:
    assert [runtime.rank_device(r, 2) for r in range(4)] == [torch.device("cuda", i) for i in (0, 1, 0, 1)]
    assert runtime.rank_device(3, 1) == torch.device("cuda", 0)
    with pytest.raises(EngineError) as e:
        runtime.rank_device(0, 0)
    assert str(e.value) == "torch sees no CUDA device (CUDA_VISIBLE_DEVICES hides them all?)"


def test_cudnn_benchmark_against_the_profiles_determinism_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTTUNE_DETERMINISTIC", "1")
    with pytest.raises(EngineError) as e:
        runtime.setup(Config(cudnn_benchmark=True, device="cpu"))
    assert str(e.value) == ("cudnn_benchmark=true contradicts deterministic mode (HOSTTUNE_DETERMINISTIC=1 from the "
                            "profile): autotuning picks kernels run by run")


@pytest.mark.parametrize("setting,deterministic,benchmark", [
    (None, False, True), (None, True, False), (False, False, False), (True, False, True), (False, True, False)])
def test_the_cudnn_switches(setting, deterministic: bool, benchmark: bool) -> None:
    saved = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
             torch.are_deterministic_algorithms_enabled())
    try:
        runtime.determinism_switches(Config(cudnn_benchmark=setting), deterministic, False)
        assert (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
                torch.are_deterministic_algorithms_enabled()) == (benchmark, deterministic, deterministic)
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = saved[0], saved[1]
        torch.use_deterministic_algorithms(saved[2])
