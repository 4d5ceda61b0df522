"""Pins for hosttune/trust.py (issue 21, practice round HTOP8): the one-line refusals of host_tree, check_path,
check_library and check_links, word for word, on trees under tmp_path."""

import os
import sys
from pathlib import Path

import pytest

from hosttune import trust
from hosttune.errors import UserError

IS_ROOT = os.geteuid() == 0
ROOT_ONLY = pytest.mark.skipif(not IS_ROOT, reason="the root trust rule applies when running as root")


def _err(fn, *args, **kw) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(UserError) as info:
        fn(*args, **kw)
    return str(info.value)


def test_host_tree_refusals_and_answer(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("")
    d = tmp_path / "tree"
    d.mkdir()
    link = tmp_path / "link"
    link.symlink_to(d)
    assert [
        _err(trust.host_tree, ""),
        _err(trust.host_tree, tmp_path / "missing"),
        _err(trust.host_tree, f),
        _err(trust.host_tree, f / "below"),
        _err(trust.host_tree, str(f), option="--capture"),
    ] == [
        "--root : no such directory",
        f"--root {tmp_path / 'missing'}: no such directory",
        f"--root {f}: not a directory (it is a regular file)",
        f"--root {f / 'below'}: no such directory",
        f"--capture {f}: not a directory (it is a regular file)",
    ]
    assert trust.host_tree(link) == str(d)
    assert trust.host_tree(str(d), writes=True) == str(d)


@ROOT_ONLY
def test_host_tree_written_as_root_must_pass_the_rule(tmp_path: Path) -> None:
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(0o777)
    assert trust.host_tree(d) == str(d)  # only read: any tree
    assert _err(trust.host_tree, d, writes=True) == (
        f"--root {d}: refusing to write into it as root: {d} is writable by group and others, so another user could "
        f"change where root's writes land; fix: chmod go-w {d}")


@ROOT_ONLY
def test_check_path_refusals(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("")
    d = tmp_path / "d.yaml"
    d.mkdir()
    gone = tmp_path / "gone.yaml"
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(gone)
    assert trust.check_path(f, "profile") == str(f)
    f.chmod(0o664)
    assert [_err(trust.check_path, *a, **kw) for a, kw in [
        ((gone, "profile"), {}),
        ((dangling, "profile"), {}),
        ((d, "profile"), {}),
        ((f, "profile"), {}),
        ((f, "profile"), {"kind": "dir"}),
    ]] == [
        f"profile {gone} does not exist (No such file or directory)",
        f"profile {dangling} (-> {gone}) does not exist (No such file or directory)",
        f"profile {d} is not a regular file (it is a directory); fix: a regular file is needed at {d}, not a "
        f"directory: name a file owned by root that only root can write",
        f"refusing profile {f}: {f} is writable by its group, so another user could change what runs as root; fix: "
        f"chmod go-w {f}",
        f"profile {f} is not a directory (it is a regular file); fix: a directory is needed at {f}, not a regular "
        f"file: move it aside and create the directory (mkdir -m 755 {f})",
    ]


@ROOT_ONLY
def test_check_library_refusals(tmp_path: Path) -> None:
    text = tmp_path / "libnot.so"
    text.write_text("not ELF")
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    lib = open_dir / "libpython.so"
    lib.symlink_to(os.path.realpath(sys.executable))
    assert _err(trust.check_library, "libjemalloc.so.2") == "preload library 'libjemalloc.so.2' is not an absolute path"
    assert _err(trust.check_library, text, "LD_AUDIT entry") == f"LD_AUDIT entry {text} is not an ELF shared library"
    real = os.path.realpath(sys.executable)
    assert _err(trust.check_library, str(lib)) == (
        f"refusing preload library {lib}: it is reached through the link {lib}, and its directory {open_dir} is "
        f"writable by group and others, so another user could change what runs as root; fix: name the library "
        f"itself ({real}) "
        f"or chmod go-w {open_dir}")
