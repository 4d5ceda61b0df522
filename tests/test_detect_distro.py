"""Distribution detection on python-distro's captured release files and on Rocky 9 / Ubuntu 22.04 roots we write."""

import inspect
import json
import re
import shutil
from pathlib import Path
from typing import Dict

import distro as distro_lib
import pytest
from conftest import DISTROS

from hosttune.detect import HostIO, collect, distro

EXPECTED: Dict[str, Dict[str, str]] = {
    k: v for k, v in json.loads((DISTROS / "expected.json").read_text()).items() if not k.startswith("_")
}
# distro 1.6 added LinuxDistribution(root_dir=...); with older releases the probe names the files itself.
_HAS_ROOT_DIR = "root_dir" in inspect.signature(distro_lib.LinuxDistribution.__init__).parameters
FAMILY = {"almalinux": "rhel", "centos": "rhel", "rhel": "rhel", "rocky": "rhel", "fedora": "rhel",
          "debian": "debian", "ubuntu": "debian"}


def _restore_links(src: Path, dst: Path) -> Path:
    """Copy a fixture root, turning link stubs back into symbolic links.

    The README lists the fixtures' symbolic links (rocky9/etc/os-release -> ../usr/lib/os-release ...). The checkout
    on some machines stores such a link as a plain file holding its target (git with core.symlinks=false), which no
    real host has; we restore the link so the test reads the tree as the real system laid it out.
    """
    shutil.copytree(src, dst, symlinks=True)
    for path in dst.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 200:
            target = path.read_text(errors="replace")
            if re.fullmatch(r"[\w.+-]+(/[\w.+-]+)*", target) and (path.parent / target).is_file():
                path.unlink()
                path.symlink_to(target)
    return dst


@pytest.mark.parametrize("legacy", [False, True], ids=["root_dir", "distro-1.5-files"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_distro_fixture(name: str, legacy: bool, tmp_path: Path) -> None:
    """`legacy` takes the path used with distro 1.5 (Debian 11, EL9), which has no root_dir argument."""
    exp = EXPECTED[name]
    got = distro.probe(HostIO(_restore_links(DISTROS / name, tmp_path / name)), legacy=legacy)
    assert (got.id, got.version, got.codename) == (exp["id"], exp["version"], exp["codename"])
    assert got.like == exp["like"] and got.name == exp["name"]
    if not legacy and _HAS_ROOT_DIR:  # distro < 1.6 always takes the named-files path: no point release there
        assert got.version_best == exp["version_best"]
    assert got.family == FAMILY[exp["id"]]


ROCKY9_OS_RELEASE = '''NAME="Rocky Linux"
VERSION="9.4 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"
'''
UBUNTU2204_OS_RELEASE = '''PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy
'''


def _write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("legacy", [False, True])
def test_rocky9_root(tmp_path: Path, legacy: bool) -> None:
    root = _write(tmp_path, {"usr/lib/os-release": ROCKY9_OS_RELEASE,
                             "etc/rocky-release": "Rocky Linux release 9.4 (Blue Onyx)\n"})
    (root / "etc/os-release").symlink_to("../usr/lib/os-release")
    (root / "etc/redhat-release").symlink_to("rocky-release")
    got = distro.probe(HostIO(root), legacy=legacy)
    assert (got.id, got.version, got.codename, got.family) == ("rocky", "9.4", "Blue Onyx", "rhel")


@pytest.mark.parametrize("legacy", [False, True])
def test_ubuntu2204_root(tmp_path: Path, legacy: bool) -> None:
    root = _write(tmp_path, {"etc/os-release": UBUNTU2204_OS_RELEASE, "etc/debian_version": "bookworm/sid\n",
                             "etc/lsb-release": "DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=22.04\n"})
    got = distro.probe(HostIO(root), legacy=legacy)
    assert (got.id, got.version, got.codename, got.family) == ("ubuntu", "22.04", "jammy", "debian")


def test_absolute_symlink_stays_inside_root(tmp_path: Path) -> None:
    """A captured /etc/os-release -> /usr/lib/os-release means root/usr/lib/os-release, not this machine's file."""
    root = _write(tmp_path, {"usr/lib/os-release": ROCKY9_OS_RELEASE})
    (root / "etc").mkdir()
    (root / "etc/os-release").symlink_to("/usr/lib/os-release")
    io = HostIO(root)
    assert io.realpath("/etc/os-release") == "/usr/lib/os-release"
    assert distro.probe(io, legacy=True).id == "rocky"


def test_no_release_files_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    facts = collect(tmp_path, probe_torch=False, use_nvml=False)
    assert facts.distro.id == "unknown" and facts.distro.family == "unknown"
    assert any(m.startswith("distro:") for m in facts.missing)
