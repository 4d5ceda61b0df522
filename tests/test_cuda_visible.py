"""policy.cuda_visible.select at the end of the GPU list: an index equal to the GPU count is past the end (GPUs are
numbered from 0), so CUDA stops there like at any other missing index, for the planner and for doctor alike,
never an IndexError."""

import dataclasses

import pytest

from hosttune import doctor, plan, profile
from hosttune.doctor import Context, Finding, run_checks
from hosttune.doctor.checks import torch as torch_checks
from hosttune.facts import Cpu, Facts, Gpu, Numa, NumaNode, Nvidia
from hosttune.policy import cuda_visible
from hosttune.profile import Active


def gpus(n: int) -> tuple:
    return tuple(Gpu(index=i, name="NVIDIA L4", uuid=f"GPU-{i:08x}-1111-2222-3333-444444444444",
                     pci_bus_id=f"0000:{0x10 + i:02x}:00.0", numa_node=0, source="nvml") for i in range(n))


@pytest.mark.parametrize("n", [1, 2, 4])
def test_index_equal_to_the_count_is_past_the_end(n: int) -> None:
    all_gpus = gpus(n)
    v = cuda_visible.select(all_gpus, str(n))
    assert v.stopped_at == str(n) and v.gpus == () and f"past the {n} GPU(s)" in v.why
    v = cuda_visible.select(all_gpus, f"0,{n}")
    assert v.stopped_at == str(n) and v.gpus == (all_gpus[0],)
    v = cuda_visible.select(all_gpus, str(n - 1))  # the last GPU is still there
    assert v.stopped_at is None and v.gpus == (all_gpus[n - 1],)


def test_no_gpus_and_index_zero() -> None:
    v = cuda_visible.select((), "0")
    assert v.stopped_at == "0" and v.gpus == () and v.hides_all


def test_doctor_fails_an_index_equal_to_the_count_in_one_finding() -> None:
    facts = Facts(gpus=gpus(2), nvidia=Nvidia(driver="550.54.15", nvml="ok"))
    ctx = Context(facts=facts, env={"CUDA_VISIBLE_DEVICES": "0,2"}, profile=Active(None, "built-in default"))
    f: Finding = torch_checks.check_cuda_visible(ctx)
    assert f.status == "fail" and "no GPU 2" in f.actual and "sees 1 of 2 GPUs" in f.actual, f
    report = run_checks(dataclasses.replace(ctx), checks=[doctor.BY_ID["torch.cuda_visible_devices"]])
    assert [r.status for r in report.results] == ["fail"]


def test_plan_with_an_index_equal_to_the_count_says_where_cuda_stops() -> None:
    cpus = tuple(range(4))
    facts = Facts(cpu=Cpu(online=cpus, logical=4, physical=4, cores=tuple((c,) for c in cpus), allowed_cpus=cpus),
                  numa=Numa(nodes=(NumaNode(0, cpus, 16000),), allowed_mems=(0,)), gpus=gpus(2))
    rp = plan.resolve(facts, profile.load("throughput"), 0, 1, environ={"CUDA_VISIBLE_DEVICES": "1,2"})
    assert any("CUDA stops at entry '2' (index 2 is past the 2 GPU(s))" in r for r in rp.reasons), rp.reasons
