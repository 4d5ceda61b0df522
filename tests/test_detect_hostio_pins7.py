"""Pins for hosttune.detect.hostio (issue 21, practice round HDOC): each test fails with one planted change."""

from pathlib import Path

from hosttune.detect.hostio import HostIO

MISSING = "hosttune-pins7-no-such-program"
ENV = {"PATH": "/usr/bin:/bin"}  # nothing a root run would drop (and note)


def test_run_of_a_missing_program_names_it(tmp_path: Path) -> None:
    io = HostIO(Path("/"))
    assert io.run([MISSING, "--version", "extra"], env=ENV) is None
    assert io.last_error == f"cannot run {MISSING}: not found"
    assert io.missing == [f"{MISSING}: cannot run {MISSING}: not found"]
    # note=False: the reason is kept, nothing more is noted; a second failure with note adds no duplicate line
    assert io.run([MISSING], env=ENV, note=False) is None and io.last_error == f"cannot run {MISSING}: not found"
    assert io.run([MISSING, "x"], env=ENV) is None
    assert io.missing == [f"{MISSING}: cannot run {MISSING}: not found"]


def test_run_with_a_foreign_root_starts_nothing(tmp_path: Path) -> None:
    io = HostIO(tmp_path)
    assert io.run(["true"]) is None
    assert io.last_error == "no subprocess with a foreign root" and io.missing == []


def test_a_missing_program_by_path_is_noted_under_its_base_name(tmp_path: Path) -> None:
    io = HostIO(Path("/"))
    gone = str(tmp_path / "bin" / "scontrol")
    assert io.run([gone, "-o"], env=ENV) is None
    assert io.last_error == f"cannot run {gone}: not found"
    assert io.missing == [f"scontrol: cannot run {gone}: not found"]


def test_which_off_path_searches_only_trusted_folders_as_root(tmp_path: Path) -> None:
    """A program off PATH, in an extra folder: found in a 0755 folder; in a world-writable one only when not root
    (as root such a folder is skipped: anyone could have put the program there)."""
    import os

    name = "hosttune-pins7-tool"
    ok, shared = tmp_path / "ok", tmp_path / "shared"
    for d in (ok, shared):
        d.mkdir()
        (d / name).write_text("#!/bin/sh\n")
        (d / name).chmod(0o755)
    shared.chmod(0o777)
    io = HostIO(Path("/"))
    assert io.which(name, extra_dirs=[str(ok)]) == f"{ok}/{name}"
    want = None if os.geteuid() == 0 else f"{shared}/{name}"
    assert io.which(name, extra_dirs=[str(shared)]) == want
    assert io.which(name) is None
