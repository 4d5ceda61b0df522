"""Drawing the monitor report: the text table, and the picture as SVG (written by hand, so that the distribution
packages need no matplotlib) or PNG (with matplotlib, when it happens to be importable).

Pure: a summary or samples in, text or bytes out; `report.write_plot` writes the picture. A log line is data: its
event text is shown through `term.printable`, and every string in the SVG is escaped.
"""

import math
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hosttune.monitor.config import Thresholds
from hosttune.monitor.summary import PERCENTILES, Series, durations, series, temperature_lines
from hosttune.term import printable


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


class _Svg:
    """One SVG picture being drawn: the time axis shared by its panels, and one colour per GPU/sensor across them."""

    w, panel_h, left, right, top = 1000, 260, 64, 230, 56

    def __init__(self, samples: Sequence[Dict[str, Any]], title: str) -> None:
        self.plot_w = self.w - self.left - self.right
        self.h = self.top + 2 * (self.panel_h + 50) + 10
        self.t0 = samples[0]["ts"] if samples else 0.0
        self.t1 = samples[-1]["ts"] if samples else 1.0
        if self.t1 <= self.t0:
            self.t1 = self.t0 + 1.0
        spans = durations(samples)
        self.gap = 3 * (sorted(spans)[len(spans) // 2] if spans else 1.0) or 1.0
        self.palette: Dict[str, str] = {}
        w, h, left = self.w, self.h, self.left
        self.out: List[str] = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            'font-family="sans-serif" font-size="12">',
            f'<rect width="{w}" height="{h}" fill="white"/>',
            f'<text x="{left}" y="22" font-size="15" font-weight="bold">{_esc(title or "hosttune monitor")}</text>',
            f'<text x="{left}" y="40" fill="#555">{_utc(self.t0)} .. {_utc(self.t1)}, times in UTC</text>',
        ]

    def x_of(self, ts: float) -> float:
        return self.left + (ts - self.t0) / (self.t1 - self.t0) * self.plot_w

    def panel(self, y0: float, name: str, unit: str, series: Series, lines: Sequence[Tuple[float, str, str]],
              floor: Optional[float], ceil: Optional[float]) -> None:
        values = [v for pts in series.values() for _, v in pts] + [v for v, _, _ in lines]
        lo = min(values) if values else 0.0
        hi = max(values) if values else 100.0
        lo = floor if floor is not None else math.floor(lo / 10) * 10 - 5
        hi = max(hi + 5, lo + 10) if ceil is None else ceil

        def y_of(v: float) -> float:
            return y0 + self.panel_h - (v - lo) / (hi - lo) * self.panel_h

        left, plot_w, out = self.left, self.plot_w, self.out
        out.append(f'<g class="panel" id="{_esc(name.lower().replace(" ", "-"))}">')
        out.append(f'<text x="{left}" y="{y0 - 8}" font-weight="bold">{_esc(name)} ({_esc(unit)})</text>')
        out.append(f'<rect x="{left}" y="{y0}" width="{plot_w}" height="{self.panel_h}" fill="none" stroke="#999"/>')
        self._grid(y0, _nice_ticks(lo, hi), y_of)
        for value, label, color in lines:
            y = y_of(value)
            out.append(f'<line class="threshold" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                       f'stroke="{color}" stroke-dasharray="6,4"/>')
            out.append(f'<text x="{left + plot_w - 4}" y="{y - 4:.1f}" text-anchor="end" fill="{color}">'
                       f'{_esc(label)}</text>')
        for n, (label, pts) in enumerate(sorted(series.items())):
            self._series(y0, n, label, pts, y_of)
        if not series:
            out.append(f'<text x="{left + plot_w / 2}" y="{y0 + self.panel_h / 2}" text-anchor="middle" fill="#888">'
                       'no readings</text>')
        out.append("</g>")

    def _grid(self, y0: float, ticks: List[float], y_of: Any) -> None:
        left, plot_w, t0, t1, out = self.left, self.plot_w, self.t0, self.t1, self.out
        for tv in ticks:
            y = y_of(tv)
            out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tv:g}</text>')
        for tt in _time_ticks(t0, t1):
            x = self.x_of(tt)
            label = time.strftime("%H:%M" if t1 - t0 < 2 * 86400 else "%m-%d %H:%M", time.gmtime(tt))
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y0}" y2="{y0 + self.panel_h}" stroke="#eee"/>')
            out.append(f'<text x="{x:.1f}" y="{y0 + self.panel_h + 16}" text-anchor="middle">{label}</text>')

    def _series(self, y0: float, n: int, label: str, pts: List[Tuple[float, float]], y_of: Any) -> None:
        base = label[: -len(" memory")] if label.endswith(" memory") else label  # GPU 0 alike in both panels
        color = self.palette.setdefault(base, _COLORS[len(self.palette) % len(_COLORS)])
        for run in _runs(pts, self.gap):
            coords = " ".join(f"{x:.1f},{y_of(v):.1f}" for x, v in _max_per_pixel(run, self.x_of))
            self.out.append(f'<polyline class="series" data-series="{_esc(label)}" fill="none" stroke="{color}" '
                            f'stroke-width="1.5" points="{coords}"/>')
        ly = y0 + 14 + 16 * n
        lx = self.left + self.plot_w + 14
        self.out.append(f'<line x1="{lx}" x2="{lx + 16}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" '
                        'stroke-width="3"/>')
        self.out.append(f'<text x="{lx + 20}" y="{ly}">{_esc(label)}</text>')


def render_svg(samples: Sequence[Dict[str, Any]], thresholds: Thresholds, title: str = "") -> str:
    """Two panels over time: temperatures (GPU, CPU package) with the warning/critical lines, and memory use in %.
    Each series is reduced to the maximum per pixel column, so a short spike to 88 C stays visible."""
    temps, mems = series(samples)
    svg = _Svg(samples, title)
    t = thresholds
    svg.panel(svg.top + 20, "Temperature", "\u00b0C", temps,
              [(value, f"{level} {value:g} \u00b0C", "#e69500" if level == "warning" else "#d62728")
               for value, level in temperature_lines(samples, t)], None, None)
    svg.panel(svg.top + 20 + svg.panel_h + 50, "Memory used", "%", mems,
              [(t.memory_pct, f"{t.memory_pct:g} %", "#d62728")], 0.0, 100.0)
    svg.out.append("</svg>")
    return "\n".join(svg.out) + "\n"


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend; ImportError when matplotlib is not installed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def render_png(plt: Any, samples: Sequence[Dict[str, Any]], thresholds: Thresholds, title: str) -> bytes:
    """The same two panels as the SVG, drawn by matplotlib (`plt` from `pyplot()`)."""
    import datetime as dt
    import io

    temps, mems = series(samples)
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
    return buf.getvalue()
