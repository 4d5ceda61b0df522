"""Text for a terminal: values that came from a host or a file never put raw control characters on the screen."""

import re

# C0 controls except tab, DEL, C1 controls (ESC/CSI start terminal sequences), and the bidi overrides that reorder
# what a reader sees.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every control character shown as an escape (\\x1b, \\n, \\u202e), so it is one visible line."""
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)
