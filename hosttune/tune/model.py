"""What `hosttune tune` reports: a tunable's `Status` (expected vs actual) and one `Change` it made or would make."""

from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional, Tuple

STATES = ("ok", "drift", "skip")
MARKER = "# Written by hosttune (hosttune tune apply); `hosttune tune revert` removes it. Do not edit."
STATE_FILE = "var/lib/hosttune/tune-state.json"
STATE_SCHEMA = "hosttune.tune-state/1"


@dataclass(frozen=True)
class Status:
    id: str
    title: str
    expected: Optional[str]
    actual: Optional[str]
    state: str  # ok | drift | skip
    reason: str

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"state {self.state!r} is not one of {', '.join(STATES)}")

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Change:
    id: str
    before: Optional[str]
    after: str
    reason: str
    persist: Tuple[str, ...]  # the files written to keep it across reboots (paths on the host)

    def to_dict(self) -> Dict[str, Any]:
        out = asdict(self)
        out["persist"] = list(self.persist)
        return out
