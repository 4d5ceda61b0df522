"""Precision and device choices on the GPU paths (issue 25, correctness 3), through the engine's pure functions:
amp=auto below compute capability 7.0 runs without autocast, TF32 stays allowed in deterministic mode, and a rank's
GPU is the one the plan gives it. Not run on a GPU here: the CUDA device is only a name."""

from typing import Iterator

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import precision, runtime  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402

CUDA0 = torch.device("cuda", 0)


@pytest.mark.parametrize("capability, expected", [
    ((6, 1), None),  # P40, P4, GTX 10xx: fp16 math at 1/64 of fp32
    ((6, 0), None),  # P100: no tensor cores
    ((5, 2), None),
    ((7, 0), torch.float16),  # V100
    ((7, 5), torch.float16),  # T4
    ((8, 0), torch.bfloat16),  # A100
    ((9, 0), torch.bfloat16),
])
def test_amp_auto_uses_fp16_only_where_tensor_cores_run_it(capability: tuple, expected: object) -> None:
    assert precision.resolve_amp("auto", CUDA0, capability) is expected
    assert precision.resolve_amp("fp16", CUDA0, capability) is torch.float16  # asked for: given


@pytest.fixture
def switches() -> Iterator[None]:
    """determinism_switches sets process-wide flags: put them back."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark,
             torch.backends.cudnn.deterministic, torch.are_deterministic_algorithms_enabled())
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[0], saved[1]
    torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = saved[2], saved[3]
    torch.use_deterministic_algorithms(saved[4])


def test_deterministic_mode_keeps_tf32(switches: None) -> None:
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    runtime.determinism_switches(Config(deterministic=True), True, cuda=True)
    assert torch.are_deterministic_algorithms_enabled() and torch.backends.cudnn.deterministic
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    # ... so MFU compares with the TF32 peak, deterministic or not; CPU has no TF32.
    assert precision.mfu_dtype(None, True, True) == precision.mfu_dtype(None, False, True) == "tf32"
    assert precision.mfu_dtype(None, True, False) == "fp32"


@pytest.mark.parametrize("local_rank, visible, index", [
    (0, 1, 0), (1, 1, 0), (3, 1, 0),  # CUDA_VISIBLE_DEVICES of one device per rank: its cuda:0
    (1, 2, 1), (3, 4, 3),  # every GPU visible: cuda:LOCAL_RANK, as before
    (5, 4, 1),  # more ranks than GPUs: shared round-robin, as hosttune.plan lays them out
])
def test_a_rank_uses_the_gpu_the_plan_gives_it(local_rank: int, visible: int, index: int) -> None:
    assert runtime.rank_device(local_rank, visible) == torch.device("cuda", index)


def test_no_visible_gpu_is_one_line() -> None:
    from hosttune.engine.errors import EngineError

    with pytest.raises(EngineError, match="no CUDA device"):
        runtime.rank_device(0, 0)
