"""Regression pins for the lead's patch (issue 21, found while pinning round 5): a value that str.isdigit() accepts but
int() does not (a superscript "²") in OMP_NUM_THREADS or torchrun's LOCAL_WORLD_SIZE is not a number: the plan
treats it as no thread count instead of crashing `hosttune env`/`exec` with a traceback; CUDA_VISIBLE_DEVICES takes
ASCII indices only, as CUDA does; and doctor passes CUDA 11.0 on its own GA driver (450.51.05)."""

from hosttune import plan
from hosttune.facts import Cpu, Facts, Gpu, Numa, NumaNode
from hosttune.plan.userwins import _threads_of, launcher_default
from hosttune.policy import cuda_visible
from hosttune.profile.settings import Profile

CPUS = (0, 1, 2, 3)
FACTS = Facts(cpu=Cpu(logical=4, physical=4, online=CPUS, allowed_cpus=CPUS, cores=tuple((c,) for c in CPUS)),
              numa=Numa(nodes=(NumaNode(0, CPUS, 1000),)))


def test_unicode_digits_are_not_a_thread_count() -> None:
    assert _threads_of("\u00b2") is None and _threads_of("\u0663") is None and _threads_of("3") == 3
    p = plan.resolve(FACTS, Profile("t", "", "<t>"), 0, 1, {"OMP_NUM_THREADS": "\u00b2"})
    assert p.env["OMP_NUM_THREADS"] == "\u00b2" and p.threads is None


def test_five_thousand_digits_are_not_a_thread_count() -> None:
    """int() refuses more than 4,300 digits on Python >= 3.11 (a traceback in env/exec before)."""
    huge = "9" * 5000
    assert _threads_of(huge) is None and _threads_of("+4") is None and _threads_of("0") is None
    assert launcher_default({"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "x", "LOCAL_WORLD_SIZE": huge}) is None
    assert plan.resolve(FACTS, Profile("t", "", "<t>"), 0, 1, {"OMP_NUM_THREADS": huge}).threads is None


def test_a_unicode_local_world_size_is_not_torchruns_default() -> None:
    env = {"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "x", "LOCAL_WORLD_SIZE": "\u00b2"}
    assert launcher_default(env) is None
    assert plan.resolve(FACTS, Profile("t", "", "<t>"), 0, 1, env).env["OMP_NUM_THREADS"] == "1"


def test_cuda_visible_devices_takes_ascii_indices_only() -> None:
    gpus = [Gpu(index=i, pci_bus_id=f"0000:{i + 1:02x}:00.0") for i in range(2)]
    v = cuda_visible.select(gpus, "\u0661")
    assert v.gpus == () and v.stopped_at == "\u0661", v


def test_cuda_11_0_on_its_own_driver_passes() -> None:
    from _doctorhelp import gpu_host, run_one

    from hosttune.facts import Nvidia, TorchInstall

    facts = gpu_host(nvidia=Nvidia(driver="450.51.05", nvml="ok"),
                     torch=TorchInstall(python="/py", version="1.7.1", cuda="11.0", cuda_available=True,
                                        device_count=2))
    f = run_one("nvidia.driver_cuda", facts)
    assert f.status == "pass", f
