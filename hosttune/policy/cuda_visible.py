"""CUDA_VISIBLE_DEVICES, read the way CUDA reads it: the one parser the planner, the detector and doctor share.

With CUDA_DEVICE_ORDER=PCI_BUS_ID (which plans set), index i is the i-th GPU by PCI bus id. An entry is an index,
a GPU UUID or a unique prefix of one (`GPU-8f3a`), or a MIG instance (`MIG-GPU-<uuid>/<gi>/<ci>` or `MIG-<uuid>`).
CUDA stops at the first entry it cannot resolve (an index past the end, a prefix that matches no GPU or several, a
GPU named twice, "-1", a blank) and ignores everything after it; an empty value hides every GPU.
"""

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from hosttune.facts import Gpu

_MIG_PARENT = re.compile(r"MIG-(GPU-[0-9a-fA-F-]+)/", re.I)


@dataclass(frozen=True)
class Visible:
    raw: Optional[str]  # the variable's value; None when unset
    gpus: Tuple[Optional[Gpu], ...]  # what CUDA numbers cuda:0, cuda:1 ...; None = a MIG instance of an unknown GPU
    stopped_at: Optional[str] = None  # the entry CUDA stopped at (it and everything after it are ignored)
    why: str = ""  # why CUDA stopped there
    notes: Tuple[str, ...] = ()  # other remarks (MIG instances without a known parent)

    @property
    def hides_all(self) -> bool:
        return self.raw is not None and not self.gpus

    @property
    def known(self) -> Tuple[Gpu, ...]:
        return tuple(g for g in self.gpus if g is not None)


def bus_order(gpus: Sequence[Gpu]) -> Tuple[Gpu, ...]:
    """The GPUs in PCI bus order (CUDA's order under CUDA_DEVICE_ORDER=PCI_BUS_ID, and NVML's)."""
    with_bus = [g for g in gpus if g.pci_bus_id]
    return tuple(sorted(with_bus, key=lambda g: g.pci_bus_id)) if with_bus else tuple(gpus)


def select(gpus: Sequence[Gpu], raw: Optional[str]) -> Visible:
    """The GPUs `raw` (the CUDA_VISIBLE_DEVICES value, None when unset) leaves visible, in CUDA's order."""
    order = bus_order(gpus)
    if raw is None:
        return Visible(None, tuple(order))
    out: List[Optional[Gpu]] = []
    notes: List[str] = []
    for entry in raw.split(","):
        item = entry.strip()
        gpu: Optional[Gpu] = None
        if not item:
            return Visible(raw, tuple(out), item, "an empty entry", tuple(notes))
        if re.fullmatch(r"[0-9]+", item):  # \d is any Unicode digit ("١"); CUDA reads ASCII digits only
            idx = int(item)
            if idx >= len(order):
                return Visible(raw, tuple(out), item, f"index {idx} is past the {len(order)} GPU(s)", tuple(notes))
            gpu = order[idx]
        elif item.upper().startswith("MIG-"):
            m = _MIG_PARENT.match(item)
            parents = [g for g in order if m and g.uuid and g.uuid.lower() == m.group(1).lower()]
            if not parents:
                notes.append(f"{item}: MIG instance of a GPU not known here")
            out.append(parents[0] if parents else None)
            continue
        else:
            want = item.lower() if item.lower().startswith("gpu-") else "gpu-" + item.lower()
            if not re.fullmatch(r"gpu-[0-9a-f-]+", want):
                return Visible(raw, tuple(out), item, "is neither an index nor a GPU UUID", tuple(notes))
            hits = [g for g in order if g.uuid and g.uuid.lower().startswith(want)]
            if len(hits) != 1:
                why = "matches no GPU" if not hits else f"is an ambiguous UUID prefix ({len(hits)} GPUs match)"
                return Visible(raw, tuple(out), item, why, tuple(notes))
            gpu = hits[0]
        if gpu in out:
            return Visible(raw, tuple(out), item, "names a GPU twice", tuple(notes))
        out.append(gpu)
    return Visible(raw, tuple(out), None, "", tuple(notes))
