"""What `hosttune tune` reports: a tunable's `Status` (expected vs actual) and one `Change` it made or would make."""

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

STATES = ("ok", "drift", "skip")
MARKER = "# Written by hosttune (hosttune tune apply); `hosttune tune revert` removes it. Do not edit."
STATE_NAME = "tune-state.json"
STATE_FILE = "var/lib/hosttune/" + STATE_NAME  # under a --root (a captured tree keeps the host's own layout)
STATE_SCHEMA = "hosttune.tune-state/1"


def state_rel(root: Path) -> str:
    """The state file relative to `root`: on the live host in `hosttune.policy.dirs.state_dir()`
    ($HOSTTUNE_STATE_DIR, else /var/lib/hosttune); under a --root tree always STATE_FILE, the tree's own."""
    if os.path.realpath(str(root)) != "/":
        return STATE_FILE
    from hosttune.policy import dirs

    return os.path.normpath(dirs.state_dir()).lstrip("/") + "/" + STATE_NAME


def state_file(root: Path = Path("/")) -> str:
    """The state file's path (what `tune apply` saved; its existence means something was applied)."""
    return str(Path(root) / state_rel(root))


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
