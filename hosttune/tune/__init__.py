"""`hosttune tune`: bring the host to the settings doctor's checks expect, keep them, and undo them (the public API).

- `verify(root, profile)`: expected vs actual for every tunable (`Status`).
- `apply(root, only, dry_run, profile)`: the changes (`Change`), transactional; the runtime values from before the
  first apply are saved in var/lib/hosttune/tune-state.json under the root.
- `revert(root)`: restores those values and removes hosttune's files.
- `TUNABLE_IDS`: the ids `--only` takes.

The tunables are data (`hosttune.tune.tunables`); what each expects and where it applies is `hosttune.tune.rules`
(doctor reads the same); each kind of tunable is an object with apply/verify/revert (`hosttune.tune.kinds.KINDS`);
the engine is `hosttune.tune.core` (with `state`, `txn`, `programs`, `tunedhook`), every path under the root goes
through `hosttune.tune.rootfs.Tree`. `profile=None` means the profile in use.
"""

from pathlib import Path
from typing import Any, List, Sequence

from hosttune.tune.model import Change, Status
from hosttune.tune.tunables import TUNABLE_IDS


def verify(root: Path = Path("/"), profile: Any = None) -> List[Status]:
    from hosttune.tune import core

    return core.verify(root, profile)


def apply(root: Path = Path("/"), only: Sequence[str] = (), dry_run: bool = False, profile: Any = None) -> List[Change]:
    from hosttune.tune import core

    return core.apply(root, only=only, dry_run=dry_run, profile=profile)


def revert(root: Path = Path("/")) -> List[Change]:
    from hosttune.tune import core

    return core.revert(root)


__all__ = ["TUNABLE_IDS", "Change", "Status", "apply", "revert", "verify"]
