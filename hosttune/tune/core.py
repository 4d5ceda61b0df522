"""The tune engine: reads each tunable, plans the changes, applies them as one transaction, saves and restores state.

Apply is all or nothing: every step records how to undo itself (`hosttune.tune.txn`), and a failing step undoes the
steps of that run in reverse before the error (one line) reaches the user. The runtime values found before the first
apply are saved in the state file (`hosttune.tune.state`) and are never overwritten by a later apply: revert always
goes back to the host as it was before hosttune touched it. What a tunable does is its kind's
(`hosttune.tune.kinds.KINDS`); what it expects and where it applies, `hosttune.tune.rules`.
"""

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hosttune.errors import UserError
from hosttune.profile.settings import Tune
from hosttune.tune import programs, tunedhook
from hosttune.tune.kinds import KINDS
from hosttune.tune.model import Change, Status, state_rel
from hosttune.tune.rootfs import Tree
from hosttune.tune.state import load_state, new_state, read_ours, save_state, trust_state
from hosttune.tune.tunables import BY_ID, TUNABLE_IDS, TUNABLES, Tunable
from hosttune.tune.txn import Txn, edit_blocks

__all__ = ["TUNABLE_IDS", "UNIT", "apply", "apply_report", "check_ids", "revert", "status", "tune_settings",
           "uid_check", "verify"]


def tune_settings(profile: Any) -> Tune:
    """The `tune:` choices of `profile` (a Profile or a Tune); None: the profile in use, without detecting."""
    if isinstance(profile, Tune):
        return profile
    if profile is not None:
        return getattr(profile, "tune", Tune())
    from hosttune.profile import load, locate_active

    where = locate_active()
    return load(where.ref).tune if where.ref is not None else Tune()


# ---------------------------------------------------------------------------------------------------------------
# Verifying

def _status(tree: Tree, t: Tunable, tune: Tune, state: Optional[Dict[str, Any]]) -> Status:
    kind = KINDS[t.kind]
    try:
        expected, reason = t.want(tree, tune)
    except OSError as exc:
        return Status(t.id, t.title, None, None, "skip", f"cannot read: {exc.strerror or exc}")
    if expected is None:
        return Status(t.id, t.title, None, None, "skip", reason)
    why_not = kind.unavailable(tree, t)
    if why_not is not None:
        return Status(t.id, t.title, expected, None, "skip", why_not)
    if t.sysctl and tree.read_only("proc/sys"):
        return Status(t.id, t.title, expected, None, "skip", "/proc/sys is read-only here (a container): set it on "
                      "the host or in the container runtime (docker run --sysctl)")
    try:
        actual = kind.actual(tree, t, tune)
    except OSError as exc:
        return Status(t.id, t.title, expected, None, "skip", f"cannot read: {exc.strerror or exc}")
    if actual is None:
        return Status(t.id, t.title, expected, None, "skip", "not readable")
    if not all(t.ok(v, expected) for v in kind.values(actual)):
        return Status(t.id, t.title, expected, actual, "drift", reason)
    kept = kind.kept(tree, t, expected, state)
    if kept is not None:
        return Status(t.id, t.title, expected, actual, "drift", kept)
    return Status(t.id, t.title, expected, actual, "ok", reason)


def status(root: Path, tid: str, profile: Any = None) -> Status:
    """One tunable's `Status` as `verify` gives it, without the state file (what doctor asks on a captured host)."""
    return _status(Tree(root), BY_ID[tid], tune_settings(profile), None)


def verify(root: Path = Path("/"), profile: Any = None) -> List[Status]:
    tree = Tree(root)
    tune = tune_settings(profile)
    state = load_state(tree)
    return [_status(tree, t, tune, state) for t in TUNABLES]


# ---------------------------------------------------------------------------------------------------------------
# Applying

def check_ids(only: Sequence[str]) -> None:
    import difflib

    for tid in only:
        if tid not in BY_ID:
            close = difflib.get_close_matches(tid, TUNABLE_IDS, n=1, cutoff=0.0)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UserError(f"no tunable {tid!r}{hint} (tunables: {', '.join(TUNABLE_IDS)})")


def _apply_one(txn: Txn, t: Tunable, st: Status, state: Dict[str, Any], boot: bool) -> Tuple[str, ...]:
    """Make `t` what `st.expected` says (its kind's runtime step, then its block in hosttune's file unless this is
    the boot re-apply); returns the files written to keep it, in the order a dry run names them (_persist_paths)."""
    written = KINDS[t.kind].apply(txn, t, st, state)
    if t.persist is not None and not boot:
        edit_blocks(txn, t.persist, {t.id: t.lines(st.expected or "")}, {t.id: st.reason})
        written.insert(0, txn.tree.path(t.persist))
    return tuple(written)


def apply(root: Path = Path("/"), only: Sequence[str] = (), dry_run: bool = False, profile: Any = None,
          boot: bool = False) -> List[Change]:
    """Bring the tunables (`only`, else all) to the profile's values. `boot`: re-apply only the runtime values
    recorded by earlier applies (what hosttune-tune.service runs), writing no file."""
    return apply_report(root, only, dry_run, profile, boot)[0]


Plan = List[Tuple[Tunable, Status]]


def apply_report(root: Path = Path("/"), only: Sequence[str] = (), dry_run: bool = False, profile: Any = None,
                 boot: bool = False) -> Tuple[List[Change], List[Status]]:
    """`apply`, and the tunables asked for that were skipped (each `Status` says why): a skipped tunable is not
    "already right", and the CLI says so."""
    check_ids(only)
    tree = Tree(root)
    tune = tune_settings(profile)
    state = load_state(tree)
    if boot:
        if state is None:
            return [], []
        only = [tid for tid in state.get("applied", {}) if tid in BY_ID and KINDS[BY_ID[tid].kind].boot]
        if not only:
            return [], []
        tune = _boot_tune(tune, state)
    wanted = [t for t in TUNABLES if not only or t.id in only]
    statuses = [(t, _status(tree, t, tune, state)) for t in wanted]
    skipped = [st for _, st in statuses if st.state == "skip"]
    plan = [(t, st) for t, st in statuses if st.state == "drift"]
    changes = [Change(t.id, st.actual, st.expected or "", st.reason, _persist_paths(tree, t)) for t, st in plan]
    if dry_run or not plan:
        return changes, skipped
    return _run(tree, plan, changes, state, boot), skipped


def _run(tree: Tree, plan: Plan, changes: List[Change], state: Optional[Dict[str, Any]], boot: bool) -> List[Change]:
    """Apply `plan` as one transaction; on a failure undo this run's steps and raise one UserError line."""
    work = state if state is not None else new_state()
    txn = Txn(tree)
    done: List[Change] = []
    rel = state_rel(tree.root)
    trust_state(tree, rel)
    stage = "state"
    try:
        txn.makedirs(os.path.dirname(rel))
        for (t, st), ch in zip(plan, changes):
            written = _apply_one(txn, t, st, work, boot)
            done.append(Change(ch.id, ch.before, ch.after, ch.reason, written))
        stage = "tuned"
        tunedhook.hand_over(tree, work, txn, boot)
        stage = "unit"
        if not boot and any(BY_ID[c.id].boot for c in done):
            _enable_unit(tree, work, txn)
        stage = "state"
        if not boot or work != state:
            work["made_dirs"] = list(dict.fromkeys(list(work.get("made_dirs", [])) + txn.made))
            save_state(txn, work)
    except (OSError, ValueError, UserError) as exc:
        failed = plan[len(done)][0].id if len(done) < len(plan) else stage
        left = txn.rollback()
        for d in reversed(txn.made):
            tree.rmdir_if_empty(d)
        why = getattr(exc, "strerror", None) and f"{exc.strerror}: {exc.filename}" or str(exc)  # type: ignore
        tail = "; the changes of this run were undone" + (f" except: {'; '.join(left)}" if left else "")
        raise UserError(f"tune apply: {failed}: {why}{tail}") from None
    return done


UNIT = "hosttune-tune.service"


def _enable_unit(tree: Tree, state: Dict[str, Any], txn: Txn) -> None:
    """Have hosttune-tune.service re-apply the sysfs knobs at boot (live host with the unit installed only: with
    --root no program runs)."""
    if not tree.live or state.get("unit_enabled"):
        return
    if programs.systemctl(["cat", UNIT], check=False).returncode != 0:
        return  # not installed (running from a source tree): nothing keeps the sysfs knobs; verify shows it
    if programs.systemctl(["is-enabled", UNIT], check=False).stdout.strip() == "enabled":
        return
    txn.call(lambda: programs.systemctl_do("enable", UNIT), lambda: programs.systemctl_do("disable", UNIT))
    state["unit_enabled"] = True


def _boot_tune(tune: Tune, state: Dict[str, Any]) -> Tune:
    import dataclasses

    applied = state.get("applied", {})
    over: Dict[str, Any] = {k: str(applied[k]) for k in ("thp", "thp_defrag", "governor", "epp") if k in applied}
    if "shm" in applied:
        over["shm_size"] = str(applied["shm"])[len("size="):]
    if str(applied.get("swappiness", "")).isdigit():
        over["swappiness"] = int(applied["swappiness"])
    if "numa_balancing" in applied:
        over["numa_balancing"] = applied["numa_balancing"] == "1"
    return dataclasses.replace(tune, **over)


def _persist_paths(tree: Tree, t: Tunable) -> Tuple[str, ...]:
    out = [tree.path(t.persist)] if t.persist else []
    if t.boot:
        out.append(tree.path(state_rel(tree.root)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------------------------
# Reverting

def revert(root: Path = Path("/")) -> List[Change]:
    """Restore the runtime values saved before the first apply, remove hosttune's files (only those carrying the
    marker), then the state file and the directories apply made. Nothing else is touched."""
    tree = Tree(root)
    state = load_state(tree)
    changes: List[Change] = []
    if state is None:
        return changes
    txn = Txn(tree)
    try:
        # tuned first: leaving the hosttune profile, tuned rolls its options back to what it found when it applied
        # it (hosttune's values), which would undo the restores below if they came first
        tuned_state = state.get("tuned") or {}
        if tuned_state:
            tunedhook.give_back(tree, tuned_state, txn, changes)
        _restore(txn, state, changes)
        for rel in dict.fromkeys(t.persist for t in TUNABLES if t.persist):
            if read_ours(tree, rel) is not None:
                txn.write_file(rel, None)
                changes.append(Change("files", tree.path(rel), "removed", "hosttune's file", ()))
        if state.get("unit_enabled") and tree.live:
            programs.systemctl(["disable", UNIT], check=False)
        tree.remove(state_rel(tree.root))
    except (OSError, ValueError) as exc:
        raise UserError(f"tune revert: {exc}") from None
    for d in sorted(state.get("made_dirs", []), key=lambda p: -p.count("/")):
        tree.rmdir_if_empty(d)
    return changes


def _restore(txn: Txn, state: Dict[str, Any], changes: List[Change]) -> None:
    """Each saved runtime value back through its tunable's kind (check_state: a tunable, each target its own)."""
    for tid, targets in state.get("before", {}).items():
        t = BY_ID[tid]
        for rel, old in targets.items():
            if old is None:
                continue
            change = KINDS[t.kind].revert(txn, t, rel, str(old))
            if change is not None:
                changes.append(change)


def uid_check(root: Optional[Path], dry_run: bool, what: str) -> None:
    """Not root, on the live host, without --dry-run: exit 2 with the reason."""
    if dry_run or root is not None or os.geteuid() == 0:
        return
    raise UserError(f"tune {what} changes kernel settings and files under /etc: run it as root "
                    "(`--dry-run` shows the changes as any user)")
