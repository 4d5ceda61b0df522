"""Issue 11, the engine's part: checkpoints that are never lost, never trusted (a planted pickle runs nothing),
fall back when damaged; config files that cannot hang, blow up or flood a message; and the small resume and
`hosttune train` defects (quoting, the RNG warning, a changed micro-batch, a full disk)."""

import contextlib
import errno
import json
import os
import pickle
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from conftest import cli_runner

from hosttune.engine.config import Config, ConfigError

torch = pytest.importorskip("torch")

from hosttune.engine import checkpoint as ckpt  # noqa: E402
from hosttune.engine.api import fit  # noqa: E402
from hosttune.engine.data import ResumableSampler  # noqa: E402
from hosttune.engine.errors import EngineError  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CPU = torch.device("cpu")
# gpt-tiny shrunk to seconds: 2 steps, a checkpoint after each.
TINY = ["--preset", "gpt-tiny", "--set", "n_layer=1", "--set", "n_embd=32", "--set", "n_head=2", "--set",
        "block_size=16", "--set", "micro_batch_size=4", "--set", "steps=2", "--set", "ckpt_interval=1", "--set",
        "eval_batches=1", "--set", "log_interval=1", "--set", "warmup_steps=0", "--set", "amp=off", "--set",
        "device=cpu", "--set", "num_workers=0"]


def engine(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hosttune.engine", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})


def assert_one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hosttune.engine: error: "), r.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]


def shared_state(step: int, value: float = 0.0) -> Dict[str, Any]:
    return {"model": {"w": torch.full((2,), value)}, "optimizer": {}, "scheduler": {}, "scaler": {}, "step": step,
            "epoch": 0, "pos": 0}


def save(d: Path, step: int, value: float = 0.0, keep: int = 3) -> Path:
    # The last argument is `agree` (single process: returns its argument); positional, so the same call also
    # drives the old save(..., barrier), whose regressions these tests pin.
    return ckpt.save(d, step, 0, lambda: shared_state(step, value), {"rng": ckpt.rng_state(False)}, keep,
                     lambda ok=True: ok)


class _Toy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x: Any) -> Any:
        return self.fc(x)


class _Recorded(torch.utils.data.Dataset):
    """Remembers every index the loader asked for (num_workers=0: in this process)."""

    def __init__(self, n: int = 64) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 8, generator=g)
        self.y = (self.x[:, 0] > 0).long()
        self.seen: List[int] = []

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> Any:
        self.seen.append(int(i))
        return self.x[i], self.y[i]


def toy_fit(run_dir: Path, **settings: Any) -> Dict[str, Any]:
    data = settings.pop("data", None) or _Recorded()
    base = dict(steps=2, micro_batch_size=8, device="cpu", amp="off", num_workers=0, warmup_steps=0,
                log_interval=1, run_dir=str(run_dir))
    return fit(_Toy(), data, torch.nn.functional.cross_entropy, **{**base, **settings})


# ---- item 5: never lose the last good checkpoint ----

def test_resume_of_a_finished_run_keeps_its_checkpoint_when_the_save_fails(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    toy_fit(tmp_path / "run", steps=4)
    real_save = torch.save

    def dies_half_way(obj: Any, f: Any, *a: Any, **kw: Any) -> None:
        real_save(obj, f, *a, **kw)
        f.truncate(10)  # what a kill or a full disk leaves behind
        raise RuntimeError("write failed half-way")

    monkeypatch.setattr(ckpt.torch, "save", dies_half_way)
    with contextlib.suppress(RuntimeError, EngineError):
        toy_fit(tmp_path / "run", steps=4, resume=True)
    monkeypatch.setattr(ckpt.torch, "save", real_save)
    d = tmp_path / "run" / "checkpoints"
    assert [p.name for p in ckpt.list_checkpoints(d)][-1] == "step-0000004"
    assert ckpt.load(d / "step-0000004", 0, CPU)["step"] == 4


def test_saving_a_step_again_keeps_the_old_copy_until_the_new_one_is_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "checkpoints"
    save(d, 5, value=1.0)
    real_save = torch.save

    def fails_on_state(obj: Any, f: Any, *a: Any, **kw: Any) -> None:
        real_save(obj, f, *a, **kw)
        if "model" in obj:
            raise RuntimeError("boom")

    monkeypatch.setattr(ckpt.torch, "save", fails_on_state)
    with pytest.raises(RuntimeError, match="boom"):
        save(d, 5, value=2.0)
    assert sorted(p.name for p in d.iterdir()) == ["step-0000005"]  # staging removed, nothing else touched
    assert ckpt.load(d / "step-0000005", 0, CPU)["model"]["w"].tolist() == [1.0, 1.0]
    monkeypatch.setattr(ckpt.torch, "save", real_save)
    save(d, 5, value=2.0)  # the same step saved again, successfully: the new copy replaces the old
    assert sorted(p.name for p in d.iterdir()) == ["step-0000005"]
    assert ckpt.load(d / "step-0000005", 0, CPU)["model"]["w"].tolist() == [2.0, 2.0]


def test_a_save_killed_half_way_leaves_the_previous_checkpoint(tmp_path: Path) -> None:
    d = tmp_path / "checkpoints"
    save(d, 5, value=1.0)
    script = f"""
import os, sys, torch
sys.path.insert(0, {str(REPO)!r}); sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_rootsafe_engine import save
from hosttune.engine import checkpoint as ckpt
real = torch.save
def killed(obj, f, *a, **kw):
    real(obj, f, *a, **kw)
    if "model" in obj:
        f.flush(); f.truncate(20); os._exit(9)  # SIGKILL's effect: no cleanup, no except, no finally
ckpt.torch.save = killed
save(__import__("pathlib").Path({str(d)!r}), 5, value=2.0)
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 9, r.stderr
    assert ckpt.load(d / "step-0000005", 0, CPU)["model"]["w"].tolist() == [1.0, 1.0]
    save(d, 6)  # the next save tidies the crashed one's staging directory
    assert sorted(p.name for p in d.iterdir()) == ["step-0000005", "step-0000006"]


def test_a_crash_between_the_two_renames_keeps_the_old_copy_usable(tmp_path: Path) -> None:
    d = tmp_path / "checkpoints"
    save(d, 5, value=1.0)
    os.replace(d / "step-0000005", d / ".replaced-step-0000005")  # moved aside; the new copy never arrived
    path, state, skipped = ckpt.load_latest(d, 0, CPU)
    assert path == d / ".replaced-step-0000005" and state is not None and state["step"] == 5 and not skipped
    save(d, 6)
    assert sorted(p.name for p in d.iterdir()) == ["step-0000005", "step-0000006"]  # put back, then kept


def test_pruning_never_deletes_the_checkpoint_just_written(tmp_path: Path) -> None:
    d = tmp_path / "checkpoints"
    save(d, 20)  # newer than what a fallback resumes from
    save(d, 15, keep=1)
    assert (d / "step-0000015" / "state.pt").exists()


# ---- item 14: damaged, planted or foreign checkpoints ----

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 2-step gpt run with checkpoints step-1 and step-2; tests copy it."""
    cwd = tmp_path_factory.mktemp("tiny")
    r = engine(*TINY, "--run-dir", "run", cwd=cwd)
    assert r.returncode == 0, r.stderr[-2000:]
    return cwd / "run"


@pytest.fixture
def run_copy(tiny_run: Path, tmp_path: Path) -> Path:
    shutil.copytree(tiny_run, tmp_path / "run")
    return tmp_path / "run"


class _Planted:
    """Unpickling this creates a marker file: what a planted checkpoint could do with weights_only=False."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (open, (str(self.marker), "w"))


@pytest.mark.slow
def test_a_planted_pickle_is_not_executed_and_the_resume_falls_back(run_copy: Path) -> None:
    marker = run_copy.parent / "owned"
    torch.save({"model": _Planted(marker), "step": 2}, run_copy / "checkpoints" / "step-0000002" / "state.pt")
    r = engine(*TINY, "--run-dir", "run", "--resume", cwd=run_copy.parent)
    assert not marker.exists()
    assert r.returncode == 0, r.stderr[-2000:]
    assert "warning: skipping checkpoint step-0000002: state.pt is truncated, corrupt or not written by" in r.stderr
    assert "resumed from" in r.stderr and "step-0000001" in r.stderr
    names = sorted(p.name for p in (run_copy / "checkpoints").iterdir())
    assert "step-0000002.unusable" in names and "step-0000002" in names  # set aside, then step 2 trained again


@pytest.mark.slow
def test_a_planted_pickle_as_the_only_checkpoint_is_one_line(run_copy: Path) -> None:
    marker = run_copy.parent / "owned"
    shutil.rmtree(run_copy / "checkpoints" / "step-0000001")
    torch.save({"model": _Planted(marker)}, run_copy / "checkpoints" / "step-0000002" / "state.pt")
    r = engine(*TINY, "--run-dir", "run", "--resume", cwd=run_copy.parent)
    assert not marker.exists()
    assert_one_line_error(r, "no usable checkpoint in", "step-0000002: state.pt is truncated, corrupt")


@pytest.mark.parametrize("damage", ["truncated", "empty", "missing", "fifo"])
@pytest.mark.slow
def test_a_damaged_checkpoint_falls_back_to_the_previous_one_with_a_warning(run_copy: Path, damage: str) -> None:
    state = run_copy / "checkpoints" / "step-0000002" / "state.pt"
    if damage == "truncated":
        with open(state, "r+b") as f:
            f.truncate(state.stat().st_size // 2)
    elif damage == "empty":
        state.write_bytes(b"")
    elif damage == "missing":
        state.unlink()
    else:
        state.unlink()
        os.mkfifo(state)  # a reader that opened it blocking would hang forever
    r = engine(*TINY, "--run-dir", "run", "--resume", "--set", "steps=3", cwd=run_copy.parent)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert "warning: skipping checkpoint step-0000002: state.pt" in r.stderr
    resumes = [json.loads(x) for x in (run_copy / "metrics.jsonl").read_text().splitlines()
               if '"resume"' in x]
    assert resumes[-1]["step"] == 1 and resumes[-1]["checkpoint"].endswith("step-0000001")
    assert ckpt.load(run_copy / "checkpoints" / "step-0000003", 0, CPU)["step"] == 3


@pytest.mark.parametrize("other, needle", [
    (["--preset", "resnet-tiny"], "was written for model='gpt-tiny', this run has model='resnet-tiny'"),
    (["--set", "n_layer=2"], "was written for n_layer=1, this run has n_layer=2"),
])
@pytest.mark.slow
def test_another_models_checkpoint_is_refused_in_one_line(run_copy: Path, other: List[str], needle: str) -> None:
    args = [*TINY, *other]
    if other[0] == "--preset":
        args = ["--preset", "resnet-tiny", "--set", "steps=2", "--set", "device=cpu", "--set", "amp=off"]
    r = engine(*args, "--run-dir", "run", "--resume", cwd=run_copy.parent)
    assert_one_line_error(r, needle, "use another --run-dir")


def test_checkpoint_files_hold_no_pickled_objects(tmp_path: Path) -> None:
    """RNG states (numpy's included) are saved as tensors and plain values: weights_only=True loads them with no
    allow-list, and restoring them replays the same draws."""
    import numpy as np

    d = tmp_path / "checkpoints"
    np.random.seed(7)
    save(d, 1)
    want = np.random.rand(3)
    rng = torch.load(d / "step-0000001" / "rng-rank0.pt", weights_only=True)
    ckpt.set_rng_state(rng["rng"], False)
    assert np.random.rand(3).tolist() == want.tolist()


# ---- item 9 / 8: config files ----

def _laughs() -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    lines.append("steps: [" + ", ".join(["*i"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _config_cases(tmp: Path) -> Iterator[Any]:
    yield "non-utf8.yaml", b"steps: 10\nlr: \xff\xfe\n", "not UTF-8"
    yield "non-utf8.json", b'{"steps": "\xff"}', "not UTF-8"
    yield "laughs.yaml", _laughs().encode(), "alias"
    yield "big.yaml", b"# padding\n" * 200_000, "larger than"
    yield "deep.json", b"[" * 200_000 + b"]" * 200_000, "not valid JSON"
    yield "dup.json", b'{"steps": 1, "steps": 2}', "duplicate key 'steps'"
    yield "dup.yaml", b"steps: 1\nsteps: 2\n", "duplicate key 'steps'"
    yield "long.yaml", b"steps: " + b"x" * 500_000 + b"\n", "steps must be an integer, got 'xxx"
    yield "list.json", b"[1, 2]", "must be a JSON object"


@pytest.fixture
def bad_configs(tmp_path: Path) -> List[Any]:
    out = []
    for name, blob, needle in _config_cases(tmp_path):
        p = tmp_path / name
        p.write_bytes(blob)
        out.append((str(p), needle))
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    out.append((str(fifo), "not a regular file"))
    out.append(("/dev/zero", "not a regular file"))
    return out


def test_hostile_config_files_are_one_line_through_the_engine(bad_configs: List[Any], tmp_path: Path) -> None:
    for path, needle in bad_configs:
        r = engine("--config", path, cwd=tmp_path)
        assert_one_line_error(r, needle)
        assert len(r.stderr) < 400, r.stderr[:400]  # bounded, whatever the file holds


def test_hostile_config_files_are_one_line_through_hosttune_train(bad_configs: List[Any]) -> None:
    from hosttune.cli import cli

    runner = cli_runner()
    for path, needle in bad_configs:
        r = runner.invoke(cli, ["train", "--dry-run", "--config", path])
        assert r.exit_code == 2 and r.exception is not None and isinstance(r.exception, SystemExit), (path, r)
        err = r.stderr.strip().splitlines()
        assert len(err) == 1 and needle in err[0] and len(err[0]) < 400, (path, err)


# ---- low items ----

def test_train_dry_run_prints_a_command_a_shell_reads_back_exactly(tmp_path: Path) -> None:
    from hosttune.cli import cli
    from hosttune.commands.train import build_argv

    odd = tmp_path / "my runs $HOME"
    odd.mkdir()
    config = odd / "c.yaml"
    config.write_text("preset: gpt-tiny\nsteps: 3\n")
    args = ["--config", str(config), "--run-dir", str(odd / "run; rm -rf x")]
    r = cli_runner().invoke(cli, ["train", "--nproc", "2", "--dry-run", "--python", sys.executable, *args])
    assert r.exit_code == 0, r.output
    assert shlex.split(r.stdout) == build_argv(2, args, python=sys.executable)
    assert shlex.quote(str(config)) in r.stdout


def test_a_missing_rng_file_says_so_and_the_resume_continues(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    toy_fit(tmp_path / "run", steps=2)
    rng_file = tmp_path / "run" / "checkpoints" / "step-0000002" / "rng-rank0.pt"
    rng_file.unlink()
    capsys.readouterr()
    summary = toy_fit(tmp_path / "run", steps=4, resume=True)
    err = capsys.readouterr().err
    assert f"warning: rank 0: {rng_file} is missing: resuming continues, but not bit-exactly" in err
    assert "written by" not in err  # not the world-size warning: the world size did not change
    assert summary["step"] == 4


def test_a_changed_micro_batch_size_resumes_at_the_next_sample(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture) -> None:
    first = _Recorded()
    toy_fit(tmp_path / "run", data=first, steps=3, micro_batch_size=4)  # 12 samples of epoch 0
    second = _Recorded()
    capsys.readouterr()
    toy_fit(tmp_path / "run", data=second, steps=6, micro_batch_size=6, resume=True)  # 18 more
    order = ResumableSampler(first, 1, 0, Config().seed)
    order.set_epoch(0)
    expected = list(order)
    assert first.seen == expected[:12]
    assert second.seen == expected[12:30]  # nothing skipped, nothing repeated
    err = capsys.readouterr().err
    assert "micro_batch_size changed from 4 (checkpoint) to 6: continuing at sample 12 of epoch 0" in err


def test_a_full_disk_during_a_save_is_one_line_and_keeps_the_previous_checkpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toy_fit(tmp_path / "run", steps=2)
    real_save = torch.save

    def disk_full(obj: Any, f: Any, *a: Any, **kw: Any) -> None:
        # What torch.save really raises on ENOSPC: a RuntimeError whose context is the OSError.
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")  # noqa: B904

    monkeypatch.setattr(ckpt.torch, "save", disk_full)
    with pytest.raises(EngineError) as err:
        toy_fit(tmp_path / "run", steps=4, resume=True)
    monkeypatch.setattr(ckpt.torch, "save", real_save)
    d = tmp_path / "run" / "checkpoints"
    msg = str(err.value)
    assert "\n" not in msg
    assert f"cannot save checkpoint step-0000004 in {d}: No space left on device" in msg
    assert "free there; the last checkpoint, step-0000002, is kept; free some space" in msg
    assert sorted(p.name for p in d.iterdir()) == ["step-0000002"]
    assert ckpt.load(d / "step-0000002", 0, CPU)["step"] == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_really_full_tmpfs_during_a_save_is_one_line(tmp_path: Path) -> None:
    toy_fit(tmp_path / "run", steps=2)
    d = tmp_path / "run" / "checkpoints"
    keep = tmp_path / "saved"
    shutil.copytree(d, keep)
    shutil.rmtree(d)
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "none", str(d)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        shutil.copytree(keep / "step-0000002", d / "step-0000002")
        fd = os.open(d / "filler", os.O_WRONLY | os.O_CREAT)  # fill the rest
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 1024)
        os.close(fd)
        with pytest.raises(EngineError, match="No space left on device"):
            toy_fit(tmp_path / "run", steps=4, resume=True)
        assert sorted(p.name for p in d.iterdir()) == ["filler", "step-0000002"]
        assert ckpt.load(d / "step-0000002", 0, CPU)["step"] == 2
    finally:
        subprocess.run(["umount", str(d)], check=True)


def test_fit_with_a_config_object_and_a_misspelt_setting_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown key 'setps'"):
        fit(_Toy(), _Recorded(), torch.nn.functional.cross_entropy, config=Config(run_dir=str(tmp_path)), setps=3)


# ---- issue 22 item 1: a planted sharded checkpoint (DCP .metadata) never runs code as root ----

def _dotted_payload(marker: Path) -> bytes:
    """Protocol 4: STACK_GLOBAL("torch.distributed.checkpoint.filesystem", "os.system")("touch MARKER"). The
    dotted name walks from an allowed module to os.system (what a module-prefix allow-list let through)."""
    def text(s: str) -> bytes:
        b = s.encode()
        return b"\x8c" + bytes([len(b)]) + b  # SHORT_BINUNICODE

    return (b"\x80\x04" + text("torch.distributed.checkpoint.filesystem") + text("os.system") + b"\x93"
            + text(f"touch {marker}") + b"\x85R.")


class _SystemPayload:
    """A plain os.system global (posix.system)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(scope="module")
def sharded_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 1-rank shard=fsdp run (checkpoints step-1 and step-2, each with dcp/.metadata)."""
    cwd = tmp_path_factory.mktemp("sharded")
    r = engine(*TINY, "--set", "shard=fsdp", "--run-dir", "run", cwd=cwd)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (cwd / "run" / "checkpoints" / "step-0000002" / "dcp" / ".metadata").is_file()
    return cwd / "run"


@pytest.mark.parametrize("payload", ["dotted-name", "os.system"])
@pytest.mark.parametrize("command", ["--resume", "--export"])
@pytest.mark.slow
def test_a_planted_dcp_metadata_in_another_users_run_dir_runs_nothing_as_root(
        other_user: Any, sharded_run: Path, payload: str, command: str) -> None:
    """The run directory is the other user's (an admin resuming or exporting a user's model is the normal case);
    they replace step-2's dcp/.metadata with a pickle that would create a marker. As root: no marker, and one
    line naming the refused global, exit 2 (DCP's metadata is read when the model is loaded, after the
    checkpoint was chosen: the engine stops rather than training on from a checkpoint it cannot read)."""
    run = other_user.home / "run"
    shutil.copytree(sharded_run, run)
    subprocess.run(["chown", "-R", f"{other_user.uid}:{other_user.gid}", str(run)], check=True)
    marker = other_user.home / "owned"
    blob = _dotted_payload(marker) if payload == "dotted-name" else pickle.dumps(_SystemPayload(marker), protocol=4)
    staged = other_user.home / "payload.pkl"
    staged.write_bytes(blob)
    staged.chmod(0o644)
    meta = run / "checkpoints" / "step-0000002" / "dcp" / ".metadata"
    done = other_user.run(["cp", str(staged), str(meta)])  # written by them, into their own run directory
    assert done.returncode == 0, done.stderr
    if command == "--resume":
        r = engine(*TINY, "--set", "shard=fsdp", "--set", "steps=3", "--run-dir", str(run), "--resume",
                   cwd=other_user.home)
    else:
        r = engine("--export", str(other_user.home / "out"), "--run-dir", str(run), cwd=other_user.home)
    assert not marker.exists(), "the planted pickle ran as root"
    refused = ("torch.distributed.checkpoint.filesystem.os.system" if payload == "dotted-name"
               else "posix.system")
    assert_one_line_error(r, "step-0000002", f"{refused} is not allowed in a checkpoint's metadata")
