"""Pins (issue 21, round 8 practice) for hosttune/tune/rootfs.py: every entry point of the tree writer splits its
path the same way (`..` refused with EINVAL before anything is opened, empty and `.` components dropped), so a
kernel attribute write can never climb out of the tree; rmdir_if_empty makes nothing on the way; a failed
component walk names the whole path."""

import errno
from pathlib import Path
from typing import Callable

import pytest

from hosttune.tune.rootfs import Tree


def _tree(tmp_path: Path) -> Tree:
    root = tmp_path / "root"
    (root / "sys/kernel").mkdir(parents=True)
    (root / "sys/kernel/attr").write_text("old\n")
    (tmp_path / "outside").write_text("host\n")
    return Tree(root)


@pytest.mark.parametrize("call", [
    lambda t: t.write_attr("sys/../../outside", "x"),
    lambda t: t.write_attr("sys/kernel/../../../outside", "x"),
    lambda t: t.write_file("../outside", "x"),
    lambda t: t.read("sys/../../outside"),
    lambda t: t.remove("../outside"),
    lambda t: t.makedirs("sys/../../made"),
], ids=["attr", "attr-deep", "file", "read", "remove", "makedirs"])
def test_dotdot_is_refused_before_anything_is_opened(tmp_path: Path, call: Callable[[Tree], object]) -> None:
    tree = _tree(tmp_path)
    with pytest.raises(OSError) as info:
        call(tree)
    assert (info.value.errno, info.value.strerror) == (errno.EINVAL, "'..' in a tune path")
    assert (tmp_path / "outside").read_text() == "host\n"
    assert not (tmp_path / "made").exists()


def test_empty_and_dot_components_are_dropped(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    tree.write_attr("/sys//kernel/./attr/", "new")
    assert (tmp_path / "root/sys/kernel/attr").read_text() == "new\n"
    assert tree.read("./sys/kernel//attr") == "new\n"


def test_rmdir_if_empty_makes_nothing_on_the_way(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    assert tree.rmdir_if_empty("etc/sysctl.d") is False
    assert not (tmp_path / "root/etc").exists()
    (tmp_path / "root/etc/sysctl.d").mkdir(parents=True)
    assert tree.rmdir_if_empty("etc/sysctl.d") is True and (tmp_path / "root/etc").is_dir()
    assert tree.rmdir_if_empty("sys/kernel") is False  # not empty


def test_a_file_where_a_directory_should_be_names_the_whole_path(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    with pytest.raises(OSError) as info:
        tree.write_file("sys/kernel/attr/x.conf", "x")
    assert (info.value.errno, info.value.filename) == (errno.ENOTDIR, str(tmp_path / "root/sys/kernel/attr"))
