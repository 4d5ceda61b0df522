"""Living with tuned: when its daemon runs, `hosttune tune apply` writes a tuned profile that includes the one that
was active and overrides only what training needs, and switches tuned to it; revert switches back.

With a foreign root every read and write stays inside the tree (etc/tuned/, run/tuned/) and no program runs:
`switch` then does what `tuned-adm profile` leaves on disk (active_profile, profile_mode=manual). Every write goes
through the no-follow tree writer (`hosttune.tune.rootfs.Tree`): a link in the tree (etc/tuned -> /etc/tuned) is
refused, never followed onto the host. Profile names read from the tree or the state file are checked against
tuned's own name rule before they reach `include=`, active_profile or tuned-adm.
Option names are tuned's own (tuned/plugins/plugin_{vm,sysctl,cpu}.py, 2.20+ for energy_performance_preference).
"""

import errno
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from hosttune.detect import tuned as probe
from hosttune.detect.hostio import HostIO
from hosttune.errors import UserError
from hosttune.tune.rootfs import Tree, check_line

PROFILE_NAME = "hosttune"
MARKER = "# Written by hosttune (hosttune tune apply); `hosttune tune revert` removes it. Do not edit."
# hosttune's tunable id -> (tuned plugin section, option). Tunables not here (limits, /dev/shm, persistence mode)
# are not tuned's business and keep hosttune's own persistence.
OPTIONS: Dict[str, Tuple[str, str]] = dict(probe.OPTIONS)
_SECTIONS = ("vm", "sysctl", "cpu")
_ADM_TIMEOUT = 120.0  # tuned-adm waits for the daemon to apply the whole profile


def is_running(root: Path = Path("/")) -> bool:
    """tuned's daemon runs (live: its pid file names a live tuned, else `systemctl is-active tuned`); with a
    foreign root, the tree's run/tuned/tuned.pid says so. No subprocess with a foreign root."""
    return bool(probe.running(HostIO(root)))


def active_profile(root: Path = Path("/")) -> Optional[str]:
    """The active tuned profile (etc/tuned/active_profile), or None when there is none (or tuned is absent)."""
    return probe.active_profile(HostIO(root))


def profile_mode(root: Path = Path("/")) -> Optional[str]:
    """etc/tuned/profile_mode: auto | manual, or None."""
    return probe.profile_mode(HostIO(root))


# tuned's own rule for a profile name (tuned/profiles/loader.py: `^[a-zA-Z0-9_.-]+$`), bounded; "." and ".." are
# directories, not profiles. Every name hosttune puts into `include=`, active_profile or a tuned-adm command line
# (read from the tree's active_profile, or from the state file) must match it.
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def valid_name(name: str) -> bool:
    return bool(_NAME.fullmatch(name)) and name not in (".", "..")


def check_names(value: Optional[str], where: str) -> List[str]:
    """The tuned profile names in `value` (space separated, as active_profile holds several); a name that is not one
    is a ValueError naming `where`."""
    names = (value or "").split()
    for n in names:
        if not valid_name(n):
            shown = n if len(n) <= 60 and n.isprintable() else repr(n[:60])
            raise ValueError(f"{where}: {shown!r} is not a tuned profile name (letters, digits, '_', '.', '-')")
    return names


def profile_rel(root: Path) -> str:
    """hosttune's profile directory relative to the root: etc/tuned/hosttune, or etc/tuned/profiles/hosttune when the
    tree has tuned 2.24+'s layout (system profiles under usr/lib/tuned/profiles), which no longer looks in
    etc/tuned/<name>."""
    io = HostIO(root)
    if io.isdir("/usr/lib/tuned/profiles") or io.isdir("/etc/tuned/profiles"):
        return f"etc/tuned/profiles/{PROFILE_NAME}"
    return f"etc/tuned/{PROFILE_NAME}"


def profile_dir(root: Path) -> Path:
    """Where hosttune's profile goes (see `profile_rel`), as a path to show."""
    return Path(Tree(root).path(profile_rel(root)))


PROFILE_RELS = (f"etc/tuned/{PROFILE_NAME}", f"etc/tuned/profiles/{PROFILE_NAME}")
ACTIVE_REL = probe.ACTIVE_PROFILE.lstrip("/")
MODE_REL = probe.PROFILE_MODE.lstrip("/")


def _value(tid: str, value: str) -> str:
    text = str(value).strip()
    if not text or any(c in text for c in "\n\r#;[]") or any(ord(c) < 32 for c in text):
        raise ValueError(f"tuned profile: value {value!r} for {tid} cannot go into tuned.conf")
    return text


def render_profile(include: Optional[str], settings: Dict[str, str]) -> str:
    """The text of hosttune's tuned.conf (pure): the marker, `[main] include=` the profile that was active (several
    names become tuned's comma list), then one section per tuned plugin with only the given tunables. Ids tuned
    does not handle are left out; a name that is not a tuned profile name, or a value that could break the file's
    syntax, is a ValueError."""
    names = check_names(include, "tuned profile: include")
    if PROFILE_NAME in names:
        raise ValueError(f"tuned profile: {PROFILE_NAME} cannot include itself")
    lines = [MARKER, "", "[main]", "summary=hosttune: PyTorch training host settings"
             + (f" on top of {' '.join(names)}" if names else "")]
    if names:
        lines.append("include=" + ",".join(names))
    for section in _SECTIONS:
        body = [f"{option}={_value(tid, settings[tid])}" for tid, (sec, option) in OPTIONS.items()
                if sec == section and settings.get(tid) is not None]
        if body:
            lines += ["", f"[{section}]"] + body
    for line in lines:
        check_line(line, "tuned profile")
    return "\n".join(lines) + "\n"


def ours(tree: Tree, rel: str) -> Optional[bool]:
    """Whether the tuned.conf at `rel` is hosttune's (its first line is the marker); None when there is none. A
    link there raises OSError (never followed)."""
    text = tree.read(rel)
    if text is None:
        return None
    return text.split("\n", 1)[0] == MARKER


def check_writable(tree: Tree, rel: str) -> None:
    """Refuse (OSError) to replace a tuned.conf at hosttune's name that an admin wrote (no marker line)."""
    if ours(tree, rel) is False:
        raise OSError(errno.EEXIST, "exists and is not hosttune's (no marker line): not touched", tree.path(rel))


def write_profile(root: Path, include: Optional[str], settings: Dict[str, str],
                  made: Optional[List[str]] = None) -> str:
    """Write hosttune's tuned profile (see `render_profile`) atomically under root through the no-follow tree writer;
    return its path. An admin's own profile at that name (no marker line) is left alone (OSError)."""
    text = render_profile(include, settings)
    tree = Tree(root)
    rel = profile_rel(root) + "/tuned.conf"
    check_writable(tree, rel)
    tree.write_file(rel, text, made)
    return tree.path(rel)


def remove_profile(root: Path) -> bool:
    """Remove hosttune's profile (only a file carrying the marker, and its then empty directory), never through a
    link; True if removed."""
    tree = Tree(root)
    for d in PROFILE_RELS:
        conf = f"{d}/tuned.conf"
        try:
            if not ours(tree, conf):
                continue
            tree.remove(conf)
        except OSError:
            continue
        tree.rmdir_if_empty(d)
        return True
    return False


def switch(root: Path, name: str) -> None:
    """Make `name` tuned's active profile. Live: `tuned-adm profile NAME` (the daemon applies it and records it);
    with a foreign root: what tuned-adm leaves on disk, etc/tuned/active_profile and profile_mode=manual, written
    through the no-follow tree writer. Raises UserError with tuned-adm's one-line reason when it fails."""
    names = check_names(name, "tuned profile name")
    if not names:
        raise ValueError("tuned profile name: empty")
    io = HostIO(root)
    if not io.live:
        tree = Tree(root)
        tree.write_file(ACTIVE_REL, " ".join(names) + "\n")
        tree.write_file(MODE_REL, "manual\n")
        return
    adm(io, ["profile", *names])


def off(root: Path) -> None:
    """`tuned-adm off` (live host only): tuned applies no profile, as before one was chosen."""
    io = HostIO(root)
    if io.live:
        adm(io, ["off"])


def adm(io: HostIO, args: List[str]) -> None:
    """Run `tuned-adm ARGS` (found as HostIO finds a program: trusted directories only, by its resolved path)."""
    exe = io.which("tuned-adm")
    if exe is None:
        raise UserError("tuned runs but tuned-adm is not installed (or not on a trusted PATH)")
    done = io.run([exe, *args], timeout=_ADM_TIMEOUT, note=False)
    if done is None:
        raise UserError(f"tuned-adm {' '.join(args)}: {io.last_error}")
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[-1]
        raise UserError(f"tuned-adm {' '.join(args)}: {why}")


__all__ = ["PROFILE_NAME", "OPTIONS", "is_running", "active_profile", "profile_mode", "write_profile",
           "render_profile", "remove_profile", "switch", "off", "valid_name", "check_names", "profile_rel"]
