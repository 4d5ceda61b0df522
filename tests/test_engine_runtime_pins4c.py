"""Pin for mutation round 4's last runtime survivor (issue 21): the run's precision is the config's `amp`, not what
`auto` would pick on this machine: amp=off trains in fp32 and amp=bf16 in bf16 on any CPU (an AVX2-only CPU's auto
is fp32, an avx512_bf16/AMX one's is bf16, so one of the two differs from auto on every machine)."""
from pathlib import Path
from typing import Optional

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import runtime  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402


@pytest.mark.parametrize("amp,dtype", [("off", None), ("bf16", torch.bfloat16)])
def test_the_configs_amp_is_the_runs_precision_on_cpu(tmp_path: Path, amp: str, dtype: Optional[torch.dtype]) -> None:
    benchmark = torch.backends.cudnn.benchmark
    rt = runtime.setup(Config(amp=amp, device="cpu", deterministic=False, run_dir=str(tmp_path)))
    try:
        assert rt.amp_dtype == dtype
        with rt.autocast():  # what the training step's math runs in
            assert (torch.ones(4, 4) @ torch.ones(4, 4)).dtype == (dtype or torch.float32)
    finally:
        runtime.teardown(rt)
        torch.backends.cudnn.benchmark = benchmark
