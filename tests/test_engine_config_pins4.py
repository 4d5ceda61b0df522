"""Pins (issue 21, round 4) for hosttune/engine/config.py: every check at its boundary (the last value accepted and
the first refused, with the message a user reads), the type coercions, presets, files and --set. No torch."""

import json
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune.engine.config import PRESETS, Config, ConfigError, load_config, parse_set, preset_values

AT_LEAST_ONE = ("steps", "micro_batch_size", "grad_accum", "log_interval", "keep_checkpoints", "n_layer", "n_head",
                "n_embd", "block_size", "width", "image_size", "eval_samples")
AT_LEAST_ZERO = ("warmup_steps", "ckpt_interval", "weight_decay", "grad_clip", "dropout", "peak_tflops")


@pytest.mark.parametrize("name", AT_LEAST_ONE)
def test_counts_of_at_least_one(name: str) -> None:
    kw: Dict[str, Any] = {name: 1}
    if name == "n_embd":
        kw["n_head"] = 1
    if name == "steps":
        kw["warmup_steps"] = 0
    assert getattr(Config(**kw), name) == 1
    with pytest.raises(ConfigError, match=f"^{name} must be >= 1, got 0$"):
        Config(**{**kw, name: 0})


@pytest.mark.parametrize("name", AT_LEAST_ZERO)
def test_values_of_at_least_zero(name: str) -> None:
    assert getattr(Config(**{name: 0}), name) == 0
    with pytest.raises(ConfigError, match=f"^{name} must be >= 0, got -1"):
        Config(**{name: -1})


def test_lr_and_min_lr() -> None:
    assert Config(lr=1e-9, min_lr=0.0).lr == 1e-9
    with pytest.raises(ConfigError, match="^lr must be > 0, got 0.0$"):
        Config(lr=0.0, min_lr=0.0)
    assert Config(lr=0.5, min_lr=0.5).min_lr == 0.5  # min_lr may equal lr
    with pytest.raises(ConfigError, match=r"^min_lr \(0.6\) must be between 0 and lr \(0.5\)$"):
        Config(lr=0.5, min_lr=0.6)
    with pytest.raises(ConfigError, match="min_lr"):
        Config(min_lr=-0.1)


def test_dropout_below_one_and_heads_divide_the_width() -> None:
    assert Config(dropout=0.99).dropout == 0.99
    with pytest.raises(ConfigError, match="^dropout must be < 1, got 1.0$"):
        Config(dropout=1.0)
    assert Config(n_embd=12, n_head=3).n_head == 3
    with pytest.raises(ConfigError, match=r"^n_embd \(12\) must be divisible by n_head \(5\)$"):
        Config(n_embd=12, n_head=5)


def test_classes_samples_and_batches() -> None:
    assert Config(num_classes=2, train_samples=2, val_samples=1).num_classes == 2
    with pytest.raises(ConfigError, match="^num_classes must be >= 2, got 1$"):
        Config(num_classes=1)
    with pytest.raises(ConfigError, match="train_samples must be >= num_classes"):
        Config(num_classes=5, train_samples=4)
    with pytest.raises(ConfigError, match="val_samples >= 1"):
        Config(val_samples=0)
    assert Config(eval_batches=1).eval_batches == 1 and Config(eval_batches=None).eval_batches is None
    with pytest.raises(ConfigError, match="^eval_batches must be >= 1 or null, got 0$"):
        Config(eval_batches=0)
    assert Config(num_workers=0).num_workers == 0
    with pytest.raises(ConfigError, match="^num_workers must be >= 0, got -1$"):
        Config(num_workers=-1)


def test_device_and_loader_combinations() -> None:
    assert Config(device="cuda", amp="fp16").amp == "fp16"
    assert Config(device="auto", amp="fp16").amp == "fp16"
    with pytest.raises(ConfigError, match="amp=fp16 needs CUDA"):
        Config(device="cpu", amp="fp16")
    assert Config(device="cpu", pin_memory=False).pin_memory is False
    assert Config(device="cuda", pin_memory=True).pin_memory is True
    with pytest.raises(ConfigError, match="pin_memory=true needs CUDA"):
        Config(device="cpu", pin_memory=True)
    assert Config(num_workers=1, prefetch_factor=2).prefetch_factor == 2
    assert Config(prefetch_factor=2).prefetch_factor == 2  # workers from the profile: not known here
    with pytest.raises(ConfigError, match="prefetch_factor needs num_workers >= 1"):
        Config(num_workers=0, prefetch_factor=2)
    assert Config(num_workers=0, persistent_workers=False).persistent_workers is False
    assert Config(num_workers=1, persistent_workers=True).persistent_workers is True
    with pytest.raises(ConfigError, match="persistent_workers=true needs num_workers >= 1"):
        Config(num_workers=0, persistent_workers=True)


@pytest.mark.parametrize("kw, msg", [
    ({"model": "gpt-huge"}, "model must be one of gpt-tiny, resnet-tiny, custom, got 'gpt-huge'"),
    ({"amp": "fp8"}, "amp must be one of auto, bf16, fp16, off, got 'fp8'"),
    ({"device": "tpu"}, "device must be one of auto, cpu, cuda, got 'tpu'"),
    ({"shard": "zero3"}, "shard must be one of none, zero1, fsdp, got 'zero3'"),
    ({"offload": "nvme"}, "offload must be one of none, cpu, got 'nvme'"),
    ({"data": "tokens"}, "data must be one of windows, lines, shards, got 'tokens'"),
    ({"image_source": "web", "model": "resnet-tiny"}, "image_source must be one of synthetic, bundled, folder"),
    ({"image_decoder": "cv2"}, "image_decoder must be one of auto, pil, turbojpeg, got 'cv2'"),
    ({"lr_schedule": "step"}, "lr_schedule must be one of cosine, linear, sqrt, wsd, constant, got 'step'"),
    ({"decay_shape": "exp"}, "decay_shape must be one of cosine, linear, sqrt, got 'exp'"),
    ({"ac_mode": "some", "activation_checkpointing": True}, "ac_mode must be one of full, selective_layer"),
    ({"offload": "cpu", "shard": "zero1"}, "offload=cpu needs shard=fsdp"),
    ({"data": "lines", "model": "resnet-tiny"}, "data=lines applies to gpt-tiny"),
    ({"image_source": "bundled"}, "image_source=bundled applies to resnet-tiny"),
    ({"image_source": "folder", "model": "resnet-tiny"}, "image_source=folder needs data_path"),
    ({"image_source": "bundled", "model": "resnet-tiny", "data_path": "x"}, "image_source=bundled reads the shipped"),
    ({"data_path": "x"}, "data_path needs data=shards"),
    ({"cudnn_benchmark": True, "deterministic": True}, "cudnn_benchmark=true contradicts deterministic=true"),
    ({"activation_checkpointing": True, "model": "resnet-tiny"}, "activation_checkpointing applies to the"),
    ({"float8": True, "device": "cpu"}, "float8=true needs a CUDA GPU"),
    ({"float8": True, "amp": "fp16"}, "float8=true trains with bf16 or fp32"),
    ({"ac_mode": "selective_op"}, "ac_mode=selective_op needs activation_checkpointing=true"),
    ({"ac_every": 0}, "ac_every must be >= 1, got 0"),
    ({"ac_every": 2, "activation_checkpointing": True}, "ac_every=2 needs ac_mode=selective_layer"),
    ({"memory_history": -1}, "memory_history must be >= 0"),
    ({"ema_decay": 1.0}, r"ema_decay must be in \[0, 1\)"),
    ({"ema_decay": -0.1}, r"ema_decay must be in \[0, 1\)"),
    ({"ema_decay": 0.9, "shard": "zero1"}, "ema_decay needs shard=none"),
    ({"decay_frac": 0.0}, r"decay_frac must be in \(0, 1\]"),
    ({"decay_frac": 1.01}, r"decay_frac must be in \(0, 1\]"),
])
def test_each_refusal_is_its_own_line(kw: Dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        Config(**kw)


@pytest.mark.parametrize("kw", [
    {"offload": "cpu", "shard": "fsdp"}, {"data": "shards", "data_path": "x"}, {"data": "lines"},
    {"model": "resnet-tiny", "image_source": "folder", "data_path": "x"},
    {"model": "resnet-tiny", "image_source": "bundled"},
    {"cudnn_benchmark": True, "deterministic": False}, {"cudnn_benchmark": False, "deterministic": True},
    {"activation_checkpointing": True, "ac_mode": "selective_op"},
    {"activation_checkpointing": True, "ac_mode": "selective_layer", "ac_every": 3},
    {"memory_history": 0}, {"ema_decay": 0.0, "shard": "fsdp"}, {"ema_decay": 0.999}, {"decay_frac": 1.0},
    {"float8": True, "device": "cuda", "amp": "bf16"}, {"model": "resnet-tiny", "channels_last": False},
])
def test_the_accepted_neighbours_of_each_refusal(kw: Dict[str, Any]) -> None:
    c = Config(**kw)
    assert all(getattr(c, k) == v for k, v in kw.items())


def test_wsd_decay_must_not_overlap_the_warmup() -> None:
    c = Config(lr_schedule="wsd", steps=100, warmup_steps=80, decay_frac=0.2)  # 20 decay + 80 warmup: exactly fits
    assert c.decay_steps() == 20
    with pytest.raises(ConfigError, match=r"lr_schedule=wsd: the decay \(20 of 100 steps, decay_frac=0.2\) overlaps "
                                          r"the warmup \(81 steps\)"):
        Config(lr_schedule="wsd", steps=100, warmup_steps=81, decay_frac=0.2)
    assert Config(lr_schedule="cosine", steps=100, warmup_steps=99, decay_frac=0.2).warmup_steps == 99
    assert Config(steps=10, decay_frac=0.01).decay_steps() == 1  # at least one
    assert Config(steps=10, decay_frac=0.25).decay_steps() == 2  # round(2.5) = 2
    assert Config(steps=10, decay_frac=0.35).decay_steps() == 4  # round(3.5) = 4


def test_profile_steps_format_and_length() -> None:
    assert Config().profile_schedule() is None
    assert Config(profile_steps="0,0,1", steps=1).profile_schedule() == [0, 0, 1]
    assert Config(profile_steps="2,3,5", steps=10).profile_schedule() == [2, 3, 5]
    with pytest.raises(ConfigError, match="profile_steps 2,3,5 needs 10 steps, the run has 9"):
        Config(profile_steps="2,3,5", steps=9, warmup_steps=0)
    for bad in ("1,1,0", "-1,1,1", "1,1", "1,1,1,1", "a,b,c"):
        with pytest.raises(ConfigError, match=r"profile_steps must be WAIT,WARMUP,ACTIVE \(e.g. 2,2,5\)"):
            Config(profile_steps=bad)


def test_coercions() -> None:
    c = Config(lr=1, min_lr=0, amp=False, weight_decay="1e-3")
    assert c.lr == 1.0 and isinstance(c.lr, float) and isinstance(c.min_lr, float)
    assert c.amp == "off" and c.weight_decay == 0.001
    with pytest.raises(ConfigError, match="amp must be one of"):
        Config(amp=True)
    with pytest.raises(ConfigError, match="^steps must be an integer, got True$"):
        Config(steps=True)
    with pytest.raises(ConfigError, match="^steps must be an integer, got 1.5$"):
        Config(steps=1.5)
    with pytest.raises(ConfigError, match="^num_workers must be an integer or null, got 'x'$"):
        Config(num_workers="x")
    with pytest.raises(ConfigError, match="^lr must be a number, got 'fast'$"):
        Config(lr="fast")
    with pytest.raises(ConfigError, match="^compile must be true or false, got 1$"):
        Config(compile=1)
    with pytest.raises(ConfigError, match="^steps must be an integer, got None$"):
        Config(steps=None)


def test_presets() -> None:
    assert preset_values("gpt-tiny") == {**PRESETS["gpt-tiny"], "preset": "gpt-tiny"}
    with pytest.raises(ConfigError, match=r"^unknown preset 'gpt-tiyn' \(did you mean 'gpt-tiny'\?\)$"):
        preset_values("gpt-tiyn")
    with pytest.raises(ConfigError, match="^unknown preset 'zzz'; presets: gpt-tiny, resnet-tiny$"):
        preset_values("zzz")
    r = load_config("resnet-tiny")
    assert (r.model, r.preset, r.width, r.weight_decay) == ("resnet-tiny", "resnet-tiny", 24, 0.05)


def test_parse_set_values() -> None:
    assert parse_set("steps=3") == {"steps": 3}
    assert parse_set(" lr = 1e-3") == {"lr": "1e-3"}  # YAML 1.1's string; Config reads it as the number
    assert load_config(sets=[" lr = 1e-3"]).lr == 0.001
    assert parse_set("compile=true") == {"compile": True}
    assert parse_set("num_workers=null") == {"num_workers": None}
    assert parse_set("run_dir=") == {"run_dir": ""}
    assert parse_set("run_dir=a=b") == {"run_dir": "a=b"}
    assert parse_set("profile_steps=[1,2]") == {"profile_steps": "[1,2]"}  # a list stays the text typed
    assert parse_set("run_dir={a: 1}") == {"run_dir": "{a: 1}"}
    for bad in ("steps", "=3", " =3"):
        with pytest.raises(ConfigError, match="--set expects key=value"):
            parse_set(bad)


def test_resolution_order_defaults_preset_file_set_option(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("preset: resnet-tiny\nsteps: 7\nwidth: 8\nlr: 0.01\n")
    c = load_config(config_file=str(f), sets=["width=12", "lr=0.02"], overrides={"lr": 0.03})
    assert (c.model, c.preset, c.steps, c.width, c.lr, c.image_size) == ("resnet-tiny", "resnet-tiny", 7, 12, 0.03, 16)
    # an explicit preset wins over the file's preset: key
    h = tmp_path / "h.yaml"
    h.write_text("preset: resnet-tiny\nsteps: 5\n")
    assert load_config(preset="gpt-tiny", config_file=str(h)).model == "gpt-tiny"
    assert load_config(preset="gpt-tiny", config_file=str(h)).steps == 5
    with pytest.raises(ConfigError, match=r"--set: unknown key 'stpes' \(did you mean 'steps'\?\)"):
        load_config(sets=["stpes=3"])
    with pytest.raises(ConfigError, match="option: unknown key 'zzzzqq'$"):
        load_config(overrides={"zzzzqq": 1})
    h.write_text("bogus_key_x: 1\n")
    with pytest.raises(ConfigError, match=f"{h}: unknown key 'bogus_key_x'"):
        load_config(config_file=str(h))


def test_json_config_files(tmp_path: Path) -> None:
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"preset": "gpt-tiny", "steps": 4}))
    c = load_config(config_file=str(f))
    assert (c.preset, c.steps) == ("gpt-tiny", 4)
    f.write_text('{"steps": 4, "steps": 5}')
    with pytest.raises(ConfigError, match=f"^{f}: duplicate key 'steps'$"):
        load_config(config_file=str(f))
    f.write_text('{"steps": ')
    with pytest.raises(ConfigError, match=f"^{f}:1: not valid JSON"):
        load_config(config_file=str(f))
    f.write_text("[1, 2]")
    with pytest.raises(ConfigError, match=f"^{f}:1: a config file must be a JSON object of settings, not list$"):
        load_config(config_file=str(f))
    f.write_text("null")
    assert load_config(config_file=str(f)).steps == Config().steps
    f.write_text("[" * 100000)
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(config_file=str(f))
    big = tmp_path / "big.yaml"
    big.write_text("steps: 3\n" + "#" * (1 << 20))
    with pytest.raises(ConfigError):
        load_config(config_file=str(big))
