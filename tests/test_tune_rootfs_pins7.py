"""Pins (issue 21, round 7 practice) for hosttune/tune/rootfs.py: Tree.read_only (only the live host can say; a path
it cannot stat is not read-only), and the pure helpers as whole tables: selected(), select(), iter_lines(),
check_line()."""

import errno
from pathlib import Path
from typing import Optional

import pytest

from hosttune.tune.rootfs import Tree, check_line, iter_lines, select, selected


def test_read_only_is_false_for_a_path_the_live_host_cannot_stat_and_for_a_writable_one(tmp_path: Path) -> None:
    live = Tree(Path("/"))
    assert live.live is True
    assert live.read_only("no/such/dir-hmon-pins7") is False
    assert live.read_only(str(tmp_path).lstrip("/")) is False
    tree = Tree(tmp_path)  # a tree below --root: never read-only (a tree's mounts are not the host's)
    (tmp_path / "proc/sys").mkdir(parents=True)
    assert tree.live is False and tree.read_only("proc/sys") is False


@pytest.mark.parametrize("text,want", [
    (None, None), ("", None), ("  \n", None), ("always [madvise] never\n", "madvise"),
    ("[always] madvise never", "always"), ("performance\n", "performance"), (" 60 ", "60"), ("a [b] [c]", "b"),
])
def test_selected(text: Optional[str], want: Optional[str]) -> None:
    assert selected(text) == want


def test_select_brackets_the_value_and_keeps_the_trailing_space() -> None:
    assert select("always [madvise] never\n", "never") == "always madvise [never]\n"
    assert select("[a] b", "a") == "[a] b"
    assert select("a b  \t", "b") == "a [b]  \t"
    with pytest.raises(OSError) as info:
        select("a [b]", "c")
    assert info.value.args == (errno.EINVAL, "'c' is not one of a b")


def test_iter_lines_skips_comments_and_blanks_and_strips() -> None:
    assert list(iter_lines("# c\n; d\n  x = 1  \n\n\ty\n#z\n")) == ["x = 1", "y"]
    assert list(iter_lines(None)) == [] and list(iter_lines("")) == []


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "\x00", "tail\n", "\tx", "x\x7f", "\x1b[0m"])
def test_check_line_refuses_any_control_character_anywhere(bad: str) -> None:
    with pytest.raises(OSError) as info:
        check_line(bad, "etc/x.conf")
    assert info.value.errno == errno.EINVAL and info.value.filename == "etc/x.conf"
    assert info.value.strerror == f"refusing a value with a newline or control character ({bad[:60]!r})"


def test_check_line_returns_a_clean_line_as_it_is() -> None:
    assert check_line("vm.swappiness = 10", "w") == "vm.swappiness = 10"
    assert check_line("", "w") == "" and check_line("é ü", "w") == "é ü"
