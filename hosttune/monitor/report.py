"""`hosttune monitor report`: read the JSONL log back, summarise it, and draw it as text or a picture.

The work is in three modules, reading apart from drawing: `logread` (the --since/--until period, the no-follow
bounded reader, the parse of a line into a sample), `summary` (pure: metrics, time above thresholds, events, the
series to draw) and `draw` (pure: the text table, the SVG, the PNG through matplotlib). This module is the command's
API over them, and the one place the report writes: the picture, through `fsio.atomic_write`.
"""

from typing import Any, Dict, List, Sequence

from hosttune.errors import UserError
from hosttune.monitor import draw
from hosttune.monitor.config import Thresholds
from hosttune.monitor.draw import human_bytes, render_svg, render_text
from hosttune.monitor.logread import MAX_LINE_BYTES, parse_duration, parse_when, read_samples
from hosttune.monitor.summary import PERCENTILES, job_summary, percentile, summarize, temperature_lines

__all__ = ["MAX_LINE_BYTES", "PERCENTILES", "human_bytes", "job_summary", "parse_duration", "parse_when",
           "percentile", "read_samples", "render_job_text", "render_svg", "render_text", "summarize",
           "temperature_lines", "write_plot"]


def write_plot(path: str, samples: Sequence[Dict[str, Any]], thresholds: Thresholds, title: str) -> None:
    """The picture at `path`: .svg drawn by hand, .png with matplotlib; any other name, a missing matplotlib or a
    failed write is one line (UserError), and nothing half-written is left at `path`."""
    if path.lower().endswith(".png"):
        try:
            plt = draw.pyplot()
        except ImportError:
            raise UserError(f"--plot {path}: PNG needs matplotlib, which is not installed; use a .svg name") from None
        _atomic_write(path, draw.render_png(plt, samples, thresholds, title))
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


def _stat_text(row: Dict[str, Any], key: str, unit: str) -> str:
    stats = row.get(key)
    return f"{stats['mean']:g} {unit} mean, {stats['max']:g} {unit} max" if stats else "-"


def render_job_text(summary: Dict[str, Any], where: str, bad: int) -> str:
    """`monitor report --job` as text: one block per GPU the job ran on, then its XID events."""
    import time

    job = summary["job"]
    if not summary["gpus"]:
        return f"job {job}: no sample in {where} has a process of it on a GPU\n"

    def when(ts: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ts))

    lines: List[str] = [f"job {job}: {when(summary['first'])} .. {when(summary['last'])} ({where}"
                        f"{f', {bad} unreadable lines' if bad else ''})"]
    for g in summary["gpus"]:
        lines.append(f"  GPU {g['gpu']} {g.get('uuid') or ''} ({g.get('kind')}, user {g.get('user') or '?'}): "
                     f"{g['samples']} samples, {g['seconds']:g} s")
        lines.append(f"    utilisation    {_stat_text(g, 'utilization_pct', '%')}")
        lines.append(f"    memory (GPU)   {_stat_text(g, 'memory_used_mb', 'MiB')}")
        if g.get("job_memory_used_mb"):
            lines.append(f"    memory (job)   {_stat_text(g, 'job_memory_used_mb', 'MiB')}")
        lines.append(f"    power          {_stat_text(g, 'power_w', 'W')}")
        if g.get("energy_j") is not None:
            lines.append(f"    energy         {g['energy_j'] / 3600.0:.3f} Wh ({g['energy_j']:g} J, from the "
                         f"{'energy counter' if g.get('energy_from') == 'counter' else 'power readings'})")
        throttle = ", ".join(f"{r} {s:g} s" for r, s in sorted(g.get("throttle_seconds", {}).items())) or "none"
        lines.append(f"    held back      {throttle}")
        xids = g.get("xid_errors")
        lines.append(f"    XID errors     {'not watched' if xids is None else xids}")
    for ev in summary["xid_events"]:
        lines.append(f"  {ev.get('time') or ev['ts']}  {ev.get('level')}: {ev.get('message')}")
    return "\n".join(lines) + "\n"
