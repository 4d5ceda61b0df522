"""The throughput a trial reports: the last match of a regular expression in the job's output after a warm-up.

A trial's output is a list of (seconds since the trial started, line). Matches in the first `warmup_s` seconds and
the first `warmup_matches` matches are discarded (start-up, compilation, caches filling); the value is the last
match left. `lower_is_better` (a step time) turns the comparison around in `score`: every ratio the search forms
is "greater is faster".
"""

import math
import re
from dataclasses import dataclass
from typing import Optional, Pattern, Sequence, Tuple

from hosttune.errors import UserError

# The bundled engine's own line (engine/train.py: "... 1234.5 samples/s ...").
ENGINE_REGEX = r"([0-9]+(?:\.[0-9]+)?) samples/s"
MAX_REGEX = 500
_NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


@dataclass(frozen=True)
class MetricSpec:
    pattern: Pattern[str]
    lower_is_better: bool = False
    warmup_matches: int = 1
    warmup_s: float = 0.0

    @property
    def text(self) -> str:
        return self.pattern.pattern


def compile_metric(text: str, *, lower_is_better: bool = False, warmup_matches: int = 1,
                   warmup_s: float = 0.0) -> MetricSpec:
    """A MetricSpec from --metric's text; a bad expression is one UserError line."""
    if not text:
        raise UserError("--metric: empty regular expression")
    if len(text) > MAX_REGEX:
        raise UserError(f"--metric: longer than {MAX_REGEX} characters")
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise UserError(f"--metric: not a regular expression: {exc}") from None
    if pattern.groups > 1 and "value" not in pattern.groupindex:
        raise UserError("--metric: more than one group: name the number's group (?P<value>...)")
    if warmup_matches < 0 or not (warmup_s >= 0 and math.isfinite(warmup_s)):
        raise UserError("--warmup: must be a count and seconds of at least 0")
    return MetricSpec(pattern, lower_is_better, warmup_matches, warmup_s)


def _number(spec: MetricSpec, line: str) -> Optional[float]:
    found_all = list(spec.pattern.finditer(line))
    if not found_all:
        return None
    m = found_all[-1]  # the last match on the line
    if "value" in spec.pattern.groupindex:
        text = m.group("value")
    elif spec.pattern.groups == 1:
        text = m.group(1)
    else:
        found = _NUMBER.findall(m.group(0))
        text = found[-1] if found else None
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def read(spec: MetricSpec, output: Sequence[Tuple[float, str]]) -> Tuple[Optional[float], str]:
    """(value, "") from a trial's timed lines, or (None, why not): no match at all, or only warm-up matches."""
    matches = [(t, v) for t, v in ((t, _number(spec, line)) for t, line in output) if v is not None]
    if not matches:
        return None, f"printed no metric matching {spec.text!r}"
    kept = [v for i, (t, v) in enumerate(matches) if i >= spec.warmup_matches and t >= spec.warmup_s]
    if not kept:
        return None, (f"printed {len(matches)} metric line(s), all in the warm-up (first {spec.warmup_matches} "
                      f"match(es), first {spec.warmup_s:g} s)")
    return kept[-1], ""


def score(spec: MetricSpec, value: float) -> float:
    """A value where greater is faster (a step time is inverted)."""
    return 1.0 / value if spec.lower_is_better else value
