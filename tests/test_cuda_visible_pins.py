"""Pins for hosttune/policy/cuda_visible.py from issue 21's mutation run: an unset CUDA_VISIBLE_DEVICES hides nothing,
even on a host with no GPU (only a set value can hide every GPU)."""

from hosttune.facts import Gpu
from hosttune.policy import cuda_visible


def test_unset_hides_nothing_even_without_gpus() -> None:
    assert not cuda_visible.select((), None).hides_all
    assert cuda_visible.select((), "").hides_all
    assert cuda_visible.select((Gpu(index=0, pci_bus_id="0000:1a:00.0", uuid="GPU-0abb"),), "").hides_all
