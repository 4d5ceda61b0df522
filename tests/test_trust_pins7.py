"""Pins for hosttune/trust.py (issue 21, practice round HTOP): the link rule of check_links judges the directory
that holds each link (whoever can write there re-points it), never the directory the link points into."""

import os
from pathlib import Path

import pytest

from hosttune import trust

ELF = b"\x7fELF\x02\x01\x01" + b"\0" * 57


def _dirs(tmp_path: Path) -> "tuple[Path, Path]":
    safe, open_ = tmp_path / "safe", tmp_path / "open"
    safe.mkdir(mode=0o755)
    open_.mkdir()
    os.chmod(safe, 0o755)
    os.chmod(open_, 0o777)
    return safe, open_


def test_a_link_in_a_world_writable_directory_is_refused_though_it_points_into_a_safe_one(tmp_path: Path) -> None:
    safe, open_ = _dirs(tmp_path)
    real = safe / "libreal.so"
    real.write_bytes(ELF)
    link = open_ / "libx.so"
    link.symlink_to(real)
    with pytest.raises(trust.Untrusted) as info:
        trust.check_links(str(link), "preload library", frozenset({0}))
    who = "root" if trust.is_root() else "you"
    assert str(info.value) == (
        f"refusing preload library {link}: it is reached through the link {link}, and its directory {open_} is "
        f"writable by group and others, so another user could change what runs as {who}; fix: name the library "
        f"itself ({real}) or chmod go-w {open_}")


@pytest.mark.skipif(os.geteuid() != 0, reason="the link must be root's own (owners {0})")
def test_roots_link_in_a_safe_directory_passes_wherever_it_points(tmp_path: Path) -> None:
    safe, open_ = _dirs(tmp_path)
    real = open_ / "libreal.so"
    real.write_bytes(ELF)
    link = safe / "libx.so"
    link.symlink_to(real)
    assert trust.check_links(str(link), "preload library", frozenset({0})) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_the_owner_rule_is_the_owners_given_not_root_alone(tmp_path: Path) -> None:
    safe, _ = _dirs(tmp_path)
    mine = safe / "mine.yaml"
    mine.write_text("x: 1\n")
    theirs = safe / "theirs.yaml"
    theirs.write_text("x: 1\n")
    os.chown(theirs, 4242, 4242)
    both = frozenset({0, 4242})
    assert trust.problem(theirs, owners=both) == (str(theirs), None)
    assert trust.problem(mine, owners=both) == (str(mine), None)
    assert trust.problem(mine, owners=frozenset({4242})) == (str(mine), f"{mine} is owned by root")
    assert trust.problem(theirs, owners=frozenset({0})) == (
        str(theirs), f"{theirs} is owned by {trust._owner_name(4242)}")
