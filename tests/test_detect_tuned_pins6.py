"""tuned installed without /etc/tuned (issue 21): its profile directories alone say it is installed; with no
/etc/tuned nothing tells whether the daemon runs, and there is no active profile (hosttune.detect.tuned)."""

from pathlib import Path

import pytest

from hosttune.detect import tuned
from hosttune.detect.hostio import HostIO
from hosttune.facts import Tuned


@pytest.mark.parametrize("rel", ["usr/lib/tuned/balanced/tuned.conf", "usr/lib/tuned/profiles/balanced/tuned.conf"])
def test_profile_directories_alone_mean_installed(tmp_path: Path, rel: str) -> None:
    p = tmp_path / rel
    p.parent.mkdir(parents=True)
    p.write_text("[main]\n")
    io = HostIO(tmp_path)
    assert tuned.probe(io) == Tuned(installed=True, running=None, profile=None, mode=None)
    assert io.missing == []


def test_etc_tuned_alone_means_installed_and_not_running(tmp_path: Path) -> None:
    (tmp_path / "etc/tuned").mkdir(parents=True)
    assert tuned.probe(HostIO(tmp_path)) == Tuned(installed=True, running=False)
    (tmp_path / "usr/lib/tunedx").mkdir(parents=True)
    assert tuned.probe(HostIO(tmp_path / "usr")) == Tuned()
