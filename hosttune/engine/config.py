"""The engine's configuration: one typed dataclass, bundled presets, and loading from preset/file/--set.

Nothing here imports torch, so a bad flag or key fails in a few milliseconds with one line instead of after
torch's two-second import. Settings resolve in this order: field defaults < preset < config file < --set.
A config file is read like every file a user hands hosttune: bounded, regular files only, UTF-8, through the one
YAML loader (no expanding aliases, no duplicate keys); every value quoted in an error goes through `brief()`, so a
hostile file cannot make a message (or the time to build it) grow.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from hosttune.errors import UserError
from hosttune.fsio import read_user_text
from hosttune.yamlio import brief, load_mapping
from hosttune.yamlio import load as load_yaml

AMP_MODES = ("auto", "bf16", "fp16", "off")
DEVICES = ("auto", "cpu", "cuda")
MODELS = ("gpt-tiny", "resnet-tiny", "custom")
DATA_KINDS = ("windows", "lines", "shards")
IMAGE_SOURCES = ("synthetic", "bundled", "folder")  # IMG: resnet-tiny's images
IMAGE_DECODERS = ("auto", "pil", "turbojpeg")  # IMG
SHARD_MODES = ("none", "zero1", "fsdp")
LR_SCHEDULES = ("cosine", "linear", "sqrt", "wsd", "constant")
DECAY_SHAPES = ("cosine", "linear", "sqrt")
OFFLOAD_MODES = ("none", "cpu")
AC_MODES = ("full", "selective_layer", "selective_op")
CONFIG_LIMIT = 1 << 20  # bytes; a config is a few dozen lines


class ConfigError(Exception):
    """A bad setting. `python -m hosttune.engine` prints it as one line and exits 2."""


@dataclass
class Config:
    # -- what to train --
    model: str = "gpt-tiny"  # gpt-tiny | resnet-tiny | custom (the Python API's own model)
    preset: str = ""  # the preset these settings started from (names the default run dir)
    # gpt-tiny: a character-level transformer on the bundled text
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 64
    dropout: float = 0.0
    # gpt-tiny's data: windows (fixed-length, in memory) | lines (one sentence each: variable length, padded) |
    # shards (windows streamed from text shards, an IterableDataset: the bundled shards unless data_path names a
    # .shards.json index)
    data: str = "windows"
    data_path: str = ""
    length_bucketing: bool = False  # batch samples of similar length together (variable-length data)
    # resnet-tiny: a small residual CNN on synthetic, separable image classes
    width: int = 16
    num_classes: int = 10
    image_size: int = 16
    train_samples: int = 4096
    val_samples: int = 512
    # -- IMG: resnet-tiny's images: synthetic (generated, train/val_samples) | bundled (the shipped image folder) |
    # folder (the image folder data_path names: one sub-directory per class of JPEG/PNG files, decoded by
    # image_decoder auto|pil|turbojpeg in the loader workers, reduced in size by the JPEG decoder to image_size)
    image_source: str = "synthetic"
    image_decoder: str = "auto"
    # -- end IMG --
    # -- optimisation --
    steps: int = 300  # optimizer steps (each is grad_accum micro-batches per rank)
    micro_batch_size: int = 32
    grad_accum: int = 1
    lr: float = 3e-3
    min_lr: float = 3e-4  # the decays end at this
    warmup_steps: int = 20
    # after the linear warmup: cosine | linear | sqrt (1 - sqrt of the progress) decay to min_lr over the rest of
    # the run; wsd (warmup-stable-decay): lr until the last decay_frac of the steps, then a decay_shape decay;
    # constant: lr to the end
    lr_schedule: str = "cosine"
    decay_frac: float = 0.2  # wsd: the share of all steps spent decaying
    decay_shape: str = "sqrt"  # wsd: cosine | linear | sqrt (1 - sqrt, the cooldown of Hägele et al. 2024)
    ema_decay: float = 0.0  # EMA of the weights, updated after each optimizer step (e.g. 0.999), checkpointed and
    # used for the final evaluation; 0 = off
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0  # 0 = no clipping (the norm is still measured for metrics)
    # -- precision and speed --
    amp: str = "auto"  # auto | bf16 | fp16 | off
    compile: bool = False
    activation_checkpointing: bool = False  # transformer blocks only
    # -- which activations are recomputed when activation_checkpointing is on (torchtitan's modes): full = every
    # block; selective_layer = every ac_every-th block; selective_op = every block, keeping the attention and
    # every other matmul output, recomputing the rest (the norms, GELU, residual adds and the other matmuls) --
    ac_mode: str = "full"  # full | selective_layer | selective_op
    ac_every: int = 1  # selective_layer: checkpoint every N-th block (1 = every block)
    # E1: float8 matmuls through torchao on GPUs of compute capability >= 8.9 (refused elsewhere, one line)
    float8: bool = False
    # -- memory across ranks --
    shard: str = "none"  # none (DDP) | zero1 (optimizer state sharded) | fsdp (parameters, gradients, optimizer state)
    offload: str = "none"  # none | cpu: FSDP keeps the sharded state in host memory
    channels_last: bool = True  # image models only
    deterministic: Optional[bool] = None  # None = HOSTTUNE_DETERMINISTIC from the profile, else off
    cudnn_benchmark: Optional[bool] = None  # autotuned convolutions; None = on unless deterministic. Off helps
    # when input shapes vary (every new shape is autotuned again)
    seed: int = 1337
    device: str = "auto"  # auto | cpu | cuda
    # -- data loading: None = the launcher's profile (HOSTTUNE_* env), then a default for this host --
    num_workers: Optional[int] = None
    pin_memory: Optional[bool] = None
    prefetch_factor: Optional[int] = None
    persistent_workers: Optional[bool] = None
    # -- bookkeeping --
    run_dir: str = ""  # default runs/<preset>-<time>
    log_interval: int = 10
    eval_samples: int = 512  # validation samples at the end, in all (split between ranks; fewer if the set is smaller)
    eval_batches: Optional[int] = None  # also stop each rank after this many micro-batches (None: no such cap)
    ckpt_interval: int = 0  # steps between checkpoints; 0 = only at the end (and on SIGTERM)
    keep_checkpoints: int = 3
    resume: bool = False
    profile_steps: str = ""  # "WAIT,WARMUP,ACTIVE" for torch.profiler, e.g. "2,2,5"
    peak_tflops: float = 0.0  # per device, for MFU; 0 = known GPUs only (no MFU on CPU unless set)
    # -- more reports: rank 0's metrics also as CSV and TensorBoard events; a CUDA OOM's memory snapshot --
    metrics_csv: bool = False  # <run>/metrics.csv: one row per log interval, a fixed header
    tensorboard: bool = False  # <run>/tensorboard/ event files (needs the tensorboard package)
    memory_history: int = 20000  # CUDA: the allocator events kept (Python stacks); a CUDA OOM writes them to
    # <run>/oom-snapshot.pickle, for https://pytorch.org/memory_viz (0 = off)

    def __post_init__(self) -> None:
        for f in fields(self):
            setattr(self, f.name, _coerce(f.name, f.type, getattr(self, f.name)))
        _check(self.model in MODELS, f"model must be one of {', '.join(MODELS)}, got {brief(self.model)}")
        _check(self.amp in AMP_MODES, f"amp must be one of {', '.join(AMP_MODES)}, got {brief(self.amp)}")
        _check(self.device in DEVICES, f"device must be one of {', '.join(DEVICES)}, got {brief(self.device)}")
        for name in ("steps", "micro_batch_size", "grad_accum", "log_interval", "keep_checkpoints", "n_layer",
                     "n_head", "n_embd", "block_size", "width", "num_classes", "image_size", "eval_samples"):
            _check(getattr(self, name) >= 1, f"{name} must be >= 1, got {brief(getattr(self, name))}")
        for name in ("warmup_steps", "ckpt_interval", "weight_decay", "grad_clip", "dropout", "peak_tflops"):
            _check(getattr(self, name) >= 0, f"{name} must be >= 0, got {brief(getattr(self, name))}")
        _check(self.lr > 0, f"lr must be > 0, got {self.lr}")
        _check(0 <= self.min_lr <= self.lr, f"min_lr ({self.min_lr}) must be between 0 and lr ({self.lr})")
        _check(self.dropout < 1, f"dropout must be < 1, got {self.dropout}")
        _check(self.n_embd % self.n_head == 0, f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        _check(self.num_classes >= 2, f"num_classes must be >= 2, got {brief(self.num_classes)}")
        _check(self.train_samples >= self.num_classes and self.val_samples >= 1,
               "train_samples must be >= num_classes and val_samples >= 1")
        _check(self.eval_batches is None or self.eval_batches >= 1,
               f"eval_batches must be >= 1 or null, got {brief(self.eval_batches)}")
        _check(self.num_workers is None or self.num_workers >= 0,
               f"num_workers must be >= 0, got {brief(self.num_workers)}")
        _check(not (self.device == "cpu" and self.amp == "fp16"),
               "amp=fp16 needs CUDA (GradScaler); on CPU use amp=bf16 or amp=off")
        _check(not (self.device == "cpu" and self.pin_memory),
               "pin_memory=true needs CUDA; it does nothing but warn on a CPU device")
        _check(not (self.prefetch_factor is not None and self.num_workers == 0),
               "prefetch_factor needs num_workers >= 1 (the main process does not prefetch)")
        _check(not (self.persistent_workers and self.num_workers == 0),
               "persistent_workers=true needs num_workers >= 1")
        _check(self.shard in SHARD_MODES, f"shard must be one of {', '.join(SHARD_MODES)}, got {brief(self.shard)}")
        _check(self.offload in OFFLOAD_MODES,
               f"offload must be one of {', '.join(OFFLOAD_MODES)}, got {brief(self.offload)}")
        _check(self.offload == "none" or self.shard == "fsdp",
               "offload=cpu needs shard=fsdp (it offloads FSDP's shards)")
        _check(self.data in DATA_KINDS, f"data must be one of {', '.join(DATA_KINDS)}, got {brief(self.data)}")
        _check(self.data == "windows" or self.model == "gpt-tiny",
               f"data={self.data} applies to gpt-tiny (the Python API takes your own dataset)")
        self._check_images()  # IMG
        _check(not self.data_path or self.data == "shards" or self.image_source == "folder",
               "data_path needs data=shards (gpt-tiny) or image_source=folder (resnet-tiny)")
        _check(not (self.cudnn_benchmark and self.deterministic),
               "cudnn_benchmark=true contradicts deterministic=true (autotuning picks kernels run by run)")
        _check(not (self.activation_checkpointing and self.model == "resnet-tiny"),
               "activation_checkpointing applies to the transformer (gpt-tiny), not resnet-tiny")
        # E1: float8 (the GPU and torchao are checked at start: hosttune.engine.float8)
        _check(not (self.float8 and self.device == "cpu"),
               "float8=true needs a CUDA GPU of compute capability 8.9 or newer; device=cpu: drop float8")
        _check(not (self.float8 and self.amp == "fp16"),
               "float8=true trains with bf16 or fp32 around the float8 matmuls, not amp=fp16: use amp=bf16 or auto")
        self._check_schedule()
        self._check_ac_and_reports()
        self.profile_schedule()  # validates the format

    def _check_images(self) -> None:  # IMG
        _check(self.image_source in IMAGE_SOURCES,
               f"image_source must be one of {', '.join(IMAGE_SOURCES)}, got {brief(self.image_source)}")
        _check(self.image_decoder in IMAGE_DECODERS,
               f"image_decoder must be one of {', '.join(IMAGE_DECODERS)}, got {brief(self.image_decoder)}")
        _check(self.image_source == "synthetic" or self.model == "resnet-tiny",
               f"image_source={self.image_source} applies to resnet-tiny (the Python API takes your own dataset)")
        _check(self.image_source != "folder" or bool(self.data_path),
               "image_source=folder needs data_path (the image folder: one sub-directory per class)")
        _check(not (self.image_source == "bundled" and self.data_path),
               "image_source=bundled reads the shipped images; data_path names a folder with image_source=folder")

    def _check_schedule(self) -> None:
        _check(self.lr_schedule in LR_SCHEDULES,
               f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {brief(self.lr_schedule)}")
        _check(self.decay_shape in DECAY_SHAPES,
               f"decay_shape must be one of {', '.join(DECAY_SHAPES)}, got {brief(self.decay_shape)}")
        _check(0 < self.decay_frac <= 1, f"decay_frac must be in (0, 1], got {brief(self.decay_frac)}")
        _check(self.lr_schedule != "wsd" or self.steps - self.decay_steps() >= self.warmup_steps,
               f"lr_schedule=wsd: the decay ({self.decay_steps()} of {self.steps} steps, decay_frac="
               f"{self.decay_frac}) overlaps the warmup ({self.warmup_steps} steps)")
        _check(0 <= self.ema_decay < 1, f"ema_decay must be in [0, 1) (0 = off), got {brief(self.ema_decay)}")
        _check(not (self.ema_decay and self.shard != "none"),
               f"ema_decay needs shard=none: the EMA of sharded (shard={self.shard}) weights is not supported")

    def _check_ac_and_reports(self) -> None:
        _check(self.ac_mode in AC_MODES, f"ac_mode must be one of {', '.join(AC_MODES)}, got {brief(self.ac_mode)}")
        _check(self.ac_mode == "full" or self.activation_checkpointing,
               f"ac_mode={self.ac_mode} needs activation_checkpointing=true")
        _check(self.ac_every >= 1, f"ac_every must be >= 1, got {brief(self.ac_every)}")
        _check(self.ac_every == 1 or self.ac_mode == "selective_layer",
               f"ac_every={self.ac_every} needs ac_mode=selective_layer (the other modes checkpoint every block)")
        _check(self.memory_history >= 0, f"memory_history must be >= 0 (0 = off), got {brief(self.memory_history)}")

    def decay_steps(self) -> int:
        """wsd: how many of the last steps decay (at least 1)."""
        return max(1, round(self.decay_frac * self.steps))

    def profile_schedule(self) -> Optional[List[int]]:
        """`profile_steps` as [wait, warmup, active], or None when profiling is off."""
        if not self.profile_steps:
            return None
        parts = self.profile_steps.split(",")
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            nums = []
        if len(nums) != 3 or min(nums) < 0 or nums[2] < 1:
            raise ConfigError(f"profile_steps must be WAIT,WARMUP,ACTIVE (e.g. 2,2,5), got {brief(self.profile_steps)}")
        if sum(nums) > self.steps:
            raise ConfigError(f"profile_steps {self.profile_steps} needs {sum(nums)} steps, the run has {self.steps}")
        return nums

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


PRESETS: Dict[str, Dict[str, Any]] = {
    # ~0.18M parameters; 2 CPU ranks x 300 steps in about a minute on a 2-core host.
    "resnet-tiny": dict(model="resnet-tiny", steps=300, micro_batch_size=32, lr=3e-3, min_lr=3e-4,
                        warmup_steps=20, weight_decay=0.05, width=24, image_size=16, num_classes=10),
    # ~0.4M parameters, 64-character context; 2 CPU ranks x 300 steps in about a minute on a 2-core host.
    "gpt-tiny": dict(model="gpt-tiny", steps=300, micro_batch_size=32, lr=3e-3, min_lr=3e-4, warmup_steps=20,
                     n_layer=2, n_head=4, n_embd=128, block_size=64, dropout=0.0, weight_decay=0.1),
}


def _check(ok: bool, msg: str) -> None:
    if not ok:
        raise ConfigError(msg)


_TYPE_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _coerce(name: str, annotation: Any, value: Any) -> Any:
    """Type-check one field (annotations are strings under `from __future__ import annotations`)."""
    ann = str(annotation)
    optional = ann.startswith("Optional[")
    base = {"int": int, "float": float, "bool": bool, "str": str}[ann[9:-1] if optional else ann]
    if value is None and optional:
        return None
    if base is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if base is str and isinstance(value, bool):  # YAML 1.1 reads `amp: off` as False
        return "on" if value else "off"
    if base is float and isinstance(value, str):
        try:  # YAML 1.1 reads `1e-3` (no dot) as a string; accept it as the number everyone means
            return float(value)
        except ValueError:
            pass
    if isinstance(value, base) and not (base is int and isinstance(value, bool)):
        return value
    want = _TYPE_NAMES[base] + (" or null" if optional else "")
    raise ConfigError(f"{name} must be {want}, got {brief(value)}")


def _suggest(key: str) -> str:
    close = difflib.get_close_matches(key, [f.name for f in fields(Config)], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _apply(values: Dict[str, Any], updates: Dict[str, Any], source: str) -> None:
    known = {f.name for f in fields(Config)}
    for key, value in updates.items():
        if key not in known:
            raise ConfigError(f"{source}: unknown key {brief(key)}{_suggest(str(key)[:100])}")
        values[key] = value


def preset_values(name: str) -> Dict[str, Any]:
    if name not in PRESETS:
        close = difflib.get_close_matches(name[:100], list(PRESETS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f"; presets: {', '.join(sorted(PRESETS))}"
        raise ConfigError(f"unknown preset {brief(name)}{hint}")
    return dict(PRESETS[name], preset=name)


def read_config_file(path: Union[str, Path]) -> Dict[str, Any]:
    """A YAML or JSON mapping of Config keys (a `preset:` key names the starting preset)."""
    p = Path(path)
    try:
        text = read_user_text(p, "config file", CONFIG_LIMIT)  # a FIFO, /dev/zero or binary file: one line
        if p.suffix == ".json":
            return _json_mapping(text, p)
        return load_mapping(text, str(p), "a config file")[0]
    except UserError as exc:
        raise ConfigError(str(exc)) from None


def _json_mapping(text: str, p: Path) -> Dict[str, Any]:
    def no_duplicates(pairs: List[Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ConfigError(f"{p}: duplicate key {brief(k)}")
            out[k] = v
        return out

    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except (RecursionError, ValueError) as exc:  # nested too deeply; an integer too long to convert
        raise ConfigError(f"{p}: not valid JSON: {brief(str(exc) or type(exc).__name__, 120)[1:-1]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}:1: a config file must be a JSON object of settings, not {type(data).__name__}")
    return data


def parse_set(item: str) -> Dict[str, Any]:
    """`key=value` with a YAML-typed value (3 -> int, 1e-3 -> float, true -> bool, null -> None)."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set expects key=value, got {brief(item)}")
    try:
        value = load_yaml(raw, "--set")[0] if raw.strip() else ""
    except UserError:
        value = raw
    if isinstance(value, (dict, list)):
        value = raw
    return {key.strip(): value}


def load_config(preset: Optional[str] = None, config_file: Optional[str] = None, sets: Optional[List[str]] = None,
                overrides: Optional[Dict[str, Any]] = None) -> Config:
    values: Dict[str, Any] = {}
    file_values: Dict[str, Any] = {}
    if config_file:
        file_values = read_config_file(config_file)
        base = file_values.pop("preset", None)
        if base is not None and preset is None:
            preset = str(base)
    if preset:
        values.update(preset_values(preset))
    if config_file:
        _apply(values, file_values, str(config_file))
    for item in sets or []:
        _apply(values, parse_set(item), "--set")
    _apply(values, overrides or {}, "option")
    try:
        return Config(**values)
    except TypeError as exc:  # only reachable with a non-str key in a file
        raise ConfigError(str(exc)) from None
