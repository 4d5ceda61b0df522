"""hosttune's own files under a root: the persisted files (one block per tunable, `# <id>: <reason>` then its lines,
under the marker line) and the state file (the runtime values found before the first apply, what was applied, the
directories made, tuned's saved files). What revert writes comes from `check_state`: nothing outside a tunable's own
targets, no value that is not one line."""

import json
import os
import re
from typing import Any, Callable, Dict, List, Optional

from hosttune.errors import UserError
from hosttune.tune.model import MARKER, STATE_SCHEMA, state_rel
from hosttune.tune.rootfs import Tree, check_line
from hosttune.tune.tunables import BY_ID, TUNABLE_IDS, TUNABLES


def parse_blocks(text: Optional[str], reasons: Optional[Dict[str, str]] = None) -> Dict[str, List[str]]:
    """tunable id -> its lines in one of hosttune's files; each block's reason goes into `reasons`."""
    blocks: Dict[str, List[str]] = {}
    current: Optional[str] = None
    for raw in (text or "").splitlines()[1:]:
        line = raw.strip()
        head, _, why = line[2:].partition(":") if line.startswith("# ") else ("", "", "")
        if head in BY_ID:
            current = head
            blocks[current] = []
            if reasons is not None:
                reasons.setdefault(head, why.strip())
        elif current is not None and line and not line.startswith("#"):
            blocks[current].append(line)
    return blocks


def render_blocks(blocks: Dict[str, List[str]], reasons: Dict[str, str]) -> str:
    """The text of one of hosttune's files; a line with a newline or control character in it is an OSError (the
    values were validated by the settings table: this is the last line of defence)."""
    out = [MARKER]
    for tid in TUNABLE_IDS:
        if tid in blocks:
            out += [f"# {tid}: {reasons.get(tid, '')}".rstrip()] + blocks[tid]
    for line in out:
        check_line(line, f"a line of hosttune's file ({', '.join(blocks)})")
    return "\n".join(out) + "\n"


def ours(text: Optional[str]) -> bool:
    return text is not None and text.split("\n", 1)[0] == MARKER


def read_ours(tree: Tree, rel: str) -> Optional[str]:
    try:
        text = tree.read(rel)
    except OSError:
        return None
    return text if ours(text) else None



def trust_state(tree: Tree, rel: str) -> None:
    """As root on the live host, the state file (or, before the first apply, the nearest directory of its place that
    exists) must be root's alone (`hosttune.trust`): revert writes what it says into kernel attributes, and
    $HOSTTUNE_STATE_DIR may name any directory."""
    if not tree.live:
        return
    from hosttune import trust

    if not trust.is_root():
        return
    path = tree.path(rel)
    if os.path.lexists(path):
        trust.check_path(path, "tune state file")
        return
    d = os.path.dirname(path)
    while not os.path.lexists(d) and d != "/":
        d = os.path.dirname(d)
    trust.check_path(d, "tune state directory", kind="dir")


# A runtime value saved before the first apply, or one applied: one line of printable ASCII (what a kernel
# attribute, a mount option or systemctl shows), bounded.
_SAVED_VALUE = re.compile(r"[\x20-\x7e]{0,256}")
# A tuned file saved for revert (active_profile, profile_mode): text without control characters but tab and newline.
_SAVED_TEXT = re.compile(r"[^\x00-\x08\x0b-\x1f\x7f]{0,4096}")
_STATE_KEYS = ("schema", "before", "applied", "made_dirs", "tuned", "unit_enabled")


def own_dirs(tree: Tree) -> List[str]:
    """The directories apply may create (and revert may remove when empty): those above hosttune's own files."""
    from hosttune.tune import tuned

    files = [state_rel(tree.root), tuned.ACTIVE_REL, tuned.MODE_REL] + [t.persist for t in TUNABLES if t.persist] \
        + [f"{d}/tuned.conf" for d in tuned.PROFILE_RELS]
    out: List[str] = []
    for f in files:
        parts = f.split("/")[:-1]
        out += ["/".join(parts[:i + 1]) for i in range(len(parts))]
    return list(dict.fromkeys(out))


def check_state(data: Any, tree: Tree) -> Dict[str, Any]:
    """`data` when it has the state file's shape, every path in it one its tunable owns; else one UserError line.
    What revert writes comes from here: nothing outside a tunable's own targets, no value that is not one line."""
    where = tree.path(state_rel(tree.root))

    def bad(what: str) -> UserError:
        return UserError(f"{where}: not hosttune's tune state ({what}); `hosttune tune apply` wrote none like it")

    if not isinstance(data, dict) or data.get("schema") != STATE_SCHEMA:
        raise bad(f"schema {STATE_SCHEMA} expected")
    extra = [k for k in data if k not in _STATE_KEYS]
    if extra:
        raise bad(f"unknown key {str(extra[0])[:40]!r}")
    _check_values(data, bad)
    made = data.get("made_dirs", [])
    allowed = own_dirs(tree)
    if not isinstance(made, list) or not all(isinstance(d, str) and d in allowed for d in made):
        raise bad("made_dirs names a directory hosttune does not make")
    if not isinstance(data.get("unit_enabled", False), bool):
        raise bad("unit_enabled must be true or false")
    tuned_state = data.get("tuned")
    if tuned_state is not None:
        _check_tuned(tuned_state, bad)
    return data


Bad = Callable[[str], UserError]


def _check_values(data: Dict[str, Any], bad: Bad) -> None:
    """`before` (tunable -> own path -> saved value) and `applied` (tunable -> value): one-line values only."""
    def value(v: Any, what: str) -> None:
        if v is not None and not (isinstance(v, str) and _SAVED_VALUE.fullmatch(v)):
            raise bad(f"{what} is not a one-line value")

    before, applied = data.get("before", {}), data.get("applied", {})
    if not isinstance(before, dict) or not isinstance(applied, dict):
        raise bad("before and applied must be mappings")
    for tid, targets in before.items():
        t = BY_ID.get(tid)
        if t is None or not isinstance(targets, dict):
            raise bad(f"before: {str(tid)[:40]!r} is not a tunable with saved values")
        for rel, old in targets.items():
            if not isinstance(rel, str) or not t.own or not re.fullmatch(t.own, rel):
                raise bad(f"before.{tid}: {str(rel)[:60]!r} is not one of {tid}'s own paths")
            value(old, f"before.{tid}")
    for tid, v in applied.items():
        if tid not in BY_ID:
            raise bad(f"applied: {str(tid)[:40]!r} is not a tunable")
        if v is None:
            raise bad(f"applied.{tid} is empty")
        value(v, f"applied.{tid}")


def _check_tuned(tuned_state: Any, bad: Bad) -> None:
    """`tuned`: the profile active before the first apply and tuned's two files as they were ({text, mode})."""
    from hosttune.tune import tuned

    if not isinstance(tuned_state, dict) or set(tuned_state) - {"previous", "files"}:
        raise bad("tuned must be a mapping of previous and files")
    previous = tuned_state.get("previous")
    try:
        if previous is not None and (not isinstance(previous, str) or not tuned.check_names(previous, "tuned")):
            raise ValueError("empty")
    except ValueError:
        raise bad("tuned.previous is not a tuned profile name") from None
    files = tuned_state.get("files")
    if files is None:
        return
    if not isinstance(files, dict) or set(files) - {tuned.ACTIVE_REL, tuned.MODE_REL}:
        raise bad("tuned.files may name only etc/tuned/active_profile and etc/tuned/profile_mode")
    for saved in files.values():
        if saved is None:
            continue
        if not isinstance(saved, dict) or set(saved) != {"text", "mode"} \
                or not isinstance(saved["text"], str) or not _SAVED_TEXT.fullmatch(saved["text"]) \
                or not (isinstance(saved["mode"], int) and not isinstance(saved["mode"], bool)
                        and 0 <= saved["mode"] <= 0o777):
            raise bad("tuned.files: each saved file is {text, mode}")


def load_state(tree: Tree) -> Optional[Dict[str, Any]]:
    rel = state_rel(tree.root)
    try:
        text = tree.read(rel)
    except OSError as exc:
        raise UserError(f"{tree.path(rel)}: cannot read: {exc.strerror or exc}") from None
    if text is None:
        return None
    trust_state(tree, rel)
    try:
        data = json.loads(text)
    except ValueError:
        raise UserError(f"{tree.path(rel)}: not hosttune's tune state (bad JSON)") from None
    return check_state(data, tree)


def new_state() -> Dict[str, Any]:
    return {"schema": STATE_SCHEMA, "before": {}, "applied": {}, "made_dirs": [], "tuned": None}




def save_state(txn: Any, state: Dict[str, Any]) -> None:
    """Write the state file as a step of `txn` (a `hosttune.tune.txn.Txn`), checked as the next run will be: a value
    that could not pass is refused now."""
    check_state(state, txn.tree)
    txn.write_file(state_rel(txn.tree.root), json.dumps(state, indent=1, sort_keys=True) + "\n")
