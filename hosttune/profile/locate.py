"""Where profiles are: the search path, a `Locator` over given directories, and `locate_active` (the one answer to
"which profile is in use", shared by `active()`, doctor, `env`, `exec` and `profile show`).

Search path for names, later wins (tuned's locator order): the packaged `profiles/`, /usr/share/hosttune/profiles,
/etc/hosttune/profiles, ~/.config/hosttune/profiles, then each entry of $HOSTTUNE_PROFILE_PATH (colon-separated).
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune.policy import dirs, names

DEFAULT_BASE = "throughput"  # what a host without a configured profile runs: generated from it on the fly
_EXTS = (".yaml", ".yml")


class Locator:
    """Profile files by name in `dirs`, earliest (lowest precedence) first: later directories win."""

    def __init__(self, dirs: Sequence[Path]):
        self.dirs = [Path(d) for d in dirs]

    def candidates(self, name: str) -> List[Path]:
        """Every file that defines `name`, lowest precedence first."""
        out = []
        for d in self.dirs:
            for ext in _EXTS:
                p = d / f"{name}{ext}"
                try:
                    found = p.is_file()
                except OSError:  # a name too long for the file system, a directory we may not search
                    found = False
                if found:
                    out.append(p)
                    break
        return out

    def locate(self, name: str) -> Optional[Path]:
        """The winning file for `name`, or None."""
        cands = self.candidates(name)
        return cands[-1] if cands else None

    def available(self) -> List[Tuple[str, Path, List[Path]]]:
        """(name, winning file, overridden files) for every profile in the directories."""
        seen: Dict[str, List[Path]] = {}
        for d in self.dirs:
            try:
                if not d.is_dir():
                    continue
                entries = sorted(d.iterdir())
            except OSError:
                continue
            for p in entries:
                if p.suffix in _EXTS and p.is_file():
                    seen.setdefault(p.stem, []).append(p)
        return [(n, ps[-1], ps[:-1]) for n, ps in sorted(seen.items())]


def _packaged_dirs() -> List[Path]:
    """The packaged profiles: `hosttune/profiles` when installed, `<repo>/profiles` in a checkout."""
    pkg = Path(__file__).resolve().parent.parent  # the hosttune package
    dirs: List[Path] = []
    # <repo>/profiles only in a checkout (next to pyproject.toml), never a stray site-packages/profiles
    cands = [pkg / "profiles"] + ([pkg.parent / "profiles"] if (pkg.parent / "pyproject.toml").is_file() else [])
    for cand in cands:
        if cand.is_dir() and any(cand.glob("*.yaml")) and cand not in dirs:
            dirs.append(cand)
    try:  # an editable or wheel install maps profiles/ to the package hosttune.profiles
        import importlib.util

        spec = importlib.util.find_spec("hosttune.profiles")
        for loc in (spec.submodule_search_locations or []) if spec else []:
            p = Path(loc).resolve()
            if p.is_dir() and p not in dirs:
                dirs.append(p)
    except (ImportError, ValueError):
        pass
    return dirs[:1]


def _config_home(environ: Mapping[str, str]) -> Path:
    xdg = environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else Path.home() / ".config"


def _etc_dir(environ: Mapping[str, str]) -> Path:
    # HOSTTUNE_ETC_DIR exists so tests (run as root on a shared host) never touch the real /etc/hosttune.
    return Path(dirs.etc_dir(environ))


def search_path(environ: Optional[Mapping[str, str]] = None) -> List[Path]:
    """Directories searched for profile names, earliest (lowest precedence) first."""
    env = os.environ if environ is None else environ
    dirs = _packaged_dirs() + [Path("/usr/share/hosttune/profiles"), _etc_dir(env) / "profiles"]
    dirs.append(_config_home(env) / "hosttune" / "profiles")
    dirs.extend(Path(p) for p in env.get(names.PROFILE_PATH, "").split(":") if p)
    return dirs


def locator(environ: Optional[Mapping[str, str]] = None) -> Locator:
    """The Locator over the search path."""
    return Locator(search_path(environ))


def generated_paths(environ: Optional[Mapping[str, str]] = None) -> List[Path]:
    """Where `profile generate` writes and `active()` looks: [the user's profile, the system's profile]."""
    env = os.environ if environ is None else environ
    return [_config_home(env) / "hosttune" / "profile.yaml", _etc_dir(env) / "profile.yaml"]


def default_generate_path() -> Path:
    return generated_paths()[1] if os.geteuid() == 0 else generated_paths()[0]


@dataclass(frozen=True)
class Active:
    """Which profile is in use and why. `ref` is what `load()` takes (a name or a path); None means no profile is
    configured and the built-in default (`base` generated for the host) is used."""

    ref: Optional[str]
    source: str  # "--profile", "$HOSTTUNE_PROFILE", "user profile", "system profile", "built-in default"
    base: str = DEFAULT_BASE

    @property
    def generated(self) -> bool:
        """True when the profile is made from the host's facts on the fly (nothing configured)."""
        return self.ref is None

    @property
    def host_file(self) -> bool:
        """True when the profile is this machine's own generated file (user's or system's)."""
        return self.source in ("user profile", "system profile")

    def describe(self) -> str:
        return f"{self.ref} ({self.source})" if self.ref else f"{self.base} generated for the host ({self.source})"


def locate_active(explicit: Optional[str] = None, environ: Mapping[str, str] = os.environ) -> Active:
    """The profile in use: `--profile`, then $HOSTTUNE_PROFILE, then the user's generated profile, then
    /etc/hosttune/profile.yaml, else the built-in default generated on the fly. Reads nothing but `is_file`."""
    if explicit:
        return Active(explicit, "--profile")
    env = environ.get(names.PROFILE)
    if env:
        return Active(env, f"${names.PROFILE}")
    for p, source in zip(generated_paths(environ), ("user profile", "system profile")):
        try:
            if p.is_file():
                return Active(str(p), source)
        except OSError:
            continue
    return Active(None, "built-in default")
