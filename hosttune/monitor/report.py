"""`hosttune monitor report`: read the JSONL log back, summarise it, and draw it as an SVG.

Reading is the only I/O here besides writing the picture. Summary: min/mean/max per metric, the time spent above
each threshold (a sample's condition counts until the next sample, but never across a gap longer than three typical
intervals, i.e. while the monitor was not running), and the events. The SVG is written by hand so that the
distribution packages need no matplotlib; a .png is drawn with matplotlib when it happens to be importable.
"""

import calendar
import errno
import json
import math
import os
import re
import stat
import time
from array import array
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from hosttune.errors import UserError
from hosttune.monitor.config import Thresholds
from hosttune.monitor.sinks import jsonl_files
from hosttune.policy import gpu_health
from hosttune.term import printable

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# per-GPU fields that do not change and so say nothing as min/mean/max
_STATIC = {"index", "memory_total_mb", "power_limit_w", "clock_event_reasons", "remapped_rows_pending",
           "remapped_rows_failure", "retired_pages_pending", "temp_slowdown_c",
           "energy_j", "last_xid"}  # a counter since driver load and a code: no min/mean/max to speak of
_HOST_STATIC = {"mem_total_bytes", "swap_total_bytes", "shm_total_bytes"}


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
    events = rec.get("events")
    return _opt(events, list) and all(isinstance(ev, dict) for ev in events or [])


def _parse_line(raw: bytes) -> Optional[Dict[str, Any]]:
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
            rec = _parse_line(raw) if raw is not None else None
            if rec is None:
                bad += 1
                continue
            if (cutoff is None or rec["ts"] >= cutoff) and (until is None or rec["ts"] <= until):
                samples.append(rec)
    samples.sort(key=lambda r: r["ts"])
    return samples, bad


def _numbers(rec: Dict[str, Any]) -> Iterator[Tuple[str, float]]:
    host = rec.get("host") or {}
    for key, value in host.items():
        if key in _HOST_STATIC:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            yield f"host.{key}", float(value)
    for sensor, value in (host.get("cpu_temps_c") or {}).items():
        yield f"cpu_temp.{sensor}", float(value)
    for path, usage in (host.get("disks") or {}).items():
        if "used_pct" in usage:
            yield f"disk.{path}.used_pct", float(usage["used_pct"])
    for gpu in rec.get("gpus") or []:
        if gpu.get("lost"):
            continue
        for key, value in gpu.items():
            if key in _STATIC or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            yield f"gpu{gpu['index']}.{key}", float(value)


def _durations(samples: Sequence[Dict[str, Any]]) -> List[float]:
    """How long each sample stands for: until the next one, capped at 3 typical intervals (monitor down)."""
    if len(samples) < 2:
        return [0.0] * len(samples)
    gaps = [b["ts"] - a["ts"] for a, b in zip(samples, samples[1:])]
    typical = sorted(gaps)[len(gaps) // 2] or 1.0
    cap = 3 * typical
    return [min(g, cap) for g in gaps] + [typical]


PERCENTILES = (50, 95, 99)


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile of sorted values, interpolated between the closest ranks (numpy's default, "linear")."""
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarize(samples: Sequence[Dict[str, Any]], thresholds: Thresholds) -> Dict[str, Any]:
    # every reading is kept (8 bytes each in an array) for exact percentiles: a week of 5 s samples of a 1-GPU host
    # is a few million values; --since/--until bound it
    values: Dict[str, array[float]] = {}
    for rec in samples:
        for name, value in _numbers(rec):
            seq = values.get(name)
            if seq is None:
                seq = values[name] = array("d")
            seq.append(value)
    table: Dict[str, Dict[str, Any]] = {}
    for name, seq in sorted(values.items()):
        ordered = sorted(seq)
        row: Dict[str, Any] = {"min": ordered[0], "mean": round(math.fsum(ordered) / len(ordered), 3),
                               "max": ordered[-1]}
        for q in PERCENTILES:
            row[f"p{q}"] = round(percentile(ordered, q), 3)
        row["samples"] = len(ordered)
        table[name] = row

    t = thresholds
    above: Dict[str, float] = {}
    order: List[str] = []

    def add(label: str, held: bool, dt: float) -> None:
        if label not in above:
            above[label] = 0.0
            order.append(label)
        if held:
            above[label] += dt

    durations = _durations(samples)
    for rec, dt in zip(samples, durations):
        pct = (rec.get("host") or {}).get("mem_used_pct")
        if pct is not None:
            add(f"host memory >= {t.memory_pct:g} %", pct >= t.memory_pct, dt)
        for gpu in rec.get("gpus") or []:
            if gpu.get("lost"):
                continue
            g = f"gpu{gpu['index']}"
            temp = gpu.get("temperature_c")
            if temp is not None:
                # the events' lines for this GPU (the policy's, from its slowdown threshold): at the line is over it
                limits = t.gpu_temp_limits(gpu.get("temp_slowdown_c"))
                level = limits.level(temp)
                add(f"{g} temperature >= {limits.warn_c:g} C (warning)", level in ("warning", "critical"), dt)
                add(f"{g} temperature >= {limits.crit_c:g} C (critical)", level == "critical", dt)
            mem = gpu.get("memory_used_pct")
            if mem is not None:
                add(f"{g} memory >= {t.memory_pct:g} %", mem >= t.memory_pct, dt)
            reasons = gpu.get("clock_event_reasons")
            if reasons is not None:
                on = {kind for kind, _level, _bits, _what in gpu_health.clock_events(reasons)}
                for kind, _mask, level, what in gpu_health.CLOCK_EVENT_GROUPS:
                    add(f"{g} {what} ({level})", kind in on, dt)
    span = sum(durations)
    events = [dict(ev, ts=rec["ts"], time=rec.get("time")) for rec in samples for ev in rec.get("events") or []]
    return {
        "samples": len(samples),
        "first": samples[0]["ts"] if samples else None,
        "last": samples[-1]["ts"] if samples else None,
        "covered_seconds": round(span, 3),
        "metrics": table,
        "above": [{"condition": label, "seconds": round(above[label], 3),
                   "fraction": round(above[label] / span, 4) if span else 0.0} for label in order],
        "events": events,
    }


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def _utc(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ts))


def render_text(summary: Dict[str, Any], log_dir: str, bad_lines: int) -> str:
    lines: List[str] = []
    if not summary["samples"]:
        return f"hosttune monitor report: {log_dir}: no samples in the chosen period\n"
    lines.append(f"hosttune monitor report: {log_dir}, {summary['samples']} samples, "
                 f"{_utc(summary['first'])} .. {_utc(summary['last'])} ({_hms(summary['covered_seconds'])})"
                 + (f", {bad_lines} unreadable lines skipped" if bad_lines else ""))
    lines.append("")
    width = max([len(n) for n in summary["metrics"]] + [6])
    cols = ["min", "mean", *(f"p{q}" for q in PERCENTILES), "max"]
    lines.append(f"{'metric':<{width}}" + "".join(f"  {c:>10}" for c in cols))
    for name, m in summary["metrics"].items():
        lines.append(f"{name:<{width}}" + "".join(f"  {_fmt(m[c], name):>10}" for c in cols if c in m))
    lines.append("")
    lines.append("time above thresholds")
    if not summary["above"]:
        lines.append("  (no readings to compare)")
    cw = max([len(a["condition"]) for a in summary["above"]] + [10])
    for a in summary["above"]:
        lines.append(f"  {a['condition']:<{cw}}  {_hms(a['seconds']):>14}  {100 * a['fraction']:5.1f} %")
    lines.append("")
    lines.append(f"events ({len(summary['events'])})")
    for ev in summary["events"]:
        state = "cleared " if ev.get("state") == "clear" else ""
        # a log line is data: control characters in it are shown, never sent to the terminal
        lines.append(f"  {_utc(ev['ts'])}  {printable(str(ev.get('level', ''))):<8}  "
                     f"{state}{printable(str(ev.get('message', '')))}")
    return "\n".join(lines) + "\n"


_BINARY = (("TiB", 1024.0 ** 4), ("GiB", 1024.0 ** 3), ("MiB", 1024.0 ** 2), ("KiB", 1024.0))


def human_bytes(v: float) -> str:
    """24330000000 -> "22.7 GiB" (binary units, as free(1) -h and the monitor's config sizes)."""
    for unit, scale in _BINARY:
        if abs(v) >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} B"


def _fmt(v: float, name: str = "") -> str:
    if name.endswith("_bytes") or name.endswith("_mb"):
        return human_bytes(v * (1024 * 1024 if name.endswith("_mb") else 1))
    if abs(v) >= 1e6:
        return f"{v:.4g}"
    return f"{v:.2f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))


# ---- the picture -----------------------------------------------------------------------------------------------
_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22"]


def _series(samples: Sequence[Dict[str, Any]]) -> Tuple[Dict[str, List[Tuple[float, float]]],
                                                         Dict[str, List[Tuple[float, float]]]]:
    temps: Dict[str, List[Tuple[float, float]]] = {}
    mems: Dict[str, List[Tuple[float, float]]] = {}
    for rec in samples:
        ts = rec["ts"]
        host = rec.get("host") or {}
        for gpu in rec.get("gpus") or []:
            if gpu.get("temperature_c") is not None:
                temps.setdefault(f"GPU {gpu['index']}", []).append((ts, float(gpu["temperature_c"])))
            if gpu.get("memory_used_pct") is not None:
                mems.setdefault(f"GPU {gpu['index']} memory", []).append((ts, float(gpu["memory_used_pct"])))
        for sensor, value in (host.get("cpu_temps_c") or {}).items():
            temps.setdefault(f"CPU {sensor}", []).append((ts, float(value)))
        if host.get("mem_used_pct") is not None:
            mems.setdefault("host memory", []).append((ts, float(host["mem_used_pct"])))
        if host.get("swap_total_bytes"):
            swap_pct = 100.0 * host.get("swap_used_bytes", 0) / host["swap_total_bytes"]
            mems.setdefault("swap used", []).append((ts, swap_pct))
    return temps, mems


def _esc(text: Any) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _nice_ticks(lo: float, hi: float, n: int = 5) -> List[float]:
    span = hi - lo or 1.0
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _time_ticks(t0: float, t1: float) -> List[float]:
    span = max(t1 - t0, 1.0)
    steps = [60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400]
    step = next((s for s in steps if span / s <= 8), steps[-1])
    if span / step > 8 or span < 60:
        step = max(1, int(span / 6))
    first = math.ceil(t0 / step) * step
    return [first + i * step for i in range(int((t1 - first) / step) + 1)]


def temperature_lines(samples: Sequence[Dict[str, Any]], thresholds: Thresholds) -> List[Tuple[float, str]]:
    """[(degrees, level)] of every GPU's warning and critical lines in the log, each value once (GPUs of one
    model share them); the table's (or the configured) lines when the log holds no GPU temperature."""
    slowdowns = {gpu.get("temp_slowdown_c") for rec in samples for gpu in rec.get("gpus") or []
                 if gpu.get("temperature_c") is not None} or {None}
    lines: Dict[float, str] = {}
    for slowdown in sorted(slowdowns, key=lambda v: -1.0 if v is None else float(v)):
        limits = thresholds.gpu_temp_limits(slowdown)
        lines.setdefault(limits.warn_c, "warning")
        lines[limits.crit_c] = "critical"  # one GPU's critical line wins over another's warning at that value
    return sorted(lines.items())


def render_svg(samples: Sequence[Dict[str, Any]], thresholds: Thresholds, title: str = "") -> str:
    """Two panels over time: temperatures (GPU, CPU package) with the warning/critical lines, and memory use in %.
    Each series is reduced to the maximum per pixel column, so a short spike to 88 C stays visible."""
    temps, mems = _series(samples)
    w, panel_h, left, right, top = 1000, 260, 64, 230, 56
    plot_w = w - left - right
    h = top + 2 * (panel_h + 50) + 10
    t0 = samples[0]["ts"] if samples else 0.0
    t1 = samples[-1]["ts"] if samples else 1.0
    if t1 <= t0:
        t1 = t0 + 1.0
    durations = _durations(samples)
    gap = 3 * (sorted(durations)[len(durations) // 2] if durations else 1.0) or 1.0

    palette: Dict[str, str] = {}

    def x_of(ts: float) -> float:
        return left + (ts - t0) / (t1 - t0) * plot_w

    out: List[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="15" font-weight="bold">{_esc(title or "hosttune monitor")}</text>',
        f'<text x="{left}" y="40" fill="#555">{_utc(t0)} .. {_utc(t1)}, times in UTC</text>',
    ]

    def panel(y0: float, name: str, unit: str, series: Dict[str, List[Tuple[float, float]]],
              lines: Sequence[Tuple[float, str, str]], floor: Optional[float], ceil: Optional[float]) -> None:
        values = [v for pts in series.values() for _, v in pts] + [v for v, _, _ in lines]
        lo = min(values) if values else 0.0
        hi = max(values) if values else 100.0
        lo = floor if floor is not None else math.floor(lo / 10) * 10 - 5
        hi = max(hi + 5, lo + 10) if ceil is None else ceil
        ticks = _nice_ticks(lo, hi)

        def y_of(v: float) -> float:
            return y0 + panel_h - (v - lo) / (hi - lo) * panel_h

        out.append(f'<g class="panel" id="{_esc(name.lower().replace(" ", "-"))}">')
        out.append(f'<text x="{left}" y="{y0 - 8}" font-weight="bold">{_esc(name)} ({_esc(unit)})</text>')
        out.append(f'<rect x="{left}" y="{y0}" width="{plot_w}" height="{panel_h}" fill="none" stroke="#999"/>')
        for tv in ticks:
            y = y_of(tv)
            out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tv:g}</text>')
        for tt in _time_ticks(t0, t1):
            x = x_of(tt)
            label = time.strftime("%H:%M" if t1 - t0 < 2 * 86400 else "%m-%d %H:%M", time.gmtime(tt))
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y0}" y2="{y0 + panel_h}" stroke="#eee"/>')
            out.append(f'<text x="{x:.1f}" y="{y0 + panel_h + 16}" text-anchor="middle">{label}</text>')
        for value, label, color in lines:
            y = y_of(value)
            out.append(f'<line class="threshold" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                       f'stroke="{color}" stroke-dasharray="6,4"/>')
            out.append(f'<text x="{left + plot_w - 4}" y="{y - 4:.1f}" text-anchor="end" fill="{color}">'
                       f'{_esc(label)}</text>')
        for n, (label, pts) in enumerate(sorted(series.items())):
            base = label[: -len(" memory")] if label.endswith(" memory") else label  # GPU 0 alike in both panels
            color = palette.setdefault(base, _COLORS[len(palette) % len(_COLORS)])
            for run in _runs(pts, gap):
                coords = " ".join(f"{x:.1f},{y_of(v):.1f}" for x, v in _max_per_pixel(run, x_of))
                out.append(f'<polyline class="series" data-series="{_esc(label)}" fill="none" stroke="{color}" '
                           f'stroke-width="1.5" points="{coords}"/>')
            ly = y0 + 14 + 16 * n
            lx = left + plot_w + 14
            out.append(f'<line x1="{lx}" x2="{lx + 16}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" '
                       'stroke-width="3"/>')
            out.append(f'<text x="{lx + 20}" y="{ly}">{_esc(label)}</text>')
        if not series:
            out.append(f'<text x="{left + plot_w / 2}" y="{y0 + panel_h / 2}" text-anchor="middle" fill="#888">'
                       'no readings</text>')
        out.append("</g>")

    t = thresholds
    panel(top + 20, "Temperature", "\u00b0C", temps,
          [(value, f"{level} {value:g} \u00b0C", "#e69500" if level == "warning" else "#d62728")
           for value, level in temperature_lines(samples, t)], None, None)
    panel(top + 20 + panel_h + 50, "Memory used", "%", mems,
          [(t.memory_pct, f"{t.memory_pct:g} %", "#d62728")], 0.0, 100.0)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _runs(pts: List[Tuple[float, float]], gap: float) -> List[List[Tuple[float, float]]]:
    """Split a series where the monitor was not running, so the line does not bridge the hole."""
    runs: List[List[Tuple[float, float]]] = []
    for p in pts:
        if runs and p[0] - runs[-1][-1][0] <= gap:
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs


def _max_per_pixel(pts: List[Tuple[float, float]], x_of: Any) -> List[Tuple[float, float]]:
    out: List[Tuple[float, float]] = []
    for ts, v in pts:
        x = round(x_of(ts))
        if out and out[-1][0] == x:
            if v > out[-1][1]:
                out[-1] = (x, v)
        else:
            out.append((x, v))
    if len(out) == 1:  # a single point still needs two ends to be drawn
        out.append((out[0][0] + 1, out[0][1]))
    return out


def write_plot(path: str, samples: Sequence[Dict[str, Any]], thresholds: Thresholds, title: str) -> None:
    if path.lower().endswith(".png"):
        _write_png(path, samples, thresholds, title)
        return
    if not path.lower().endswith(".svg"):
        raise UserError(f"--plot {path}: name the picture .svg (or .png when matplotlib is installed)")
    _atomic_write(path, render_svg(samples, thresholds, title).encode())


def _atomic_write(path: str, data: bytes) -> None:
    from hosttune import fsio

    try:
        fsio.atomic_write(path, data, 0o644)
    except OSError as exc:
        raise UserError(f"--plot {path}: cannot write: {exc.strerror or exc}") from None


def _write_png(path: str, samples: Sequence[Dict[str, Any]], thresholds: Thresholds, title: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError(f"--plot {path}: PNG needs matplotlib, which is not installed; use a .svg name") from None
    import datetime as dt
    import io

    temps, mems = _series(samples)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for label, pts in sorted(temps.items()):
        ax1.plot([dt.datetime.utcfromtimestamp(t) for t, _ in pts], [v for _, v in pts], label=label)
    for value, level in temperature_lines(samples, thresholds):
        ax1.axhline(value, ls="--", color="orange" if level == "warning" else "red")
    ax1.set_ylabel("C")
    for label, pts in sorted(mems.items()):
        ax2.plot([dt.datetime.utcfromtimestamp(t) for t, _ in pts], [v for _, v in pts], label=label)
    ax2.axhline(thresholds.memory_pct, ls="--", color="red")
    ax2.set_ylabel("% used")
    ax2.set_ylim(0, 100)
    for ax in (ax1, ax2):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper left", fontsize="small")
    fig.suptitle(title or "hosttune monitor")
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png")
    finally:
        plt.close(fig)
    _atomic_write(path, buf.getvalue())
