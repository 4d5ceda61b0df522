"""Pins (issue 21, round 6) for hosttune/tune/tuned.py and the tune helpers it leans on (rootfs.select/selected/
iter_lines, rules.size_kib, tunables.limit_value): tuned-adm's one-line errors, which profile directory remove_profile
clears, how a bad profile name is shown, and the exact text a selector file or a size turns into. In-process, on trees
under tmp_path; tuned-adm is HostIO.run read back in-process (no program runs)."""

import subprocess
from pathlib import Path
from typing import Any, List, Optional

import pytest

from hosttune.detect.hostio import HostIO
from hosttune.errors import UserError
from hosttune.tune import rootfs, rules, tuned
from hosttune.tune.tunables import limit_value


def _io(monkeypatch: pytest.MonkeyPatch, done: Optional[subprocess.CompletedProcess],
        exe: Optional[str] = "/usr/sbin/tuned-adm", last_error: str = "") -> HostIO:
    io = HostIO(Path("/"))
    calls: List[List[str]] = []
    monkeypatch.setattr(io, "which", lambda name: exe if name == "tuned-adm" else None)

    def run(argv: List[str], **kw: Any) -> Optional[subprocess.CompletedProcess]:
        calls.append(argv)
        io.last_error = last_error
        return done

    monkeypatch.setattr(io, "run", run)
    io.calls = calls  # type: ignore[attr-defined]
    return io


def test_tuned_adm_failure_is_the_last_line_of_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    io = _io(monkeypatch, subprocess.CompletedProcess([], 1, "out line\n", "warning: x\nCannot find profile 'nope'.\n"))
    with pytest.raises(UserError) as exc:
        tuned.adm(io, ["profile", "nope"])
    assert str(exc.value) == "tuned-adm profile nope: Cannot find profile 'nope'."
    assert io.calls == [["/usr/sbin/tuned-adm", "profile", "nope"]]  # type: ignore[attr-defined]


def test_tuned_adm_failure_without_stderr_is_stdouts_last_line_then_the_status(monkeypatch: pytest.MonkeyPatch) -> None:
    io = _io(monkeypatch, subprocess.CompletedProcess([], 2, "first\nsecond\n", "  \n"))
    with pytest.raises(UserError, match=r"^tuned-adm off: second$"):
        tuned.adm(io, ["off"])
    io = _io(monkeypatch, subprocess.CompletedProcess([], 3, "", ""))
    with pytest.raises(UserError, match=r"^tuned-adm off: exit status 3$"):
        tuned.adm(io, ["off"])


def test_tuned_adm_success_raises_nothing_and_a_run_that_failed_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    io = _io(monkeypatch, subprocess.CompletedProcess([], 0, "", "a warning on stderr\n"))
    assert tuned.adm(io, ["profile", "hosttune"]) is None
    io = _io(monkeypatch, None, last_error="timed out after 120 s")
    with pytest.raises(UserError, match=r"^tuned-adm profile hosttune: timed out after 120 s$"):
        tuned.adm(io, ["profile", "hosttune"])
    io = _io(monkeypatch, None, exe=None)
    with pytest.raises(UserError, match="tuned-adm is not installed"):
        tuned.adm(io, ["off"])
    assert io.calls == []  # type: ignore[attr-defined]


def test_a_bad_profile_name_is_shown_whole_when_short_and_printable_else_as_repr() -> None:
    with pytest.raises(ValueError) as exc:
        tuned.check_names("balanced bad/name", "etc/tuned/active_profile")
    assert str(exc.value) == ("etc/tuned/active_profile: 'bad/name' is not a tuned profile name "
                              "(letters, digits, '_', '.', '-')")
    long = "x" * 70 + "/"
    with pytest.raises(ValueError) as exc:
        tuned.check_names(long, "w")
    assert str(exc.value).startswith("w: " + repr(repr("x" * 60)) + " is not")
    with pytest.raises(ValueError) as exc:
        tuned.check_names("a\x1bb", "w")
    assert str(exc.value).startswith("w: " + repr(repr("a\x1bb")) + " is not")
    assert tuned.check_names("  a  b.c  ", "w") == ["a", "b.c"] and tuned.check_names(None, "w") == []
    assert tuned.valid_name("x" * 128) and not tuned.valid_name("x" * 129)
    assert not tuned.valid_name("..") and not tuned.valid_name(".") and tuned.valid_name("...")


def _ours(root: Path, rel: str) -> Path:
    p = root / rel / "tuned.conf"
    p.parent.mkdir(parents=True)
    p.write_text(tuned.MARKER + "\n[main]\n")
    return p


def test_remove_profile_clears_the_2_24_layouts_directory_past_an_admins_profile(tmp_path: Path) -> None:
    root = tmp_path / "t"
    admin = root / "etc/tuned/hosttune/tuned.conf"
    admin.parent.mkdir(parents=True)
    admin.write_text("[main]\nsummary=mine\n")
    mine = _ours(root, "etc/tuned/profiles/hosttune")
    assert tuned.remove_profile(root) is True
    assert not mine.exists() and not mine.parent.exists() and (root / "etc/tuned/profiles").is_dir()
    assert admin.read_text() == "[main]\nsummary=mine\n"
    assert tuned.remove_profile(root) is False


def test_remove_profile_keeps_the_directory_when_something_else_is_in_it(tmp_path: Path) -> None:
    root = tmp_path / "t"
    mine = _ours(root, "etc/tuned/hosttune")
    (mine.parent / "script.sh").write_text("#!/bin/sh\n")
    assert tuned.remove_profile(root) is True
    assert not mine.exists() and (mine.parent / "script.sh").exists()
    assert tuned.remove_profile(tmp_path / "empty") is False


def test_a_link_at_the_profile_is_skipped_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "t"
    outside = tmp_path / "outside.conf"
    outside.write_text(tuned.MARKER + "\n")
    (root / "etc/tuned/hosttune").mkdir(parents=True)
    (root / "etc/tuned/hosttune/tuned.conf").symlink_to(outside)
    mine = _ours(root, "etc/tuned/profiles/hosttune")
    assert tuned.remove_profile(root) is True
    assert outside.exists() and (root / "etc/tuned/hosttune/tuned.conf").is_symlink() and not mine.exists()


def test_render_profile_sections_in_order_with_only_the_given_settings() -> None:
    text = tuned.render_profile("a b", {"swappiness": "10", "thp": "madvise", "governor": "performance",
                                         "memlock": "unlimited"})
    lines = text.splitlines()
    assert lines[:5] == [tuned.MARKER, "", "[main]", "summary=hosttune: PyTorch training host settings on top of a b",
                         "include=a,b"]
    sections = [ln for ln in lines if ln.startswith("[")]
    assert sections == ["[main]", "[vm]", "[sysctl]", "[cpu]"]
    assert "memlock" not in text and text.endswith("\n") and not text.endswith("\n\n")
    bare = tuned.render_profile(None, {}).splitlines()
    assert bare == [tuned.MARKER, "", "[main]", "summary=hosttune: PyTorch training host settings"]
    with pytest.raises(ValueError, match="for swappiness cannot go into tuned.conf"):
        tuned.render_profile(None, {"swappiness": "1;2"})
    with pytest.raises(ValueError):
        tuned.render_profile(None, {"swappiness": "  "})
    with pytest.raises(ValueError):
        tuned.render_profile(None, {"swappiness": "1\t2"})


def test_profile_rel_follows_the_trees_layout(tmp_path: Path) -> None:
    assert tuned.profile_rel(tmp_path) == "etc/tuned/hosttune"
    (tmp_path / "etc/tuned/profiles").mkdir(parents=True)
    assert tuned.profile_rel(tmp_path) == "etc/tuned/profiles/hosttune"
    other = tmp_path / "o"
    (other / "usr/lib/tuned/profiles").mkdir(parents=True)
    assert tuned.profile_rel(other) == "etc/tuned/profiles/hosttune"
    assert tuned.profile_dir(other) == other / "etc/tuned/profiles/hosttune"


def test_the_running_state_of_a_tree_is_its_pid_file(tmp_path: Path) -> None:
    assert tuned.is_running(tmp_path) is False
    (tmp_path / "run/tuned").mkdir(parents=True)
    (tmp_path / "run/tuned/tuned.pid").write_text("4242\n")
    (tmp_path / "proc/4242").mkdir(parents=True)
    (tmp_path / "proc/4242/comm").write_text("tuned\n")
    assert tuned.is_running(tmp_path) is True


# ---- rootfs's text helpers, rules.size_kib, tunables.limit_value ---------------------------------------------------
def test_select_brackets_the_value_and_keeps_the_trailing_newline() -> None:
    assert rootfs.select("[always] madvise never\n", "madvise") == "always [madvise] never\n"
    assert rootfs.select("always madvise [never]", "always") == "[always] madvise never"
    assert rootfs.select("a [b] c  \n\n", "c") == "a b [c]  \n\n"
    with pytest.raises(OSError) as exc:
        rootfs.select("[a] b\n", "z")
    assert "'z' is not one of a b" in str(exc.value)


def test_selected_is_the_bracketed_word_else_the_stripped_text() -> None:
    assert rootfs.selected("always [madvise] never\n") == "madvise"
    assert rootfs.selected("  60\n") == "60"
    assert rootfs.selected(" \n") is None and rootfs.selected(None) is None
    assert rootfs.selected("[a b] c") == "[a b] c"  # a space is no selector's word


def test_iter_lines_skips_blanks_and_both_comment_styles() -> None:
    text = "  # c\n\n; ini\n  a b  \n\t\nc\n"
    assert list(rootfs.iter_lines(text)) == ["a b", "c"]
    assert list(rootfs.iter_lines(None)) == []
    assert list(rootfs.iter_lines("a\nb")) == ["a", "b"] and list(rootfs.iter_lines("only")) == ["only"]


@pytest.mark.parametrize("size, mem, kib", [
    ("50%", 1000, 500), ("33%", 1000, 330), ("size=10%", 999, 99), ("50%", 0, None), ("50%", None, None),
    ("2g", None, 2 << 20), ("3M", None, 3072), ("7k", None, 7), ("1t", None, 1 << 30), ("4096", None, 4),
    ("size=8G", None, 8 << 20), ("", 10, None), (None, 10, None), ("xg", None, None), ("1.5g", None, None),
])
def test_size_kib(size: Optional[str], mem: Optional[int], kib: Optional[int]) -> None:
    assert rules.size_kib(size, mem) == kib


def test_shm_big_enough_allows_tmpfs_page_rounding_only() -> None:
    assert rules.shm_slack(1000) == 4 and rules.shm_slack(10_000_000) == 10_000
    assert rules.shm_big_enough(996, 1000) and not rules.shm_big_enough(995, 1000)
    assert rules.shm_big_enough(9_990_000, 10_000_000) and not rules.shm_big_enough(9_989_999, 10_000_000)


def test_limit_value_is_the_last_soft_line_for_everyone() -> None:
    text = ("# * soft memlock 1\n* soft memlock 64\n@grp soft memlock 5\n* hard memlock 9\nroot - memlock 3\n"
            "* - memlock 128\n* soft nofile 1024\n* soft memlock 1 extra\n")
    assert limit_value(text, "memlock") == "128"
    assert limit_value(text, "nofile") == "1024"
    assert limit_value("* soft memlock infinity\n", "memlock") == "unlimited"
    assert limit_value("* soft memlock -1\n", "memlock") == "unlimited"
    assert limit_value("* soft memlock unlimited\n* soft memlock 8\n", "memlock") == "8"
    assert limit_value(None, "memlock") is None and limit_value("* hard memlock 1\n", "memlock") is None
