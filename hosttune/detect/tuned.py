"""tuned's state: whether its daemon runs, the active profile and mode, and what that profile (its includes merged)
sets for the knobs hosttune tunes, read through `HostIO` so a captured tree answers for its own host.

Paths and merge rules follow tuned itself (tuned/consts.py, tuned/profiles/{locator,loader,merger}.py): a profile is
`<dir>/<name>/tuned.conf`, the last of the profile directories that has it wins (tuned <= 2.23 looks in
/usr/lib/tuned then /etc/tuned; 2.24+ in their `profiles/` subdirectories); `include=` names (split on `,`/`;`) are
loaded first and the including profile's options override theirs, unit by unit; `replace=1` drops what was included.
"""

import re
from typing import Dict, List, Optional, Tuple

from hosttune.detect.hostio import HostIO, small_int
from hosttune.facts import Tuned, TunedSetting

ACTIVE_PROFILE = "/etc/tuned/active_profile"
PROFILE_MODE = "/etc/tuned/profile_mode"
PID_FILE = "/run/tuned/tuned.pid"  # tuned.service starts `tuned -l -P`: -P writes this file
# Searched in this order; a later directory overrides an earlier one (tuned's LOAD_DIRECTORIES / CFG_DEF_PROFILE_DIRS).
PROFILE_DIRS = ("/usr/lib/tuned", "/usr/lib/tuned/profiles", "/etc/tuned", "/etc/tuned/profiles")
_MAX_INCLUDES = 32  # a profile tree deeper than this is a loop or a planted tree

# hosttune's tunable id -> (tuned plugin, option), as tuned's plugins name them (plugin_vm.py, plugin_sysctl.py,
# plugin_cpu.py). THP defrag goes through the vm plugin, not [sysfs]: sysfs verify compares the whole file
# ("always defer [madvise] never") with the value and would always report a difference.
OPTIONS: Dict[str, Tuple[str, str]] = {
    "thp": ("vm", "transparent_hugepages"),
    "thp_defrag": ("vm", "transparent_hugepage.defrag"),
    "swappiness": ("sysctl", "vm.swappiness"),
    "numa_balancing": ("sysctl", "kernel.numa_balancing"),
    "governor": ("cpu", "governor"),
    "epp": ("cpu", "energy_performance_preference"),
}
_ALIASES = {("vm", "transparent_hugepage"): "transparent_hugepages"}  # plugin_vm: "just an alias"
_CONDITIONS = ("uname_regex", "cpuinfo_regex", "devices_udev_regex")  # units that apply only on some machines

Conf = Dict[str, Dict[str, str]]


def parse_conf(text: str) -> Conf:
    """A tuned.conf as {section: {option: value}}, in file order. Comment lines (`#`, `;`) and blank lines are
    skipped, `key = value` and `key=value` both parse (values keep inner spaces); lines before any section header
    go to "" (tuned reads them under a magic header)."""
    out: Conf = {"": {}}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            out.setdefault(section, {})
            continue
        key, sep, value = line.partition("=")
        if sep:
            out[section][key.strip()] = value.strip()
    if not out[""]:
        del out[""]
    return out


def includes(conf: Conf) -> List[str]:
    """The profiles a parsed tuned.conf includes, in order (tuned splits `include=` on commas and semicolons)."""
    value = conf.get("main", {}).get("include", "")
    return [n for n in re.split(r"\s*[,;]\s*", value.strip()) if n]


def profile_path(io: HostIO, name: str) -> Optional[str]:
    """The tuned.conf that tuned would load for `name` (host path, relative to the root), or None."""
    if not name or "/" in name or name in (".", ".."):
        return None
    found = None
    for d in PROFILE_DIRS:
        rel = f"{d}/{name}/tuned.conf"
        if io.isfile(rel):
            found = rel
    return found


def merged(io: HostIO, names: List[str], depth: int = 0) -> Tuple[Dict[str, Dict[str, Tuple[str, str]]], List[str]]:
    """The units of `names` merged as tuned merges them: ({unit: {option: (value, profile)}}, problems)."""
    units: Dict[str, Dict[str, Tuple[str, str]]] = {}
    problems: List[str] = []
    if names and depth > _MAX_INCLUDES:  # a leaf (no includes) at the limit is within it
        return units, [f"includes nested deeper than {_MAX_INCLUDES}"]
    for name in names:
        rel = profile_path(io, name)
        text = io.read(rel, what=f"tuned profile {name}") if rel else None
        if text is None:
            problems.append(f"profile {name}: not found in {', '.join(PROFILE_DIRS)}")
            continue
        conf = parse_conf(text)
        base, more = merged(io, includes(conf), depth + 1)
        problems.extend(more)
        for unit, opts in base.items():
            units.setdefault(unit, {}).update(opts)
        for unit, options in conf.items():
            if unit in ("", "main", "variables"):
                continue
            if options.get("replace", "").lower() in ("1", "true", "yes", "on"):
                units[unit] = {}
            units.setdefault(unit, {}).update({k: (v, name) for k, v in options.items()})
    return units, problems


def effective(units: Dict[str, Dict[str, Tuple[str, str]]]) -> Tuple[TunedSetting, ...]:
    """What the merged units set for hosttune's tunables. Disabled units and units limited to some machines
    (uname_regex, cpuinfo_regex: the ThunderX overrides in throughput-performance) are left out."""
    found: Dict[str, TunedSetting] = {}
    for unit, opts in units.items():
        plugin = opts.get("type", (unit.split(".")[0], ""))[0]
        if opts.get("enabled", ("true", ""))[0].lower() in ("0", "false", "no", "off"):
            continue
        if any(c in opts for c in _CONDITIONS):
            continue
        for option, (value, source) in opts.items():
            option = _ALIASES.get((plugin, option), option)
            for tid, (p, o) in OPTIONS.items():
                if p == plugin and o == option:
                    found[tid] = TunedSetting(id=tid, option=f"{plugin}.{option}", value=value, profile=source)
    return tuple(found[t] for t in OPTIONS if t in found)


def running(io: HostIO) -> Optional[bool]:
    """Whether tuned's daemon runs: its pid file names a live `tuned` process. Under a foreign root the tree's own
    state answers (pid file, and its proc/<pid>/comm when captured); on the live host without a pid file,
    `systemctl is-active tuned`. None when nothing can tell."""
    text = io.read(PID_FILE, what="tuned pid file") if io.exists(PID_FILE) else None
    pid = small_int(text.strip(), 10) if text else None
    if pid is not None and pid > 0:
        comm = io.read(f"/proc/{pid}/comm") if io.exists(f"/proc/{pid}/comm") else None
        if comm is not None:
            return comm.strip() == "tuned"
        return False if io.live else True
    if not io.live:
        return False if io.exists("/etc/tuned") else None
    systemctl = io.which("systemctl")
    if systemctl is None:
        return None
    done = io.run([systemctl, "is-active", "tuned"], timeout=5, note=False)
    if done is None:
        return None
    state = done.stdout.strip()
    if state in ("active", "activating", "reloading"):
        return True
    return False if state in ("inactive", "failed", "deactivating", "unknown") else None


def active_profile(io: HostIO) -> Optional[str]:
    """etc/tuned/active_profile: the profile name (several, space separated, when tuned merges them), or None."""
    if not io.exists(ACTIVE_PROFILE):
        return None
    text = io.read(ACTIVE_PROFILE, what="tuned active profile")
    name = " ".join(text.split()) if text else ""
    return name or None


def profile_mode(io: HostIO) -> Optional[str]:
    """etc/tuned/profile_mode: `auto` (tuned's recommendation) or `manual` (chosen with tuned-adm)."""
    if not io.exists(PROFILE_MODE):
        return None
    text = io.read(PROFILE_MODE, what="tuned profile mode")
    return text.strip() or None if text else None


def probe(io: HostIO) -> Tuned:
    installed = io.isdir("/etc/tuned") or any(io.isdir(d) for d in PROFILE_DIRS[:2])
    if not installed:
        return Tuned()
    name = active_profile(io)
    settings: Tuple[TunedSetting, ...] = ()
    problems: List[str] = []
    if name:
        units, problems = merged(io, name.split())
        settings = effective(units)
    for p in problems:
        io.note("tuned", p)
    return Tuned(installed=True, running=running(io), profile=name, mode=profile_mode(io), settings=settings)
