"""Pins of mutation round 6 (issue 21) on hosttune/nvml.py (bench/mutants.py r6b-nvml-ecc-key): each NVML query is
remembered as unanswerable under its own key. A GPU that cannot report its persistence mode (NOT_SUPPORTED, as
nvmlDeviceGetPersistenceMode answers where the feature is absent) still has its ECC mode asked and reported; had
the ECC query shared the persistence key, it would never be asked and ECC would read as unknown."""

from typing import Any

from conftest import a100

from hosttune import nvml


def test_ecc_is_read_on_a_gpu_without_a_persistence_mode(fake_nvml: Any) -> None:
    import pynvml  # the fake

    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "3B", persistence_mode=None, ecc=[1, 0])]})
    with nvml.Nvml() as n:
        st = n.static(0)
        assert (st["persistence_mode"], st["ecc_enabled"], st["ecc_pending"]) == (None, True, False)
        assert "persistence_mode" in n.unsupported(0) and "ecc_mode" not in n.unsupported(0)
    assert pynvml.fake_calls()["nvmlDeviceGetEccMode"] == 1


def test_ecc_off_is_reported_off_not_unknown_without_a_persistence_mode(fake_nvml: Any) -> None:
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
               "devices": [a100(0, "3B", errors={"nvmlDeviceGetPersistenceMode": "NOT_SUPPORTED"}, ecc=[0, 1])]})
    with nvml.Nvml() as n:
        st = n.static(0)
    assert (st["persistence_mode"], st["ecc_enabled"], st["ecc_pending"]) == (None, False, True)
