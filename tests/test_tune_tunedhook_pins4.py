"""Pins of mutation round 4 (issue 21) on hosttune/tune/tunedhook.py and txn.py: what a run of apply/revert hands
tuned and gives back (which files, which bytes and modes, which changes it reports), and the undo log's order.
Direct calls on --root trees under tmp_path only (no program runs with a foreign root)."""

import os
import stat
from pathlib import Path
from typing import Any, Dict, List

import pytest
from test_tune import build_tree, host_tree, snapshot

import hosttune.tune as tune
from hosttune.errors import UserError
from hosttune.tune import tuned, tunedhook
from hosttune.tune.model import MARKER, Change
from hosttune.tune.rootfs import Tree
from hosttune.tune.txn import Txn, edit_blocks

ACTIVE = "etc/tuned/active_profile"
MODE = "etc/tuned/profile_mode"
CONF = "etc/tuned/hosttune/tuned.conf"


def _tuned_host(tmp_path: Path, files: Dict[str, str]) -> Path:
    root = host_tree(tmp_path / "host")
    build_tree(root, {"run/tuned/tuned.pid": "4242\n", "proc/4242/comm": "tuned\n", **files})
    return root


def test_hand_over_writes_the_profile_and_switches_a_tree_keeping_modes(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {ACTIVE: "throughput-performance\n", MODE: "auto\n"})
    os.chmod(root / ACTIVE, 0o600)
    os.chmod(root / MODE, 0o640)
    tree = Tree(root)
    state: Dict[str, Any] = {"applied": {"swappiness": 10}}
    txn = Txn(tree)
    tunedhook.hand_over(tree, state, txn, False)
    assert state["tuned"] == {"previous": "throughput-performance",
                              "files": {ACTIVE: {"text": "throughput-performance\n", "mode": 0o600},
                                        MODE: {"text": "auto\n", "mode": 0o640}}}
    assert (root / ACTIVE).read_text() == "hosttune\n" and (root / MODE).read_text() == "manual\n"
    assert stat.S_IMODE(os.stat(root / ACTIVE).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(root / MODE).st_mode) == 0o640
    text = (root / CONF).read_text()
    assert text == tuned.render_profile("throughput-performance", {"swappiness": "10"})
    assert "include=throughput-performance" in text and "vm.swappiness=10" in text
    assert len(txn.undo) == 3  # the profile, active_profile, profile_mode: each undone by the log
    assert txn.rollback() == []
    assert (root / ACTIVE).read_text() == "throughput-performance\n" and (root / MODE).read_text() == "auto\n"
    assert not (root / CONF).exists()


def test_hand_over_does_nothing_at_boot_or_without_tuned(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {ACTIVE: "balanced\n"})
    tree = Tree(root)
    before = snapshot(root)
    state: Dict[str, Any] = {"applied": {"swappiness": 10}}
    txn = Txn(tree)
    tunedhook.hand_over(tree, state, txn, True)
    assert snapshot(root) == before and "tuned" not in state and txn.undo == []
    (root / "run/tuned/tuned.pid").unlink()
    before = snapshot(root)
    tunedhook.hand_over(tree, state, txn, False)
    assert snapshot(root) == before and "tuned" not in state and txn.undo == []


def test_hand_over_with_no_active_profile_records_none_and_revert_removes_what_it_wrote(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {})
    before = snapshot(root)
    tune.apply(root, only=["swappiness"])
    assert (root / ACTIVE).read_text() == "hosttune\n" and (root / MODE).read_text() == "manual\n"
    assert stat.S_IMODE(os.stat(root / ACTIVE).st_mode) == 0o644
    text = (root / CONF).read_text()
    assert "include=" not in text and "on top of" not in text
    changes = tune.revert(root)
    assert snapshot(root) == before
    assert Change("tuned", "hosttune", "(none)", "the tuned profile active before the first apply", ()) in changes
    assert any(c.id == "files" and c.before.endswith(CONF) and c.after == "removed" for c in changes)


def test_a_second_apply_keeps_the_first_previous_profile_and_does_not_switch_again(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {ACTIVE: "latency-performance\n", MODE: "manual\n"})
    tune.apply(root, only=["swappiness"])
    (root / MODE).write_text("auto\n")  # tuned rewrote it; a second apply must not touch it now it is hosttune's
    tune.apply(root, only=["numa_balancing"])
    assert (root / MODE).read_text() == "auto\n"
    text = (root / CONF).read_text()
    assert "include=latency-performance" in text and "vm.swappiness=10" in text
    assert "kernel.numa_balancing=0" in text
    tune.revert(root)
    assert (root / ACTIVE).read_text() == "latency-performance\n" and (root / MODE).read_text() == "manual\n"


def test_a_non_utf8_active_profile_fails_the_apply_and_leaves_the_tree(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {})
    (root / ACTIVE).parent.mkdir(parents=True, exist_ok=True)
    (root / ACTIVE).write_bytes(b"\xff\xfe\n")
    before = snapshot(root)
    with pytest.raises(UserError, match="tuned: .*(not UTF-8|tuned profile name)"):
        tune.apply(root, only=["swappiness"])
    assert snapshot(root) == before


def test_an_admins_hosttune_profile_is_refused_and_the_apply_undone(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {ACTIVE: "balanced\n", CONF: "[main]\nsummary=mine\n"})
    before = snapshot(root)
    with pytest.raises(UserError, match="tune apply: tuned: .*not hosttune's.*undone"):
        tune.apply(root, only=["swappiness"])
    assert snapshot(root) == before


def test_give_back_puts_bytes_and_modes_back_and_reports_the_switch(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {ACTIVE: "hosttune\n", MODE: "manual\n", CONF: f"{tuned.MARKER}\n[main]\n"})
    tree = Tree(root)
    saved = {"previous": "balanced", "files": {ACTIVE: {"text": "balanced\n", "mode": 0o600}, MODE: None}}
    changes: List[Change] = []
    txn = Txn(tree)
    tunedhook.give_back(tree, saved, txn, changes)
    assert (root / ACTIVE).read_text() == "balanced\n"
    assert stat.S_IMODE(os.stat(root / ACTIVE).st_mode) == 0o600
    assert not (root / MODE).exists() and not (root / CONF).exists() and not (root / CONF).parent.exists()
    assert changes == [Change("tuned", "hosttune", "balanced", "the tuned profile active before the first apply", ()),
                       Change("files", tree.path(CONF), "removed", "hosttune's file", ())]


def test_give_back_leaves_a_file_already_right_and_an_admins_profile(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {ACTIVE: "balanced\n", CONF: "[main]\nsummary=an admin's own\n"})
    os.chmod(root / ACTIVE, 0o600)
    tree = Tree(root)
    saved = {"previous": "balanced", "files": {ACTIVE: {"text": "balanced\n", "mode": 0o600}}}
    changes: List[Change] = []
    txn = Txn(tree)
    tunedhook.give_back(tree, saved, txn, changes)
    assert txn.undo == [] and changes == []  # nothing to put back, nothing switched, nothing of ours removed
    assert (root / CONF).read_text() == "[main]\nsummary=an admin's own\n"
    # the same bytes under another mode are put back too
    os.chmod(root / ACTIVE, 0o644)
    tunedhook.give_back(tree, saved, txn, changes)
    assert stat.S_IMODE(os.stat(root / ACTIVE).st_mode) == 0o600 and len(txn.undo) == 1


def test_give_back_from_an_old_state_without_saved_files_switches_the_tree(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {ACTIVE: "hosttune\n", MODE: "auto\n"})
    tree = Tree(root)
    changes: List[Change] = []
    tunedhook.give_back(tree, {"previous": "balanced"}, Txn(tree), changes)
    assert (root / ACTIVE).read_text() == "balanced\n" and (root / MODE).read_text() == "manual\n"
    assert [c.after for c in changes] == ["balanced"]
    changes.clear()
    root2 = _tuned_host(tmp_path / "b", {ACTIVE: "hosttune\n", MODE: "auto\n"})
    tunedhook.give_back(Tree(root2), {"previous": None}, Txn(Tree(root2)), changes)
    assert (root2 / ACTIVE).read_text() == "hosttune\n"  # nothing to switch back to in a tree
    assert [(c.before, c.after) for c in changes] == [("hosttune", "(none)")]


# ---- txn ----------------------------------------------------------------------------------------------------------
def test_rollback_undoes_in_reverse_order_collects_errors_and_empties_the_log(tmp_path: Path) -> None:
    txn = Txn(Tree(tmp_path))
    seen: List[str] = []
    txn.call(lambda: seen.append("do1"), lambda: seen.append("undo1"))

    def fail() -> None:
        raise OSError("undo2 failed")
    txn.call(lambda: seen.append("do2"), fail)
    txn.call(lambda: seen.append("do3"), lambda: seen.append("undo3"))
    assert txn.rollback() == ["undo2 failed"]
    assert seen == ["do1", "do2", "do3", "undo3", "undo1"]
    assert txn.undo == [] and txn.rollback() == []


def test_write_file_undo_restores_bytes_mode_and_made_dirs(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/a.conf").write_bytes(b"old\n")
    os.chmod(tmp_path / "etc/a.conf", 0o600)
    txn = Txn(Tree(tmp_path))
    txn.write_file("etc/a.conf", "new\n")
    txn.write_file("etc/x/y/b.conf", "b\n", 0o640)
    txn.write_file("etc/none.conf", None)  # nothing there: no step
    assert len(txn.undo) == 2 and txn.made == [str(tmp_path / "etc/x"), str(tmp_path / "etc/x/y")] or \
        len(txn.undo) == 2 and [os.path.basename(d) for d in txn.made] == ["x", "y"]
    assert stat.S_IMODE(os.stat(tmp_path / "etc/x/y/b.conf").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "etc/a.conf").st_mode) == 0o644
    txn.write_file("etc/a.conf", None)
    assert not (tmp_path / "etc/a.conf").exists()
    assert txn.rollback() == []
    assert (tmp_path / "etc/a.conf").read_bytes() == b"old\n"
    assert stat.S_IMODE(os.stat(tmp_path / "etc/a.conf").st_mode) == 0o600
    assert sorted(os.listdir(tmp_path / "etc")) == ["a.conf"]


def test_makedirs_and_write_attr_undo(tmp_path: Path) -> None:
    (tmp_path / "sys").mkdir()
    (tmp_path / "sys/knob").write_text("1\n")
    txn = Txn(Tree(tmp_path))
    txn.makedirs("var/lib/hosttune")
    assert (tmp_path / "var/lib/hosttune").is_dir() and len(txn.made) == 3
    txn.write_attr("sys/knob", "1", "0")
    assert (tmp_path / "sys/knob").read_text().strip() == "0"
    txn.write_attr("sys/knob", None, "5")  # no old value: nothing to undo
    assert len(txn.undo) == 2
    assert txn.rollback() == []
    assert (tmp_path / "sys/knob").read_text().strip() == "1"
    assert not (tmp_path / "var").exists()


def test_edit_blocks_sets_drops_and_removes_the_file_when_empty(tmp_path: Path) -> None:
    tree = Tree(tmp_path)
    txn = Txn(tree)
    a, b = "swappiness", "numa_balancing"
    edit_blocks(txn, "etc/s.conf", {b: ["y = 2"], a: ["x = 1"]}, {a: "why a", b: "why b"})
    text = (tmp_path / "etc/s.conf").read_text()
    # the table's order (TUNABLE_IDS), not the edit's
    assert text == f"{MARKER}\n# numa_balancing: why b\ny = 2\n# swappiness: why a\nx = 1\n"
    edit_blocks(txn, "etc/s.conf", {a: None}, {})
    text = (tmp_path / "etc/s.conf").read_text()
    assert text == f"{MARKER}\n# numa_balancing: why b\ny = 2\n"  # the kept block keeps its reason
    n = len(txn.undo)
    edit_blocks(txn, "etc/s.conf", {b: ["y = 2"]}, {b: "why b"})
    assert len(txn.undo) == n  # unchanged text: no write
    edit_blocks(txn, "etc/s.conf", {b: None, "zz": None}, {})
    assert not (tmp_path / "etc/s.conf").exists()
    (tmp_path / "etc/s.conf").write_text("vm.swappiness = 1\n")
    with pytest.raises(OSError, match="is not hosttune's"):
        edit_blocks(txn, "etc/s.conf", {a: ["x = 1"]}, {})
    assert (tmp_path / "etc/s.conf").read_text() == "vm.swappiness = 1\n"


def test_hand_over_with_a_state_that_applied_nothing_yet(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {ACTIVE: "balanced\n"})
    tree = Tree(root)
    state: Dict[str, Any] = {}  # a state file may lack "applied" (check_state allows it)
    tunedhook.hand_over(tree, state, Txn(tree), False)
    assert (root / CONF).read_text() == tuned.render_profile("balanced", {})
    assert state["tuned"]["previous"] == "balanced"


def test_an_active_profile_that_is_not_a_name_is_refused_naming_the_file(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path, {ACTIVE: "../../etc\n"})
    before = snapshot(root)
    with pytest.raises(UserError, match=rf"tune apply: tuned: {root}/etc/tuned/active_profile: '\.\./\.\./etc' is "
                                        r"not a tuned profile name"):
        tune.apply(root, only=["swappiness"])
    assert snapshot(root) == before
