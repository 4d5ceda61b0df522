"""Pins for hosttune/nvml.py (issue 21, practice round HTOP), through the NVML fake (tests/fakes/pynvml.py)."""

from typing import Any, Dict, List, Optional, Tuple

import pytest

from hosttune import nvml


def _system(n: nvml.Nvml) -> Tuple[Optional[str], Optional[str], int, List[str]]:
    return n.driver_version(), n.cuda_driver_version(), n.count(), n.unsupported(-1)


@pytest.mark.parametrize("scenario,want", [
    ({"driver": "550.54.15", "cuda_driver": 12040, "devices": []}, ("550.54.15", "12.4", 0, [])),
    ({"driver": "470.256.02", "cuda_driver": 11040, "devices": []}, ("470.256.02", "11.4", 0, [])),
    ({"driver": "575.51.03", "cuda_driver": 12090, "devices": []}, ("575.51.03", "12.9", 0, [])),
    # a driver whose NVML does not answer the CUDA version (NOT_SUPPORTED): None, remembered, never asked again
    ({"driver": "535.1", "devices": []}, ("535.1", None, 0, ["cuda"])),
    ({"devices": []}, (None, None, 0, ["cuda", "driver"])),
])
def test_system_queries(fake_nvml: Any, scenario: Dict[str, Any], want: Tuple[Any, ...]) -> None:
    import pynvml

    fake_nvml(scenario)
    with nvml.Nvml() as n:
        assert _system(n) == want
        assert _system(n) == want
    calls = pynvml.fake_calls()
    assert calls["nvmlSystemGetCudaDriverVersion"] == (1 if want[1] is None else 2)


def test_a_library_that_fails_to_load_is_library_not_found(fake_nvml: Any) -> None:
    """nvmlInit raising OSError (a broken libnvidia-ml.so: ctypes' own error, which the fake's scenarios cannot
    express): a module that is the fake but for its nvmlInit."""
    import types

    import pynvml

    fake_nvml({"driver": "550.54.15", "devices": []})
    broken = types.ModuleType("pynvml")
    broken.__dict__.update(vars(pynvml))

    def nvmlInit() -> None:  # noqa: N802 - NVML's name
        raise OSError("libnvidia-ml.so.1: invalid ELF header")

    broken.nvmlInit = nvmlInit  # type: ignore[attr-defined]
    with pytest.raises(nvml.NvmlUnavailable) as info:
        nvml.Nvml(broken)
    assert (info.value.status, str(info.value)) == (
        "library_not_found", "nvmlInit: libnvidia-ml.so.1: invalid ELF header")


def test_an_older_nvidia_ml_py_that_answers_bytes_gives_text(fake_nvml: Any) -> None:
    """Older nvidia-ml-py releases returned C strings as bytes (no convertStrBytes): the fake's answers as bytes."""
    import types

    import pynvml

    fake_nvml({"driver": "470.57.02", "cuda_driver": 11040, "devices": [
        {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-8a3c0d4e-0000-0000-0000-000000000001",
         "pci_bus_id": "00000000:3B:00.0", "memory_total_mb": 81920}]})
    old = types.ModuleType("pynvml")
    old.__dict__.update(vars(pynvml))
    for fn in ("nvmlSystemGetDriverVersion", "nvmlDeviceGetName", "nvmlDeviceGetUUID"):
        new = getattr(pynvml, fn)
        setattr(old, fn, lambda *a, _f=new: _f(*a).encode())
    with nvml.Nvml(old) as n:
        assert n.driver_version() == "470.57.02"
        s = n.static(0)
        assert (s["name"], s["uuid"]) == ("NVIDIA A100-SXM4-80GB", "GPU-8a3c0d4e-0000-0000-0000-000000000001")


def test_closing_the_xid_event_set_frees_it_once(fake_nvml: Any) -> None:
    import pynvml
    from conftest import a100

    scenario = {"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "3B"), a100(1, "5E")]}
    fake_nvml(scenario)
    with nvml.Nvml() as n:
        ev = n.xid_events([0, 1])
        assert (ev.gpus, ev.why) == ([0, 1], "")
        held = ev.set
        ev.close()
        assert ev.set is None and held.freed
        ev.close()
        assert ev.poll() == []
        assert pynvml.fake_calls()["nvmlEventSetFree"] == 1
