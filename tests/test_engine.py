"""The engine's parts, in process or as quick subprocesses: config errors, schedule, data order, checkpoints,
AMP selection, the OOM report, the API (bf16 autocast on CPU) and `hosttune train`'s argv."""

import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_runner

from hosttune.engine.config import PRESETS, Config, ConfigError, load_config, parse_set

torch = pytest.importorskip("torch")

from hosttune.engine import checkpoint as ckpt  # noqa: E402
from hosttune.engine.data import CharText, ResumableSampler, loader_settings  # noqa: E402
from hosttune.engine.oom import oom_report  # noqa: E402
from hosttune.engine.optim import lr_at  # noqa: E402
from hosttune.engine.precision import cpu_has_fast_bf16, resolve_amp  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CUDA = torch.cuda.is_available()


def engine(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hosttune.engine", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})


# ---- config ----

def test_presets_load_and_set_values_are_typed() -> None:
    cfg = load_config("gpt-tiny", None, ["lr=1e-3", "amp=off", "steps=7", "num_workers=null", "deterministic=true"])
    assert (cfg.preset, cfg.model, cfg.lr, cfg.amp, cfg.steps) == ("gpt-tiny", "gpt-tiny", 1e-3, "off", 7)
    assert cfg.num_workers is None and cfg.deterministic is True
    assert load_config("resnet-tiny").model == "resnet-tiny"
    assert parse_set("profile_steps=1,1,2") == {"profile_steps": "1,1,2"}


def test_config_file_yaml_and_json(tmp_path: Path) -> None:
    y = tmp_path / "c.yaml"
    y.write_text("preset: resnet-tiny\nsteps: 12\namp: off\nlr: 1e-3\n")
    cfg = load_config(None, str(y), ["steps=13"])
    assert (cfg.model, cfg.steps, cfg.amp, cfg.lr) == ("resnet-tiny", 13, "off", 1e-3)  # --set beats the file
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"preset": "gpt-tiny", "n_layer": 1}))
    assert load_config(None, str(j)).n_layer == 1


@pytest.mark.parametrize("sets, message", [
    (["lrr=0.1"], "unknown key 'lrr' (did you mean 'lr'?)"),
    (["steps=ten"], "steps must be an integer, got 'ten'"),
    (["steps=1.5"], "steps must be an integer, got 1.5"),
    (["compile=maybe"], "compile must be true or false"),
    (["amp=fp8"], "amp must be one of auto, bf16, fp16, off"),
    (["device=cpu", "amp=fp16"], "amp=fp16 needs CUDA"),
    (["device=cpu", "pin_memory=true"], "pin_memory=true needs CUDA"),
    (["num_workers=0", "prefetch_factor=4"], "prefetch_factor needs num_workers >= 1"),
    (["min_lr=1", "lr=0.1"], "min_lr (1.0) must be between 0 and lr (0.1)"),
    (["n_embd=100", "n_head=3"], "n_embd (100) must be divisible by n_head (3)"),
    (["profile_steps=1,2"], "profile_steps must be WAIT,WARMUP,ACTIVE"),
    (["grad_accum=0"], "grad_accum must be >= 1"),
])
def test_bad_settings_raise_one_clear_error(sets: list, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config("gpt-tiny", None, sets)
    assert message in str(err.value)


def test_bad_config_cli_exits_2_with_one_line(tmp_path: Path) -> None:
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("steps: 10\n  lr: [1\n")
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("preset: gpt-tiny\nwarmup: 3\n")
    cases = [
        (["--preset", "gpt-tiny", "--set", "lrr=1"], "unknown key 'lrr' (did you mean 'lr'?)"),
        (["--preset", "gpt-tiny", "--set", "steps=abc"], "steps must be an integer"),
        (["--preset", "gpt-tiny", "--set", "device=cpu", "--set", "amp=fp16"], "amp=fp16 needs CUDA"),
        (["--preset", "gpt-large"], "invalid choice"),
        (["--config", str(tmp_path / "missing.yaml")], "cannot read config file"),
        (["--config", str(bad_yaml)], f"{bad_yaml}:2: not valid YAML"),  # the one YAML loader's format
        (["--config", str(unknown)], f"{unknown}: unknown key 'warmup' (did you mean 'warmup_steps'?)"),
        (["--preset", "gpt-tiny", "--profile-steps", "x"], "profile_steps must be WAIT,WARMUP,ACTIVE"),
        ([], "one of the arguments --preset --config --export is required"),
    ]
    for args, message in cases:
        r = engine(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith("hosttune.engine: error: ") and message in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "runs").exists()  # nothing ran


# ---- schedule, data order, loader settings ----

def test_lr_warmup_then_cosine_to_min() -> None:
    cfg = Config(steps=100, warmup_steps=10, lr=1.0, min_lr=0.1)
    lrs = [lr_at(s, cfg) for s in range(101)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0) and lrs[10] == pytest.approx(1.0)
    assert all(a <= b for a, b in zip(lrs[:10], lrs[1:10]))  # warming up
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))  # decaying
    assert lrs[100] == pytest.approx(0.1) and lrs[55] == pytest.approx(0.55)  # cosine midpoint


def test_resumable_sampler_skips_exactly_and_shards() -> None:
    data = list(range(103))
    full = ResumableSampler(data, 2, 0, seed=5)
    full.set_epoch(3)
    order = list(full)
    part = ResumableSampler(data, 2, 0, seed=5)
    part.set_epoch(3, skip=17)
    assert list(part) == order[17:] and len(part) == len(order) - 17
    other = ResumableSampler(data, 2, 1, seed=5)
    other.set_epoch(3)
    assert not set(order) & set(other)  # ranks see disjoint shards
    full.set_epoch(4)
    assert list(full) != order  # set_epoch reshuffles


def test_loader_settings_env_then_config() -> None:
    env = {"HOSTTUNE_NUM_WORKERS": "3", "HOSTTUNE_PIN_MEMORY": "1", "HOSTTUNE_PREFETCH_FACTOR": "4",
           "HOSTTUNE_PERSISTENT_WORKERS": "0"}
    s = loader_settings(Config(), cuda=False, env=env)
    assert (s.num_workers, s.pin_memory, s.prefetch_factor, s.persistent_workers) == (3, False, 4, False)
    assert loader_settings(Config(), cuda=True, env=env).pin_memory is True
    s = loader_settings(Config(num_workers=0), cuda=True, env=env)  # the config wins over the profile
    assert (s.num_workers, s.prefetch_factor, s.persistent_workers) == (0, None, False)
    assert "prefetch_factor" not in s.kwargs()


def test_deterministic_from_profile_env_unless_config_says() -> None:
    from hosttune.engine.data import deterministic_setting

    assert deterministic_setting(Config(), env={}) is False
    assert deterministic_setting(Config(), env={"HOSTTUNE_DETERMINISTIC": "1"}) is True
    assert deterministic_setting(Config(deterministic=False), env={"HOSTTUNE_DETERMINISTIC": "1"}) is False


def test_char_text_entropy_matches_counts() -> None:
    ds = CharText(64, "train")
    x, y = ds[5]
    assert x.shape == (64,) and torch.equal(x[1:], y[:-1])
    text = ds.train_text
    probs = [text.count(c) / len(text) for c in set(text)]
    assert ds.unigram_entropy() == pytest.approx(-sum(p * math.log(p) for p in probs))
    assert 2.0 < ds.unigram_entropy() < 4.0 and len(text) > 15000


# ---- AMP selection and OOM ----

def test_amp_auto_on_cpu_follows_cpuinfo_flags() -> None:
    assert cpu_has_fast_bf16("processor : 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n")
    assert cpu_has_fast_bf16("flags : sse avx2 amx_bf16 amx_tile\n")
    assert not cpu_has_fast_bf16("flags : fpu sse avx2 fma\n")
    live = subprocess.run(["grep", "-m1", "-wE", "avx512_bf16|amx_bf16", "/proc/cpuinfo"], capture_output=True)
    want = torch.bfloat16 if live.returncode == 0 else None
    assert resolve_amp("auto", torch.device("cpu")) == want
    assert resolve_amp("bf16", torch.device("cpu")) == torch.bfloat16
    assert resolve_amp("off", torch.device("cpu")) is None


def test_oom_report_gives_memory_advice() -> None:
    exc = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    report = oom_report(exc, load_config("gpt-tiny", None, ["micro_batch_size=32", "grad_accum=2"]),
                        torch.device("cpu"))
    assert report.startswith("hosttune.engine: error: out of GPU memory (CUDA out of memory.")
    assert "--set micro_batch_size=16 --set grad_accum=4" in report
    assert "activation_checkpointing=true" in report and "expandable_segments:True" in report


# ---- checkpoints ----

def shared_state(step: int) -> dict:
    """What the engine's rank 0 saves, in miniature (load refuses a state.pt without these keys)."""
    return {"model": {"w": torch.full((2,), float(step))}, "optimizer": {}, "scheduler": {}, "scaler": {},
            "step": step, "epoch": 0, "pos": 0}


def test_checkpoints_atomic_keep_last_k_and_rng_roundtrip(tmp_path: Path) -> None:
    d = tmp_path / "checkpoints"
    (d / ".tmp-step-0000001").mkdir(parents=True)  # a save that crashed half-way
    torch.manual_seed(3)
    for step in (10, 20, 30):
        ckpt.save(d, step, 0, lambda s=step: shared_state(s), {"rng": ckpt.rng_state(False)}, keep=2)
    assert [p.name for p in ckpt.list_checkpoints(d)] == ["step-0000020", "step-0000030"]
    assert sorted(p.name for p in d.iterdir()) == ["step-0000020", "step-0000030"]  # no temp dirs or files
    assert sorted(p.name for p in (d / "step-0000030").iterdir()) == ["rng-rank0.pt", "state.pt"]
    state = ckpt.load(ckpt.latest_checkpoint(d), 0, torch.device("cpu"))
    assert state["step"] == 30 and state["model"]["w"].tolist() == [30.0, 30.0]
    drawn = torch.rand(4)
    ckpt.set_rng_state(state["rng"]["rng"], False)
    assert torch.equal(torch.rand(4), drawn)  # the saved RNG state replays the same draws
    assert ckpt.load(d / "step-0000030", 1, torch.device("cpu"))["rng"] is None  # no such rank


# ---- the API in process: bf16 autocast on CPU ----

class _Probe(torch.nn.Module):
    """Records the dtype its Linear layer computes in: bfloat16 under the engine's CPU autocast."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)
        self.seen = set()

    def forward(self, x):
        out = self.fc(x)
        self.seen.add(out.dtype)
        return out


def _toy(n: int = 256):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 8, generator=g)
    return torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long() + (x[:, 1] > 0).long())


def test_bf16_autocast_on_cpu_via_api(tmp_path: Path) -> None:
    from hosttune.engine.api import fit

    model = _Probe()
    summary = fit(model, _toy(), torch.nn.functional.cross_entropy, val_set=_toy(64), accuracy=True, steps=6,
                  micro_batch_size=16, amp="bf16", device="cpu", warmup_steps=1, log_interval=3,
                  run_dir=str(tmp_path / "run"))
    assert torch.bfloat16 in model.seen and model.fc.weight.dtype == torch.float32  # fp32 master weights
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert lines[0]["event"] == "start" and lines[0]["amp"] == "bfloat16"
    steps = [r for r in lines if "loss" in r]
    assert [r["step"] for r in steps] == [3, 6] and all(math.isfinite(r["loss"]) for r in steps)
    for key in ("lr", "samples_per_s", "step_time_s", "data_wait_frac", "grad_norm", "peak_mem_mb"):
        assert steps[-1][key] >= 0, key
    assert summary["step"] == 6 and 0 <= summary["val_accuracy"] <= 1
    assert (tmp_path / "run" / "checkpoints" / "step-0000006" / "state.pt").exists()


def test_api_rejects_unknown_setting(tmp_path: Path) -> None:
    from hosttune.engine.api import fit

    with pytest.raises(ConfigError, match="unknown key 'setps'"):
        fit(_Probe(), _toy(), torch.nn.functional.cross_entropy, setps=3, run_dir=str(tmp_path))


# ---- `hosttune train` ----

def test_hosttune_train_argv_and_fast_failure() -> None:
    from hosttune import programs
    from hosttune.cli import cli
    from hosttune.commands.train import RANK_SCRIPT, build_argv

    runner = cli_runner()
    r = runner.invoke(cli, ["train", "--nproc", "2", "--dry-run", "--python", sys.executable, "--preset", "gpt-tiny",
                            "--set", "steps=5"])
    assert r.exit_code == 0, r.output
    argv = build_argv(2, ["--preset", "gpt-tiny", "--set", "steps=5"], python=sys.executable)
    assert shlex.split(r.output) == argv  # printed shell-quoted: a shell reads back exactly this argv
    exec_argv = programs.own_argv("hosttune.cli")  # hosttune itself, never `-m` from the working directory
    n = len(exec_argv) + 2
    assert argv[:n] == [*exec_argv, "exec", "--"]
    assert argv[n:n + 6] == [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                             str(RANK_SCRIPT)]
    r = runner.invoke(cli, ["train", "--nproc", "2", "--preset", "gpt-tiny", "--set", "lrr=1"])
    assert r.exit_code == 2 and "unknown key 'lrr' (did you mean 'lr'?)" in r.output


def test_activation_checkpointing_gives_the_same_gradients() -> None:
    from hosttune.engine.models import GPT, lm_loss

    torch.manual_seed(0)
    model = GPT(20, 16, 2, 2, 32)
    x = torch.randint(0, 20, (4, 16))
    grads, saved = [], []
    for on in (False, True):
        model.activation_checkpointing = on
        model.zero_grad(set_to_none=True)
        numel = [0]

        def pack(t, numel=numel):
            numel[0] += t.numel()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = lm_loss(model(x), x)
        loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        saved.append(numel[0])
    assert saved[1] < saved[0] / 2  # far fewer activations kept for backward
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(*grads))


# ---- CUDA-only paths: run where a GPU is lent ----

@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_cuda_fp16_gradscaler_pin_memory(tmp_path: Path) -> None:
    from hosttune.engine.api import fit

    model = _Probe()
    summary = fit(model, _toy(), torch.nn.functional.cross_entropy, steps=6, micro_batch_size=16, amp="fp16",
                  device="cuda", pin_memory=True, num_workers=1, warmup_steps=1, log_interval=3,
                  run_dir=str(tmp_path / "run"))
    assert torch.float16 in model.seen and summary["step"] == 6
    state = torch.load(tmp_path / "run" / "checkpoints" / "step-0000006" / "state.pt", weights_only=False)
    assert state["scaler"]["scale"] > 0  # a live GradScaler was checkpointed
    assert loader_settings(Config(num_workers=1), cuda=True, env={}).pin_memory


def test_presets_are_documented_sizes() -> None:
    # The presets' documented size (~0.18M / ~0.4M parameters) is what ships.
    from hosttune.engine.models import GPT, TinyResNet

    rn = PRESETS["resnet-tiny"]
    r = sum(p.numel() for p in TinyResNet(rn["num_classes"], rn["width"]).parameters())
    g = sum(p.numel() for p in GPT(60, 64, 2, 4, 128).parameters())
    assert 100_000 < r < 300_000 and 300_000 < g < 600_000
