"""Pin for mutation round 4's last train-loop survivor (issue 21): the engine's profiler (profile_steps
WAIT,WARMUP,ACTIVE) traces every one of its ACTIVE steps: it is stopped after the last of them, not one step early
(a 1-step active window would then write no trace at all)."""
import json
from pathlib import Path
from types import SimpleNamespace
from typing import List

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.train import profiler_step, start_profiler  # noqa: E402


def traced_steps(tmp_path: Path, schedule: str, start: int) -> List[str]:
    cfg = Config(profile_steps=schedule, steps=start + sum(int(x) for x in schedule.split(",")))
    rt = SimpleNamespace(run_dir=tmp_path, rank=0, cuda=False)
    prof, end = start_profiler(cfg, rt, start)  # a resumed run starts at its checkpoint's step
    step, a = start, torch.ones(8, 8)
    while prof is not None:
        with torch.profiler.record_function(f"hosttune-step-{step + 1}"):
            a = a @ a / 8
        step += 1
        prof = profiler_step(prof, end, step)
    assert step == cfg.steps  # the loop would stop here anyway: the profiler did not outlive its schedule
    trace = tmp_path / "trace-rank0.json"
    assert trace.exists(), "no trace written"
    names = {e.get("name", "") for e in json.loads(trace.read_text())["traceEvents"]}
    return sorted(n for n in names if n.startswith("hosttune-step-"))


@pytest.mark.parametrize("schedule,start,want", [
    ("0,1,1", 0, ["hosttune-step-2"]),
    ("1,1,2", 0, ["hosttune-step-3", "hosttune-step-4"]),
    ("0,1,2", 5, ["hosttune-step-7", "hosttune-step-8"]),
])
def test_every_active_step_is_in_the_trace(tmp_path: Path, schedule: str, start: int, want: List[str]) -> None:
    assert traced_steps(tmp_path, schedule, start) == want
