"""Pin for mutation round 5's survivor in hosttune/doctor/deep/session.py (issue 21): a GPU that falls off the bus
while `doctor --deep` samples NVML during the GPU job ends that GPU's readings; the watch goes on for the others and
what was seen before stays. NVML is tests/fakes/pynvml.py (NVML_ERROR_GPU_IS_LOST as the driver reports it) behind
hosttune's own hosttune.nvml session, and the scenario file is rewritten under the open session."""

import json
import os
import types
from pathlib import Path
from typing import Any, Callable, Dict

from conftest import a100

from hosttune.doctor.deep import session as S


def run_with_nvml() -> S.DeepRun:
    gpus = [types.SimpleNamespace(index=0, pci_bus_id="0000:1b:00.0"),
            types.SimpleNamespace(index=1, pci_bus_id="0000:1c:00.0")]
    facts = types.SimpleNamespace(torch=None, gpus=gpus, nvidia=types.SimpleNamespace(nvml="ok"))
    ctx = types.SimpleNamespace(python="/opt/py/bin/python3", facts=facts, data=[])
    return S.DeepRun(ctx, S.DeepOptions(small=True))  # type: ignore[arg-type]


def lose_gpu0(scenario: Dict[str, Any]) -> None:
    """Rewrite the scenario the running fake reads: GPU 0 is lost (its mtime moved on, so the fake re-reads it)."""
    path = Path(os.environ["HOSTTUNE_FAKE_NVML"])
    scenario["devices"][0]["lost"] = True
    before = path.stat().st_mtime_ns
    path.write_text(json.dumps(scenario))
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_a_gpu_lost_during_the_watch_ends_its_readings_and_the_others_go_on(
        fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    scenario = {"driver": "550.54.15", "cuda_driver": 12040,
                "devices": [a100(0, "1B", 0, clock_event_reasons=0x4), a100(1, "1C", 0, clock_event_reasons=0x20)]}
    fake_nvml(scenario)
    run = run_with_nvml()
    try:
        run._open_nvml()
        assert run._nvml is not None
        run._sample_nvml("gpu_compute gpu0 bf16", [])
        run._sample_nvml("gpu_copies gpu0 pinned h2d", [])
        assert run.clock_events == {0: 0x4} and run.pcie_seen == {0: {"pcie_gen": 4, "pcie_width": 16}}
        lose_gpu0(scenario)
        run._sample_nvml("gpu_compute gpu0 fp16", [])  # NVML_ERROR_GPU_IS_LOST: that reading ends, no crash
        run._sample_nvml("gpu_copies gpu0 pinned d2h", [])
        run._sample_nvml("gpu_compute gpu1 bf16", [])
        assert run.clock_events == {0: 0x4, 1: 0x20}
        assert run.pcie_seen == {0: {"pcie_gen": 4, "pcie_width": 16}}
    finally:
        run.close()
    assert run._nvml is None
