"""Which distribution a root holds: python-distro over the root's etc/ files, never the running host's."""

import inspect
import re
from typing import Any, Dict

import distro as _distro

from hosttune.detect._io import HostIO
from hosttune.facts import Distro

# distro's own search order for etc/*-release (distro.py _DISTRO_RELEASE_BASENAMES), then any other *-release.
_RELEASE_FIRST = [
    "SuSE-release", "altlinux-release", "arch-release", "base-release", "centos-release", "fedora-release",
    "gentoo-release", "mageia-release", "mandrake-release", "mandriva-release", "mandrivalinux-release",
    "manjaro-release", "oracle-release", "redhat-release", "rocky-release", "sl-release", "slackware-version",
]
_RELEASE_IGNORED = {
    "debian_version", "lsb-release", "oem-release", "os-release", "system-release", "plesk-release",
    "iredmail-release", "board-release", "ec2_version",
}
_RELEASE_RE = re.compile(r"(\w+)[-_](release|version)$")

_RHEL_IDS = {"rhel", "centos", "rocky", "almalinux", "fedora", "ol", "scientific", "amzn", "cloudlinux"}
_DEBIAN_IDS = {"debian", "ubuntu", "linuxmint", "pop", "raspbian", "kali"}


def family(dist_id: str, like: str) -> str:
    """debian | rhel | unknown, from ID and ID_LIKE (ubuntu -> debian; centos/rocky/alma/fedora -> rhel)."""
    for word in [dist_id] + like.split():
        if word in _DEBIAN_IDS:
            return "debian"
        if word in _RHEL_IDS:
            return "rhel"
    return "unknown"


def release_file(io: HostIO) -> str:
    """The etc/*-release file distro would pick, as a real path under the root ('' when there is none)."""
    names = io.listdir("/etc")
    ordered = [n for n in _RELEASE_FIRST if n in names]
    ordered += [n for n in names if n not in ordered and n not in _RELEASE_IGNORED and _RELEASE_RE.match(n)]
    for name in ordered:
        real = io.realpath(f"/etc/{name}")
        if real:
            return str(io.path(real))
    return ""


def _linux_distribution(io: HostIO, legacy: bool) -> Any:
    params = inspect.signature(_distro.LinuxDistribution.__init__).parameters
    kwargs: Dict[str, Any] = {"include_lsb": False}
    if "include_uname" in params:
        kwargs["include_uname"] = False
    if "include_oslevel" in params:
        kwargs["include_oslevel"] = False
    if io.live:
        return _no_uname(_distro.LinuxDistribution(**kwargs))
    # Name the files ourselves, resolved inside the root: a captured etc/os-release -> /usr/lib/os-release must not
    # open this machine's file, and distro 1.5 (Debian 11, EL9) has no root_dir at all. An empty name would make
    # distro read the running host's /etc, so a root without such a file gets a path that cannot exist.
    os_release = next((r for r in (io.realpath("/etc/os-release"), io.realpath("/usr/lib/os-release")) if r), None)
    nowhere = str(io.path("/etc/.hosttune-no-such-release"))
    if "root_dir" in params and not legacy:
        kwargs["root_dir"] = str(io.root)
    dist = _distro.LinuxDistribution(
        os_release_file=str(io.path(os_release)) if os_release else nowhere,
        distro_release_file=release_file(io) or nowhere,
        **kwargs,
    )
    if hasattr(dist, "etc_dir"):  # distro >= 1.7 also reads etc/debian_version from here (default: the host's)
        dist.etc_dir = str(io.path("/etc"))
    return _no_uname(dist)


def _no_uname(dist: Any) -> Any:
    """distro 1.5 runs `uname -rs` as a last fallback even with include_uname=False; its result is a cached
    property, so an empty one stored up front keeps the detector free of that subprocess (and of the running
    kernel's name leaking into a captured root's answer)."""
    dist.__dict__["_uname_info"] = {}
    return dist


def probe(io: HostIO, legacy: bool = False) -> Distro:
    """`legacy=True` forces the distro-1.5 code path (named files instead of root_dir) for tests."""
    if not any(io.exists(p) for p in ("/etc/os-release", "/usr/lib/os-release")) and not release_file(io):
        io.note("distro", "no etc/os-release or etc/*-release")
        return Distro()
    try:
        dist = _linux_distribution(io, legacy)
        dist_id = dist.id() or "unknown"
        like = dist.like() or ""
        version, best = dist.version() or "", dist.version(best=True) or ""
        if not version and dist_id == "debian":
            # Debian testing/sid has no VERSION_ID; distro >= 1.7 then reports etc/debian_version ("bookworm/sid"),
            # 1.5 (Debian 11, EL9) reports "". Give the newer answer everywhere.
            version = best = io.read("/etc/debian_version") or ""
        return Distro(
            id=dist_id,
            version=version,
            version_best=best,
            codename=dist.codename() or "",
            like=like,
            name=dist.name() or "",
            family=family(dist_id, like),
        )
    except (OSError, ValueError, UnicodeError) as exc:  # a malformed release file
        io.note("distro", f"{type(exc).__name__}: {exc}")
        return Distro()


