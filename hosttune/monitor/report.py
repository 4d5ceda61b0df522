"""`hosttune monitor report`: read the JSONL log back, summarise it, and draw it as text or a picture.

The work is in three modules, reading apart from drawing: `logread` (the --since/--until period, the no-follow
bounded reader, the parse of a line into a sample), `summary` (pure: metrics, time above thresholds, events, the
series to draw) and `draw` (pure: the text table, the SVG, the PNG through matplotlib). This module is the command's
API over them, and the one place the report writes: the picture, through `fsio.atomic_write`.
"""

from typing import Any, Dict, Sequence

from hosttune.errors import UserError
from hosttune.monitor import draw
from hosttune.monitor.config import Thresholds
from hosttune.monitor.draw import human_bytes, render_svg, render_text
from hosttune.monitor.logread import MAX_LINE_BYTES, parse_duration, parse_when, read_samples
from hosttune.monitor.summary import PERCENTILES, percentile, summarize, temperature_lines

__all__ = ["MAX_LINE_BYTES", "PERCENTILES", "human_bytes", "parse_duration", "parse_when", "percentile",
           "read_samples", "render_svg", "render_text", "summarize", "temperature_lines", "write_plot"]


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
