"""Pins (issue 21, second mutation round) for the maintainer scripts' revert on removal (packaging/scripts/
revert-on-remove.sh inside the deb's prerm and the rpm's %preun, assembled by packaging/build.py's own
maintainer_scripts): removal reverts `tune apply`, an upgrade (deb: upgrade, failed-upgrade, deconfigure; rpm: $1 = 1)
does not, a failed revert keeps the record and never fails the removal, and a dangling link at the record is not
taken for "nothing to revert". Run by the real /bin/sh; the state path, the package's directories and every program
the scripts call (hosttune, systemctl, deb-systemd-invoke, py3clean) are this test's: nothing on the host is touched.
tests/test_packages.py runs the same scripts inside real dpkg/rpm installs (slow); these fail in a second."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Tuple

import pytest

REPO = Path(__file__).resolve().parent.parent
STATE = "/var/lib/hosttune/tune-state.json"

FAKE_HOSTTUNE = """#!/bin/sh
echo "$*|HOSTTUNE_STATE_DIR=${HOSTTUNE_STATE_DIR-unset}" >> "$FAKE_LOG"
if [ "$FAKE_RC" = 0 ]; then
	echo "restored vm.swappiness = 60"
	rm -f "$FAKE_STATE"
	exit 0
fi
echo "cannot write /proc/sys/vm/swappiness: Read-only file system" >&2
exit "$FAKE_RC"
"""
FAKE_LOGGER = """#!/bin/sh
echo "$(basename "$0") $*" >> "$FAKE_LOG"
"""


def _build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hosttune_pkgbuild_pins2", str(REPO / "packaging" / "build.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def scripts(tmp_path: Path) -> Dict[str, Path]:
    """The assembled prerm and preun with the record, the package directories and PATH moved into tmp_path."""
    _build().maintainer_scripts(tmp_path / "scripts")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "hosttune").write_text(FAKE_HOSTTUNE)
    for name in ("systemctl", "deb-systemd-invoke", "py3clean"):
        (bin_dir / name).write_text(FAKE_LOGGER)
    for p in bin_dir.iterdir():
        p.chmod(0o755)
    state = tmp_path / "state" / "tune-state.json"
    state.parent.mkdir()
    out = {}
    for fmt, name in (("deb", "prerm"), ("rpm", "preun")):
        text = (tmp_path / "scripts" / fmt / name).read_text()
        assert STATE in text and "PATH=/usr/sbin:/usr/bin:/sbin:/bin" in text
        text = text.replace(STATE, str(state)).replace("PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                                       f"PATH={bin_dir}:/usr/bin:/bin")
        for lib in ("/usr/lib/python3/dist-packages/hosttune", "/usr/lib/python3.9/site-packages/hosttune"):
            text = text.replace(lib, str(tmp_path / "lib" / "hosttune"))
        out[name] = tmp_path / name
        out[name].write_text(text)
    out["state"], out["log"], out["bin"] = state, tmp_path / "calls.log", bin_dir
    return out


def _run(s: Dict[str, Path], script: str, arg: str,
         rc: int = 0) -> Tuple["subprocess.CompletedProcess[str]", List[str]]:
    env = {"PATH": f"{s['bin']}:/usr/bin:/bin", "FAKE_LOG": str(s["log"]), "FAKE_RC": str(rc),
           "FAKE_STATE": str(s["state"]), "HOSTTUNE_STATE_DIR": "/home/someone/state", "LC_ALL": "C"}
    res = subprocess.run(["/bin/sh", str(s[script]), arg], env=env, capture_output=True, text=True, timeout=60)
    calls = s["log"].read_text().splitlines() if s["log"].exists() else []
    if s["log"].exists():
        s["log"].unlink()
    return res, [c for c in calls if not c.startswith(("py3clean", "deb-systemd-invoke"))]


def test_deb_remove_reverts_with_the_packages_own_places(scripts: Dict[str, Path]) -> None:
    scripts["state"].write_text("{}\n")
    res, calls = _run(scripts, "prerm", "remove")
    assert res.returncode == 0, res.stderr
    assert calls == ["tune revert|HOSTTUNE_STATE_DIR=unset"]  # the caller's HOSTTUNE_* never moves the record
    assert "hosttune:   restored vm.swappiness = 60" in res.stdout and not scripts["state"].exists()


@pytest.mark.parametrize("arg", ["upgrade", "failed-upgrade", "deconfigure"])
def test_a_deb_upgrade_keeps_what_tune_apply_changed(scripts: Dict[str, Path], arg: str) -> None:
    scripts["state"].write_text("{}\n")
    res, calls = _run(scripts, "prerm", arg)
    assert res.returncode == 0 and calls == [] and scripts["state"].exists(), res.stderr


def test_rpm_erase_reverts_and_an_upgrade_does_not(scripts: Dict[str, Path]) -> None:
    scripts["state"].write_text("{}\n")
    res, calls = _run(scripts, "preun", "1")  # rpm -U: the new package is installed, the old one's %preun runs
    assert res.returncode == 0 and calls == [] and scripts["state"].exists(), res.stderr
    res, calls = _run(scripts, "preun", "0")
    assert res.returncode == 0, res.stderr
    assert "tune revert|HOSTTUNE_STATE_DIR=unset" in calls and not scripts["state"].exists()
    assert any(c.startswith("systemctl ") for c in calls)  # the units are disabled and stopped on erase only


@pytest.mark.parametrize("script,arg", [("prerm", "remove"), ("preun", "0")])
def test_a_failed_revert_keeps_the_record_and_the_removal_goes_on(scripts: Dict[str, Path], script: str,
                                                                  arg: str) -> None:
    scripts["state"].write_text("{}\n")
    res, calls = _run(scripts, script, arg, rc=2)
    assert res.returncode == 0, res.stderr
    assert "tune revert|HOSTTUNE_STATE_DIR=unset" in calls and scripts["state"].exists()
    assert "hosttune:   cannot write /proc/sys/vm/swappiness: Read-only file system" in res.stderr
    assert f"hosttune: the revert failed (exit 2): kept {scripts['state']}" in res.stderr


def test_no_record_means_nothing_to_revert_but_a_dangling_link_is_not_nothing(scripts: Dict[str, Path]) -> None:
    res, calls = _run(scripts, "prerm", "remove")
    assert res.returncode == 0 and calls == [] and "hosttune:" not in res.stdout + res.stderr
    os.symlink(str(scripts["state"].parent / "gone"), str(scripts["state"]))
    res, calls = _run(scripts, "prerm", "remove")
    assert res.returncode == 0 and calls == ["tune revert|HOSTTUNE_STATE_DIR=unset"], res.stderr
