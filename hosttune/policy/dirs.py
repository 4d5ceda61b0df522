"""Where hosttune keeps its own files on a host: one function per directory, each movable by one variable.

The defaults are the FHS places a packaged daemon uses. Each can be pointed elsewhere (tests, two test runs on one
machine, a container that mounts them somewhere else) by its `HOSTTUNE_*_DIR` variable; as root, whatever the
directory is, the module that uses it still applies the trust rule (`hosttune.trust`) before acting on it, because
these variables survive `su`/`sudo -E` like every other.
"""
from __future__ import annotations

import os

from hosttune.policy import names

TYPE_CHECKING = False  # `typing` is not imported at run time: this module is on exec's cached replay path
if TYPE_CHECKING:
    from typing import Mapping, Optional

RUNTIME = "/run/hosttune"  # root's handoffs and exec cache (tmpfs, private to root)
STATE = "/var/lib/hosttune"  # tune's saved originals, the monitor's textfile store
LOG = "/var/log/hosttune"  # the monitor's JSONL
ETC = "/etc/hosttune"  # the admin's profile, monitor.yaml


def _get(environ: Optional[Mapping[str, str]], name: str, default: str) -> str:
    env = os.environ if environ is None else environ
    value = env.get(name, "")
    return value if value.startswith("/") else default  # a relative or empty value would depend on the cwd


def runtime_dir(environ: Optional[Mapping[str, str]] = None) -> str:
    """Root's runtime directory (`$HOSTTUNE_RUNTIME_DIR`, else /run/hosttune)."""
    return _get(environ, names.RUNTIME_DIR, RUNTIME)


def state_dir(environ: Optional[Mapping[str, str]] = None) -> str:
    """Persistent state (`$HOSTTUNE_STATE_DIR`, else /var/lib/hosttune)."""
    return _get(environ, names.STATE_DIR, STATE)


def log_dir(environ: Optional[Mapping[str, str]] = None) -> str:
    """The monitor's logs (`$HOSTTUNE_LOG_DIR`, else /var/log/hosttune)."""
    return _get(environ, names.LOG_DIR, LOG)


def etc_dir(environ: Optional[Mapping[str, str]] = None) -> str:
    """The admin's configuration (`$HOSTTUNE_ETC_DIR`, else /etc/hosttune)."""
    return _get(environ, names.ETC_DIR, ETC)


def user_cache_dir(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """A user's cache: `$XDG_CACHE_HOME/hosttune`, else `~/.cache/hosttune`; None without an absolute home."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "hosttune")
    home = env.get("HOME", "")
    return os.path.join(home, ".cache", "hosttune") if home.startswith("/") else None
