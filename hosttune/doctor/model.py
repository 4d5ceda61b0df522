"""The check model: a Finding (what one check saw, built by keyword only), a Need (a prerequisite as data), a Check,
and the Report of a run.

`Finding(status=..., actual=..., expected=..., fix=...)`: the constructor takes keywords only, so `expected` and
`actual` cannot trade places unnoticed (both are plain strings, no type catches a swap), and it refuses a status
that does not exist.
"""

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Tuple, Union

if TYPE_CHECKING:
    from hosttune.doctor.context import Context

SCHEMA = "hosttune.doctor/1"
STATUSES = ("pass", "warn", "fail", "skip")
GROUPS = ("os", "cpu", "storage", "tools", "nvidia", "torch", "hosttune")
# `--fail-on`: the lowest status that makes doctor exit 1 (and, for --slurm/--npd, reports a problem)
FAIL_ON = ("fail", "warn")


@dataclass(frozen=True, init=False)
class Finding:
    status: str  # pass | warn | fail | skip
    actual: str
    expected: str
    fix: str

    def __init__(self, *, status: str, actual: str = "", expected: str = "", fix: str = "") -> None:
        if status not in STATUSES:
            raise ValueError(f"status {status!r} is not one of {', '.join(STATUSES)}")
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "actual", actual)
        object.__setattr__(self, "expected", expected)
        object.__setattr__(self, "fix", fix)


@dataclass(frozen=True)
class Need:
    """A prerequisite of a check: when `met(ctx)` is false the runner reports a skip saying `why`, and the check
    does not run. `expected` is what that skip finding shows as expected."""

    name: str  # gpu | nvml | live | shell_env | local_profiles | data
    met: Callable[["Context"], bool]
    why: Union[str, Callable[["Context"], str]]
    expected: str = ""

    def skip(self, ctx: "Context") -> Finding:
        why = self.why if isinstance(self.why, str) else self.why(ctx)
        return Finding(status="skip", actual=why, expected=self.expected)


@dataclass(frozen=True)
class Result:
    id: str
    group: str
    status: str
    title: str
    expected: str
    actual: str
    fix: str

    def to_dict(self) -> Dict[str, str]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Check:
    id: str
    group: str
    title: str
    run: Callable[["Context"], Finding]
    needs: Tuple[Need, ...] = ()  # checked in order by the runner before `run`; the first unmet one is the skip

    @property
    def explain(self) -> str:
        doc = (self.run.__doc__ or "").strip()
        lines = doc.splitlines()
        if len(lines) > 1:  # dedent the body the way inspect.cleandoc does
            body = [ln for ln in lines[1:] if ln.strip()]
            indent = min((len(ln) - len(ln.lstrip()) for ln in body), default=0)
            lines = [lines[0]] + [ln[indent:] for ln in lines[1:]]
        return "\n".join(lines)


@dataclass(frozen=True)
class Report:
    results: Tuple[Result, ...]

    @property
    def summary(self) -> Dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for r in self.results:
            out[r.status] += 1
        return out

    def problems(self, fail_on: str = "fail") -> Tuple[Result, ...]:
        """The results at or above `fail_on` ("fail": failures; "warn": warnings too), failures first."""
        if fail_on not in FAIL_ON:
            raise ValueError(f"fail_on {fail_on!r} is not one of {', '.join(FAIL_ON)}")
        bad = ("fail",) if fail_on == "fail" else ("fail", "warn")
        return tuple(sorted((r for r in self.results if r.status in bad), key=lambda r: r.status != "fail"))

    def exit_code_at(self, fail_on: str = "fail") -> int:
        """0 when nothing is at or above `fail_on`, else 1 (2 is bad usage, raised before a Report exists)."""
        return 1 if self.problems(fail_on) else 0

    @property
    def exit_code(self) -> int:
        return self.exit_code_at("fail")

    def to_dict(self) -> Dict[str, Any]:
        return {"schema": SCHEMA, "findings": [r.to_dict() for r in self.results], "summary": self.summary}
