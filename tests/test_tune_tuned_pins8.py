"""Pins (issue 21, round 8 practice) for hosttune/tune/tuned.py: every value render_profile refuses, with its whole
message (the value shown as repr: a newline or tab is visible); a profile that includes itself; the whole text of
a profile on top of two profiles (values stripped, ids tuned does not handle left out); and `switch` on a tree
leaves what `tuned-adm profile` leaves (active_profile, profile_mode=manual)."""

from pathlib import Path

import pytest

from hosttune.tune import tuned


@pytest.mark.parametrize("value", ["", "  ", "a#b", "x;y", "[vm]", "a\nb", "a\rb", "a\tb", "a\x01b"])
def test_a_value_that_could_break_tuned_conf_is_refused_shown_as_repr(value: str) -> None:
    with pytest.raises(ValueError) as info:
        tuned.render_profile(None, {"swappiness": "10", "thp": value})
    assert str(info.value) == f"tuned profile: value {value!r} for thp cannot go into tuned.conf"


def test_a_profile_never_includes_itself() -> None:
    with pytest.raises(ValueError) as info:
        tuned.render_profile("balanced hosttune", {})
    assert str(info.value) == "tuned profile: hosttune cannot include itself"


def test_the_whole_profile_on_top_of_two() -> None:
    settings = {"thp": " madvise ", "swappiness": "10", "governor": "performance", "nofile": "1", "shm": "size=50%"}
    text = tuned.render_profile("balanced powersave", settings)
    assert text == "\n".join([
        tuned.MARKER, "", "[main]", "summary=hosttune: PyTorch training host settings on top of balanced powersave",
        "include=balanced,powersave", "", "[vm]", "transparent_hugepages=madvise", "", "[sysctl]", "vm.swappiness=10",
        "", "[cpu]", "governor=performance", ""])
    assert tuned.render_profile(None, {}) == "\n".join([
        tuned.MARKER, "", "[main]", "summary=hosttune: PyTorch training host settings", ""])


def test_switch_on_a_tree_writes_what_tuned_adm_leaves(tmp_path: Path) -> None:
    tuned.switch(tmp_path, "hosttune")
    assert (tmp_path / "etc/tuned/active_profile").read_text() == "hosttune\n"
    assert (tmp_path / "etc/tuned/profile_mode").read_text() == "manual\n"
    tuned.switch(tmp_path, "balanced  powersave")
    assert (tmp_path / "etc/tuned/active_profile").read_text() == "balanced powersave\n"
    with pytest.raises(ValueError) as info:
        tuned.switch(tmp_path, " ")
    assert str(info.value) == "tuned profile name: empty"
