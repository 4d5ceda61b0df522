"""Reading the monitor's JSONL log back: the period options (--since, --until), the no-follow bounded line reader
and the parse of one line into a sample of the shape the summary and the pictures rely on.

The log is data another process wrote, possibly while a user could write the directory: a link, FIFO or device at a
log name is refused in one line, a line longer than MAX_LINE_BYTES is skipped unread, and a line that is not valid
UTF-8 JSON of a sample's shape (bad JSON, NaN/Infinity, nested too deep, numbers out of range, wrong types) is counted
as unreadable, never a traceback.
"""

import calendar
import errno
import json
import math
import os
import re
import stat
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

from hosttune.errors import UserError
from hosttune.monitor.sinks import jsonl_files

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """Seconds in "90s", "15m", "2h30m", "1d", "1w" (a bare number is seconds)."""
    s = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if s[pos:m.start()].strip():
            break
        total += float(m.group(1)) * _UNIT_S[m.group(2).lower()]
        pos = m.end()
    if pos == 0 or s[pos:].strip() or total <= 0:
        raise UserError(f"--since: cannot read duration {text!r} (use e.g. 30m, 2h, 1d, 1h30m)")
    return total


_WHEN_FORMATS = ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M",
                 "%Y-%m-%d")


def parse_when(text: str, now: Optional[float] = None, option: str = "--until") -> float:
    """A point in time: a duration ago ("30m", "2h": `now` minus it) or a UTC date-time as the log prints it
    ("2026-12-01T10:00:00Z", "2026-12-01 10:00", "2026-12-01")."""
    s = text.strip()
    for fmt in _WHEN_FORMATS:
        try:
            return float(calendar.timegm(time.strptime(s, fmt)))
        except ValueError:
            continue
    try:
        ago = parse_duration(s)
    except UserError:
        raise UserError(f"{option}: cannot read {text!r} (use a duration ago such as 30m or 2h, or a UTC time such "
                        f"as 2026-12-01T10:00:00Z)") from None
    return (now if now is not None else time.time()) - ago


MAX_LINE_BYTES = 1 << 20  # a sample is a few hundred bytes per GPU; anything longer is not one of ours


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses as inf
        raise ValueError(f"not a finite number: {text[:20]}")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 20:  # beyond any counter we write; float() of it would overflow later
        raise ValueError("integer too long")
    return int(text)


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a reading")  # NaN, Infinity, -Infinity: json.loads accepts them by default


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _opt(value: Any, kind: Any) -> bool:
    return value is None or isinstance(value, kind)


def _well_formed(rec: Any) -> bool:
    """The shape the summary and the plot rely on; a line that parses as JSON but has another shape is unreadable,
    not a traceback."""
    if not isinstance(rec, dict) or not _is_num(rec.get("ts")) or not 0 <= rec["ts"] < 1e11:
        return False
    host = rec.get("host")
    if not _opt(host, dict):
        return False
    host = host or {}
    for key in ("mem_used_pct", "swap_total_bytes", "swap_used_bytes"):
        if host.get(key) is not None and not _is_num(host[key]):
            return False
    temps = host.get("cpu_temps_c")
    if not _opt(temps, dict) or not all(_is_num(v) for v in (temps or {}).values()):
        return False
    disks = host.get("disks")
    if not _opt(disks, dict) or not all(
            isinstance(u, dict) and (u.get("used_pct") is None or _is_num(u["used_pct"]))
            for u in (disks or {}).values()):
        return False
    gpus = rec.get("gpus")
    if not _opt(gpus, list):
        return False
    for gpu in gpus or []:
        if not isinstance(gpu, dict) or not isinstance(gpu.get("index"), int) or isinstance(gpu["index"], bool):
            return False
        for key in ("temperature_c", "memory_used_pct", "temp_slowdown_c"):
            if gpu.get(key) is not None and not _is_num(gpu[key]):
                return False
        reasons = gpu.get("clock_event_reasons")
        if reasons is not None and (not isinstance(reasons, int) or isinstance(reasons, bool)):
            return False
        if not _jobs_well_formed(gpu):
            return False
    events = rec.get("events")
    return _opt(events, list) and all(isinstance(ev, dict) for ev in events or [])


def _jobs_well_formed(gpu: Dict[str, Any]) -> bool:
    """"jobs": [{"job": str, "kind": str, "user": str}]; the readings `monitor report --job` adds up are numbers."""
    jobs = gpu.get("jobs")
    if not _opt(jobs, list):
        return False
    for job in jobs or []:
        if not isinstance(job, dict) or not all(isinstance(job.get(k), str) for k in ("job", "kind")):
            return False
    for key in ("utilization_gpu_pct", "memory_used_mb", "power_w", "energy_j", "xid_errors"):
        if gpu.get(key) is not None and not _is_num(gpu[key]):
            return False
    throttle = gpu.get("throttle_seconds")
    procs = gpu.get("processes")
    return (_opt(throttle, dict) and all(_is_num(v) for v in (throttle or {}).values())
            and _opt(procs, list) and all(isinstance(p, dict) and _opt(p.get("used_memory_mb"), (int, float))
                                          for p in procs or []))


def parse_line(raw: bytes) -> Optional[Dict[str, Any]]:
    """One JSONL line as a sample, or None when it is not one (bad UTF-8, bad JSON, nested too deep, wrong shape)."""
    try:
        rec = json.loads(raw.decode("utf-8"), parse_float=_finite_float, parse_int=_bounded_int,
                         parse_constant=_no_constant)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    return rec if _well_formed(rec) else None


def _lines(path: str) -> Iterator[Optional[bytes]]:
    """The lines of one log file, each at most MAX_LINE_BYTES (None stands for a longer one, skipped unread).
    A link, FIFO or device at a log name is refused with one line: it is not a log the monitor wrote."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        if os.path.islink(path):
            raise OSError(errno.ELOOP, "is a symbolic link, not a log the monitor wrote")
        fd = os.open(path, flags)
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UserError(f"{path}: cannot read: not a regular file")
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        while True:
            line = f.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_LINE_BYTES:
                while line and not line.endswith(b"\n"):  # skip the rest of the overlong line in bounded reads
                    line = f.readline(MAX_LINE_BYTES)
                yield None
                continue
            yield line


def read_samples(log_dir: str, since_s: Optional[float] = None, now: Optional[float] = None,
                 until: Optional[float] = None) -> Tuple[List[Dict[str, Any]], int]:
    """All samples in the log files (from `since_s` before `now`, up to the time `until`), oldest first, and the
    number of lines that did not parse (malformed JSON, too long, nested too deep, or not shaped like a sample)."""
    files = jsonl_files(log_dir)
    if not files:
        raise UserError(f"no monitor log in {log_dir} (expected monitor.jsonl; is `hosttune monitor` running?)")
    cutoff = (now if now is not None else time.time()) - since_s if since_s else None
    samples: List[Dict[str, Any]] = []
    bad = 0
    for path in files:
        for raw in _lines(path):
            if raw is not None and not raw.strip():
                continue
            rec = parse_line(raw) if raw is not None else None
            if rec is None:
                bad += 1
                continue
            if (cutoff is None or rec["ts"] >= cutoff) and (until is None or rec["ts"] <= until):
                samples.append(rec)
    samples.sort(key=lambda r: r["ts"])
    return samples, bad
