"""Tensor-core-friendly shapes: the one warning at start when a CUDA run with autocast (fp16/bf16) has a layer
dimension or micro-batch that is not a multiple of 8.

NVIDIA's Deep Learning Performance guide ("Matrix Multiplication Background User's Guide", its "Requirements to
use Tensor Cores": https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/; and the
"Linear/Fully-Connected Layers" and "Convolutional Layers" user's guides beside it): with 16-bit inputs the GEMM
dimensions M, N, K should be multiples of 8 (16 bytes) for tensor cores to run at full efficiency; cuBLAS/cuDNN pad
or fall back to slower kernels otherwise. A linear layer's in/out features, a convolution's input and output
channels, the vocabulary (embedding rows, the output head) and the batch (part of M) are those dimensions. The
image's own channel count (3 for RGB) at the first convolution is the input, not a choice: it is not named.
Pure: it reads the modules and the settings, never the device, so it is tested on CPU with device type "cuda".
"""

from __future__ import annotations

from typing import List, Optional

from torch import nn

MULTIPLE = 8
SHOWN = 6  # layers named in the line; the rest are counted


def odd_shapes(model: nn.Module, micro_batch_size: int) -> List[str]:
    """Each dimension that is not a multiple of 8, as "name (what N)"."""
    out = []
    first_conv = True
    for name, m in model.named_modules():
        dims = []
        if isinstance(m, nn.Linear):
            dims = [("in_features", m.in_features), ("out_features", m.out_features)]
        elif isinstance(m, nn.Embedding):
            dims = [("num_embeddings", m.num_embeddings), ("embedding_dim", m.embedding_dim)]
        elif isinstance(m, nn.modules.conv._ConvNd):
            dims = [("out_channels", m.out_channels)]
            if not first_conv:
                dims.insert(0, ("in_channels", m.in_channels))
            first_conv = False
        bad = [f"{what} {n}" for what, n in dims if n % MULTIPLE]
        if bad:
            out.append(f"{name or type(m).__name__} ({', '.join(bad)})")
    if micro_batch_size % MULTIPLE:
        out.append(f"micro_batch_size {micro_batch_size}")
    return out


def shape_warning(model: nn.Module, micro_batch_size: int, device_type: str, amp: bool) -> Optional[str]:
    """The one warning line, or None: only CUDA runs under fp16/bf16 autocast use tensor cores this way."""
    if device_type != "cuda" or not amp:
        return None
    odd = odd_shapes(model, micro_batch_size)
    if not odd:
        return None
    named = "; ".join(odd[:SHOWN]) + (f"; and {len(odd) - SHOWN} more" if len(odd) > SHOWN else "")
    return (f"hosttune.engine: warning: not multiples of {MULTIPLE}, so tensor cores run them slower (NVIDIA's "
            f"Deep Learning Performance guide: 16-bit GEMM dimensions should be multiples of 8): {named}; pad "
            f"the vocabulary and choose sizes that are multiples of 8")
