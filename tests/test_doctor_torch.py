"""doctor's torch checks (hosttune/doctor/checks/torch.py): torch's version, debug switches, the allocator config,
CUDA_VISIBLE_DEVICES (read as CUDA and the planner read it) and the venv."""

import json
from typing import Any, Callable, Dict

import pytest
from _doctorhelp import R, cpu_host, gpu_host, healthy_scenario, same, table_test, tor
from conftest import run_cli

# (check id, host builder, change, context kwargs, expected status, text that must be in actual or fix)
CASES = [
    ("torch.version", cpu_host, same, {}, "pass", "2.6.0"),
    ("torch.version", cpu_host, tor(version="2.1.2"), {}, "warn", "torch>=2.6"),
    ("torch.version", cpu_host, lambda f: R(f, torch=None), {}, "warn", "python3 -m venv"),
    ("torch.version", cpu_host, lambda f: R(f, torch=None), {"live": False}, "skip", "captured"),
    ("torch.debug_env", cpu_host, same, {"env": {"NCCL_DEBUG": "WARN"}}, "pass", "none set"),
    ("torch.debug_env", cpu_host, same, {"env": {"CUDA_LAUNCH_BLOCKING": "1", "NCCL_DEBUG": "INFO"}}, "warn",
     "unset CUDA_LAUNCH_BLOCKING NCCL_DEBUG"),
    ("torch.debug_env", cpu_host, same, {"env": {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}}, "warn", "DETAIL"),
    ("torch.debug_env", cpu_host, same, {"env": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}}, "warn", "CACHING"),
    ("torch.alloc_conf", cpu_host, same, {}, "pass", "unset"),
    ("torch.alloc_conf", cpu_host, same,
     {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:128,"
                                        "roundup_power2_divisions:[256:1,512:2,>:8],garbage_collection_threshold:0.6"}},
     "pass", "expandable_segments"),
    ("torch.alloc_conf", cpu_host, same, {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments=True"}}, "fail",
     "not key:value"),
    ("torch.alloc_conf", cpu_host, same, {"env": {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:10"}}, "fail",
     "max_split_size_mb:10"),
    ("torch.alloc_conf", cpu_host, same, {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}}, "warn",
     "unknown key"),
    ("torch.cuda_visible_devices", gpu_host, same, {}, "pass", "unset"),
    ("torch.cuda_visible_devices", gpu_host, same, {"env": {"CUDA_VISIBLE_DEVICES": "1,GPU-00000000"}}, "pass", ""),
    ("torch.cuda_visible_devices", gpu_host, same, {"env": {"CUDA_VISIBLE_DEVICES": "0,1,7"}}, "fail", "no GPU 7"),
    ("torch.cuda_visible_devices", gpu_host, same, {"env": {"CUDA_VISIBLE_DEVICES": "GPU-deadbeef"}}, "fail",
     "GPU-deadbeef"),
    ("torch.cuda_visible_devices", gpu_host, same, {"env": {"CUDA_VISIBLE_DEVICES": ""}}, "warn", "hides every GPU"),
    ("torch.cuda_visible_devices", cpu_host, same, {"env": {"CUDA_VISIBLE_DEVICES": ""}}, "pass", ""),
    ("torch.venv", cpu_host, same, {}, "pass", "venv"),
    ("torch.venv", cpu_host, tor(in_venv=False, python="/usr/bin/python3"), {}, "warn", "python3 -m venv"),
]


test_check = table_test(CASES)  # one case per row: status, and the text in actual/fix/expected


@pytest.mark.parametrize("value,status,text", [
    ("GPU-0", "fail", "ambiguous UUID prefix"),  # both UUIDs start GPU-0: CUDA rejects it (doctor used to pass it)
    ("0,0", "fail", "names a GPU twice"),  # CUDA stops at the repeat (doctor used to pass it)
    ("gpu-00000001", "pass", "(1 GPUs)"),  # case does not matter to CUDA (doctor used to fail it)
    ("00000001-1111", "pass", "(1 GPUs)"),  # a UUID prefix without "GPU-" (doctor used to fail it)
    ("1, 0", "pass", "(2 GPUs)"),
    ("0,1,7", "fail", "no GPU 7"),
])
def test_cuda_visible_devices_is_read_the_way_cuda_and_the_planner_read_it(
        fake_nvml: Callable[[Any], Dict[str, str]], value: str, status: str, text: str) -> None:
    from hosttune.facts import Gpu as FactGpu
    from hosttune.policy import cuda_visible

    fake_nvml(healthy_scenario())  # the fake NVML for this process: the CLI runs here (the process is not the
    # subject, and a `hosttune` child cost each case a second of CPU on these 2-core machines: issue 21)
    done = run_cli(["doctor", "--json", "--only", "torch"], env={"CUDA_VISIBLE_DEVICES": value})
    assert done.returncode in (0, 1), done.stderr
    f = {f["id"]: f for f in json.loads(done.stdout)["findings"]}["torch.cuda_visible_devices"]
    assert f["status"] == status and text in f["actual"], f
    # the one parser says the same on the same two UUIDs (what `hosttune exec` plans with)
    gpus = [FactGpu(index=i, uuid=f"GPU-{i:08x}-1111-2222-3333-444444444444", pci_bus_id=f"0000:{b}:00.0")
            for i, b in ((0, "1b"), (1, "1c"))]
    visible = cuda_visible.select(gpus, value)
    assert (visible.stopped_at is None) == (status == "pass")
