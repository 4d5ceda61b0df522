"""What to train: `Task` (a model, its data and its loss), and the bundled presets built as one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import torch
from torch import nn
from torch.utils.data import Dataset

from .config import Config
from .data import CharLines, CharText, ShardedText, default_shards, image_sets
from .errors import EngineError
from .models import GPT, TinyResNet, classification_loss, lm_loss


@dataclass
class Task:
    """What to train. The presets build one; the Python API builds one from the user's own pieces."""

    model: nn.Module
    train_set: Dataset
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    val_set: Optional[Dataset] = None
    accuracy: bool = False  # also report top-1 accuracy on val_set
    tokens_per_sample: int = 0  # > 0 for sequence models: metrics get tokens/s
    notes: Dict[str, Any] = field(default_factory=dict)  # extra summary fields (e.g. unigram entropy)


def build_preset_task(cfg: Config) -> Task:
    torch.manual_seed(cfg.seed)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    if cfg.model == "resnet-tiny":
        train, val, classes = image_sets(cfg)  # synthetic, or an image folder (image_source, image_decoder)
        notes: Dict[str, Any] = {"chance_accuracy": round(1 / classes, 4)}
        if hasattr(train, "decoder_name"):
            notes["image_decoder"] = train.decoder_name
        return Task(TinyResNet(classes, cfg.width), train, classification_loss, val, accuracy=True, notes=notes)
    if cfg.model == "gpt-tiny":
        windows = CharText(cfg.block_size, "train")
        text_train: Dataset = windows
        text_val: Dataset = CharText(cfg.block_size, "val")
        if cfg.data == "lines":
            text_train, text_val = CharLines(cfg.block_size, "train"), CharLines(cfg.block_size, "val")
        elif cfg.data == "shards":
            index = Path(cfg.data_path) if cfg.data_path else default_shards()
            try:
                stream = ShardedText(index, cfg.block_size, cfg.seed)
            except ValueError as exc:
                raise EngineError(str(exc)) from None
            if stream.chars != "".join(windows.chars):
                raise EngineError(f"{index}: its vocabulary is not the bundled text's; gpt-tiny's val split needs it")
            text_train = stream
        # Tensor cores want matrix sides in multiples of 64: the embedding/output layer's 62 rows become 64 (the
        # extra tokens never occur, so they only learn to be unlikely).
        gpt = GPT(pad_to_multiple(windows.vocab_size, 64), cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd,
                  cfg.dropout)
        return Task(gpt, text_train, lm_loss, text_val,
                    tokens_per_sample=cfg.block_size if cfg.data != "lines" else 0,
                    notes={"unigram_entropy": round(windows.unigram_entropy(), 4)})
    raise EngineError("model=custom needs the Python API (hosttune.engine.api.fit) with your own model")


def pad_to_multiple(n: int, k: int) -> int:
    return -(-n // k) * k
