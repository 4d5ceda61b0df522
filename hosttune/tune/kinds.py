"""The kinds of tunable, tuned's plugin shape: each kind is an object that reads (`actual`), verifies (`values`,
`kept`), applies and reverts one tunable of its kind, registered in `KINDS` by the name the table gives
(`Tunable.kind`). The engine (`hosttune.tune.core`) calls these and never asks which kind it holds.

- apply saves the runtime value found before the first apply in the state's `before` (never overwritten) and, for
  the kinds the boot re-apply covers, records the value it wrote in `applied`;
- verify compares what is read with the same expected value apply writes (`Tunable.want`, hosttune.tune.rules);
- revert restores the saved value, nothing outside the tunable's own targets (hosttune.tune.state.check_state).
"""

from typing import Any, Dict, List, Optional

from hosttune.profile.settings import Tune
from hosttune.tune import programs, rules
from hosttune.tune.model import Change, Status, state_rel
from hosttune.tune.rootfs import Tree, iter_lines, selected
from hosttune.tune.state import parse_blocks, read_ours
from hosttune.tune.tunables import Tunable, limit_value
from hosttune.tune.txn import Txn

State = Dict[str, Any]
SAVED = "saved before the first apply"
PERSISTENCED = "nvidia-persistenced.service"


def persisted(tree: Tree, t: Tunable) -> Optional[List[str]]:
    """`t`'s lines in its hosttune file (None: no file of hosttune's, or no block for it)."""
    if t.persist is None:
        return None
    text = read_ours(tree, t.persist)
    return parse_blocks(text).get(t.id) if text is not None else None


class Kind:
    """The default of every hook; a kind overrides what it does."""

    name = ""
    boot = False  # hosttune-tune.service re-applies the values recorded in the state's `applied`

    def unavailable(self, tree: Tree, t: Tunable) -> Optional[str]:
        """Why `t` cannot be read or set here although it applies (None: it can)."""
        return None

    def actual(self, tree: Tree, t: Tunable, tune: Tune) -> Optional[str]:
        raise NotImplementedError

    def values(self, actual: str) -> List[str]:
        """The values in `actual` that must each satisfy the expected one (a note in parentheses is not one)."""
        return [actual.split(" (", 1)[0]]

    def kept(self, tree: Tree, t: Tunable, expected: str, state: Optional[State]) -> Optional[str]:
        """Why the value right now would not survive a reboot, or None when it would (or needs nothing)."""
        return None

    def apply(self, txn: Txn, t: Tunable, st: Status, state: State) -> List[str]:
        """Make the runtime value `st.expected` (saving the one found first); the paths written to keep it."""
        return []

    def revert(self, txn: Txn, t: Tunable, rel: str, old: str) -> Optional[Change]:
        """Put `rel` (one of `t`'s own targets) back to `old`, saved by the first apply; the change made, if any."""
        return None

    def tuned_value(self, tree: Tree, t: Tunable) -> Optional[str]:
        """The value hosttune's file keeps for `t`, handed to tuned beside the applied runtime values."""
        return None


class Attr(Kind):
    """Kernel attributes written in place (sysfs, /proc/sys); kept by a sysctl.d block or by the boot re-apply."""

    name = "attr"
    boot = True

    def unavailable(self, tree: Tree, t: Tunable) -> Optional[str]:
        return None if t.targets(tree) else "not exposed by this kernel"

    def runtime(self, tree: Tree, t: Tunable) -> Dict[str, Optional[str]]:
        """target -> its current value."""
        return {rel: selected(tree.read(rel)) for rel in t.targets(tree)}

    def actual(self, tree: Tree, t: Tunable, tune: Tune) -> Optional[str]:
        values = [v for v in self.runtime(tree, t).values() if v is not None]
        return ",".join(dict.fromkeys(values)) if values else None

    def values(self, actual: str) -> List[str]:
        return actual.split(",")

    def kept(self, tree: Tree, t: Tunable, expected: str, state: Optional[State]) -> Optional[str]:
        block = persisted(tree, t) if t.persist is not None else None
        if block is not None and block != t.lines(expected):
            return f"{tree.path(t.persist or '')} keeps another value"
        if t.boot and state is not None and t.id in state.get("applied", {}):
            if state["applied"][t.id] != expected:
                return "hosttune-tune.service would restore another value at boot"
        return None

    def apply(self, txn: Txn, t: Tunable, st: Status, state: State) -> List[str]:
        tree, expected = txn.tree, st.expected or ""
        current = self.runtime(tree, t)
        state["before"].setdefault(t.id, current)
        for rel, old in current.items():
            if old is None or not t.ok(old, expected):
                txn.write_attr(rel, old, expected)
        # every runtime choice is saved: hosttune-tune.service re-applies them at boot and when the monitor reports
        # drift (sysfs has no file of its own that keeps it)
        state["applied"][t.id] = expected
        return [tree.path(state_rel(tree.root))] if t.boot else []

    def revert(self, txn: Txn, t: Tunable, rel: str, old: str) -> Optional[Change]:
        now = selected(txn.tree.read(rel))
        if now == old:
            return None
        txn.write_attr(rel, now, old)
        return Change(t.id, now, old, SAVED, ())

    def tuned_value(self, tree: Tree, t: Tunable) -> Optional[str]:
        block = persisted(tree, t) if t.persist is not None else None
        return block[0].split("=", 1)[1].strip() if block else None


class LimitFile(Kind):
    """A limits.d block only: the limit applies to new logins; nothing runtime to change."""

    name = "file"

    def actual(self, tree: Tree, t: Tunable, tune: Tune) -> Optional[str]:
        mine = limit_value("\n".join(persisted(tree, t) or []), t.id)
        if mine is not None:
            return mine
        if tree.live:
            import resource

            which = resource.RLIMIT_NOFILE if t.id == "nofile" else resource.RLIMIT_MEMLOCK
            soft = resource.getrlimit(which)[0]
            if soft == resource.RLIM_INFINITY:
                return "unlimited"
            return str(soft if t.id == "nofile" else soft // 1024)
        return limit_value(tree.read("etc/security/limits.conf"), t.id) or "not set"


class Shm(Kind):
    """/dev/shm's size: a systemd drop-in for the mount and, on the live host only, `mount -o remount`."""

    name = "shm"
    boot = True

    def actual(self, tree: Tree, t: Tunable, tune: Tune) -> Optional[str]:
        if tree.live:
            return sized(tree, tune, mount_size(tree))
        # a tree's mount cannot change: what it will mount at the next boot is the drop-in's size
        block = persisted(tree, t) or []
        opt = next((o for line in block if line.startswith("Options=") for o in line[8:].split(",")
                    if o.startswith("size=")), None)
        return sized(tree, tune, opt or mount_size(tree))

    def kept(self, tree: Tree, t: Tunable, expected: str, state: Optional[State]) -> Optional[str]:
        if not tree.live:
            return None
        block = persisted(tree, t)
        if block is not None and block != t.lines(expected):
            return f"{tree.path(t.persist or '')} keeps another size"
        return None

    def apply(self, txn: Txn, t: Tunable, st: Status, state: State) -> List[str]:
        expected = st.expected or ""
        if txn.tree.live:
            old = mount_size(txn.tree)
            state["before"].setdefault(t.id, {"/dev/shm": old})
            if old != expected:
                txn.call(lambda: programs.remount_shm(expected),
                         (lambda: programs.remount_shm(old)) if old else (lambda: None))
        # saved as the runtime choices are: hosttune-tune.service remounts it at boot, beside the drop-in
        state["applied"][t.id] = expected
        return [txn.tree.path(state_rel(txn.tree.root))]

    def revert(self, txn: Txn, t: Tunable, rel: str, old: str) -> Optional[Change]:
        if not txn.tree.live:
            return None
        now = mount_size(txn.tree)
        if now == old:
            return None
        txn.call(lambda: programs.remount_shm(old), lambda: None)
        return Change(t.id, now, old, SAVED, ())


class Service(Kind):
    """NVIDIA persistence through `systemctl enable --now nvidia-persistenced` (live host with GPUs only)."""

    name = "service"

    def actual(self, tree: Tree, t: Tunable, tune: Tune) -> Optional[str]:
        if not tree.live:
            return None
        out = []
        for verb in ("is-enabled", "is-active"):
            done = programs.systemctl([verb, PERSISTENCED], check=False)
            out.append(done.stdout.strip() or "unknown")
        return ", ".join(out)

    def apply(self, txn: Txn, t: Tunable, st: Status, state: State) -> List[str]:
        before = st.actual or ""
        state["before"].setdefault(t.id, {"nvidia-persistenced": before})
        undo = ((lambda: None) if before.startswith("enabled") else
                (lambda: programs.systemctl_do("disable", "--now", PERSISTENCED)))
        txn.call(lambda: programs.systemctl_do("enable", "--now", PERSISTENCED), undo)
        return []

    def revert(self, txn: Txn, t: Tunable, rel: str, old: str) -> Optional[Change]:
        if old.startswith("enabled"):
            return None
        txn.call(lambda: programs.systemctl_do("disable", "--now", PERSISTENCED), lambda: None)
        return Change(t.id, "enabled", old, SAVED, ())


KINDS: Dict[str, Kind] = {k.name: k for k in (Attr(), LimitFile(), Shm(), Service())}


# ---- /dev/shm's size ---------------------------------------------------------------------------------------------
def mount_size(tree: Tree) -> Optional[str]:
    """The size= option /dev/shm is mounted with, from the mount table as the detector reads it
    (`hosttune.detect.mounts.read_mounts`: proc/self/mountinfo, else proc/mounts; the last mount there wins)."""
    from hosttune.detect.hostio import HostIO
    from hosttune.detect.mounts import read_mounts

    size = None
    for m in read_mounts(HostIO(tree.root)):
        if m.mount == "/dev/shm":
            size = next((o for o in m.options.split(",") if o.startswith("size=")), None)
    return size


def mem_kib(tree: Tree) -> Optional[int]:
    from hosttune.detect.hostio import HostIO

    for line in iter_lines(HostIO(tree.root).read("/proc/meminfo")):
        if line.startswith("MemTotal:") and line.split()[1].isdigit():
            return int(line.split()[1])
    return None


def sized(tree: Tree, tune: Tune, now: Optional[str]) -> Optional[str]:
    """The size `now`; the profile's value when it is at least that big (tmpfs rounds to pages, and a bigger
    /dev/shm is no problem to fix: doctor asks for a minimum, hosttune.tune.rules.shm_big_enough)."""
    mem = mem_kib(tree)
    want = rules.size_kib(tune.shm_size, mem)
    have = rules.size_kib(now, mem)
    if want is not None and have is not None and rules.shm_big_enough(have, want):
        same = have - want <= rules.shm_slack(want)
        return f"size={tune.shm_size}" + ("" if same else f" (mounted with {now})")
    return now
