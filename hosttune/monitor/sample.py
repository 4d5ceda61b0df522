"""What one monitor sample is: pure parsers for /proc and hwmon text, and the host/GPU readers that feed them.

Parsers take text and return plain values (tested with string literals). `HostReader(root)` is the only part that
opens files: it finds the CPU temperature sensors once at start (hwmon chips, then x86_pkg_temp thermal zones, the
same order psutil.sensors_temperatures uses) and per sample reads a handful of small files (bounded, through
fsio.read_bounded; /proc/diskstats and /sys/block's listing for disk I/O, diskio.py) plus two statvfs calls.
No subprocess, no psutil, no torch per sample: the daemon's cost target is < 0.5 % of one core at a 1 s interval.
"""

import os
import re
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from hosttune import fsio, nvml
from hosttune.monitor import diskio, jobs

# hwmon chip names that measure the CPU package (Documentation/hwmon/{coretemp,k10temp}.rst, zenpower's README).
CPU_CHIPS = ("coretemp", "k10temp", "zenpower", "cpu_thermal", "soc_thermal", "cpu0_thermal")
# k10temp/zenpower: Tdie is the real die temperature; Tctl carries a fan-control offset on some Zen 1 parts
# (k10temp.rst), so Tdie wins when both exist.
_AMD_PREFERRED = ("Tdie", "Tctl")


# ---- pure parsers ----------------------------------------------------------------------------------------------
def parse_proc_stat_cpu(text: str) -> Tuple[int, int]:
    """(busy, total) jiffies from the aggregate "cpu " line of /proc/stat (proc(5)).

    total = user+nice+system+idle+iowait+irq+softirq+steal (guest time is already inside user/nice);
    idle time is idle+iowait.
    """
    busy, total, _iowait = parse_proc_stat_times(text)
    return busy, total


def parse_proc_stat_times(text: str) -> Tuple[int, int, int]:
    """(busy, total, iowait) jiffies from the aggregate "cpu " line (see parse_proc_stat_cpu)."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            fields = [int(v) for v in line.split()[1:9]]
            fields += [0] * (8 - len(fields))
            total = sum(fields)
            idle = fields[3] + fields[4]
            return total - idle, total, fields[4]
    raise ValueError("no aggregate cpu line in /proc/stat")


def cpu_util_pct(before: Tuple[int, int], after: Tuple[int, int]) -> Optional[float]:
    busy = after[0] - before[0]
    total = after[1] - before[1]
    if total <= 0:
        return None
    return round(100.0 * max(0, busy) / total, 2)


def parse_loadavg(text: str) -> Tuple[float, float, float]:
    parts = text.split()
    return float(parts[0]), float(parts[1]), float(parts[2])


def parse_meminfo(text: str) -> Dict[str, int]:
    """Bytes for the /proc/meminfo keys the monitor reports. MemAvailable (Linux >= 3.14) falls back to
    MemFree+Buffers+Cached on older kernels, as `free` does."""
    raw: Dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            scale = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
            raw[key.strip()] = int(parts[0]) * scale
    if "MemTotal" not in raw:
        raise ValueError("no MemTotal in /proc/meminfo")
    total = raw["MemTotal"]
    avail = raw.get("MemAvailable")
    if avail is None:
        avail = raw.get("MemFree", 0) + raw.get("Buffers", 0) + raw.get("Cached", 0)
    swap_total = raw.get("SwapTotal", 0)
    return {
        "mem_total_bytes": total,
        "mem_available_bytes": avail,
        "mem_used_bytes": max(0, total - avail),
        "swap_total_bytes": swap_total,
        "swap_used_bytes": max(0, swap_total - raw.get("SwapFree", swap_total)),
    }


def mem_used_pct(mem: Dict[str, int]) -> Optional[float]:
    total = mem.get("mem_total_bytes") or 0
    return round(100.0 * mem["mem_used_bytes"] / total, 2) if total else None


def parse_millicelsius(text: str) -> float:
    """hwmon temp*_input and thermal_zone*/temp are millidegrees Celsius (Documentation/hwmon/sysfs-interface.rst)."""
    return int(text.strip().rstrip("\0")) / 1000.0


def fs_usage(st: Any) -> Dict[str, Any]:
    """Size/used/percent from an os.statvfs result, the way df computes Use% (used / (used + available))."""
    total = st.f_blocks * st.f_frsize
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    avail = st.f_bavail * st.f_frsize
    denom = used + avail
    return {"total_bytes": total, "used_bytes": used, "used_pct": round(100.0 * used / denom, 2) if denom else 0.0}


def gpu_fields(static: Dict[str, Any], dynamic: Dict[str, Any],
               finder: Optional[jobs.JobFinder] = None) -> Dict[str, Any]:
    """One GPU's entry in a sample: identity from `Nvml.static`, readings from `Nvml.sample`, derived fields.

    The GPU's slowdown threshold (static, read once) rides along in every entry: the events and `monitor report`
    draw that GPU's temperature lines from it, and a log line is then complete on its own (rotation keeps no
    header). NVML's processes on the GPU get their user and job from /proc (`finder`, the host's by default), and
    the distinct jobs are listed as "jobs" (`monitor report --job`, the textfile's hosttune_job_info)."""
    out: Dict[str, Any] = {"index": static["index"], "uuid": static.get("uuid")}
    if static.get("temp_slowdown_c") is not None:
        out["temp_slowdown_c"] = static["temp_slowdown_c"]
    out.update(dynamic)
    used, total = dynamic.get("memory_used_mb"), dynamic.get("memory_total_mb")
    if used is not None and total:
        out["memory_used_pct"] = round(100.0 * used / total, 2)
    if "clock_event_reasons" in dynamic:
        out["clock_event_reason_names"] = nvml.reason_names(dynamic["clock_event_reasons"])
    if "processes" in dynamic:
        procs = (finder or _FINDER).attribute(dynamic["processes"])
        out["processes"] = procs
        out["jobs"] = jobs.jobs_of(procs)
    return out


_FINDER = jobs.JobFinder()


# ---- sensor discovery ------------------------------------------------------------------------------------------
class TempSensor:
    __slots__ = ("name", "path")

    def __init__(self, name: str, path: str) -> None:
        self.name = name
        self.path = path


READ_LIMIT = 1 << 20  # bytes of one /proc or sysfs file (/proc/stat's intr line is the longest on big hosts)


def _read(path: Path, limit: int = READ_LIMIT) -> Optional[str]:
    """A small /proc or sysfs file, bounded (fsio.read_bounded: regular files only, never blocks); None when it
    cannot be read or is larger than `limit`."""
    try:
        return fsio.read_bounded(path, limit).decode()
    except (OSError, UnicodeDecodeError):
        return None


def _hwmon_chip_dir(hwmon: Path) -> Path:
    # Kernels before 3.x put name/temp* in hwmonN/device/ instead of hwmonN/ (sysfs-interface.rst).
    return hwmon if (hwmon / "name").exists() else hwmon / "device"


def find_cpu_sensors(root: Path = Path("/")) -> List[TempSensor]:
    """CPU package temperature inputs: coretemp "Package id N", k10temp/zenpower Tdie|Tctl, ARM cpu_thermal temp1;
    without any of those, x86_pkg_temp thermal zones."""
    found: List[TempSensor] = []
    seen: Dict[str, int] = {}
    hwmon_base = root / "sys/class/hwmon"
    entries = sorted(hwmon_base.iterdir(), key=lambda p: _natural(p.name)) if hwmon_base.is_dir() else []
    for hwmon in entries:
        chip_dir = _hwmon_chip_dir(hwmon)
        chip = (_read(chip_dir / "name") or "").strip()
        if chip not in CPU_CHIPS:
            continue
        n = seen.get(chip, 0)
        seen[chip] = n + 1
        chip_key = chip if n == 0 else f"{chip}.{n}"
        labels: Dict[str, str] = {}
        for inp in sorted(chip_dir.glob("temp*_input"), key=lambda p: _natural(p.name)):
            label = (_read(chip_dir / inp.name.replace("_input", "_label")) or "").strip()
            labels[label or inp.name.split("_")[0]] = str(inp)
        if chip == "coretemp":
            for label, path in labels.items():
                if label.startswith("Package id"):
                    found.append(TempSensor(f"{chip_key}/{label}", path))
        elif chip in ("k10temp", "zenpower"):
            for want in _AMD_PREFERRED:
                if want in labels:
                    found.append(TempSensor(f"{chip_key}/{want}", labels[want]))
                    break
        else:
            first = next(iter(labels.items()), None)
            if first:
                found.append(TempSensor(f"{chip_key}/{first[0]}", first[1]))
    if found:
        return found
    zones = root / "sys/class/thermal"
    if zones.is_dir():
        for zone in sorted(zones.glob("thermal_zone*"), key=lambda p: _natural(p.name)):
            if (_read(zone / "type") or "").strip() == "x86_pkg_temp":
                found.append(TempSensor(f"x86_pkg_temp/{zone.name}", str(zone / "temp")))
    return found


def _natural(name: str) -> List[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


# ---- the host reader -------------------------------------------------------------------------------------------
class HostReader:
    """Reads the host's part of a sample. Construct once (sensor discovery); `read()` per sample."""

    def __init__(self, root: Path = Path("/"), disks: Sequence[str] = ("/",), shm: str = "/dev/shm",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.root = Path(root)
        self.sensors = find_cpu_sensors(self.root)
        self.disks = list(disks)
        self.shm = shm
        self._clock = clock
        self._cpu_prev: Optional[Tuple[int, int, int]] = self._cpu()
        self._disk_io = diskio.DiskRates()
        self._read_disk_io()  # the first reading: the first sample already has rates

    def _path(self, host_path: str) -> str:
        return str(self.root / host_path.lstrip("/"))

    def _cpu(self) -> Optional[Tuple[int, int, int]]:
        text = _read(Path(self._path("/proc/stat")))
        try:
            return parse_proc_stat_times(text) if text else None
        except ValueError:
            return None

    def _cpu_fields(self, out: Dict[str, Any]) -> None:
        """cpu_util_pct and iowait_pct since the last sample."""
        cpu, prev = self._cpu(), self._cpu_prev
        self._cpu_prev = cpu
        if cpu is None or prev is None:
            return
        util = cpu_util_pct(prev[:2], cpu[:2])
        if util is not None:
            out["cpu_util_pct"] = util
        iowait = diskio.iowait_pct((prev[2], prev[1]), (cpu[2], cpu[1]))
        if iowait is not None:
            out["iowait_pct"] = iowait

    def _read_disk_io(self) -> Dict[str, Dict[str, float]]:
        """Per whole disk, MB/s and %util since the last reading (diskio.DiskRates)."""
        text = _read(Path(self._path("/proc/diskstats")), diskio.DISKSTATS_LIMIT)
        try:
            block: Optional[List[str]] = os.listdir(self._path("/sys/block"))
        except OSError:
            block = None
        return self._disk_io.update(text, self._clock(), block)

    def read(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        self._cpu_fields(out)
        disk_io = self._read_disk_io()
        if disk_io:
            out["disk_io"] = disk_io
        text = _read(Path(self._path("/proc/loadavg")))
        if text:
            try:
                out["load1"], out["load5"], out["load15"] = parse_loadavg(text)
            except (ValueError, IndexError):
                pass
        text = _read(Path(self._path("/proc/meminfo")))
        if text:
            try:
                mem = parse_meminfo(text)
            except ValueError:
                mem = {}
            if mem:
                out.update(mem)
                out["mem_used_pct"] = mem_used_pct(mem)
        temps: Dict[str, float] = {}
        for sensor in self.sensors:
            raw = _read(Path(sensor.path))  # a sensor may answer EIO/ENODATA now and then: skip that sample
            if raw:
                try:
                    temps[sensor.name] = parse_millicelsius(raw)
                except ValueError:
                    pass
        if temps:
            out["cpu_temps_c"] = temps
        shm = self._statvfs(self.shm)
        if shm is not None:
            out["shm_total_bytes"], out["shm_used_bytes"] = shm["total_bytes"], shm["used_bytes"]
            out["shm_used_pct"] = shm["used_pct"]
        disks: Dict[str, Dict[str, Any]] = {}
        for path in self.disks:
            usage = self._statvfs(path)
            if usage is not None:
                disks[path] = usage
        if disks:
            out["disks"] = disks
        return out

    def _statvfs(self, host_path: str) -> Optional[Dict[str, Any]]:
        try:
            return fs_usage(os.statvfs(self._path(host_path)))
        except OSError:
            return None


def now_fields() -> Dict[str, Any]:
    ts = time.time()
    return {"ts": round(ts, 3), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))}
