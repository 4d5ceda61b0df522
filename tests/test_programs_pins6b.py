"""hosttune/programs.py's PATH rule as root (issue 21, mutation round 6): an entry that does not exist is passed over
in silence (distros' default PATHs name /usr/local/sbin, /snap/bin, /usr/games, often absent: nothing anybody could
plant there is run, and nothing to report), while one that exists but another user could write is named among the
skipped entries, and `facts` notes it ("PATH: not searched as root: ...")."""

import os
from pathlib import Path

import pytest

from hosttune import programs
from hosttune.detect.hostio import HostIO


@pytest.fixture
def as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """The root rule (trust.is_root/trusted_owners read the effective uid); a no-op when the tests run as root."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)


@pytest.mark.usefixtures("as_root")
def test_as_root_a_missing_path_dir_is_not_listed_as_skipped(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-dir")
    loose = tmp_path / "anybodys"
    loose.mkdir()
    loose.chmod(0o777)  # anybody could plant a program here: skipped and named
    path = os.pathsep.join([missing, str(loose), "/usr/bin", "/no-such-dir/bin", "/bin"])
    keep, skipped = programs.trusted_path_dirs(path)
    assert keep == ["/usr/bin", "/bin"]
    assert [s.split(": ", 1)[0] for s in skipped] == [str(loose)], skipped
    found, skipped_too = programs.trusted_which("sh", path)
    assert found in ("/usr/bin/sh", "/bin/sh") and skipped_too == skipped


@pytest.mark.usefixtures("as_root")
def test_as_root_facts_notes_only_the_path_dirs_it_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loose = tmp_path / "anybodys"
    loose.mkdir()
    loose.chmod(0o777)
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "gone"), str(loose), "/usr/bin", "/bin"]))
    io = HostIO(Path("/"))
    assert io.which("sh") in ("/usr/bin/sh", "/bin/sh")
    notes = [m for m in io.missing if m.startswith("PATH: ")]
    assert len(notes) == 1 and notes[0].startswith(f"PATH: not searched as root: {loose}: "), io.missing
