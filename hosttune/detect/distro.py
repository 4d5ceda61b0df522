"""Which distribution a root holds: python-distro over the root's etc/ files, never the running host's."""

import inspect
import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator

import distro as _distro

from hosttune.detect.hostio import HostIO
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


# At most this many etc/*-release files are copied for distro: a real /etc has a handful.
_MAX_RELEASE_FILES = 64


def _copy_release_files(io: HostIO, dest: str) -> None:
    """The files python-distro reads, copied from the root into `dest` through HostIO: bounded, regular files only,
    links resolved inside the root. distro itself opens what it is given with open(), which would hang on a FIFO,
    exhaust memory on a link to /dev/zero, and follow an absolute link to this machine's files."""
    names = [n for n in io.listdir("/etc") if n in ("os-release", "debian_version") or _RELEASE_RE.match(n)]
    wanted = [f"etc/{n}" for n in names[:_MAX_RELEASE_FILES]] + ["usr/lib/os-release"]
    for rel in wanted:
        text = io.read(rel)
        if text is None:
            continue
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(dest, rel), "w", encoding="utf-8") as fh:
            fh.write(text + "\n")


@contextmanager
def _linux_distribution(io: HostIO, legacy: bool) -> Iterator[Any]:
    params = inspect.signature(_distro.LinuxDistribution.__init__).parameters
    kwargs: Dict[str, Any] = {"include_lsb": False}
    if "include_uname" in params:
        kwargs["include_uname"] = False
    if "include_oslevel" in params:
        kwargs["include_oslevel"] = False
    if io.live:
        yield _no_uname(_distro.LinuxDistribution(**kwargs))
        return
    with tempfile.TemporaryDirectory(prefix="hosttune-distro-") as copy:
        _copy_release_files(io, copy)
        # Name the files ourselves: distro 1.5 (Debian 11, EL9) has no root_dir at all. An empty name would make
        # distro read the running host's /etc, so a root without such a file gets a path that cannot exist.
        # A captured etc/os-release -> /usr/lib/os-release was resolved inside the root by the copy.
        copied = HostIO(Path(copy))
        os_release = next((r for r in ("/etc/os-release", "/usr/lib/os-release") if copied.isfile(r)), None)
        nowhere = os.path.join(copy, "etc/.hosttune-no-such-release")
        if "root_dir" in params and not legacy:
            kwargs["root_dir"] = copy
        dist = _distro.LinuxDistribution(
            os_release_file=str(copied.path(os_release)) if os_release else nowhere,
            distro_release_file=release_file(copied) or nowhere,
            **kwargs,
        )
        if hasattr(dist, "etc_dir"):  # distro >= 1.7 also reads etc/debian_version from here (default: the host's)
            dist.etc_dir = os.path.join(copy, "etc")
        yield _no_uname(dist)


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
        with _linux_distribution(io, legacy) as dist:
            dist_id = dist.id() or "unknown"
            like = dist.like() or ""
            version, best = dist.version() or "", dist.version(best=True) or ""
            codename, name = dist.codename() or "", dist.name() or ""
        if not version and dist_id == "debian":
            # Debian testing/sid has no VERSION_ID; distro >= 1.7 then reports etc/debian_version ("bookworm/sid"),
            # 1.5 (Debian 11, EL9) reports "". Give the newer answer everywhere.
            version = best = io.read("/etc/debian_version") or ""
        return Distro(
            id=dist_id,
            version=version,
            version_best=best,
            codename=codename,
            like=like,
            name=name,
            family=family(dist_id, like),
        )
    except (OSError, ValueError, UnicodeError) as exc:  # a malformed release file
        io.note("distro", f"{type(exc).__name__}: {exc}")
        return Distro()


