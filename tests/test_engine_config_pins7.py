"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/config.py: every default of Config, whole (a
changed default changes every run that does not set it), and what to_dict gives back through load_config. No
torch."""

from hosttune.engine.config import Config, load_config

DEFAULTS = {
    "model": "gpt-tiny", "preset": "", "n_layer": 2, "n_head": 4, "n_embd": 128, "block_size": 64, "dropout": 0.0,
    "data": "windows", "data_path": "", "length_bucketing": False, "width": 16, "num_classes": 10, "image_size": 16,
    "train_samples": 4096, "val_samples": 512, "image_source": "synthetic", "image_decoder": "auto", "steps": 300,
    "micro_batch_size": 32, "grad_accum": 1, "lr": 0.003, "min_lr": 0.0003, "warmup_steps": 20,
    "lr_schedule": "cosine", "decay_frac": 0.2, "decay_shape": "sqrt", "ema_decay": 0.0, "weight_decay": 0.1,
    "beta1": 0.9, "beta2": 0.95, "grad_clip": 1.0, "amp": "auto", "compile": False,
    "activation_checkpointing": False, "ac_mode": "full", "ac_every": 1, "float8": False, "shard": "none",
    "offload": "none", "channels_last": True, "deterministic": None, "cudnn_benchmark": None, "seed": 1337,
    "device": "auto", "num_workers": None, "pin_memory": None, "prefetch_factor": None, "persistent_workers": None,
    "run_dir": "", "log_interval": 10, "eval_samples": 512, "eval_batches": None, "ckpt_interval": 0,
    "keep_checkpoints": 3, "resume": False, "profile_steps": "", "peak_tflops": 0.0, "metrics_csv": False,
    "tensorboard": False, "memory_history": 20000,
}


def test_every_default_of_config() -> None:
    assert Config().to_dict() == DEFAULTS
    assert list(Config().to_dict()) == list(DEFAULTS)  # the order a run's start line lists them in


def test_to_dict_round_trips_through_load_config() -> None:
    cfg = load_config(None, None, ["steps=7", "amp=off", "activation_checkpointing=true", "ac_mode=selective_layer",
                                    "ac_every=2"], {})
    assert load_config(None, None, None, cfg.to_dict()).to_dict() == {
        **DEFAULTS, "steps": 7, "amp": "off", "activation_checkpointing": True, "ac_mode": "selective_layer",
        "ac_every": 2}
