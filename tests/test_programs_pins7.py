"""Pins for hosttune/programs.py (issue 21, practice round HTOP): run/popen resolve a bare name on the PATH of the
environment they are given (the child's), not on this process's."""

import os
import sys
from pathlib import Path
from typing import Tuple

import pytest

from hosttune import programs


def _bin(tmp_path: Path) -> Tuple[Path, str]:
    d = tmp_path / "bin"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    prog = d / "ht-pins7-prog"
    prog.write_text(f"#!{sys.executable}\nimport os, sys\nprint(sys.argv[0], os.environ['MARK'])\n")
    os.chmod(prog, 0o755)
    return d, prog.name


def test_run_finds_a_bare_name_on_the_given_environments_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d, name = _bin(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    env = {"PATH": str(d), "MARK": "child"}
    done = programs.run([name], "the test program", env=env, capture_output=True, text=True, timeout=600)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{d / name} child\n", "")
    proc = programs.popen([name], "the test program", env=env, stdout=-1, text=True)
    out, _ = proc.communicate(timeout=600)
    assert (proc.returncode, out) == (0, f"{d / name} child\n")
    with pytest.raises(programs.NotFound):
        programs.run([name], "the test program", env={"PATH": "/usr/bin:/bin"}, capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="as an ordinary user PATH is used as is")
def test_as_root_path_entries_are_kept_once_and_each_skipped_one_says_why(tmp_path: Path) -> None:
    d, name = _bin(tmp_path)
    open_ = tmp_path / "open"
    open_.mkdir()
    os.chmod(open_, 0o777)
    prog = d / name
    path = os.pathsep.join([str(d), "", "rel/bin", str(prog), str(tmp_path / "gone"), str(open_), str(d)])
    keep, skipped = programs.trusted_path_dirs(path)
    assert keep == [str(d)]
    assert skipped == [
        "(empty): not an absolute path",
        "rel/bin: not an absolute path",
        f"{prog}: is not a directory (it is a regular file)",
        f"{open_}: {open_} is writable by group and others",
    ]
    assert programs.trusted_which(name, path) == (str(prog), skipped)
