"""Text for a terminal: values that came from a host or a file never put raw control characters on the screen, and
colour or in-place redraws only where the terminal and the user want them."""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~13 ms to import on Debian 12's python3; this module is on `exec`'s error path
    from typing import Mapping, Optional, TextIO

# C0 controls except tab, DEL, C1 controls (ESC/CSI start terminal sequences), and the bidi overrides that reorder
# what a reader sees.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every control character shown as an escape (\\x1b, \\n, \\u202e), so it is one visible line."""
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def _dumb(environ: Mapping[str, str]) -> bool:
    return environ.get("TERM", "") == "dumb"


def colour(stream: TextIO, environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether to colour what goes to `stream`: only a terminal, and never with NO_COLOR set to anything non-empty
    (https://no-color.org) or TERM=dumb (a terminal that shows escape sequences as text, e.g. Emacs' shell). The one
    colour policy: every coloured output asks this."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or _dumb(env):
        return False
    return _isatty(stream)


def redraw(stream: TextIO, environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether a status line may be redrawn in place on `stream` (carriage return + erase-line `ESC [ K`): a terminal
    that is not TERM=dumb. NO_COLOR is about colour only, so it leaves this alone."""
    env = os.environ if environ is None else environ
    return not _dumb(env) and _isatty(stream)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed stream, or an object without isatty()
        return False
