"""hosttune/tune/core.py and hosttune/tune/kinds.py in-process on a --root tree (issue 21): each Status verify gives
(skip, drift, ok and the reason for each), the exact changes apply plans and makes (the values written, the files
that keep them, the state saved), the boot re-apply, the all-or-nothing failure and its one-line message, revert's
changes in order, the ids check, the uid check, and each kind's hooks (actual, values, kept, apply, revert,
tuned_value) with the /dev/shm size rules."""

import dataclasses
import json
import os
import stat
import types
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import build_tree
from test_tune import host_tree

from hosttune.errors import UserError
from hosttune.profile.settings import Tune
from hosttune.tune import core, kinds
from hosttune.tune.model import MARKER, Change, Status
from hosttune.tune.rootfs import Tree
from hosttune.tune.tunables import BY_ID
from hosttune.tune.txn import Txn

THP = "sys/kernel/mm/transparent_hugepage"
CPUFREQ = "sys/devices/system/cpu/cpufreq"
STATE = "var/lib/hosttune/tune-state.json"
SYSCTL = "etc/sysctl.d/90-hosttune.conf"
LIMITS = "etc/security/limits.d/90-hosttune.conf"
DROPIN = "etc/systemd/system/dev-shm.mount.d/hosttune.conf"
REASON_SWAP = "the default 60 swaps out page cache and pinned buffers; the next step stalls"


def host(root: Path, **extra: str) -> Path:
    """test_tune's host (two nodes, an RDMA device, THP always, swappiness 60, numa balancing on, powersave, a
    64 MiB /dev/shm, 1024 open files) with `extra` files on top (`a__b` names a/b)."""
    return build_tree(host_tree(root), {k.replace("__", "/"): v for k, v in extra.items()})


def by_id(statuses: Any) -> Dict[str, Any]:
    return {s.id: s for s in statuses}


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text()


# ---- verify / status -----------------------------------------------------------------------------------------------
def test_verify_on_a_fresh_host(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    got = {s.id: (s.expected, s.actual, s.state) for s in core.verify(root)}
    assert got == {
        "thp": ("madvise", "always", "drift"), "thp_defrag": ("madvise", "always", "drift"),
        "numa_balancing": ("0", "1", "drift"), "swappiness": ("10", "60", "drift"),
        "governor": ("performance", "powersave", "drift"), "epp": ("performance", "balance_power", "drift"),
        "nofile": ("65536", "1024", "drift"), "memlock": ("unlimited", "not set", "drift"),
        "shm": ("size=50%", "size=65536k", "drift"), "persistence": (None, None, "skip")}
    assert [s.id for s in core.verify(root)] == list(core.TUNABLE_IDS)
    assert by_id(core.verify(root))["swappiness"].reason == REASON_SWAP
    assert by_id(core.verify(root))["persistence"].reason == "no NVIDIA GPU"


def test_status_is_verify_without_the_state(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    assert core.status(root, "swappiness") == Status("swappiness", "Swappiness", "10", "60", "drift", REASON_SWAP)
    core.apply(root, only=["thp"])
    (root / STATE).write_text((root / STATE).read_text().replace('"thp": "madvise"', '"thp": "never"'))
    assert core.status(root, "thp").state == "ok"  # the state's boot value is not asked
    assert by_id(core.verify(root))["thp"] == Status(
        "thp", "Transparent huge pages", "madvise", "madvise", "drift",
        "hosttune-tune.service would restore another value at boot")


def test_a_missing_attribute_is_not_exposed(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    (root / "proc/sys/vm/swappiness").unlink()
    st = by_id(core.verify(root))["swappiness"]
    assert (st.expected, st.actual, st.state, st.reason) == ("10", None, "skip", "not exposed by this kernel")


def test_a_value_that_reads_as_nothing_is_not_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = host(tmp_path / "h")
    monkeypatch.setattr(kinds.Attr, "actual", lambda self, tree, t, tune: None)
    st = by_id(core.verify(root))["swappiness"]
    assert (st.expected, st.actual, st.state, st.reason) == ("10", None, "skip", "not readable")


def test_an_oserror_reading_the_value_is_cannot_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = host(tmp_path / "h")

    def boom(self: Any, tree: Any, t: Any, tune: Any) -> str:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(kinds.Attr, "actual", boom)
    st = by_id(core.verify(root))["swappiness"]
    assert (st.expected, st.state, st.reason) == ("10", "skip", "cannot read: Permission denied")


def test_an_oserror_deciding_the_value_is_cannot_read(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    t = BY_ID["swappiness"]

    def boom(tree: Any, tune: Any) -> Tuple[str, str]:
        raise OSError(5, "Input/output error")

    broken = dataclasses.replace(t, want=boom)
    assert core._status(Tree(root), broken, Tune(), None) == Status("swappiness", "Swappiness", None, None, "skip",
                                                     "cannot read: Input/output error")


def test_a_value_already_right_is_ok_and_not_planned(tmp_path: Path) -> None:
    root = host(tmp_path / "h", proc__sys__vm__swappiness="10\n")
    st = core.status(root, "swappiness")
    assert (st.state, st.actual) == ("ok", "10")
    assert "swappiness" not in {c.id for c in core.apply(root, dry_run=True)}


def test_one_target_of_several_wrong_is_drift(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    core.apply(root, only=["governor"])
    assert core.status(root, "governor").state == "ok"
    (root / CPUFREQ / "policy2/scaling_governor").write_text("powersave\n")
    st = core.status(root, "governor")
    assert (st.state, st.actual) == ("drift", "performance,powersave")


def test_a_persisted_block_with_another_value_is_drift(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    core.apply(root, only=["swappiness"])
    (root / SYSCTL).write_text(read(root, SYSCTL).replace("vm.swappiness = 10", "vm.swappiness = 30"))
    st = by_id(core.verify(root))["swappiness"]
    assert (st.state, st.actual, st.reason) == ("drift", "10", f"{root}/{SYSCTL} keeps another value")


def test_profile_choices_are_used(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    st = core.status(root, "swappiness", Tune(swappiness=5))
    assert (st.expected, st.state) == ("5", "drift")
    assert core.tune_settings(Tune(swappiness=5)) == Tune(swappiness=5)

    class P:
        tune = Tune(swappiness=7)

    assert core.tune_settings(P()) == Tune(swappiness=7)
    assert core.tune_settings(object()) == Tune()


# ---- apply ---------------------------------------------------------------------------------------------------------
def test_apply_changes_and_what_keeps_them(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    changes = core.apply(root)
    st, sysctl, limits, dropin = (f"{root}/{r}" for r in (STATE, SYSCTL, LIMITS, DROPIN))
    assert [(c.id, c.before, c.after, c.persist) for c in changes] == [
        ("thp", "always", "madvise", (st,)), ("thp_defrag", "always", "madvise", (st,)),
        ("numa_balancing", "1", "0", (sysctl,)), ("swappiness", "60", "10", (sysctl,)),
        ("governor", "powersave", "performance", (st,)), ("epp", "balance_power", "performance", (st,)),
        ("nofile", "1024", "65536", (limits,)), ("memlock", "not set", "unlimited", (limits,)),
        ("shm", "size=65536k", "size=50%", (dropin, st))]  # the boot service remounts it from the state
    assert changes[3].reason == REASON_SWAP
    assert read(root, "proc/sys/vm/swappiness") == "10\n" and read(root, f"{THP}/enabled") == "always [madvise] never\n"
    assert read(root, f"{CPUFREQ}/policy2/scaling_governor") == "performance\n"
    assert read(root, SYSCTL).startswith(MARKER + "\n") and "vm.swappiness = 10\n" in read(root, SYSCTL)
    assert "kernel.numa_balancing = 0\n" in read(root, SYSCTL)
    state = json.loads(read(root, STATE))
    assert state["applied"] == {"epp": "performance", "governor": "performance", "numa_balancing": "0",
                                "shm": "size=50%", "swappiness": "10", "thp": "madvise", "thp_defrag": "madvise"}
    assert state["before"]["swappiness"] == {"proc/sys/vm/swappiness": "60"}
    assert state["before"]["governor"] == {f"{CPUFREQ}/policy0/scaling_governor": "powersave",
                                           f"{CPUFREQ}/policy2/scaling_governor": "powersave"}
    assert state["made_dirs"] == ["var", "var/lib", "var/lib/hosttune", "etc/security/limits.d", "etc/systemd",
                                  "etc/systemd/system", "etc/systemd/system/dev-shm.mount.d"]
    assert {s.state for s in core.verify(root)} == {"ok", "skip"}


def test_the_applied_apply_report_lists_the_skipped(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    (root / "proc/sys/vm/swappiness").unlink()
    changes, skipped = core.apply_report(root, only=["swappiness", "thp", "persistence"])
    assert [c.id for c in changes] == ["thp"]
    assert [(s.id, s.reason) for s in skipped] == [("swappiness", "not exposed by this kernel"),
                                                   ("persistence", "no NVIDIA GPU")]


def test_dry_run_plans_and_writes_nothing(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    changes, skipped = core.apply_report(root, dry_run=True)
    assert len(changes) == 9 and [s.id for s in skipped] == ["persistence"]
    assert not (root / "var").exists() and read(root, "proc/sys/vm/swappiness") == "60\n"


def test_second_apply_has_nothing_to_do(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    core.apply(root)
    assert core.apply_report(root) == ([], [next(s for s in core.verify(root) if s.id == "persistence")])


def test_only_applies_those(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    assert [c.id for c in core.apply(root, only=["swappiness"])] == ["swappiness"]
    assert read(root, f"{THP}/enabled") == "[always] madvise never\n"
    state = json.loads(read(root, STATE))
    assert state["applied"] == {"swappiness": "10"} and list(state["before"]) == ["swappiness"]


def test_before_is_kept_from_the_first_apply(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    core.apply(root, only=["swappiness"])
    (root / "proc/sys/vm/swappiness").write_text("40\n")
    assert [(c.before, c.after) for c in core.apply(root, only=["swappiness"])] == [("40", "10")]
    assert json.loads(read(root, STATE))["before"]["swappiness"] == {"proc/sys/vm/swappiness": "60"}
    core.revert(root)
    assert read(root, "proc/sys/vm/swappiness") == "60\n"


def test_unknown_id_names_the_closest_and_all(tmp_path: Path) -> None:
    with pytest.raises(UserError) as e:
        core.check_ids(["swapiness"])
    assert str(e.value) == ("no tunable 'swapiness'; did you mean 'swappiness'? (tunables: "
                            + ", ".join(core.TUNABLE_IDS) + ")")
    core.check_ids(["thp", "shm"])  # known: no error
    with pytest.raises(UserError, match=r"^no tunable 'qqqq'; did you mean '\w+'\? \(tunables: "):
        core.check_ids(["qqqq"])  # however far off, the closest is named
    with pytest.raises(UserError):
        core.apply(tmp_path, only=["thp", "nope"])


def test_a_failing_step_undoes_the_run_with_one_line(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    (root / "etc/security/limits.d").write_text("not a directory\n")
    with pytest.raises(UserError) as e:
        core.apply(root)
    msg = str(e.value)
    assert msg.startswith("tune apply: nofile: ") and msg.endswith("; the changes of this run were undone")
    assert "\n" not in msg
    assert read(root, "proc/sys/vm/swappiness") == "60\n" and read(root, f"{THP}/enabled") == "[always] madvise never\n"
    assert not (root / "var").exists() and not (root / SYSCTL).exists()  # the directories it made are gone too


def test_a_failure_after_the_tunables_names_the_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = host(tmp_path / "h")

    def boom(*a: Any) -> None:
        raise ValueError("tuned said no")

    monkeypatch.setattr(core.tunedhook, "hand_over", boom)
    with pytest.raises(UserError) as e:
        core.apply(root, only=["swappiness"])
    assert str(e.value) == "tune apply: tuned: tuned said no; the changes of this run were undone"
    assert read(root, "proc/sys/vm/swappiness") == "60\n"


# ---- boot ----------------------------------------------------------------------------------------------------------
def test_boot_without_state_or_boot_values_does_nothing(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    assert core.apply_report(root, boot=True) == ([], [])
    core.apply(root, only=["nofile"])  # a limits.d block: not re-applied at boot
    (root / LIMITS).unlink()
    assert core.apply_report(root, boot=True) == ([], [])
    assert not (root / LIMITS).exists()


def test_boot_reapplies_the_recorded_values_and_writes_no_file(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    core.apply(root, profile=Tune(thp="never"))
    for rel, text in ((f"{THP}/enabled", "[always] madvise never\n"),
                      (f"{CPUFREQ}/policy0/scaling_governor", "powersave\n"),
                      ("proc/sys/vm/swappiness", "30\n")):
        (root / rel).write_text(text)
    (root / LIMITS).unlink()
    state_before = read(root, STATE)
    changes = core.apply(root, boot=True)  # the profile in use now asks madvise: the boot keeps the recorded value
    assert [(c.id, c.before, c.after) for c in changes] == [
        ("thp", "always", "never"), ("swappiness", "30", "10"), ("governor", "powersave,performance", "performance")]
    assert read(root, f"{THP}/enabled") == "always madvise [never]\n"
    assert read(root, f"{CPUFREQ}/policy0/scaling_governor") == "performance\n"
    assert not (root / LIMITS).exists() and read(root, STATE) == state_before


def test_boot_tune_takes_each_recorded_value() -> None:
    applied = {"thp": "never", "thp_defrag": "defer", "governor": "powersave", "epp": "power", "shm": "size=2g",
               "swappiness": "5", "numa_balancing": "1"}
    got = core._boot_tune(Tune(), {"applied": applied})
    assert (got.thp, got.thp_defrag, got.governor, got.epp, got.shm_size, got.swappiness, got.numa_balancing) == (
        "never", "defer", "powersave", "power", "2g", 5, True)
    assert core._boot_tune(Tune(), {"applied": {"numa_balancing": "0"}}).numa_balancing is False
    assert core._boot_tune(Tune(swappiness=3), {"applied": {"swappiness": "x"}}).swappiness == 3
    assert core._boot_tune(Tune(), {}) == Tune()


# ---- revert --------------------------------------------------------------------------------------------------------
def test_revert_restores_removes_ours_and_the_state(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    core.apply(root)
    changes = core.revert(root)
    assert [(c.id, c.before, c.after) for c in changes] == [
        ("epp", "performance", "balance_power"), ("epp", "performance", "balance_power"),
        ("governor", "performance", "powersave"), ("governor", "performance", "powersave"),
        ("numa_balancing", "0", "1"), ("swappiness", "10", "60"), ("thp", "madvise", "always"),
        ("thp_defrag", "madvise", "always"),
        ("files", f"{root}/{SYSCTL}", "removed"), ("files", f"{root}/{LIMITS}", "removed"),
        ("files", f"{root}/{DROPIN}", "removed")]
    assert {c.reason for c in changes[:8]} == {"saved before the first apply"} and changes[0].persist == ()
    assert {c.reason for c in changes[8:]} == {"hosttune's file"}
    assert not (root / "var").exists() and not (root / "etc/systemd").exists()
    assert not (root / "etc/security/limits.d").exists() and (root / "etc/sysctl.d/99-site.conf").exists()
    assert read(root, "proc/sys/vm/swappiness") == "60\n" and core.revert(root) == []


def test_revert_leaves_a_value_already_back_and_a_file_not_ours(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    core.apply(root, only=["swappiness", "thp"])
    (root / "proc/sys/vm/swappiness").write_text("60\n")
    (root / SYSCTL).write_text("vm.swappiness = 1\n")  # the admin took the file over
    changes = core.revert(root)
    assert [c.id for c in changes] == ["thp"]
    assert read(root, SYSCTL) == "vm.swappiness = 1\n" and not (root / STATE).exists()


def test_revert_keeps_a_directory_someone_else_filled(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    core.apply(root)
    (root / "etc/systemd/system/other.service").write_text("[Unit]\n")
    core.revert(root)
    assert (root / "etc/systemd/system/other.service").exists()
    assert not (root / "etc/systemd/system/dev-shm.mount.d").exists() and not (root / "var/lib").exists()


def test_restore_skips_a_value_that_was_absent(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    txn = Txn(Tree(root))
    changes: Any = []
    core._restore(txn, {"before": {"swappiness": {"proc/sys/vm/swappiness": None}}}, changes)
    assert changes == [] and read(root, "proc/sys/vm/swappiness") == "60\n"
    core._restore(txn, {"before": {"swappiness": {"proc/sys/vm/swappiness": 30}}}, changes)
    assert changes == [Change("swappiness", "60", "30", "saved before the first apply", ())]


# ---- uid check -----------------------------------------------------------------------------------------------------
def test_uid_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(core.os, "geteuid", lambda: 1000)
    with pytest.raises(UserError) as e:
        core.uid_check(None, False, "apply")
    assert str(e.value) == ("tune apply changes kernel settings and files under /etc: run it as root "
                            "(`--dry-run` shows the changes as any user)")
    core.uid_check(None, True, "apply")
    core.uid_check(tmp_path, False, "revert")
    monkeypatch.setattr(core.os, "geteuid", lambda: 0)
    core.uid_check(None, False, "apply")


class Done:
    def __init__(self, returncode: int = 0, stdout: str = "") -> None:
        self.returncode, self.stdout = returncode, stdout


class Steps:
    def __init__(self) -> None:
        self.calls: List[Any] = []

    def call(self, do: Any, undo: Any) -> None:
        self.calls.append((do, undo))


def test_enable_unit_on_the_live_host_once(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: List[List[str]] = []
    answers = {"cat": Done(0), "is-enabled": Done(0, "disabled\n")}

    def systemctl(args: List[str], check: bool = True) -> Done:
        asked.append(args)
        return answers[args[0]]

    did: List[Tuple[str, ...]] = []
    monkeypatch.setattr(core.programs, "systemctl", systemctl)
    monkeypatch.setattr(core.programs, "systemctl_do", lambda *a: did.append(a))
    live, tree = types.SimpleNamespace(live=True), types.SimpleNamespace(live=False)
    state: Dict[str, Any] = {}
    txn = Steps()
    core._enable_unit(tree, state, txn)  # type: ignore[arg-type]
    assert asked == [] and txn.calls == [] and state == {}
    core._enable_unit(live, state, txn)  # type: ignore[arg-type]
    assert asked == [["cat", "hosttune-tune.service"], ["is-enabled", "hosttune-tune.service"]]
    assert state == {"unit_enabled": True} and len(txn.calls) == 1
    txn.calls[0][0]()
    txn.calls[0][1]()
    assert did == [("enable", "hosttune-tune.service"), ("disable", "hosttune-tune.service")]
    core._enable_unit(live, state, txn)  # type: ignore[arg-type]
    assert len(asked) == 2 and len(txn.calls) == 1  # recorded as enabled: not asked again


@pytest.mark.parametrize("cat,enabled", [(1, "disabled"), (0, "enabled")])
def test_enable_unit_not_installed_or_already_enabled(monkeypatch: pytest.MonkeyPatch, cat: int,
                                                      enabled: str) -> None:
    answers = {"cat": Done(cat), "is-enabled": Done(0, enabled + "\n")}
    monkeypatch.setattr(core.programs, "systemctl", lambda args, check=True: answers[args[0]])
    state: Dict[str, Any] = {}
    txn = Steps()
    core._enable_unit(types.SimpleNamespace(live=True), state, txn)  # type: ignore[arg-type]
    assert state == {} and txn.calls == []


def test_persist_paths(tmp_path: Path) -> None:
    tree = Tree(tmp_path)
    assert core._persist_paths(tree, BY_ID["swappiness"]) == (f"{tmp_path}/{SYSCTL}",)
    assert core._persist_paths(tree, BY_ID["thp"]) == (f"{tmp_path}/{STATE}",)
    assert core._persist_paths(tree, BY_ID["shm"]) == (f"{tmp_path}/{DROPIN}", f"{tmp_path}/{STATE}")
    assert core._persist_paths(tree, BY_ID["persistence"]) == ()


# ---- kinds ---------------------------------------------------------------------------------------------------------
def test_kind_defaults() -> None:
    k = kinds.Kind()
    assert k.values("size=1g (mounted with size=2g)") == ["size=1g"] and k.values("a,b") == ["a,b"]
    assert kinds.Attr().values("a,b") == ["a", "b"]
    assert k.kept(None, None, "x", None) is None and k.unavailable(None, None) is None  # type: ignore[arg-type]
    assert k.apply(None, None, None, {}) == [] and k.revert(None, None, "r", "o") is None  # type: ignore[arg-type]
    assert k.tuned_value(None, None) is None  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        k.actual(None, None, Tune())  # type: ignore[arg-type]
    assert sorted(kinds.KINDS) == ["attr", "file", "service", "shm"]
    assert [n for n, k in kinds.KINDS.items() if k.boot] == ["attr", "shm"]


def test_attr_actual_joins_distinct_values_in_order(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    tree = Tree(root)
    a = kinds.Attr()
    assert a.actual(tree, BY_ID["governor"], Tune()) == "powersave"
    (root / CPUFREQ / "policy0/scaling_governor").write_text("performance\n")
    assert a.actual(tree, BY_ID["governor"], Tune()) == "performance,powersave"
    assert a.runtime(tree, BY_ID["thp"]) == {f"{THP}/enabled": "always"}


def test_attr_apply_writes_only_wrong_targets_and_records(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    (root / CPUFREQ / "policy0/scaling_governor").write_text("performance\n")
    mtime = os.stat(root / CPUFREQ / "policy0/scaling_governor").st_mtime_ns
    os.chmod(root / CPUFREQ / "policy0/scaling_governor", 0o444)  # a write there would fail
    txn = Txn(Tree(root))
    state: Dict[str, Any] = {"before": {}, "applied": {}}
    t = BY_ID["governor"]
    st = Status("governor", t.title, "performance", "performance,powersave", "drift", "")
    assert kinds.Attr().apply(txn, t, st, state) == [f"{root}/{STATE}"]
    assert state == {"before": {"governor": {f"{CPUFREQ}/policy0/scaling_governor": "performance",
                                             f"{CPUFREQ}/policy2/scaling_governor": "powersave"}},
                     "applied": {"governor": "performance"}}
    assert os.stat(root / CPUFREQ / "policy0/scaling_governor").st_mtime_ns == mtime
    assert read(root, f"{CPUFREQ}/policy2/scaling_governor") == "performance\n"
    state["before"]["governor"] = {"kept": "first"}
    kinds.Attr().apply(txn, t, st, state)
    assert state["before"]["governor"] == {"kept": "first"}  # never overwritten
    sw = BY_ID["swappiness"]
    assert kinds.Attr().apply(txn, sw, Status("swappiness", "", "10", "60", "drift", ""), state) == []


def test_attr_revert_and_tuned_value(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    txn = Txn(Tree(root))
    t = BY_ID["swappiness"]
    assert kinds.Attr().revert(txn, t, "proc/sys/vm/swappiness", "60") is None
    assert kinds.Attr().revert(txn, t, "proc/sys/vm/swappiness", "30") == Change(
        "swappiness", "60", "30", "saved before the first apply", ())
    assert read(root, "proc/sys/vm/swappiness") == "30\n"
    assert kinds.Attr().tuned_value(Tree(root), t) is None
    core.apply(root, only=["swappiness"])
    assert kinds.Attr().tuned_value(Tree(root), t) == "10"
    assert kinds.Attr().tuned_value(Tree(root), BY_ID["thp"]) is None


def test_persisted_reads_only_hosttunes_block(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    tree = Tree(root)
    assert kinds.persisted(tree, BY_ID["swappiness"]) is None and kinds.persisted(tree, BY_ID["thp"]) is None
    core.apply(root, only=["swappiness"])
    assert kinds.persisted(tree, BY_ID["swappiness"]) == ["vm.swappiness = 10"]
    assert kinds.persisted(tree, BY_ID["numa_balancing"]) is None  # the file, no block of its


def test_limit_file_actual_ours_then_the_distros(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    tree, lf = Tree(root), kinds.LimitFile()
    assert lf.actual(tree, BY_ID["nofile"], Tune()) == "1024"
    assert lf.actual(tree, BY_ID["memlock"], Tune()) == "not set"
    core.apply(root, only=["nofile", "memlock"])
    assert lf.actual(tree, BY_ID["nofile"], Tune()) == "65536"
    assert lf.actual(tree, BY_ID["memlock"], Tune()) == "unlimited"


def test_shm_in_a_tree_reads_the_dropin_size_then_the_mount(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    tree, shm = Tree(root), kinds.Shm()
    assert shm.actual(tree, BY_ID["shm"], Tune()) == "size=65536k"
    core.apply(root, only=["shm"])
    assert shm.actual(tree, BY_ID["shm"], Tune()) == "size=50%"
    assert shm.kept(tree, BY_ID["shm"], "size=1g", None) is None  # a tree: the boot mounts what the file says
    txn = Txn(tree)
    state: Dict[str, Any] = {"before": {}, "applied": {}}
    assert shm.apply(txn, BY_ID["shm"], Status("shm", "", "size=2g", None, "drift", ""), state) == [tree.path(STATE)]
    assert state == {"before": {}, "applied": {"shm": "size=2g"}}
    assert shm.revert(txn, BY_ID["shm"], "/dev/shm", "size=1k") is None
    assert kinds.Service().actual(tree, BY_ID["persistence"], Tune()) is None


def test_mount_size_last_mount_wins_and_mem_kib(tmp_path: Path) -> None:
    root = host(tmp_path / "h", proc__mounts="tmpfs /dev/shm tmpfs rw,size=1k 0 0\n"
                "tmpfs /dev/shm tmpfs rw,nosuid,size=2048k,mode=1777 0 0\ntmpfs /run tmpfs rw,size=9k 0 0\n")
    assert kinds.mount_size(Tree(root)) == "size=2048k"
    assert kinds.mem_kib(Tree(root)) == 65536000
    bare = host(tmp_path / "b", proc__mounts="tmpfs /dev/shm tmpfs rw,nosuid 0 0\n",
                proc__meminfo="MemFree: 5 kB\nMemTotal: x kB\n")
    assert kinds.mount_size(Tree(bare)) is None and kinds.mem_kib(Tree(bare)) is None


@pytest.mark.parametrize("now,expected", [
    ("size=1g", "size=1g"),  # the same
    ("size=1047528k", "size=1g"),  # pages rounded: 1 GiB less the slack (1048576 // 1000 = 1048 KiB) is the same
    ("size=1047527k", "size=1047527k"),  # one KiB below the slack: its own size, a drift
    ("size=1049624k", "size=1g"),  # up to the slack above: the same
    ("size=1049625k", "size=1g (mounted with size=1049625k)"),  # bigger is no problem, and says so
    ("size=2g", "size=1g (mounted with size=2g)"),
    ("size=50%", "size=1g (mounted with size=50%)"),  # 50% of 64 GB
    (None, None), ("size=", "size="),
])
def test_sized(tmp_path: Path, now: Any, expected: Any) -> None:
    root = host(tmp_path / "h")
    assert kinds.sized(Tree(root), Tune(shm_size="1g"), now) == expected


def test_sized_percent_of_memtotal(tmp_path: Path) -> None:
    root = host(tmp_path / "h")  # MemTotal 65536000 kB: 50% is 32768000 kB
    assert kinds.sized(Tree(root), Tune(shm_size="50%"), "size=32768000k") == "size=50%"
    assert kinds.sized(Tree(root), Tune(shm_size="50%"), "size=32735231k") == "size=32735231k"


def test_attr_kept_with_a_state_of_another_boot_value(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    tree, a, t = Tree(root), kinds.Attr(), BY_ID["thp"]
    assert a.kept(tree, t, "madvise", {"applied": {"thp": "madvise"}}) is None
    assert a.kept(tree, t, "madvise", {"applied": {"thp": "never"}}) == \
        "hosttune-tune.service would restore another value at boot"
    assert a.kept(tree, t, "madvise", {"applied": {}}) is None and a.kept(tree, t, "madvise", None) is None
    sw = BY_ID["swappiness"]  # not a boot tunable: the state's value is not its keeper
    assert a.kept(tree, sw, "10", {"applied": {"swappiness": "5"}}) is None


def test_state_file_is_written_private_enough(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    core.apply(root, only=["thp"])
    assert stat.S_ISREG(os.lstat(root / STATE).st_mode)
    assert json.loads(read(root, STATE))["applied"] == {"thp": "madvise"}


# ---- the live host's kinds (programs recorded: nothing is remounted or enabled here) ---------------------------------
@pytest.fixture
def progs(monkeypatch: pytest.MonkeyPatch) -> List[Any]:
    did: List[Any] = []
    monkeypatch.setattr(kinds.programs, "remount_shm", lambda size: did.append(("remount", size)))
    monkeypatch.setattr(kinds.programs, "systemctl_do", lambda *a: did.append(("systemctl",) + a))
    return did


def live_tree(root: Path) -> Tree:
    tree = Tree(root)
    tree.live = True  # the live host's branches, on a tree's files
    return tree


def test_shm_apply_live_remounts_and_undo_puts_the_old_size_back(tmp_path: Path, progs: List[Any]) -> None:
    tree = live_tree(host(tmp_path / "h"))
    txn = Txn(tree)
    state: Dict[str, Any] = {"before": {}, "applied": {}}
    assert kinds.Shm().apply(txn, BY_ID["shm"], Status("shm", "", "size=2g", None, "drift", ""),
                             state) == [tree.path(STATE)]
    assert progs == [("remount", "size=2g")]
    assert state == {"before": {"shm": {"/dev/shm": "size=65536k"}}, "applied": {"shm": "size=2g"}}
    assert txn.rollback() == [] and progs[-1] == ("remount", "size=65536k")
    progs.clear()
    kinds.Shm().apply(Txn(tree), BY_ID["shm"], Status("shm", "", "size=65536k", None, "drift", ""), state)
    assert progs == []  # already that size: no remount


def test_shm_live_revert_and_kept(tmp_path: Path, progs: List[Any]) -> None:
    root = host(tmp_path / "h")
    tree = live_tree(root)
    shm, t = kinds.Shm(), BY_ID["shm"]
    assert shm.revert(Txn(tree), t, "/dev/shm", "size=65536k") is None and progs == []
    assert shm.revert(Txn(tree), t, "/dev/shm", "size=1g") == Change("shm", "size=65536k", "size=1g",
                                                                     "saved before the first apply", ())
    assert progs == [("remount", "size=1g")]
    assert shm.kept(tree, t, "size=50%", None) is None  # no drop-in of ours
    core.apply(root, only=["shm"])
    assert shm.kept(tree, t, "size=50%", None) is None
    assert shm.kept(tree, t, "size=1g", None) == f"{root}/{DROPIN} keeps another size"
    assert shm.actual(tree, t, Tune()) == "size=65536k"  # live: the mount, not the drop-in


def test_service_live(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, progs: List[Any]) -> None:
    answers = {"is-enabled": "enabled\n", "is-active": ""}
    monkeypatch.setattr(kinds.programs, "systemctl",
                        lambda args, check=True: Done(0, answers[args[0]]) if args[1] == kinds.PERSISTENCED else None)
    tree = live_tree(tmp_path)
    svc, t = kinds.Service(), BY_ID["persistence"]
    assert svc.actual(tree, t, Tune()) == "enabled, unknown"
    state: Dict[str, Any] = {"before": {}, "applied": {}}
    txn = Txn(tree)
    svc.apply(txn, t, Status("persistence", "", "enabled", "disabled, inactive", "drift", ""), state)
    assert progs == [("systemctl", "enable", "--now", kinds.PERSISTENCED)]
    assert state["before"] == {"persistence": {"nvidia-persistenced": "disabled, inactive"}}
    txn.rollback()
    assert progs[-1] == ("systemctl", "disable", "--now", kinds.PERSISTENCED)
    progs.clear()
    txn = Txn(tree)
    svc.apply(txn, t, Status("persistence", "", "enabled", "enabled, inactive", "drift", ""), state)
    txn.rollback()
    assert progs == [("systemctl", "enable", "--now", kinds.PERSISTENCED)]  # it was enabled: the undo leaves it
    assert state["before"]["persistence"] == {"nvidia-persistenced": "disabled, inactive"}  # the first kept
    progs.clear()
    assert svc.revert(Txn(tree), t, "nvidia-persistenced", "enabled, active") is None and progs == []
    assert svc.revert(Txn(tree), t, "nvidia-persistenced", "disabled, inactive") == Change(
        "persistence", "enabled", "disabled, inactive", "saved before the first apply", ())
    assert progs == [("systemctl", "disable", "--now", kinds.PERSISTENCED)]


def test_a_dry_run_names_the_files_a_real_apply_writes_to_keep_each_change(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    planned = {c.id: c.persist for c in core.apply(root, dry_run=True)}
    done = {c.id: c.persist for c in core.apply(root)}
    assert planned == done and len(done) == 9  # the same files, in the same order (shm: its drop-in, then the state)
