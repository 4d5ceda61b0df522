"""The kernel's CPU set formats, parsed and formatted in one place for all: the cpulist ("0-3,8,10-11"; NUMA node
lists use it too) and the hex cpumask ("00000000,0000ffff").

Both come from files a captured tree (`--root`) or a user may hand us, so both are bounded: CPU ids at or above
`MAX_CPUS` are dropped (and counted, so the caller can say so), and parsing is linear in the text. The kernel's
own ceiling is CONFIG_NR_CPUS: at most 8192 on x86_64 (arch/x86/Kconfig: NR_CPUS_RANGE_END is 8192 with MAXSMP),
and no mainline architecture allows more as far as we know; we allow twice that, 16384, as headroom, so no real
host loses a CPU while `0-99999999` cannot allocate a list of a hundred million ints.
"""

from typing import Dict, Iterable, List, Optional, Set, Tuple

MAX_CPUS = 16384
_MAX_DIGITS = len(str(MAX_CPUS))
_TRAILING = "\n\0\r \t"
_HEX = "0123456789abcdefABCDEF"


def _small_int(token: str) -> Optional[int]:
    """An id/stride token as an int, MAX_CPUS for anything larger (without int() on a huge digit string, which is
    quadratic before Python 3.11), None when it is not a number."""
    token = token.strip()
    if not token.isdigit() or not token.isascii():
        return None
    digits = token.lstrip("0") or "0"
    return MAX_CPUS if len(digits) > _MAX_DIGITS else min(int(digits), MAX_CPUS)


def parse_cpulist_checked(text: Optional[str]) -> Tuple[List[int], int]:
    """(CPU ids, number of entries dropped because they were malformed or named ids >= MAX_CPUS).

    Ranges are merged per (stride, start mod stride) before they are expanded, so repeated or overlapping entries
    cost nothing extra: the work is linear in the text plus the (bounded) answer."""
    if not text:
        return [], 0
    dropped = 0
    # (stride, residue) -> [(first index, last index)] in units of stride
    spans: Dict[Tuple[int, int], List[Tuple[int, int]]] = {}
    for part in text.strip(_TRAILING).replace("\n", ",").split(","):
        part = part.strip().strip("\0")
        if not part:
            continue
        stride = 1
        if ":" in part:  # "0-7:2" (and the kernel's "0-7:2/4" group form: the stride is what we keep)
            part, s = part.split(":", 1)
            got = _small_int(s.split("/")[0])
            if got is None:
                dropped += 1
                continue
            stride = max(1, got)
        lo_text, sep, hi_text = part.partition("-")
        lo = _small_int(lo_text)
        hi = _small_int(hi_text) if sep else lo
        if lo is None or hi is None or hi < lo:
            dropped += 1
            continue
        if lo >= MAX_CPUS:
            dropped += 1
            continue
        if hi >= MAX_CPUS:
            dropped += 1  # a range running past the limit keeps its in-range part
            hi = MAX_CPUS - 1
        r = lo % stride
        spans.setdefault((stride, r), []).append((lo // stride, (hi - r) // stride))
    out: Set[int] = set()
    for (stride, r), items in spans.items():
        items.sort()
        cur_lo, cur_hi = items[0]
        merged = []
        for a, b in items[1:]:
            if a > cur_hi + 1:
                merged.append((cur_lo, cur_hi))
                cur_lo, cur_hi = a, b
            else:
                cur_hi = max(cur_hi, b)
        merged.append((cur_lo, cur_hi))
        for a, b in merged:
            out.update(range(a * stride + r, b * stride + r + 1, stride))
    return sorted(out), dropped


def parse_cpulist(text: Optional[str]) -> List[int]:
    """"0-3,8,10-11" -> [0,1,2,3,8,10,11]. Tolerates blanks, NULs and stride forms ("0-7:2"); malformed entries
    and ids >= MAX_CPUS are dropped."""
    return parse_cpulist_checked(text)[0]


def parse_cpumask_checked(text: Optional[str]) -> Tuple[List[int], bool]:
    """(CPU ids, whether bits at or above MAX_CPUS were set and dropped) of a sysfs hex mask ("00000000,0000ffff").
    Read one hex digit at a time from the low end (linear; shifting one huge int bit by bit is quadratic).
    A mask with a non-hex character reads as empty."""
    if not text:
        return [], False
    digits = text.strip(_TRAILING).replace(",", "").strip()
    if not digits or digits.strip(_HEX):
        return [], False
    out: List[int] = []
    width = MAX_CPUS // 4
    for i, ch in enumerate(reversed(digits[-width:])):
        value = int(ch, 16)
        for bit in range(4):
            if value >> bit & 1:
                out.append(4 * i + bit)
    return out, bool(digits[:-width].strip("0"))


def parse_cpumask(text: Optional[str]) -> List[int]:
    """A sysfs hex mask -> CPU numbers (ids >= MAX_CPUS dropped)."""
    return parse_cpumask_checked(text)[0]


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
