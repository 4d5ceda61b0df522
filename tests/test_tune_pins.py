"""Pins for tune's marker line (hosttune/tune/state.py, hosttune/tune/tuned.py) from issue 21's mutation run: a file
is hosttune's only when its FIRST line is the marker; an admin's file that quotes the marker further down is the
admin's, and apply leaves it."""

from pathlib import Path

import pytest
from conftest import build_tree

from hosttune.tune import state, tuned
from hosttune.tune.model import MARKER

QUOTING = "[main]\ninclude=balanced\n# copied from hosttune's:\n" + MARKER + "\n"


def test_only_a_first_line_marker_makes_a_file_hosttunes() -> None:
    assert state.ours(MARKER + "\nvm.swappiness = 10\n")
    assert not state.ours("# the site's own\n" + MARKER + "\n")
    assert not state.ours(None)


def test_an_admins_tuned_profile_quoting_the_marker_below_line_one_is_left_alone(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "t", {"etc/tuned/hosttune/tuned.conf": QUOTING})
    with pytest.raises(OSError, match="no marker line"):
        tuned.write_profile(root, "balanced", {"thp": "madvise"})
    assert (root / "etc/tuned/hosttune/tuned.conf").read_text() == QUOTING
    assert tuned.remove_profile(root) is False
    assert (root / "etc/tuned/hosttune/tuned.conf").read_text() == QUOTING
