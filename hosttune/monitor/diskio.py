"""Disk I/O in the monitor's samples: per whole disk, read and write MB/s and the share of the interval it was busy
(iostat's %util), as rates between two readings of /proc/diskstats; and the textfile's families for them and for the
host's iowait share (sample.py reads /proc/stat).

Pure: text and times in, numbers out (`sample.HostReader` does the reading, bounded, like every other /proc file).
The fields are Documentation/admin-guide/iostats.rst's: after "major minor name", field 3 is sectors read, field 7
sectors written, field 10 milliseconds spent doing I/O (io_ticks). A sector here is always 512 bytes, whatever the
device's own sector size (Documentation/block/stat.rst). MB is 10^6 bytes, as fio and dd count.

Whole disks only: the names /sys/block lists (partitions live below their disk there), less loop, ram and zram
devices (no disk behind them). Device-mapper and md devices stay, as node_exporter keeps them: an LVM or RAID data
volume is what a training job reads. Without /sys/block (a test tree, an odd container) partitions are told by their
names. Counters that go backwards are either a 32-bit counter that went round (io_ticks is printed with %u and wraps
every 49.7 days; every field does on a 32-bit kernel) or a disk that went away and came back with fresh counters:
the first is taken only when the wrapped difference is possible in the time that passed, the second gives no rate
for that disk in that sample.
"""

import re
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple

SECTOR_BYTES = 512
MB = 1_000_000
DISKSTATS_LIMIT = 1 << 20  # bytes read of /proc/diskstats (a line is ~100 bytes: room for thousands of devices)
MAX_DISKS = 256  # disks sampled at most (by name order): the sample and the textfile stay bounded
_WRAP = 1 << 32
# The fastest a real disk (or RAID of them) moves data: a 32-bit sector counter that "wrapped" faster than this
# was reset instead. 256 GB/s is well above any PCIe 5 NVMe array a training host has.
MAX_BYTES_PER_S = 256 * 10 ** 9

# no disk behind these (loop files, RAM disks, compressed RAM swap)
_NOT_DISKS = re.compile(r"^(loop|ram|zram)\d+$")
# partitions by name, for a tree without /sys/block (node_exporter's default exclude, less dm/md)
_PARTITION = re.compile(r"^((h|s|v|xv)d[a-z]+|nvme\d+(c\d+)?n\d+p|mmcblk\d+p|md\d+p)\d+$")


class Counters(NamedTuple):
    """One disk's cumulative counters; `dev` (major, minor) tells a disk from another that took its name."""

    dev: Tuple[int, int]
    read_sectors: int
    write_sectors: int
    io_ms: int


def parse_diskstats(text: str) -> Dict[str, Counters]:
    """name -> counters from /proc/diskstats (14 columns up to Linux 4.17, 18 from 4.18, 20 from 5.5: only the first
    14 are read). A line too short or not numeric is skipped."""
    out: Dict[str, Counters] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14:
            continue
        try:
            major, minor = int(parts[0]), int(parts[1])
            values = [int(v) for v in parts[3:14]]
        except ValueError:
            continue
        out[parts[2]] = Counters((major, minor), values[2], values[6], values[9])
    return out


def whole_disks(names: Iterable[str], block: Optional[Iterable[str]]) -> List[str]:
    """The names that are whole disks: those /sys/block lists (`block`; None or empty when it could not be read,
    then by name), never loop/ram/zram; sorted, at most MAX_DISKS."""
    listed = set(block or ())
    keep = [n for n in names if not _NOT_DISKS.match(n) and (n in listed if listed else not _PARTITION.match(n))]
    return sorted(keep)[:MAX_DISKS]


def counter_delta(old: int, new: int, limit: float) -> Optional[int]:
    """How far a counter moved: `new - old`, or across one 32-bit wrap when that is at most `limit`; None when it
    went backwards otherwise (the counters were reset)."""
    if new >= old:
        return new - old
    if old < _WRAP:
        wrapped = new + _WRAP - old
        if wrapped <= limit:
            return wrapped
    return None


def disk_rates(before: Counters, after: Counters, seconds: float) -> Optional[Dict[str, float]]:
    """One disk's rates over `seconds`, or None (another disk under the name, or reset counters)."""
    if before.dev != after.dev or seconds <= 0:
        return None
    max_sectors = seconds * MAX_BYTES_PER_S / SECTOR_BYTES
    read = counter_delta(before.read_sectors, after.read_sectors, max_sectors)
    written = counter_delta(before.write_sectors, after.write_sectors, max_sectors)
    # busy time cannot exceed the time that passed (+ slack: the clock and the kernel's update differ a little)
    busy = counter_delta(before.io_ms, after.io_ms, seconds * 1000 * 1.5 + 1000)
    if read is None or written is None or busy is None:
        return None
    return {"read_mb_s": round(read * SECTOR_BYTES / seconds / MB, 3),
            "write_mb_s": round(written * SECTOR_BYTES / seconds / MB, 3),
            "util_pct": round(min(100.0, busy / (seconds * 10.0)), 2)}


class DiskRates:
    """Rates between the last reading and this one. `update` per sample: the disks with a reading before (a disk
    that just appeared has none yet; one that went away is forgotten)."""

    def __init__(self) -> None:
        self._prev: Dict[str, Counters] = {}
        self._prev_at: Optional[float] = None

    def update(self, text: Optional[str], now: float, block: Optional[Iterable[str]]) -> Dict[str, Dict[str, float]]:
        """`text`: /proc/diskstats (None when it could not be read: no rates, and the next reading starts over);
        `now`: a monotonic clock in seconds; `block`: the names in /sys/block (None when unreadable)."""
        if text is None:
            self._prev, self._prev_at = {}, None
            return {}
        stats = parse_diskstats(text)
        current = {name: stats[name] for name in whole_disks(stats, block)}
        out: Dict[str, Dict[str, float]] = {}
        if self._prev_at is not None:
            for name, after in current.items():
                before = self._prev.get(name)
                rates = disk_rates(before, after, now - self._prev_at) if before is not None else None
                if rates is not None:
                    out[name] = rates
        self._prev, self._prev_at = current, now
        return out


def iowait_pct(before: Tuple[int, int], after: Tuple[int, int]) -> Optional[float]:
    """The share of all CPU time spent idle with I/O outstanding between two (iowait, total) jiffy readings of
    /proc/stat. proc(5): iowait can go down on some kernels; that reads as 0, not as a negative share."""
    total = after[1] - before[1]
    if total <= 0:
        return None
    return round(100.0 * min(total, max(0, after[0] - before[0])) / total, 2)


# ---- the textfile ------------------------------------------------------------------------------------------------
# (sample key, metric name, help, scale): the JSONL's units become Prometheus base units
_DISK_METRICS = (
    ("read_mb_s", "hosttune_disk_read_bytes_per_second",
     "Bytes read from the whole disk per second over the last interval (/proc/diskstats).", MB),
    ("write_mb_s", "hosttune_disk_written_bytes_per_second",
     "Bytes written to the whole disk per second over the last interval (/proc/diskstats).", MB),
    ("util_pct", "hosttune_disk_busy_ratio",
     "Fraction of the last interval the disk had I/O in flight (iostat %util; /proc/diskstats io_ticks).", 0.01),
)
IOWAIT_HELP = "Fraction of all CPU time idle with disk I/O outstanding over the last interval (/proc/stat iowait)."


def textfile_rows(host: Dict[str, Any]) -> Iterator[Tuple[str, str, str, Dict[str, Any], Any]]:
    """(name, type, help, labels, value) of the textfile's disk I/O and iowait samples for one host sample."""
    if host.get("iowait_pct") is not None:
        yield "hosttune_cpu_iowait_ratio", "gauge", IOWAIT_HELP, {}, host["iowait_pct"] / 100.0
    disks = sorted((host.get("disk_io") or {}).items())
    for key, name, help_text, scale in _DISK_METRICS:
        for device, rates in disks:
            if rates.get(key) is not None:
                yield name, "gauge", help_text, {"device": device}, rates[key] * scale
