"""Root safety of `hosttune facts` (issue 11, issue 22) left here for their modules' test files: the text output's
escapes (commands/facts.py: tests/test_facts_cli.py), `facts --capture`'s archive (capture.py:
tests/test_capture.py), `--python` through the program gateway (programs.py: tests/test_programs.py).
The detector's own tests are in tests/test_detect_hostio.py, test_detect_torchenv.py, test_cpulist.py and
test_detect_allocators.py.

The other user is played by `nobody` (conftest `other_user`); hosttune runs as root in a subprocess
(tests/_detecthelp.py)."""

import os
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from _detecthelp import hosttune


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    d = tmp_path / "markers"
    d.mkdir(mode=0o700)
    return d / "ran"


# ---- low items: terminal escapes -------------------------------------------------------------------------------------
def test_facts_text_shows_control_characters_escaped(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "proc/cpuinfo").write_text("processor\t: 0\nmodel name\t: Evil\x1b[2J\x1b]0;owned\x07 CPU\n")
    (root / "etc/os-release").write_text('NAME="Bad\x1b[31mOS"\nID=bad\x1b[0m\nVERSION_ID="1"\n')
    (root / "etc/hostname").write_text("host\x1b[1A\u202e\n")
    done = hosttune("facts", "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\u202e" not in done.stdout
    assert "Evil\\x1b[2J" in done.stdout and "Bad\\x1b[31mOS" in done.stdout


# ---- issue 22, Low: `facts --capture X.tar.gz` never replaces a file silently ----------------------------------------
@pytest.mark.parametrize("existing", ["file", "link"])
def test_capture_refuses_to_replace_an_existing_archive_in_one_line(existing: str, tmp_path: Path) -> None:
    """Was: the existing file (a support bundle sent earlier, or anything of that name) silently replaced."""
    from conftest import run_cli

    d = tmp_path / "d"
    d.mkdir()
    out = d / "bundle.tar.gz"
    keep = d / "keep"
    keep.write_bytes(b"earlier bundle\n")
    if existing == "file":
        out.write_bytes(b"earlier bundle\n")
    else:
        out.symlink_to(keep)
    done = run_cli(["facts", "--capture", str(out)])  # in-process: refused before anything is read
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"hosttune: error: --capture {out}: exists; name a new file, or add --force to " \
                                  f"replace it", done.stderr
    assert keep.read_bytes() == b"earlier bundle\n" and os.path.lexists(out)
    assert sorted(p.name for p in d.iterdir()) == ["bundle.tar.gz", "keep"]  # no work directory left


def test_capture_force_replaces_the_archive_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--force replaces it (through the atomic writer: a new file, never written through a link at the name);
    the capture itself is the one test_capture.py runs, here a one-file tree."""
    import tarfile

    from hosttune import capture

    def small_tree(dest: Path, python: Optional[str] = None) -> Dict[str, Any]:
        dest.mkdir(mode=0o700)
        (dest / "capture.json").write_text("{}\n")
        return {"files": 1, "bytes": 3, "placeholders": 0, "refused": {}}

    monkeypatch.setattr(capture, "capture_tree", small_tree)
    d = tmp_path / "d"
    d.mkdir()
    keep = d / "keep"
    keep.write_bytes(b"earlier bundle\n")
    out = d / "bundle.tgz"
    out.symlink_to(keep)
    with pytest.raises(capture.UserError, match="add --force"):
        capture.capture(str(out))
    capture.capture(str(out), force=True)
    assert not out.is_symlink() and keep.read_bytes() == b"earlier bundle\n"
    with tarfile.open(out) as tar:
        assert tar.getnames() == ["bundle", "bundle/capture.json"]
    assert sorted(p.name for p in d.iterdir()) == ["bundle.tgz", "keep"]


def test_force_without_capture_is_one_line() -> None:
    from conftest import run_cli

    done = run_cli(["facts", "--force"])
    assert done.returncode == 2 and done.stderr.strip() == \
        "hosttune: error: --force goes with --capture DEST.tar.gz (it replaces an existing archive)", done.stderr


def test_capture_never_replaces_an_archive_that_appeared_while_it_ran(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from hosttune import capture

    d = tmp_path / "d"
    d.mkdir()
    out = d / "bundle.tar.gz"

    def tree_then_someone_writes_the_archive(dest: Path, python: Optional[str] = None) -> Dict[str, Any]:
        dest.mkdir(mode=0o700)
        out.write_bytes(b"theirs\n")
        return {"files": 0, "bytes": 0, "placeholders": 0, "refused": {}}

    monkeypatch.setattr(capture, "capture_tree", tree_then_someone_writes_the_archive)
    with pytest.raises(capture.UserError, match="exists; name a new file, or add --force"):
        capture.capture(str(out))
    assert out.read_bytes() == b"theirs\n" and sorted(p.name for p in d.iterdir()) == ["bundle.tar.gz"]


# ---- issue 22 item 2: --python of facts and doctor goes through the program gateway ----------------------------------
@pytest.mark.parametrize("command", ["facts", "doctor"])
def test_another_users_python_named_by_option_is_refused_before_it_runs(command: str, other_user: Any,
                                                                         marker: Path) -> None:
    """Was: `facts --python` checked only that the file is executable, `doctor --python` not even that as root;
    the torch probe then ran the other user's program as root."""
    fake = other_user.write("venv/bin/python3", f"#!/bin/sh\necho \"$0\" >> {marker}\n", 0o755)
    done = hosttune(command, "--json", "--python", str(fake), cwd=Path("/"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--python" in lines[0] and "owned by nobody" in lines[0], done.stderr
    assert not marker.exists(), marker.read_text()
