"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/build.py, through fit() in this process (CPU,
no loader workers): an image model trained channels_last is also fed channels_last batches (the data gets the same
decision as the model: NHWC weights with NCHW inputs would make every convolution convert), and neither when the
setting is off."""

from pathlib import Path
from typing import List

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import hosttune.engine.build  # noqa: E402,F401  (the module pinned; fit builds through it)
from hosttune.engine.api import fit  # noqa: E402


class Seen(nn.Module):
    """Records the memory format of each training batch it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.formats: List[str] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            nhwc = x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
            self.formats.append("nhwc" if nhwc else "nchw" if x.is_contiguous() else "other")
        return x


@pytest.mark.parametrize("channels_last", [True, False])
def test_the_batches_follow_the_models_channels_last(tmp_path: Path, channels_last: bool) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 3, 4, 4, generator=g)
    data = torch.utils.data.TensorDataset(x, (x[:, 0, 0, 0] > 0).long())
    seen = Seen()
    model = nn.Sequential(seen, nn.Conv2d(3, 4, 3, padding=1), nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
    fit(model, data, nn.functional.cross_entropy, steps=2, micro_batch_size=4, warmup_steps=0, amp="off",
        device="cpu", num_workers=0, channels_last=channels_last, run_dir=str(tmp_path / "run"))
    assert seen.formats == ["nhwc" if channels_last else "nchw"] * 2
