"""Living with tuned: when its daemon runs, `hosttune tune apply` writes a tuned profile that includes the one that
was active and overrides only what training needs, and switches tuned to it; revert switches back.

With a foreign root every read and write stays inside the tree (etc/tuned/, run/tuned/) and no program runs:
`switch` then does what `tuned-adm profile` leaves on disk (active_profile, profile_mode=manual).
Option names are tuned's own (tuned/plugins/plugin_{vm,sysctl,cpu}.py, 2.20+ for energy_performance_preference).
"""

import os
from pathlib import Path
from typing import Dict, Optional, Tuple

from hosttune.detect import tuned as probe
from hosttune.detect._io import HostIO
from hosttune.errors import UserError
from hosttune.fsio import atomic_write

PROFILE_NAME = "hosttune"
MARKER = "# Written by hosttune (hosttune tune apply); `hosttune tune revert` removes it. Do not edit."
# hosttune's tunable id -> (tuned plugin section, option). Tunables not here (limits, /dev/shm, persistence mode)
# are not tuned's business and keep hosttune's own persistence.
OPTIONS: Dict[str, Tuple[str, str]] = dict(probe.OPTIONS)
_SECTIONS = ("vm", "sysctl", "cpu")
_ADM_TIMEOUT = 120.0  # tuned-adm waits for the daemon to apply the whole profile


def _live(root: Path) -> bool:
    return os.path.realpath(str(root)) == "/"


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


def profile_dir(root: Path) -> Path:
    """Where hosttune's profile goes: etc/tuned/hosttune, or etc/tuned/profiles/hosttune when the tree has tuned
    2.24+'s layout (system profiles under usr/lib/tuned/profiles), which no longer looks in etc/tuned/<name>."""
    io = HostIO(root)
    if io.isdir("/usr/lib/tuned/profiles") or io.isdir("/etc/tuned/profiles"):
        return io.path(f"/etc/tuned/profiles/{PROFILE_NAME}")
    return io.path(f"/etc/tuned/{PROFILE_NAME}")


def _value(tid: str, value: str) -> str:
    text = str(value).strip()
    if not text or any(c in text for c in "\n\r#;[]") or any(ord(c) < 32 for c in text):
        raise ValueError(f"tuned profile: value {value!r} for {tid} cannot go into tuned.conf")
    return text


def render_profile(include: Optional[str], settings: Dict[str, str]) -> str:
    """The text of hosttune's tuned.conf (pure): the marker, `[main] include=` the profile that was active (several
    names become tuned's comma list), then one section per tuned plugin with only the given tunables. Ids tuned
    does not handle are left out; a value that could break the file's syntax is a ValueError."""
    if include is not None and PROFILE_NAME in include.split():
        raise ValueError(f"tuned profile: {PROFILE_NAME} cannot include itself")
    lines = [MARKER, "", "[main]", "summary=hosttune: PyTorch training host settings"
             + (f" on top of {include}" if include else "")]
    if include:
        lines.append("include=" + ",".join(include.split()))
    for section in _SECTIONS:
        body = [f"{option}={_value(tid, settings[tid])}" for tid, (sec, option) in OPTIONS.items()
                if sec == section and settings.get(tid) is not None]
        if body:
            lines += ["", f"[{section}]"] + body
    return "\n".join(lines) + "\n"


def write_profile(root: Path, include: Optional[str], settings: Dict[str, str]) -> str:
    """Write hosttune's tuned profile (see `render_profile`) atomically under root; return its path."""
    text = render_profile(include, settings)
    d = profile_dir(root)
    d.mkdir(mode=0o755, parents=True, exist_ok=True)
    path = d / "tuned.conf"
    atomic_write(path, text, 0o644)
    return str(path)


def remove_profile(root: Path) -> bool:
    """Remove hosttune's profile (only a file carrying the marker, and its then empty directory); True if removed."""
    for d in {profile_dir(root), HostIO(root).path(f"/etc/tuned/{PROFILE_NAME}"),
              HostIO(root).path(f"/etc/tuned/profiles/{PROFILE_NAME}")}:
        conf = d / "tuned.conf"
        try:
            with open(conf, encoding="utf-8", errors="replace") as fh:
                if fh.readline().rstrip("\n") != MARKER:
                    continue
            conf.unlink()
        except FileNotFoundError:
            continue
        try:
            d.rmdir()
        except OSError:
            pass
        return True
    return False


def switch(root: Path, name: str) -> None:
    """Make `name` tuned's active profile. Live: `tuned-adm profile NAME` (the daemon applies it and records it);
    with a foreign root: what tuned-adm leaves on disk, etc/tuned/active_profile and profile_mode=manual.
    Raises UserError with tuned-adm's one-line reason when it fails."""
    names = name.split()
    if not names or any("/" in n or n.startswith("-") for n in names):
        raise ValueError(f"tuned profile name {name!r} is not valid")
    io = HostIO(root)
    if not io.live:
        io.path("/etc/tuned").mkdir(mode=0o755, parents=True, exist_ok=True)
        atomic_write(io.path(probe.ACTIVE_PROFILE), " ".join(names) + "\n", 0o644)
        atomic_write(io.path(probe.PROFILE_MODE), "manual\n", 0o644)
        return
    adm = io.which("tuned-adm")
    if adm is None:
        raise UserError("tuned runs but tuned-adm is not installed (or not on a trusted PATH)")
    done = io.run([adm, "profile", *names], timeout=_ADM_TIMEOUT, note=False)
    if done is None:
        raise UserError(f"tuned-adm profile {' '.join(names)}: {io.last_error}")
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[-1]
        raise UserError(f"tuned-adm profile {' '.join(names)}: {why}")


__all__ = ["PROFILE_NAME", "OPTIONS", "is_running", "active_profile", "profile_mode", "write_profile",
           "render_profile", "remove_profile", "switch"]
