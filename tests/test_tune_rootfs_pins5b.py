"""Pin for mutation round 5's survivor in hosttune/tune/rootfs.py (issue 21): in a captured tree a kernel selector
file (`always [madvise] never`) takes only a value it offers, as the kernel does (EINVAL); the refused write leaves
the file as it was, and an offered one moves the brackets."""

import errno
from pathlib import Path

import pytest

from hosttune.tune import rootfs
from hosttune.tune.rootfs import Tree

THP = "sys/kernel/mm/transparent_hugepage/enabled"


def thp_tree(tmp_path: Path) -> Path:
    f = tmp_path / THP
    f.parent.mkdir(parents=True)
    f.write_text("always [madvise] never\n")
    return f


def test_select_refuses_a_value_the_selector_does_not_offer() -> None:
    with pytest.raises(OSError) as err:
        rootfs.select("always [madvise] never\n", "sometimes")
    assert err.value.errno == errno.EINVAL
    assert "'sometimes' is not one of always madvise never" in str(err.value)
    assert rootfs.select("always [madvise] never\n", "never") == "always madvise [never]\n"


def test_writing_an_unoffered_value_into_a_trees_selector_file_fails_and_changes_nothing(tmp_path: Path) -> None:
    f = thp_tree(tmp_path)
    tree = Tree(tmp_path)
    with pytest.raises(OSError) as err:
        tree.write_attr(THP, "sometimes")
    assert err.value.errno == errno.EINVAL
    assert f.read_text() == "always [madvise] never\n"
    tree.write_attr(THP, "always")
    assert f.read_text() == "[always] madvise never\n"
    assert rootfs.selected(tree.read(THP)) == "always"
