"""The kernel's cpulist format ("0-3,8,10-11"; NUMA node lists use it too): parse and format, shared by all."""

from typing import Iterable, List, Optional

_TRAILING = "\n\0\r \t"


def parse_cpulist(text: Optional[str]) -> List[int]:
    """"0-3,8,10-11" -> [0,1,2,3,8,10,11]. Tolerates blanks, NULs and stride forms ("0-7:2")."""
    out: List[int] = []
    if not text:
        return out
    for part in text.strip(_TRAILING).replace("\n", ",").split(","):
        part = part.strip().strip("\0")
        if not part:
            continue
        try:
            stride = 1
            if ":" in part:
                part, s = part.split(":", 1)
                stride = max(1, int(s.split("/")[0]))
            if "-" in part:
                lo, hi = part.split("-", 1)
                out.extend(range(int(lo), int(hi) + 1, stride))
            else:
                out.append(int(part))
        except ValueError:
            continue  # a corrupt entry: keep what parses
    return sorted(set(out))


def format_cpulist(cpus: Iterable[int]) -> str:
    """[0,1,2,5] -> "0-2,5"."""
    items = sorted(set(cpus))
    out: List[str] = []
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        out.append(str(items[i]) if i == j else f"{items[i]}-{items[j]}")
        i = j + 1
    return ",".join(out)
