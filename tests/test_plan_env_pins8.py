"""Pins for hosttune/plan/env.py (issue 21, practice round HTOP8): the switches every rank gets (pin_memory,
DataLoader workers and their followers, determinism, debug) and the profile's literal env, which wins over all of
them, as whole dicts and reason lists."""

import dataclasses
from typing import Dict, List

import pytest

from hosttune import profile
from hosttune.facts import Facts, Gpu, TorchInstall
from hosttune.plan import env as plan_env

GPU = Gpu(index=0, name="g", pci_bus_id="0000:1b:00.0")


@pytest.fixture(scope="module")
def base() -> profile.Profile:
    return profile.load("throughput")


def _switches(facts: Facts, prof: profile.Profile, gpus: List[object]):
    env: Dict[str, str] = {}
    reasons: List[str] = []
    plan_env._switches_env(facts, prof, gpus, env, reasons)  # type: ignore[arg-type]
    return env, reasons


def test_literal_env_wins_over_every_switch_and_is_named_sorted(base: profile.Profile) -> None:
    prof = dataclasses.replace(
        base, deterministic=True, debug=True,
        env={"PYTHONHASHSEED": "7", "HOSTTUNE_PIN_MEMORY": "1", "NCCL_DEBUG": "WARN", "ZZ": 3},
        dataloader=dataclasses.replace(base.dataloader, num_workers=4, pin_memory=False))
    env, reasons = _switches(Facts(), prof, [GPU])
    assert env == {
        "HOSTTUNE_PIN_MEMORY": "1", "HOSTTUNE_NUM_WORKERS": "4", "HOSTTUNE_PERSISTENT_WORKERS": "1",
        "HOSTTUNE_PREFETCH_FACTOR": "2", "HOSTTUNE_DETERMINISTIC": "1", "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "PYTHONHASHSEED": "7", "CUDA_LAUNCH_BLOCKING": "1", "NCCL_DEBUG": "WARN", "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
        "TORCH_SHOW_CPP_STACKTRACES": "1", "ZZ": "3"}
    assert reasons == ["env: 4 literal entries from the profile (HOSTTUNE_PIN_MEMORY, NCCL_DEBUG, PYTHONHASHSEED, ZZ)"]


def test_the_plain_profile_sets_only_its_switches(base: profile.Profile) -> None:
    assert _switches(Facts(), base, [GPU]) == ({"HOSTTUNE_PIN_MEMORY": "1", "HOSTTUNE_DETERMINISTIC": "0"}, [])
    assert _switches(Facts(), base, []) == ({"HOSTTUNE_PIN_MEMORY": "0", "HOSTTUNE_DETERMINISTIC": "0"}, [])


def test_pin_memory_off_on_a_cpu_torch_says_why(base: profile.Profile) -> None:
    cpu_torch = Facts(torch=TorchInstall(python="/usr/bin/python3", version="2.5.0", cuda=None))
    assert _switches(cpu_torch, base, [GPU]) == (
        {"HOSTTUNE_PIN_MEMORY": "0", "HOSTTUNE_DETERMINISTIC": "0"}, ["pin_memory: off - the torch build has no CUDA"])
    assert _switches(cpu_torch, base, []) == ({"HOSTTUNE_PIN_MEMORY": "0", "HOSTTUNE_DETERMINISTIC": "0"}, [])
    cuda_torch = Facts(torch=TorchInstall(python="/usr/bin/python3", version="2.5.0", cuda="12.4"))
    assert _switches(cuda_torch, base, [GPU])[0]["HOSTTUNE_PIN_MEMORY"] == "1"


@pytest.mark.parametrize("dl,want", [
    ({"num_workers": 0}, {"HOSTTUNE_NUM_WORKERS": "0", "HOSTTUNE_PERSISTENT_WORKERS": "0"}),
    ({"num_workers": 2, "persistent_workers": False, "prefetch_factor": 6},
     {"HOSTTUNE_NUM_WORKERS": "2", "HOSTTUNE_PERSISTENT_WORKERS": "0", "HOSTTUNE_PREFETCH_FACTOR": "6"}),
    ({"num_workers": 1, "pin_memory": True},
     {"HOSTTUNE_NUM_WORKERS": "1", "HOSTTUNE_PERSISTENT_WORKERS": "1", "HOSTTUNE_PREFETCH_FACTOR": "2"}),
])
def test_fixed_workers_and_their_followers(base: profile.Profile, dl: Dict[str, object], want: Dict[str, str]) -> None:
    prof = dataclasses.replace(base, dataloader=dataclasses.replace(base.dataloader, **dl))
    env, reasons = _switches(Facts(), prof, [])
    assert env == {"HOSTTUNE_PIN_MEMORY": "1" if dl.get("pin_memory") else "0", **want,
                   "HOSTTUNE_DETERMINISTIC": "0"}
    assert reasons == []
