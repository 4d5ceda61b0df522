"""Pins for hosttune/policy/cuda_visible.py (issue 21, practice round HTOP8): `select`'s whole answer (the GPUs, where
CUDA stops and why, the notes) for every kind of entry, and `bus_order` with and without bus ids."""

import pytest

from hosttune.facts import Gpu
from hosttune.policy.cuda_visible import Visible, bus_order, select

A = Gpu(index=0, name="A", uuid="GPU-aa11-0000", pci_bus_id="0000:c1:00.0")
B = Gpu(index=1, name="B", uuid="GPU-aa22-0000", pci_bus_id="0000:1b:00.0")
C = Gpu(index=2, name="C", uuid="GPU-bb33-0000", pci_bus_id="0000:3d:00.0")
GPUS = (A, B, C)  # bus order: B, C, A


@pytest.mark.parametrize("raw,want", [
    (None, Visible(None, (B, C, A))),
    ("", Visible("", (), "", "an empty entry")),
    ("0,2", Visible("0,2", (B, A))),
    (" 1 , 0 ", Visible(" 1 , 0 ", (C, B))),
    ("0,3,1", Visible("0,3,1", (B,), "3", "index 3 is past the 3 GPU(s)")),
    ("1,,0", Visible("1,,0", (C,), "", "an empty entry")),
    ("-1,0", Visible("-1,0", (), "-1", "matches no GPU")),
    ("\u0661", Visible("\u0661", (), "\u0661", "is neither an index nor a GPU UUID")),
    ("GPU-bb33", Visible("GPU-bb33", (C,))),
    ("bb33,gpu-AA11", Visible("bb33,gpu-AA11", (C, A))),
    ("GPU-aa,0", Visible("GPU-aa,0", (), "GPU-aa", "is an ambiguous UUID prefix (2 GPUs match)")),
    ("GPU-cc", Visible("GPU-cc", (), "GPU-cc", "matches no GPU")),
    ("0,GPU-aa22", Visible("0,GPU-aa22", (B,), "GPU-aa22", "names a GPU twice")),
    ("MIG-GPU-aa11-0000/1/0,MIG-GPU-ffff/0/0,1",
     Visible("MIG-GPU-aa11-0000/1/0,MIG-GPU-ffff/0/0,1", (A, None, C), None, "",
             ("MIG-GPU-ffff/0/0: MIG instance of a GPU not known here",))),
    ("mig-0123abcd,7", Visible("mig-0123abcd,7", (None,), "7", "index 7 is past the 3 GPU(s)",
                               ("mig-0123abcd: MIG instance of a GPU not known here",))),
])
def test_select_whole(raw: object, want: Visible) -> None:
    assert select(GPUS, raw) == want  # type: ignore[arg-type]


def test_select_properties() -> None:
    assert select(GPUS, "").hides_all and not select(GPUS, None).hides_all
    assert select(GPUS, "MIG-x,0").known == (B,)


def test_bus_order() -> None:
    assert bus_order(GPUS) == (B, C, A)
    no_bus = (Gpu(index=1, name="Y"), Gpu(index=0, name="X"))
    assert bus_order(no_bus) == no_bus
    assert bus_order([A, Gpu(index=5, name="nobus")]) == (A,)
    assert bus_order([]) == ()
