"""Pins (issue 21, round 6) for the tune engine as a whole, named by its modules (hosttune.tune.core, kinds, txn,
tunedhook, state, model): the exact changes apply reports on test_tune's two-node host (before, after, reason, the
files that keep each), the exact state file it saves, the exact text of each file it writes, verify before and
after, the exact changes revert reports and the tree it leaves (byte for byte what it found), the same with tuned
running (the profile, the switch, the give-back), and a boot re-apply. In-process on trees under tmp_path."""

import errno
import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import build_tree
from test_tune import host_tree, snapshot
from test_tune_core_pins5 import CPUFREQ, DROPIN, LIMITS, STATE, SYSCTL, THP  # the host's paths tune writes

from hosttune.errors import UserError
from hosttune.tune import core, kinds, model, programs, state, tunedhook, txn
from hosttune.tune.model import MARKER, Change
from hosttune.tune.rootfs import Tree

WHY = {
    "thp": "`always` makes khugepaged compact in the background and faults stall on direct compaction; madvise keeps "
           "huge pages for code that asks",
    "thp_defrag": "direct compaction only for regions that ask for huge pages",
    "numa_balancing": "ranks are pinned to their GPU's node, balancing only adds page faults and migrations",
    "swappiness": "the default 60 swaps out page cache and pinned buffers; the next step stalls",
    "governor": "clocks ramp up only after load appears; the threads feeding GPUs pay the ramp each burst",
    "epp": "the hardware favours speed over power saving, as the performance governor does",
    "nofile": "DataLoader workers and NCCL open many files and sockets; 1024 runs out",
    "memlock": "RDMA (NCCL over InfiniBand/RoCE) pins its buffers",
    "shm": "DataLoader workers hand every batch over in /dev/shm",
}
CHANGES = [("thp", "always", "madvise", (STATE,)), ("thp_defrag", "always", "madvise", (STATE,)),
           ("numa_balancing", "1", "0", (SYSCTL,)), ("swappiness", "60", "10", (SYSCTL,)),
           ("governor", "powersave", "performance", (STATE,)), ("epp", "balance_power", "performance", (STATE,)),
           ("nofile", "1024", "65536", (LIMITS,)), ("memlock", "not set", "unlimited", (LIMITS,)),
           ("shm", "size=65536k", "size=50%", (DROPIN, STATE))]
SAVED = "saved before the first apply"
BEFORE = {
    "epp": {f"{CPUFREQ}/policy0/energy_performance_preference": "balance_power",
            f"{CPUFREQ}/policy2/energy_performance_preference": "balance_power"},
    "governor": {f"{CPUFREQ}/policy0/scaling_governor": "powersave",
                 f"{CPUFREQ}/policy2/scaling_governor": "powersave"},
    "numa_balancing": {"proc/sys/kernel/numa_balancing": "1"},
    "swappiness": {"proc/sys/vm/swappiness": "60"},
    "thp": {f"{THP}/enabled": "always"},
    "thp_defrag": {f"{THP}/defrag": "always"},
}
APPLIED = {"epp": "performance", "governor": "performance", "numa_balancing": "0", "shm": "size=50%",
           "swappiness": "10", "thp": "madvise", "thp_defrag": "madvise"}
MADE = ["var", "var/lib", "var/lib/hosttune", "etc/security/limits.d", "etc/systemd", "etc/systemd/system",
        "etc/systemd/system/dev-shm.mount.d"]
FILES = {
    SYSCTL: f"{MARKER}\n# numa_balancing: {WHY['numa_balancing']}\nkernel.numa_balancing = 0\n"
            f"# swappiness: {WHY['swappiness']}\nvm.swappiness = 10\n",
    LIMITS: f"{MARKER}\n# nofile: {WHY['nofile']}\n* soft nofile 65536\n* hard nofile 1048576\n"
            f"# memlock: {WHY['memlock']}\n* soft memlock unlimited\n* hard memlock unlimited\n",
    DROPIN: f"{MARKER}\n# shm: {WHY['shm']}\n[Mount]\nOptions=mode=1777,strict,nosuid,nodev,size=50%\n",
}


def _expected(root: Path) -> List[Change]:
    return [Change(tid, b, a, WHY[tid], tuple(str(root / p) for p in keep)) for tid, b, a, keep in CHANGES]


def _revert_changes(root: Path) -> List[Change]:
    out = [Change("epp", "performance", "balance_power", SAVED, ())] * 2
    out += [Change("governor", "performance", "powersave", SAVED, ())] * 2
    out += [Change("numa_balancing", "0", "1", SAVED, ()), Change("swappiness", "10", "60", SAVED, ()),
            Change("thp", "madvise", "always", SAVED, ()), Change("thp_defrag", "madvise", "always", SAVED, ())]
    out += [Change("files", str(root / rel), "removed", "hosttune's file", ()) for rel in (SYSCTL, LIMITS, DROPIN)]
    return out


def _states(root: Path) -> Dict[str, Tuple[Any, Any, str]]:
    return {s.id: (s.expected, s.actual, s.state) for s in core.verify(root)}


def test_apply_reports_every_change_saves_the_state_and_writes_each_file_exactly(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    assert _states(root) == {**{tid: (a, b, "drift") for tid, b, a, _ in CHANGES},
                             "persistence": (None, None, "skip")}
    assert core.apply(root) == _expected(root)
    saved = json.loads((root / STATE).read_text())
    assert saved == {"applied": APPLIED, "before": BEFORE, "made_dirs": MADE, "schema": "hosttune.tune-state/1",
                     "tuned": None}
    assert stat.S_IMODE((root / STATE).stat().st_mode) == 0o644
    for rel, text in FILES.items():
        assert (root / rel).read_text() == text, rel
        assert stat.S_IMODE((root / rel).stat().st_mode) == 0o644
    assert (root / THP / "enabled").read_text() == "always [madvise] never\n"
    assert (root / THP / "defrag").read_text() == "always defer defer+madvise [madvise] never\n"
    for p in ("policy0", "policy2"):
        assert (root / CPUFREQ / p / "scaling_governor").read_text() == "performance\n"
        assert (root / CPUFREQ / p / "energy_performance_preference").read_text() == "performance\n"
    assert (root / "proc/sys/vm/swappiness").read_text() == "10\n"
    assert (root / "proc/sys/kernel/numa_balancing").read_text() == "0\n"
    assert _states(root) == {**{tid: (a, a, "ok") for tid, _b, a, _ in CHANGES}, "persistence": (None, None, "skip")}
    assert core.apply(root) == []


def test_revert_reports_each_restore_and_removal_and_leaves_the_tree_as_found(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    core.apply(root)
    assert core.revert(root) == _revert_changes(root)
    assert snapshot(root) == before
    assert core.revert(root) == []  # nothing saved: nothing to do


def test_a_dry_run_reports_the_same_changes_and_writes_nothing(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    assert core.apply(root, dry_run=True) == _expected(root)
    changes, skipped = core.apply_report(root, dry_run=True)
    assert changes == _expected(root) and [s.id for s in skipped] == ["persistence"]
    assert snapshot(root) == before


def test_only_one_tunable_saves_only_its_value(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    assert core.apply(root, only=["swappiness"]) == [Change("swappiness", "60", "10", WHY["swappiness"],
                                                           (str(root / SYSCTL),))]
    saved = json.loads((root / STATE).read_text())
    assert saved["applied"] == {"swappiness": "10"} and saved["before"] == {"swappiness": BEFORE["swappiness"]}
    assert saved["made_dirs"] == ["var", "var/lib", "var/lib/hosttune"]
    assert (root / SYSCTL).read_text() == f"{MARKER}\n# swappiness: {WHY['swappiness']}\nvm.swappiness = 10\n"
    assert (root / THP / "enabled").read_text() == "[always] madvise never\n"
    assert core.revert(root) == [Change("swappiness", "10", "60", SAVED, ()),
                                 Change("files", str(root / SYSCTL), "removed", "hosttune's file", ())]
    assert snapshot(root) == before


def test_a_second_apply_adds_to_the_state_and_keeps_the_first_values(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    core.apply(root, only=["swappiness"])
    (root / "proc/sys/vm/swappiness").write_text("33\n")
    assert core.apply(root, only=["swappiness", "thp"]) == [
        Change("thp", "always", "madvise", WHY["thp"], (str(root / STATE),)),
        Change("swappiness", "33", "10", WHY["swappiness"], (str(root / SYSCTL),))]
    saved = json.loads((root / STATE).read_text())
    assert saved["before"] == {"swappiness": BEFORE["swappiness"], "thp": BEFORE["thp"]}
    assert saved["applied"] == {"swappiness": "10", "thp": "madvise"}
    core.revert(root)
    assert snapshot(root) == before


def test_a_failing_step_is_one_line_and_undoes_every_earlier_step(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    (root / "etc/systemd").write_text("a file where a directory goes\n")
    before = snapshot(root)
    with pytest.raises(UserError) as exc:
        core.apply(root)
    msg = str(exc.value)
    assert msg.startswith("tune apply: shm: ") and msg.endswith("; the changes of this run were undone")
    assert "\n" not in msg
    assert snapshot(root) == before


def test_boot_reapplies_only_the_runtime_values_and_writes_no_file(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    core.apply(root)
    (root / "proc/sys/vm/swappiness").write_text("60\n")
    (root / THP / "enabled").write_text("[always] madvise never\n")
    (root / LIMITS).write_text("edited\n")
    saved = (root / STATE).read_bytes()
    changes = core.apply(root, boot=True)
    assert [(c.id, c.before, c.after) for c in changes] == [("thp", "always", "madvise"), ("swappiness", "60", "10")]
    assert (root / "proc/sys/vm/swappiness").read_text() == "10\n"
    assert (root / THP / "enabled").read_text() == "always [madvise] never\n"
    assert (root / LIMITS).read_text() == "edited\n" and (root / STATE).read_bytes() == saved
    assert core.apply(root, boot=True) == []


# ---- with tuned running --------------------------------------------------------------------------------------------
ACTIVE = "etc/tuned/active_profile"
MODE = "etc/tuned/profile_mode"
CONF = "etc/tuned/hosttune/tuned.conf"
TUNED_CONF = (f"{MARKER}\n\n[main]\nsummary=hosttune: PyTorch training host settings on top of balanced\n"
              "include=balanced\n\n[vm]\ntransparent_hugepages=madvise\ntransparent_hugepage.defrag=madvise\n\n"
              "[sysctl]\nvm.swappiness=10\nkernel.numa_balancing=0\n\n[cpu]\ngovernor=performance\n"
              "energy_performance_preference=performance\n")


def _tuned_host(tmp_path: Path) -> Path:
    root = host_tree(tmp_path / "host")
    return build_tree(root, {"run/tuned/tuned.pid": "4242\n", "proc/4242/comm": "tuned\n", ACTIVE: "balanced\n",
                             MODE: "auto\n"})


def test_with_tuned_apply_writes_its_profile_switches_and_saves_what_it_had(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path)
    os.chmod(root / MODE, 0o600)
    assert core.apply(root) == _expected(root)
    assert (root / CONF).read_text() == TUNED_CONF
    assert (root / ACTIVE).read_text() == "hosttune\n" and (root / MODE).read_text() == "manual\n"
    assert stat.S_IMODE((root / MODE).stat().st_mode) == 0o600
    saved = json.loads((root / STATE).read_text())
    assert saved["tuned"] == {"previous": "balanced", "files": {ACTIVE: {"text": "balanced\n", "mode": 0o644},
                                                                MODE: {"text": "auto\n", "mode": 0o600}}}
    assert saved["made_dirs"] == MADE + ["etc/tuned/hosttune"]


def test_with_tuned_revert_gives_tuned_back_first_and_leaves_the_tree_as_found(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path)
    before = snapshot(root)
    core.apply(root)
    changes = core.revert(root)
    assert changes[:2] == [Change("tuned", "hosttune", "balanced", "the tuned profile active before the first apply",
                                  ()),
                           Change("files", str(root / CONF), "removed", "hosttune's file", ())]
    assert changes[2:] == _revert_changes(root)
    assert snapshot(root) == before


def test_tunedhook_hands_over_the_saved_values_and_kinds_report_none_for_tuned(tmp_path: Path) -> None:
    root = _tuned_host(tmp_path)
    tree = Tree(root)
    work: Dict[str, Any] = {"applied": {"swappiness": 10, "thp": "madvise"}}
    log = txn.Txn(tree)
    tunedhook.hand_over(tree, work, log, False)
    text = (root / CONF).read_text()
    assert "vm.swappiness=10\n" in text and "transparent_hugepages=madvise\n" in text
    assert "governor" not in text and "kernel.numa_balancing" not in text
    assert work["tuned"]["previous"] == "balanced"
    assert log.rollback() == [] and not (root / CONF).exists()
    assert (root / ACTIVE).read_text() == "balanced\n" and (root / MODE).read_text() == "auto\n"


def test_the_state_and_model_agree_on_the_state_files_place(tmp_path: Path) -> None:
    assert model.state_rel(tmp_path) == STATE
    root = host_tree(tmp_path / "host")
    assert state.load_state(Tree(root)) is None
    core.apply(root, only=["thp"])
    loaded = state.load_state(Tree(root))
    assert loaded is not None and loaded["applied"] == {"thp": "madvise"} and kinds.SAVED == SAVED


# ---- the programs tune runs (no program is started here) -----------------------------------------------------------
def test_a_program_not_in_a_trusted_directory_is_enoent_naming_it() -> None:
    with pytest.raises(OSError) as exc:
        programs.tool("hosttune-no-such-program", ["x"], 5)
    assert exc.value.errno == errno.ENOENT
    assert exc.value.strerror == "hosttune-no-such-program: not found in a PATH directory only root can write"


def test_systemctl_failure_is_its_last_line(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[Tuple[str, List[str], float]] = []

    def tool(name: str, args: List[str], timeout: float) -> subprocess.CompletedProcess:
        calls.append((name, args, timeout))
        return subprocess.CompletedProcess(args, 1, "out\n", "first\nFailed to enable unit: x\n")

    monkeypatch.setattr(programs, "tool", tool)
    with pytest.raises(OSError, match=r"^systemctl enable u: Failed to enable unit: x$"):
        programs.systemctl_do("enable", "u")
    assert calls == [("systemctl", ["enable", "u"], 120)]
    assert programs.systemctl(["is-enabled", "u"], check=False).returncode == 1
    monkeypatch.setattr(programs, "tool", lambda n, a, t: subprocess.CompletedProcess(a, 3, "", ""))
    with pytest.raises(OSError, match=r"^systemctl cat u: exit status 3$"):
        programs.systemctl(["cat", "u"])
    monkeypatch.setattr(programs, "tool", lambda n, a, t: subprocess.CompletedProcess(a, 0, "", "warn\n"))
    assert programs.systemctl(["cat", "u"]).returncode == 0


@pytest.mark.parametrize("opt", ["size=50%,exec", "size=", "mode=1777", "size=1g suid", "size=" + "9" * 21])
def test_remount_shm_takes_one_size_option_only(opt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(programs, "tool", lambda *a: pytest.fail("no program may run"))
    with pytest.raises(OSError) as exc:
        programs.remount_shm(opt)
    assert exc.value.errno == errno.EINVAL and "one size= option expected" in str(exc.value)


def test_remount_shm_runs_mount_with_the_size(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[Tuple[str, List[str], float]] = []

    def tool(name: str, args: List[str], timeout: float) -> subprocess.CompletedProcess:
        calls.append((name, args, timeout))
        return subprocess.CompletedProcess(args, 32 if args[1].endswith("16G") else 0, "", "mount: bad\n")

    monkeypatch.setattr(programs, "tool", tool)
    programs.remount_shm("size=50%")
    assert calls == [("mount", ["-o", "remount,size=50%", "/dev/shm"], 60)]
    with pytest.raises(OSError, match=r"^mount -o remount,size=16G /dev/shm: mount: bad$"):
        programs.remount_shm("size=16G")


def test_tuned_2_24_layout_apply_and_revert_use_etc_tuned_profiles(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    build_tree(root, {"run/tuned/tuned.pid": "4242\n", "proc/4242/comm": "tuned\n", ACTIVE: "balanced\n",
                      "usr/lib/tuned/profiles/balanced/tuned.conf": "[main]\n"})
    before = snapshot(root)
    core.apply(root, only=["swappiness"])
    conf = "etc/tuned/profiles/hosttune/tuned.conf"
    assert (root / conf).read_text().startswith(MARKER + "\n") and not (root / CONF).exists()
    assert core.revert(root) == [
        Change("tuned", "hosttune", "balanced", "the tuned profile active before the first apply", ()),
        Change("files", str(root / conf), "removed", "hosttune's file", ()),
        Change("swappiness", "10", "60", SAVED, ()),
        Change("files", str(root / SYSCTL), "removed", "hosttune's file", ())]
    assert snapshot(root) == before


def test_an_empty_state_file_is_bad_json_not_nothing_applied(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    core.apply(root, only=["swappiness"])
    (root / STATE).write_text("")
    with pytest.raises(UserError) as exc:
        core.revert(root)
    assert str(exc.value) == f"{root / STATE}: not hosttune's tune state (bad JSON)"


def test_a_revert_that_meets_a_link_is_one_line_naming_tune_revert(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    core.apply(root, only=["swappiness"])
    knob = root / "proc/sys/vm/swappiness"
    knob.unlink()
    knob.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UserError) as exc:
        core.revert(root)
    assert str(exc.value).startswith("tune revert: [Errno 40] ") and str(knob) in str(exc.value)
    assert not (tmp_path / "elsewhere").exists() and (root / STATE).exists()
