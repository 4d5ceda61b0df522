"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/__main__.py, in-process: the exit status and the
one stderr line of each way `python -m hosttune.engine` stops (a bad argument or setting 2, an engine error 2, a
CUDA out-of-memory 1 with its report, a finished run 0), and check_args' answer for each. The run itself is
replaced (hosttune.engine.train.run) to raise what a real one would: no training here."""

from typing import List

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import train  # noqa: E402
from hosttune.engine.__main__ import check_args, main  # noqa: E402
from hosttune.engine.errors import EngineError  # noqa: E402


def _run_raising(exc: BaseException):
    seen: List[str] = []

    def run(cfg, task):
        seen.append(cfg.model)
        raise exc

    return run, seen


def test_a_cuda_oom_exits_1_with_the_report_on_cpu(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    run, seen = _run_raising(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    monkeypatch.setattr(train, "run", run)
    assert main(["--preset", "gpt-tiny", "--set", "micro_batch_size=4", "--set", "amp=off"]) == 1
    assert seen == ["gpt-tiny"]
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "hosttune.engine: error: out of GPU memory (CUDA out of memory. Tried to allocate 2.00 GiB)"
    assert err[1] == "advice:"
    assert any("--set micro_batch_size=2 --set grad_accum=" in line for line in err)


def test_an_engine_error_exits_2_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(train, "run", _run_raising(EngineError("no usable checkpoint"))[0])
    assert main(["--preset", "gpt-tiny"]) == 2
    assert capsys.readouterr().err == "hosttune.engine: error: no usable checkpoint\n"


def test_a_finished_run_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(train, "run", lambda cfg, task: {"step": cfg.steps})
    assert main(["--preset", "resnet-tiny", "--set", "steps=3"]) == 0


@pytest.mark.parametrize("argv,error", [
    (["--preset", "gpt-tiny", "--set", "steps"], "--set expects key=value, got 'steps'"),
    (["--preset", "gpt-tiny", "--set", "steps=0"], "steps must be >= 1, got 0"),
    (["--export", "out"], "--export needs --run-dir RUN (the run whose last checkpoint to export)"),
    (["--export", "out", "--run-dir", "r", "--resume"],
     "--export takes only --run-dir: the model's settings come from the checkpoint"),
])
def test_errors_before_torch_exit_2_and_check_args_says_the_same(argv: List[str], error: str, capsys) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == f"hosttune.engine: error: {error}\n"
    assert check_args(argv) == error


def test_check_args_refuses_a_valid_export_as_not_training() -> None:
    assert check_args(["--export", "out", "--run-dir", "r"]) == (
        "--export is not training: run it as one process, python -m hosttune.engine --export DIR --run-dir RUN")
    assert check_args(["--preset", "gpt-tiny", "--set", "steps=5"]) is None
