"""The tune engine: reads each tunable, plans the changes, applies them as one transaction, saves and restores state.

Apply is all or nothing: every step records how to undo itself, and a failing step undoes the steps of that run in
reverse before the error (one line) reaches the user. The runtime values found before the first apply are saved in
the state file (`STATE_FILE` under the root) and are never overwritten by a later apply: revert always goes back to
the host as it was before hosttune touched it.
"""

import errno
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from hosttune.detect._io import HostIO
from hosttune.errors import UserError
from hosttune.profile.settings import Tune
from hosttune.tune.model import MARKER, STATE_SCHEMA, Change, Status, state_rel
from hosttune.tune.rootfs import Tree, check_line, iter_lines, selected
from hosttune.tune.tunables import BY_ID, TUNABLE_IDS, TUNABLES, Tunable, limit_value

Undo = Callable[[], None]


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
# Persisted files: one block per tunable, `# <id>: <reason>` then its lines, under the marker line.

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


def _read_ours(tree: Tree, rel: str) -> Optional[str]:
    try:
        text = tree.read(rel)
    except OSError:
        return None
    return text if ours(text) else None


# ---------------------------------------------------------------------------------------------------------------
# State

def _trust_state(tree: Tree, rel: str) -> None:
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
    from hosttune.tune import tuned

    where = tree.path(state_rel(tree.root))

    def bad(what: str) -> UserError:
        return UserError(f"{where}: not hosttune's tune state ({what}); `hosttune tune apply` wrote none like it")

    def value(v: Any, what: str) -> None:
        if v is not None and not (isinstance(v, str) and _SAVED_VALUE.fullmatch(v)):
            raise bad(f"{what} is not a one-line value")

    if not isinstance(data, dict) or data.get("schema") != STATE_SCHEMA:
        raise bad(f"schema {STATE_SCHEMA} expected")
    extra = [k for k in data if k not in _STATE_KEYS]
    if extra:
        raise bad(f"unknown key {str(extra[0])[:40]!r}")
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
    made = data.get("made_dirs", [])
    allowed = own_dirs(tree)
    if not isinstance(made, list) or not all(isinstance(d, str) and d in allowed for d in made):
        raise bad("made_dirs names a directory hosttune does not make")
    if not isinstance(data.get("unit_enabled", False), bool):
        raise bad("unit_enabled must be true or false")
    tuned_state = data.get("tuned")
    if tuned_state is not None:
        if not isinstance(tuned_state, dict) or set(tuned_state) - {"previous", "files"}:
            raise bad("tuned must be a mapping of previous and files")
        previous = tuned_state.get("previous")
        try:
            if previous is not None and (not isinstance(previous, str) or not tuned.check_names(previous, "tuned")):
                raise ValueError("empty")
        except ValueError:
            raise bad("tuned.previous is not a tuned profile name") from None
        files = tuned_state.get("files")
        if files is not None:
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
    return data


def load_state(tree: Tree) -> Optional[Dict[str, Any]]:
    rel = state_rel(tree.root)
    try:
        text = tree.read(rel)
    except OSError as exc:
        raise UserError(f"{tree.path(rel)}: cannot read: {exc.strerror or exc}") from None
    if text is None:
        return None
    _trust_state(tree, rel)
    try:
        data = json.loads(text)
    except ValueError:
        raise UserError(f"{tree.path(rel)}: not hosttune's tune state (bad JSON)") from None
    return check_state(data, tree)


def _new_state() -> Dict[str, Any]:
    return {"schema": STATE_SCHEMA, "before": {}, "applied": {}, "made_dirs": [], "tuned": None}


# ---------------------------------------------------------------------------------------------------------------
# Reading

def _mount_size(tree: Tree) -> Optional[str]:
    """The size= option /dev/shm is mounted with (proc/self is a link: read through HostIO, inside the tree)."""
    from hosttune.detect._io import HostIO

    io = HostIO(tree.root)
    for line in iter_lines(io.read("/proc/self/mounts") or io.read("/proc/mounts")):
        f = line.split()
        if len(f) >= 4 and f[1] == "/dev/shm":
            return next((o for o in f[3].split(",") if o.startswith("size=")), None)
    return None


def _runtime(tree: Tree, t: Tunable) -> Dict[str, Optional[str]]:
    """target -> its current value (attr tunables)."""
    return {rel: selected(tree.read(rel)) for rel in t.targets(tree)}


def _persisted(tree: Tree, t: Tunable) -> Optional[List[str]]:
    if t.persist is None:
        return None
    text = _read_ours(tree, t.persist)
    return parse_blocks(text).get(t.id) if text is not None else None


def _kib(size: Optional[str], mem_kib: Optional[int]) -> Optional[int]:
    """A tmpfs size= value in KiB: NNN[kKmMgG] or NN% of MemTotal (tmpfs(5))."""
    if not size:
        return None
    v = size[len("size="):] if size.startswith("size=") else size
    try:
        if v.endswith("%"):
            return int(mem_kib * int(v[:-1]) / 100) if mem_kib else None
        mult = {"k": 1, "m": 1024, "g": 1 << 20, "t": 1 << 30}.get(v[-1:].lower())
        return int(v[:-1]) * mult if mult else int(v) // 1024
    except ValueError:
        return None


def _mem_kib(tree: Tree) -> Optional[int]:
    from hosttune.detect._io import HostIO

    for line in iter_lines(HostIO(tree.root).read("/proc/meminfo")):
        if line.startswith("MemTotal:") and line.split()[1].isdigit():
            return int(line.split()[1])
    return None


def _shm_runtime(tree: Tree, tune: Tune) -> Optional[str]:
    """The mounted size; the profile's value when it is at least that big (tmpfs rounds to pages, and a bigger
    /dev/shm is no problem to fix: doctor asks for a minimum)."""
    now = _mount_size(tree)
    mem = _mem_kib(tree)
    want = _kib(tune.shm_size, mem)
    have = _kib(now, mem)
    if want is not None and have is not None and have >= want - max(4, want // 1000):
        return f"size={tune.shm_size}" + ("" if have - want <= max(4, want // 1000) else f" (mounted with {now})")
    return now


def _actual(tree: Tree, t: Tunable, tune: Tune, state: Optional[Dict[str, Any]]) -> Optional[str]:
    if t.kind == "attr":
        values = [v for v in _runtime(tree, t).values() if v is not None]
        return ",".join(dict.fromkeys(values)) if values else None
    if t.kind == "file":
        item = t.id
        mine = limit_value("\n".join(_persisted(tree, t) or []), item)
        if mine is not None:
            return mine
        if tree.live:
            import resource

            soft = resource.getrlimit(resource.RLIMIT_NOFILE if item == "nofile" else resource.RLIMIT_MEMLOCK)[0]
            return "unlimited" if soft == resource.RLIM_INFINITY else str(soft if item == "nofile" else soft // 1024)
        return limit_value(tree.read("etc/security/limits.conf"), item) or "not set"
    if t.kind == "shm":
        if tree.live:
            return _shm_runtime(tree, tune)
        # a tree's mount cannot change: what it will mount at the next boot is the drop-in's size
        block = _persisted(tree, t) or []
        opt = next((o for line in block if line.startswith("Options=") for o in line[8:].split(",")
                    if o.startswith("size=")), None)
        return opt or _mount_size(tree)
    if t.kind == "service":
        return _service_state(tree)
    return None


def _service_state(tree: Tree) -> Optional[str]:
    if not tree.live:
        return None
    out = []
    for verb in ("is-enabled", "is-active"):
        done = _systemctl([verb, "nvidia-persistenced.service"], check=False)
        out.append(done.stdout.strip() or "unknown")
    return ", ".join(out)


def _systemctl_do(*args: str) -> None:
    _systemctl(list(args))


def _tool(name: str, args: List[str], timeout: float) -> "subprocess.CompletedProcess[str]":
    """Run a system program the way the detector runs one (`HostIO.which`/`run`): as root found only in directories
    root alone can write, started in "/" with the caller's code-loading variables dropped (a PATH kept by
    `sudo -E` must not name a user's `systemctl` or `mount`)."""
    io = HostIO(Path("/"))
    exe = io.which(name)
    if exe is None:
        raise OSError(errno.ENOENT, f"{name}: not found in a PATH directory only root can write")
    done = io.run([exe, *args], timeout=timeout, note=False)
    if done is None:
        raise OSError(f"{name}: {io.last_error}")
    return done


def _systemctl(args: List[str], check: bool = True) -> "subprocess.CompletedProcess[str]":
    done = _tool("systemctl", args, 120)
    if check and done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[-1]
        raise OSError(f"systemctl {' '.join(args)}: {why}")
    return done


def _status(tree: Tree, t: Tunable, tune: Tune, state: Optional[Dict[str, Any]]) -> Status:
    try:
        expected, reason = t.want(tree, tune)
    except OSError as exc:
        return Status(t.id, t.title, None, None, "skip", f"cannot read: {exc.strerror or exc}")
    if expected is None:
        return Status(t.id, t.title, None, None, "skip", reason)
    if t.kind == "attr" and not t.targets(tree):
        return Status(t.id, t.title, expected, None, "skip", "not exposed by this kernel")
    if t.sysctl and tree.read_only("proc/sys"):
        return Status(t.id, t.title, expected, None, "skip", "/proc/sys is read-only here (a container): set it on "
                      "the host or in the container runtime (docker run --sysctl)")
    try:
        actual = _actual(tree, t, tune, state)
    except OSError as exc:
        return Status(t.id, t.title, expected, None, "skip", f"cannot read: {exc.strerror or exc}")
    if actual is None:
        return Status(t.id, t.title, expected, None, "skip", "not readable")
    values = actual.split(",") if t.kind == "attr" else [actual.split(" (", 1)[0]]
    if not all(t.ok(v, expected) for v in values):
        return Status(t.id, t.title, expected, actual, "drift", reason)
    kept = _kept(tree, t, expected, state)
    if kept is not None:
        return Status(t.id, t.title, expected, actual, "drift", kept)
    return Status(t.id, t.title, expected, actual, "ok", reason)


def _kept(tree: Tree, t: Tunable, expected: str, state: Optional[Dict[str, Any]]) -> Optional[str]:
    """Why a value right now would not survive a reboot, or None when it would (or needs nothing)."""
    if t.kind == "attr" and t.persist is not None:
        block = _persisted(tree, t)
        if block is not None and block != t.lines(expected):
            return f"{tree.path(t.persist)} keeps another value"
    if t.kind == "attr" and t.boot and state is not None and t.id in state.get("applied", {}):
        if state["applied"][t.id] != expected:
            return "hosttune-tune.service would restore another value at boot"
    if t.kind == "shm" and tree.live:
        block = _persisted(tree, t)
        if block is not None and block != t.lines(expected):
            return f"{tree.path(t.persist or '')} keeps another size"
    return None


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


class _Txn:
    """The undo log of one apply or revert run."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.undo: List[Undo] = []
        self.made: List[str] = []

    def makedirs(self, rel: str) -> None:
        made: List[str] = []
        self.tree.makedirs(rel, made)
        self.made += made

        def undo() -> None:
            for d in reversed(made):
                self.tree.rmdir_if_empty(d)
        self.undo.append(undo)

    def write_attr(self, rel: str, old: Optional[str], new: str) -> None:
        self.tree.write_attr(rel, new)
        if old is not None:
            self.undo.append(lambda: self.tree.write_attr(rel, old))

    def write_file(self, rel: str, text: Optional[str], mode: int = 0o644) -> None:
        """Replace (or, with None, remove) `rel`; the undo puts back its exact bytes and permission bits."""
        prev = self.tree.read_raw(rel)
        made: List[str] = []
        if text is None:
            if prev is None:
                return
            self.tree.remove(rel)
        else:
            self.tree.write_file(rel, text, made, mode)
        self.made += made

        def undo() -> None:
            if prev is None:
                self.tree.remove(rel)
            else:
                self.tree.write_file(rel, prev[0], mode=prev[1])
            for d in reversed(made):
                self.tree.rmdir_if_empty(d)
        self.undo.append(undo)

    def call(self, do: Callable[[], None], undo: Undo) -> None:
        do()
        self.undo.append(undo)

    def rollback(self) -> List[str]:
        errors = []
        for step in reversed(self.undo):
            try:
                step()
            except OSError as exc:
                errors.append(str(exc))
        self.undo.clear()
        return errors


def _edit_blocks(txn: _Txn, rel: str, edits: Dict[str, Optional[List[str]]], reasons: Dict[str, str]) -> None:
    """Set (list) or drop (None) tunables' blocks in hosttune's file `rel`; the file goes when no block is left."""
    text = txn.tree.read(rel)
    if text is not None and not ours(text):
        raise OSError(f"{txn.tree.path(rel)} exists and is not hosttune's (no marker line): not touched")
    kept: Dict[str, str] = dict(reasons)
    blocks = parse_blocks(text, kept)
    reasons = kept
    for tid, lines in edits.items():
        if lines is None:
            blocks.pop(tid, None)
        else:
            blocks[tid] = lines
    new = render_blocks(blocks, reasons) if blocks else None
    if new != text:
        txn.write_file(rel, new)


_SIZE_OPT = re.compile(r"size=[0-9]{1,20}[kKmMgGtT%]?")


def _remount_shm(size_opt: str) -> None:
    if not _SIZE_OPT.fullmatch(size_opt):  # one option, never a list of them (`size=50%,exec,suid`)
        raise OSError(errno.EINVAL, f"refusing /dev/shm mount options {size_opt[:60]!r}: one size= option expected")
    done = _tool("mount", ["-o", f"remount,{size_opt}", "/dev/shm"], 60)
    if done.returncode != 0:
        raise OSError(f"mount -o remount,{size_opt} /dev/shm: {done.stderr.strip() or done.returncode}")


def _apply_one(txn: _Txn, t: Tunable, st: Status, state: Dict[str, Any], boot: bool) -> Tuple[str, ...]:
    """Make `t` what `st.expected` says; returns the files written to keep it."""
    tree, expected = txn.tree, st.expected or ""
    written: List[str] = []
    if t.kind == "attr":
        current = _runtime(tree, t)
        state["before"].setdefault(t.id, current)
        for rel, old in current.items():
            if old is None or not t.ok(old, expected):
                txn.write_attr(rel, old, expected)
        # every runtime choice is saved: hosttune-tune.service re-applies them at boot and when the monitor
        # reports drift (sysfs has no file of its own that keeps it)
        state["applied"][t.id] = expected
        if t.boot:
            written.append(tree.path(state_rel(tree.root)))
    elif t.kind == "shm":
        if tree.live:
            old = _mount_size(tree)
            state["before"].setdefault(t.id, {"/dev/shm": old})
            if old != expected:
                txn.call(lambda: _remount_shm(expected), (lambda: _remount_shm(old)) if old else (lambda: None))
        state["applied"][t.id] = expected
    elif t.kind == "service":
        before = st.actual or ""
        state["before"].setdefault(t.id, {"nvidia-persistenced": before})
        undo: Undo = ((lambda: None) if before.startswith("enabled") else
                      (lambda: _systemctl_do("disable", "--now", "nvidia-persistenced.service")))
        txn.call(lambda: _systemctl_do("enable", "--now", "nvidia-persistenced.service"), undo)
    if t.persist is not None and not boot:
        _edit_blocks(txn, t.persist, {t.id: t.lines(expected)}, {t.id: st.reason})
        written.append(tree.path(t.persist))
    return tuple(written)


def apply(root: Path = Path("/"), only: Sequence[str] = (), dry_run: bool = False, profile: Any = None,
          boot: bool = False) -> List[Change]:
    """Bring the tunables (`only`, else all) to the profile's values. `boot`: re-apply only the runtime values
    recorded by earlier applies (what hosttune-tune.service runs), writing no file."""
    return apply_report(root, only, dry_run, profile, boot)[0]


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
        only = [tid for tid in state.get("applied", {}) if tid in BY_ID and BY_ID[tid].kind in ("attr", "shm")]
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
    work = state if state is not None else _new_state()
    txn = _Txn(tree)
    done: List[Change] = []
    rel = state_rel(tree.root)
    _trust_state(tree, rel)
    stage = "state"
    try:
        txn.makedirs(os.path.dirname(rel))
        for (t, st), ch in zip(plan, changes):
            written = _apply_one(txn, t, st, work, boot)
            done.append(Change(ch.id, ch.before, ch.after, ch.reason, written))
        stage = "tuned"
        _tuned_hook(tree, work, txn, boot)
        stage = "unit"
        if not boot and any(BY_ID[c.id].boot for c in done):
            _enable_unit(tree, work, txn)
        stage = "state"
        if not boot or work != state:
            work["made_dirs"] = list(dict.fromkeys(list(work.get("made_dirs", [])) + txn.made))
            _save_state(txn, work)
    except (OSError, ValueError, UserError) as exc:
        failed = plan[len(done)][0].id if len(done) < len(plan) else stage
        left = txn.rollback()
        for d in reversed(txn.made):
            tree.rmdir_if_empty(d)
        why = getattr(exc, "strerror", None) and f"{exc.strerror}: {exc.filename}" or str(exc)  # type: ignore
        tail = "; the changes of this run were undone" + (f" except: {'; '.join(left)}" if left else "")
        raise UserError(f"tune apply: {failed}: {why}{tail}") from None
    return done, skipped


UNIT = "hosttune-tune.service"


def _enable_unit(tree: Tree, state: Dict[str, Any], txn: _Txn) -> None:
    """Have hosttune-tune.service re-apply the sysfs knobs at boot (live host with the unit installed only: with
    --root no program runs)."""
    if not tree.live or state.get("unit_enabled"):
        return
    if _systemctl(["cat", UNIT], check=False).returncode != 0:
        return  # not installed (running from a source tree): nothing keeps the sysfs knobs; verify shows it
    if _systemctl(["is-enabled", UNIT], check=False).stdout.strip() == "enabled":
        return
    txn.call(lambda: _systemctl_do("enable", UNIT), lambda: _systemctl_do("disable", UNIT))
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


def _save_state(txn: _Txn, state: Dict[str, Any]) -> None:
    check_state(state, txn.tree)  # what the next run will accept (a value that could not pass is refused now)
    txn.write_file(state_rel(txn.tree.root), json.dumps(state, indent=1, sort_keys=True) + "\n")


def _tuned_hook(tree: Tree, state: Dict[str, Any], txn: _Txn, boot: bool) -> None:
    """When tuned runs, hand it hosttune's values in a profile that includes the active one, so it never undoes
    them (hosttune.tune.tuned). Every write is a step of the transaction through the no-follow tree writer; the
    first time, tuned's active_profile and profile_mode are saved as they are (text and mode) for revert."""
    if boot:
        return
    from hosttune.tune import tuned

    if not tuned.is_running(tree.root):
        return
    settings = {tid: str(v) for tid, v in state.get("applied", {}).items()}
    for t in TUNABLES:
        if t.kind == "attr" and t.persist is not None:
            block = _persisted(tree, t)
            if block:
                settings[t.id] = block[0].split("=", 1)[1].strip()
    current = tuned.active_profile(tree.root)
    tuned.check_names(current, tree.path(tuned.ACTIVE_REL))  # what include= and tuned-adm will get: tuned's names
    previous = current
    if current == tuned.PROFILE_NAME:
        previous = (state.get("tuned") or {}).get("previous")
    if state.get("tuned") is None:
        files: Dict[str, Optional[Dict[str, Any]]] = {}
        for rel in (tuned.ACTIVE_REL, tuned.MODE_REL):
            raw = tree.read_raw(rel)
            if raw is None:
                files[rel] = None
                continue
            try:
                text = raw[0].decode("utf-8")
            except UnicodeDecodeError:
                raise OSError(errno.EINVAL, "is not UTF-8 text: not touched", tree.path(rel)) from None
            files[rel] = {"text": text, "mode": raw[1]}
        state["tuned"] = {"previous": previous, "files": files}
    conf = tuned.profile_rel(tree.root) + "/tuned.conf"
    tuned.check_writable(tree, conf)
    txn.write_file(conf, tuned.render_profile(previous, settings))
    if current == tuned.PROFILE_NAME:
        return
    if tree.live:
        txn.call(lambda: tuned.switch(tree.root, tuned.PROFILE_NAME),
                 (lambda: tuned.switch(tree.root, previous or "")) if previous else (lambda: tuned.off(tree.root)))
        return
    # a tree: what `tuned-adm profile hosttune` leaves on disk, each file keeping its permission bits
    for rel, text in ((tuned.ACTIVE_REL, tuned.PROFILE_NAME + "\n"), (tuned.MODE_REL, "manual\n")):
        raw = tree.read_raw(rel)
        txn.write_file(rel, text, raw[1] if raw is not None else 0o644)


def _revert_tuned(tree: Tree, saved: Dict[str, Any], txn: _Txn, changes: List[Change]) -> None:
    """Give tuned back the profile that was active before the first apply, then put its active_profile and
    profile_mode back exactly as they were (bytes and mode; removed when there were none), and remove hosttune's
    profile (only a file carrying the marker). Every write through the no-follow tree writer."""
    from hosttune.tune import tuned

    previous = saved.get("previous")
    files = saved.get("files")
    now = tuned.active_profile(tree.root)
    if tree.live:
        if previous:
            tuned.switch(tree.root, previous)
        elif now == tuned.PROFILE_NAME:
            tuned.off(tree.root)
    elif files is None and previous:  # a state file from before the files were saved: what tuned-adm would leave
        tuned.switch(tree.root, previous)
    for rel, was in (files or {}).items():
        have = tree.read_raw(rel)
        if was is None:
            txn.write_file(rel, None)
        elif have is None or have != (was["text"].encode("utf-8"), was["mode"]):
            txn.write_file(rel, was["text"], was["mode"])
    if now != previous:
        changes.append(Change("tuned", now, previous or "(none)", "the tuned profile active before the first apply",
                              ()))
    for d in tuned.PROFILE_RELS:
        conf = f"{d}/tuned.conf"
        try:
            mine = tuned.ours(tree, conf)
        except OSError:
            continue  # a link there is not ours to follow
        if mine:
            txn.write_file(conf, None)
            tree.rmdir_if_empty(d)
            changes.append(Change("files", tree.path(conf), "removed", "hosttune's file", ()))


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
    txn = _Txn(tree)
    try:
        # tuned first: leaving the hosttune profile, tuned rolls its options back to what it found when it applied
        # it (hosttune's values), which would undo the restores below if they came first
        tuned_state = state.get("tuned") or {}
        if tuned_state:
            _revert_tuned(tree, tuned_state, txn, changes)
        for tid, targets in state.get("before", {}).items():
            t = BY_ID[tid]  # check_state: a tunable, and each target one of its own paths
            for rel, old in targets.items():
                if old is None:
                    continue
                if t.kind == "attr":
                    now = selected(tree.read(rel))
                    if now != old:
                        txn.write_attr(rel, now, str(old))
                        changes.append(Change(tid, now, str(old), "saved before the first apply", ()))
                elif t.kind == "shm" and tree.live:
                    now = _mount_size(tree)
                    if now != old:
                        txn.call(lambda o=str(old): _remount_shm(o), lambda: None)  # type: ignore[misc]
                        changes.append(Change(tid, now, str(old), "saved before the first apply", ()))
                elif t.kind == "service" and not str(old).startswith("enabled"):
                    txn.call(lambda: _systemctl_do("disable", "--now", "nvidia-persistenced.service"),
                             lambda: None)
                    changes.append(Change(tid, "enabled", str(old), "saved before the first apply", ()))
        for rel in dict.fromkeys(t.persist for t in TUNABLES if t.persist):
            if _read_ours(tree, rel) is not None:
                txn.write_file(rel, None)
                changes.append(Change("files", tree.path(rel), "removed", "hosttune's file", ()))
        if state.get("unit_enabled") and tree.live:
            _systemctl(["disable", UNIT], check=False)
        tree.remove(state_rel(tree.root))
    except (OSError, ValueError) as exc:
        raise UserError(f"tune revert: {exc}") from None
    for d in sorted(state.get("made_dirs", []), key=lambda p: -p.count("/")):
        tree.rmdir_if_empty(d)
    return changes


def uid_check(root: Optional[Path], dry_run: bool, what: str) -> None:
    """Not root, on the live host, without --dry-run: exit 2 with the reason."""
    if dry_run or root is not None or os.geteuid() == 0:
        return
    raise UserError(f"tune {what} changes kernel settings and files under /etc: run it as root "
                    "(`--dry-run` shows the changes as any user)")
