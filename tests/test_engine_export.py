"""`python -m hosttune.engine --export DIR --run-dir RUN` (issue 14): the last checkpoint as a torch.export program
(and ONNX with onnxscript), read back and compared with the checkpoint's model on validation samples within a
stated tolerance; a tampered export fails the comparison; bad input is one line and exit 2. (The export of a
shard=fsdp run is in test_engine_shard.py, next to the run it exports.)"""

import importlib.util
import json
import os
import shutil
import stat
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from _enginemainhelp import engine_here  # noqa: E402

from hosttune.engine import export  # noqa: E402
from hosttune.engine.__main__ import main  # noqa: E402
from hosttune.engine.data import CharText  # noqa: E402
from hosttune.engine.models import GPT  # noqa: E402

# integration (issue 21: make check's inner loop leaves it out, make test runs it): its module fixture trains and
# exports a model, and the CLI cases run the engine process end to end.
pytestmark = pytest.mark.integration

TINY = ["--preset", "gpt-tiny", "--set", "n_layer=1", "--set", "n_embd=32", "--set", "n_head=2",
        "--set", "block_size=16", "--set", "micro_batch_size=4", "--set", "warmup_steps=1", "--set", "steps=3",
        "--set", "eval_batches=1", "--set", "amp=off", "--set", "device=cpu", "--set", "ckpt_interval=2"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-rank gpt-tiny run in-process (checkpoints at steps 2 and 3)."""
    cwd = tmp_path_factory.mktemp("export")
    assert main([*TINY, "--run-dir", str(cwd / "run")]) == 0
    return cwd / "run"


def checkpoint_model(run_dir: Path) -> GPT:
    """The run's last checkpoint loaded independently of export.py."""
    state = torch.load(run_dir / "checkpoints" / "step-0000003" / "state.pt", weights_only=True)
    model = GPT(64, 16, 1, 2, 32)
    model.load_state_dict(state["model"])
    return model.eval()


@pytest.fixture(scope="module")
def exported(trained: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """`python -m hosttune.engine --export OUT --run-dir RUN` of `trained`, once for the module (issue 21: the
    torch.export and ONNX export of one checkpoint are the module's slowest step): its output directory and stderr.
    Tests that only read an export's files share it; a test that changes one changes its own copy. The CLI runs in
    this process (tests/_enginemainhelp.py: exit status and stderr, warnings included, as the process shows them;
    issue 21: an interpreter and a torch import fewer, and make check runs these tests)."""
    out = tmp_path_factory.mktemp("exported") / "out"
    r = engine_here("--export", str(out), "--run-dir", str(trained), cwd=trained.parent)
    assert r.returncode == 0, "the CLI export of the module's run failed: " + r.stderr[-3000:]
    return SimpleNamespace(out=out, stderr=r.stderr)


def onnx_made_once(exported: SimpleNamespace) -> Any:
    """export.onnx_bytes that answers with the ONNX file `exported` made of the same checkpoint (what the real one
    returns for it) instead of tracing the model again: for tests about what happens to the bytes afterwards."""
    data = (exported.out / "model.onnx").read_bytes()
    return lambda model, example, shapes: data


@pytest.mark.slow
def test_cli_export_writes_a_program_that_matches_the_checkpoint(trained: Path, exported: SimpleNamespace) -> None:
    err, out = exported.stderr, exported.out
    assert "step-0000003 (step 3) -> " in err
    assert "export check: torch.export: 16 validation samples, max abs diff" in err
    assert "(tolerance 1e-05): ok" in err
    report = json.loads((out / "export.json").read_text())
    assert report["step"] == 3 and all(c["ok"] for c in report["checks"])
    if importlib.util.find_spec("onnxscript") and importlib.util.find_spec("onnxruntime"):
        assert "export check: onnx: 16 validation samples, max abs diff" in err
        assert "(tolerance 0.0001): ok" in err and (out / "model.onnx").stat().st_size > 10_000
        assert [c["format"] for c in report["checks"]] == ["torch.export", "onnx"]
    else:
        assert "ONNX skipped" in err
    # Our own check of the file: load it, run it on validation windows of other batch sizes and lengths than the
    # example it was traced with (dynamic batch and sequence), compare with the checkpoint's model.
    program = torch.export.load(str(out / "model.pt2")).module()
    model = checkpoint_model(trained)
    val = CharText(16, "val")
    for batch, length in ((1, 16), (7, 16), (3, 5)):
        x = torch.stack([val[i][0][:length] for i in range(batch)])
        with torch.no_grad():
            assert (program(x) - model(x)).abs().max().item() <= export.TOLERANCE


def test_without_onnxscript_onnx_is_skipped_in_one_line(trained: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(export, "_missing_onnx_modules", lambda: ["onnxscript"])
    assert main(["--export", str(tmp_path / "out"), "--run-dir", str(trained)]) == 0
    err = capsys.readouterr().err
    assert "ONNX skipped: torch.onnx.export(dynamo=True) needs onnxscript (pip install onnxscript)" in err
    assert not (tmp_path / "out" / "model.onnx").exists() and (tmp_path / "out" / "model.pt2").exists()


@pytest.mark.slow
def test_a_tampered_export_fails_the_comparison(trained: Path, exported: SimpleNamespace, tmp_path: Path) -> None:
    path = tmp_path / "model.pt2"
    shutil.copyfile(exported.out / "model.pt2", path)
    program = torch.export.load(str(path))
    with torch.no_grad():
        program.state_dict["blocks.0.mlp.0.weight"].add_(1e-3)  # one layer nudged: a stale or edited file
    torch.export.save(program, str(path))
    model = checkpoint_model(trained)
    batches = export.validation_batches(CharText(16, "val"), export.SAMPLES)
    assert export.check_program(exported.out / "model.pt2", model, batches, export.TOLERANCE).ok  # the control
    check = export.check_program(path, model, batches, export.TOLERANCE)
    assert not check.ok and check.max_abs_diff > export.TOLERANCE
    assert "FAILED: outputs differ" in export.check_line(check)


def test_cli_fails_when_a_check_fails(trained: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(export, "TOLERANCE", -1.0)  # an impossible bound: every comparison fails
    monkeypatch.setattr(export, "_missing_onnx_modules", lambda: ["onnxscript"])
    assert main(["--export", str(tmp_path / "out"), "--run-dir", str(trained)]) == 1
    assert "FAILED: outputs differ from the checkpoint's model" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--export", "OUT"], "--export needs --run-dir RUN"),
    (["--export", "OUT", "--run-dir", "RUN", "--set", "steps=3"], "--export takes only --run-dir"),
    (["--export", "OUT", "--run-dir", "nope"], "nope: no such run directory"),
    (["--export", "OUT", "--run-dir", "empty"], "empty/checkpoints: no checkpoint to export"),
    (["--export", "OUT", "--run-dir", "broken"], "no usable checkpoint in broken/checkpoints: step-0000001"),
    (["--export", "OUT", "--preset", "gpt-tiny"], "not allowed with argument"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list, message: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken" / "checkpoints" / "step-0000001").mkdir(parents=True)
    (tmp_path / "broken" / "checkpoints" / "step-0000001" / "state.pt").write_bytes(b"PK\x03\x04 truncated")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 + ("broken" in argv), err
    assert "Traceback" not in err


def test_a_custom_model_run_is_refused_with_the_python_way(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from hosttune.engine.api import fit

    x = torch.randn(32, 4)
    data = torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    fit(model, data, torch.nn.functional.cross_entropy, steps=2, micro_batch_size=4, warmup_steps=1, device="cpu",
        amp="off", run_dir=str(tmp_path / "run"))
    assert main(["--export", str(tmp_path / "out"), "--run-dir", str(tmp_path / "run")]) == 2
    assert "export_model(model, example, out_dir)" in capsys.readouterr().err
    check = export.export_model(model, x[:8], tmp_path / "own")  # ... which works
    assert check.ok and (tmp_path / "own" / "model.pt2").exists()


def test_hosttune_train_refuses_export_which_is_one_process() -> None:
    from hosttune.engine.__main__ import check_args

    assert "run it as one process" in check_args(["--export", "OUT", "--run-dir", "RUN"])
    assert check_args(["--export", "OUT"]) == "--export needs --run-dir RUN (the run whose last checkpoint to export)"


# ---- issue 22 items 6 and 7 ----

needs_onnx = pytest.mark.skipif(not (importlib.util.find_spec("onnx") and importlib.util.find_spec("onnxscript")),
                                reason="the ONNX export needs onnx and onnxscript (the dev extras)")


@needs_onnx
@pytest.mark.slow
def test_an_export_into_another_users_directory_follows_no_planted_link(
        trained: Path, exported: SimpleNamespace, tmp_path: Path, other_user: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A models directory the other user made world-writable; they plant links at the ONNX file's old temp name
    (`.model.onnx.<pid>.tmp`, this process's pid) and at every file the export writes, each pointing at a root-owned
    0600 file. Root's export replaces the links with its files and never writes through one. (The ONNX bytes are
    the module's export of this checkpoint: what is written where is the subject, not the tracing.)"""
    monkeypatch.setattr(export, "onnx_bytes", onnx_made_once(exported))
    out = other_user.home / "models"
    done = other_user.run(["sh", "-c", f"mkdir -m 777 {out} && chmod 777 {out}"])
    assert done.returncode == 0, done.stderr
    victims = {}
    for name in (f".model.onnx.{os.getpid()}.tmp", "model.onnx", "model.pt2", "export.json"):
        victim = tmp_path / f"victim-{name.strip('.')}"
        victim.write_text("root's secret\n")
        victim.chmod(0o600)
        victims[name] = victim
        done = other_user.run(["ln", "-s", str(victim), str(out / name)])
        assert done.returncode == 0, done.stderr
    export.export_run(trained, out, lambda line: None)
    for victim in victims.values():
        assert victim.read_text() == "root's secret\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    for name in ("model.onnx", "model.pt2", "export.json"):
        st = (out / name).lstat()
        assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o644, name
    assert (out / "model.onnx").read_bytes()[:2] != b"ro"


@needs_onnx
@pytest.mark.slow
def test_without_onnxruntime_the_onnx_check_is_skipped_and_export_json_is_written(
        trained: Path, exported: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    """onnx installed, onnxruntime not (its import fails, as when it is not installed): one line says the
    comparison was skipped, the ONNX file (checked by onnx.checker) and export.json are written, exit 0. The ONNX
    bytes are the module's export of this checkpoint: the subject is what follows without onnxruntime."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` raises ImportError
    monkeypatch.setattr(export, "onnx_bytes", onnx_made_once(exported))
    out = tmp_path / "out"
    assert main(["--export", str(out), "--run-dir", str(trained)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    notes = [line for line in err.splitlines() if "outputs not compared" in line]
    assert len(notes) == 1 and "onnxruntime is not installed (pip install onnxruntime)" in notes[0], err
    report = json.loads((out / "export.json").read_text())
    onnx_check = [c for c in report["checks"] if c["format"] == "onnx"][0]
    assert onnx_check["skipped"] and onnx_check["max_abs_diff"] is None and onnx_check["ok"] is True
    assert (out / "model.onnx").read_bytes() == (exported.out / "model.onnx").read_bytes()
    assert (out / "model.onnx").stat().st_size > 10_000
