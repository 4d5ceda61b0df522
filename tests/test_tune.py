"""hosttune tune apply | verify | revert: every tunable on --root trees, transactions, links, bad input, the unit,
and a real round trip of swappiness and THP on this machine."""

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Dict, Tuple

import pytest
from conftest import OtherUser, build_tree, run_cli

import hosttune.tune as tune
from hosttune.errors import UserError
from hosttune.profile import load_text
from hosttune.profile.settings import Tune
from hosttune.tune.model import MARKER
from hosttune.tune.rootfs import Tree

THP = "sys/kernel/mm/transparent_hugepage"
CPUFREQ = "sys/devices/system/cpu/cpufreq"
UNIT = Path(__file__).resolve().parent.parent / "systemd" / "hosttune-tune.service"
# Every tunable --root can change (persistence needs systemctl on the host itself, so it is a skip in a tree).
TREE_IDS = ("thp", "thp_defrag", "numa_balancing", "swappiness", "governor", "epp", "nofile", "memlock", "shm")


def host_tree(root: Path) -> Path:
    """A two-node host with swap, an RDMA device, cpufreq, THP `always`, swappiness 60, a 64 MiB /dev/shm and a
    site's own files."""
    files = {
        f"{THP}/enabled": "[always] madvise never\n",
        f"{THP}/defrag": "[always] defer defer+madvise madvise never\n",
        "proc/sys/vm/swappiness": "60\n",
        "proc/sys/kernel/numa_balancing": "1\n",
        "proc/meminfo": "MemTotal:       65536000 kB\nMemFree:        1000000 kB\nSwapTotal:      8388604 kB\n",
        "sys/class/infiniband/mlx5_0/node_type": "1: CA\n",
        "proc/mounts": "tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=65536k 0 0\n",
        "sys/devices/system/node/node0/cpulist": "0-1\n",
        "sys/devices/system/node/node1/cpulist": "2-3\n",
        "etc/security/limits.conf": "# the distro's own file\n*  soft  nofile  1024\n",
        "etc/sysctl.d/99-site.conf": "vm.swappiness = 60\n",
        "etc/hostname": "gpu01\n",
    }
    for p in ("policy0", "policy2"):
        files[f"{CPUFREQ}/{p}/scaling_governor"] = "powersave\n"
        files[f"{CPUFREQ}/{p}/scaling_available_governors"] = "performance powersave\n"
        files[f"{CPUFREQ}/{p}/energy_performance_preference"] = "balance_power\n"
        files[f"{CPUFREQ}/{p}/energy_performance_available_preferences"] = \
            "default performance balance_performance balance_power power\n"
    return build_tree(root, files)


def snapshot(root: Path) -> Dict[str, Tuple[str, ...]]:
    """Every entry under root (nothing excluded): type, mode and content or link target."""
    out: Dict[str, Tuple[str, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", oct(st.st_mode))
            else:
                out[rel] = ("file", oct(st.st_mode), p.read_bytes().hex())
    return out


def states(root: Path) -> Dict[str, str]:
    return {s.id: s.state for s in tune.verify(root)}


def test_public_api_names() -> None:
    assert set(TREE_IDS) | {"persistence"} == set(tune.TUNABLE_IDS)
    assert [f for f in tune.Status.__dataclass_fields__] == ["id", "title", "expected", "actual", "state", "reason"]
    assert [f for f in tune.Change.__dataclass_fields__] == ["id", "before", "after", "reason", "persist"]


def test_apply_verify_revert_every_tunable_on_a_tree(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    assert {i for i, s in states(root).items() if s == "drift"} == set(TREE_IDS)

    res = run_cli(["tune", "apply", "--root", str(root)])
    assert res.returncode == 0, res.stderr
    for tid in TREE_IDS:
        assert re.search(rf"^changed {tid}: .+ -> .+  # ", res.stdout, re.M), (tid, res.stdout)
    assert "changed swappiness: 60 -> 10" in res.stdout

    assert (root / THP / "enabled").read_text() == "always [madvise] never\n"
    assert (root / THP / "defrag").read_text() == "always defer defer+madvise [madvise] never\n"
    assert (root / "proc/sys/vm/swappiness").read_text() == "10\n"
    assert (root / "proc/sys/kernel/numa_balancing").read_text() == "0\n"
    assert (root / CPUFREQ / "policy2/scaling_governor").read_text() == "performance\n"
    assert (root / CPUFREQ / "policy0/energy_performance_preference").read_text() == "performance\n"
    sysctl = (root / "etc/sysctl.d/90-hosttune.conf").read_text()
    assert sysctl.startswith(MARKER + "\n") and "vm.swappiness = 10\n" in sysctl
    assert "kernel.numa_balancing = 0\n" in sysctl
    limits = (root / "etc/security/limits.d/90-hosttune.conf").read_text()
    assert limits.startswith(MARKER + "\n")
    assert "* soft nofile 65536\n* hard nofile 1048576\n" in limits and "* hard memlock unlimited\n" in limits
    dropin = (root / "etc/systemd/system/dev-shm.mount.d/hosttune.conf").read_text()
    assert dropin.startswith(MARKER + "\n") and "size=50%" in dropin
    assert (root / "etc/sysctl.d/99-site.conf").read_text() == "vm.swappiness = 60\n"  # not ours: untouched

    res = run_cli(["tune", "verify", "--root", str(root)])
    assert res.returncode == 0, res.stdout
    assert {i: s for i, s in states(root).items() if s != "skip"} == {i: "ok" for i in TREE_IDS}

    res = run_cli(["tune", "revert", "--root", str(root)])
    assert res.returncode == 0, res.stderr
    assert snapshot(root) == before


DRIFTS = {
    "thp": (f"{THP}/enabled", "[always] madvise never\n"),
    "thp_defrag": (f"{THP}/defrag", "always [defer] defer+madvise madvise never\n"),
    "numa_balancing": ("proc/sys/kernel/numa_balancing", "1\n"),
    "swappiness": ("proc/sys/vm/swappiness", "30\n"),
    "governor": (f"{CPUFREQ}/policy2/scaling_governor", "powersave\n"),
    "epp": (f"{CPUFREQ}/policy0/energy_performance_preference", "power\n"),
    "nofile": ("etc/security/limits.d/90-hosttune.conf", None),
    "memlock": ("etc/security/limits.d/90-hosttune.conf", None),
    "shm": ("etc/systemd/system/dev-shm.mount.d/hosttune.conf", None),
}


@pytest.mark.parametrize("tid", TREE_IDS)
def test_drift_of_each_tunable_is_seen_and_reapplied(tmp_path: Path, tid: str) -> None:
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    tune.apply(root)
    rel, text = DRIFTS[tid]
    f = root / rel
    if text is None:  # a hand edit of hosttune's own file
        edited = f.read_text().replace("65536", "4096").replace("unlimited", "64").replace("size=50%", "size=1G")
        f.write_text(edited)
    else:
        f.write_text(text)
    res = run_cli(["tune", "verify", "--root", str(root), "--json"])
    assert res.returncode == 1
    drift = {s.id for s in tune.verify(root) if s.state == "drift"}
    assert tid in drift
    assert drift <= {tid, "nofile", "memlock"}  # the limits share a file
    changes = tune.apply(root)
    assert tid in {c.id for c in changes}
    assert "drift" not in states(root).values()
    tune.revert(root)
    assert snapshot(root) == before


def test_second_apply_changes_nothing(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    assert tune.apply(root)
    after_first = snapshot(root)
    assert tune.apply(root) == []
    res = run_cli(["tune", "apply", "--root", str(root)])
    assert res.returncode == 0 and "nothing to change" in res.stdout
    assert snapshot(root) == after_first


def test_saved_values_are_those_before_the_first_apply(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    tune.apply(root, only=["swappiness"])
    (root / "proc/sys/vm/swappiness").write_text("40\n")  # drifts, and is re-applied
    tune.apply(root, only=["swappiness", "thp"])
    tune.revert(root)
    assert snapshot(root) == before  # 60, not 40


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    res = run_cli(["tune", "apply", "--dry-run", "--root", str(root), "--json"])
    assert res.returncode == 0
    assert '"id": "swappiness"' in res.stdout and '"before": "60"' in res.stdout
    res = run_cli(["tune", "apply", "--dry-run", "--root", str(root)])
    assert "would change thp: always -> madvise" in res.stdout
    assert snapshot(root) == before


def test_failing_change_undoes_the_run(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    # a file where limits.d should be: the nofile step fails after thp, numa_balancing, swappiness, ... were set
    (root / "etc/security/limits.d").write_text("not a directory\n")
    before = snapshot(root)
    res = run_cli(["tune", "apply", "--root", str(root)])
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hosttune: error: tune apply: nofile: "), res.stderr
    assert "undone" in lines[0]
    assert snapshot(root) == before


def test_a_link_in_the_tree_never_leads_a_write_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "sysctl.d").mkdir(parents=True)
    (outside / "swappiness").write_text("60\n")
    root = host_tree(tmp_path / "host")
    shutil.rmtree(root / "etc/sysctl.d")
    (root / "etc/sysctl.d").symlink_to(outside / "sysctl.d")
    (root / "proc/sys/vm/swappiness").unlink()
    (root / "proc/sys/vm/swappiness").symlink_to(outside / "swappiness")
    (root / "var").symlink_to(outside)  # the state file's directory
    outside_before = snapshot(outside)
    before = snapshot(root)
    with pytest.raises(UserError, match="symbolic link in the tree"):
        tune.apply(root)
    (root / "var").unlink()
    with pytest.raises(UserError, match="symbolic link in the tree"):
        tune.apply(root)  # etc/sysctl.d
    assert snapshot(outside) == outside_before
    (root / "var").symlink_to(outside)
    assert snapshot(root) == before
    (root / "var").unlink()
    # the link at a kernel attribute is not read through either: that tunable is a skip
    assert states(root)["swappiness"] == "skip"


def test_not_root_is_exit_2_but_dry_run_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for args in (["tune", "apply"], ["tune", "revert"], ["tune", "apply", "--only", "thp"]):
        res = run_cli(args)
        assert res.returncode == 2, args
        assert "run it as root" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = run_cli(["tune", "apply", "--dry-run"])
    assert res.returncode == 0, res.stderr


def test_unknown_only_id_names_the_closest(tmp_path: Path) -> None:
    res = run_cli(["tune", "apply", "--dry-run", "--only", "swapiness"])
    assert res.returncode == 2
    assert "did you mean 'swappiness'?" in res.stderr
    with pytest.raises(UserError, match="thp_defrag"):
        tune.apply(tmp_path, only=["thp_defarg"])


def test_only_applies_just_that_tunable(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    changes = tune.apply(root, only=["swappiness"])
    assert [(c.id, c.before, c.after) for c in changes] == [("swappiness", "60", "10")]
    assert changes[0].persist == (str(root / "etc/sysctl.d/90-hosttune.conf"),)
    assert (root / THP / "enabled").read_text() == "[always] madvise never\n"


def test_choices_come_from_the_profile(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    profile = load_text("tune:\n  swappiness: 1\n  thp: never\n  shm_size: 16G\n  nofile: 131072\n")
    changes = {c.id: c.after for c in tune.apply(root, profile=profile)}
    assert changes["swappiness"] == "1" and changes["thp"] == "never" and changes["shm"] == "size=16G"
    assert "* soft nofile 131072" in (root / "etc/security/limits.d/90-hosttune.conf").read_text()
    assert {s.id: s.state for s in tune.verify(root, profile) if s.state == "drift"} == {}
    # under the default profile, the tree now differs from what it asks for
    assert states(root)["thp"] == "drift"


def test_value_already_right_is_left_alone(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    (root / "proc/sys/vm/swappiness").write_text("5\n")  # doctor asks for at most 10: 5 is right
    assert "swappiness" not in {c.id for c in tune.apply(root)}
    assert (root / "proc/sys/vm/swappiness").read_text() == "5\n"


def test_single_node_host_skips_numa_balancing_and_vm_without_cpufreq(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    shutil.rmtree(root / "sys/devices/system/node/node1")
    shutil.rmtree(root / CPUFREQ)
    st = {s.id: s for s in tune.verify(root)}
    assert st["numa_balancing"].state == "skip" and "1 NUMA node" in st["numa_balancing"].reason
    assert st["governor"].state == "skip" and "no cpufreq driver" in st["governor"].reason
    assert st["epp"].state == "skip"
    assert st["persistence"].state == "skip" and st["persistence"].reason == "no NVIDIA GPU"


def test_read_only_proc_sys_skips_sysctl_tunables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = host_tree(tmp_path / "host")
    monkeypatch.setattr(Tree, "read_only", lambda self, rel: rel == "proc/sys")
    st = {s.id: s for s in tune.verify(root)}
    for tid in ("swappiness", "numa_balancing"):
        assert st[tid].state == "skip" and "read-only" in st[tid].reason
    assert "swappiness" not in {c.id for c in tune.apply(root)}
    assert (root / "proc/sys/vm/swappiness").read_text() == "60\n"


def test_revert_leaves_files_without_the_marker(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    tune.apply(root)
    conf = root / "etc/sysctl.d/90-hosttune.conf"
    conf.write_text("vm.swappiness = 1\n")  # an admin took the file over
    tune.revert(root)
    assert conf.read_text() == "vm.swappiness = 1\n"
    assert not (root / "var/lib/hosttune/tune-state.json").exists()


def test_boot_reapplies_the_saved_runtime_values_only(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    tune.apply(root)
    for rel, text in (DRIFTS["thp"], DRIFTS["governor"], DRIFTS["swappiness"]):
        (root / rel).write_text(text or "")
    (root / "etc/security/limits.d/90-hosttune.conf").unlink()
    res = run_cli(["tune", "apply", "--boot", "--root", str(root)])
    assert res.returncode == 0, res.stderr
    assert {"thp", "governor", "swappiness"} <= set(re.findall(r"^changed (\w+):", res.stdout, re.M))
    assert "nofile" not in res.stdout  # files are apply's job, not the boot's
    assert not (root / "etc/security/limits.d/90-hosttune.conf").exists()


def test_boot_without_state_does_nothing(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    res = run_cli(["tune", "apply", "--boot", "--root", str(root)])
    assert res.returncode == 0 and snapshot(root) == before


def test_unit_file_verifies_clean(tmp_path: Path) -> None:
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed")
    exe = str(Path(sys.executable).parent / "hosttune")  # the real script (a pyenv shim is a shell script)
    if not os.path.exists(exe):
        exe = shutil.which("hosttune") or exe
    assert os.path.exists(exe)
    text = UNIT.read_text()
    for line in ("Type=oneshot\n", "RemainAfterExit=yes\n", "ExecStart=/usr/bin/hosttune tune apply --boot\n",
                 "WantedBy=multi-user.target\n"):
        assert line in text
    copy = tmp_path / UNIT.name
    copy.write_text(text.replace("=/usr/bin/hosttune tune", f"={exe} tune"))
    res = subprocess.run(["systemd-analyze", "verify", "--man=no", str(copy)], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0 and res.stdout == "" and res.stderr == "", res.stdout + res.stderr


# ---------------------------------------------------------------------------------------------------------------
# The machine itself

# sysfs knobs only: they are kept by the state file (in the test's own $HOSTTUNE_STATE_DIR), so no file under the
# host's /etc is written (swappiness would write /etc/sysctl.d; its real write is covered by `sysctl -n` below
# only through the kernel attribute, never a file).
LIVE = {"thp": f"/{THP}/enabled", "thp_defrag": f"/{THP}/defrag"}
HOST_FILES = ("/etc/sysctl.d/90-hosttune.conf", "/var/lib/hosttune/tune-state.json", "/etc/tuned/hosttune",
              "/etc/security/limits.d/90-hosttune.conf")
UNIT_DIRS = ("/etc/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system")


def _live_value(path: str) -> str:
    text = Path(path).read_text()
    m = re.search(r"\[(\S+)\]", text)
    return m.group(1) if m else text.strip()


def test_real_round_trip_of_thp_and_its_defrag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The live host's transparent huge pages changed and put back, the state file in the test's own directory
    ($HOSTTUNE_STATE_DIR): nothing under the host's /etc, /var/lib/hosttune or /etc/tuned is read or written."""
    from hosttune.tune import tuned

    if os.geteuid() != 0:
        pytest.skip("changing kernel settings needs root")
    if not all(os.path.exists(p) for p in LIVE.values()):
        pytest.skip("this kernel exposes no transparent huge pages")
    if tuned.is_running(Path("/")):
        pytest.skip("tuned runs here: apply would switch the host's tuned profile")
    if any(os.path.exists(f"{d}/hosttune-tune.service") for d in UNIT_DIRS):
        pytest.skip("hosttune-tune.service is installed here: apply would enable it on the host")
    state_dir = tmp_path / "state"
    monkeypatch.setenv("HOSTTUNE_STATE_DIR", str(state_dir))
    host_files = {p: os.path.lexists(p) for p in HOST_FILES}
    original = {tid: _live_value(p) for tid, p in LIVE.items()}
    # choices that differ from what the machine has, so each one really changes
    profile = Tune(thp="never" if original["thp"] != "never" else "madvise",
                   thp_defrag="defer" if original["thp_defrag"] != "defer" else "never")
    try:
        changes = tune.apply(Path("/"), only=tuple(LIVE), profile=profile)
        assert {c.id for c in changes} == set(LIVE)
        assert (state_dir / "tune-state.json").is_file()
        st = {s.id: s for s in tune.verify(Path("/"), profile) if s.id in LIVE}
        assert all(s.state == "ok" for s in st.values()), st
        assert f"[{profile.thp}]" in Path(LIVE["thp"]).read_text()  # what the kernel says, not our reading of it
        assert f"[{profile.thp_defrag}]" in Path(LIVE["thp_defrag"]).read_text()
        tune.revert(Path("/"))
        assert {tid: _live_value(p) for tid, p in LIVE.items()} == original
        assert not (state_dir / "tune-state.json").exists()
        assert {p: os.path.lexists(p) for p in HOST_FILES} == host_files
    finally:
        for tid, p in LIVE.items():
            if _live_value(p) != original[tid]:
                Path(p).write_text(original[tid])


@pytest.mark.parametrize("files,tid,state,text", [
    ({"proc/meminfo": "MemTotal:       65536000 kB\nSwapTotal:              0 kB\n"}, "swappiness", "skip", "no swap"),
    ({"sys/class/infiniband/mlx5_0/node_type": None}, "memlock", "skip", "no RDMA"),
    ({f"{THP}/enabled": "always madvise [never]\n"}, "thp", "ok", ""),  # never: fewer huge pages than madvise
    ({"proc/mounts": "tmpfs /dev/shm tmpfs rw,size=48g 0 0\n"}, "shm", "ok", "mounted with size=48g"),
    ({"proc/mounts": "tmpfs /dev/shm tmpfs rw,size=16g 0 0\n"}, "shm", "drift", "size=16g"),
])
def test_where_a_tunable_applies_and_what_satisfies_it(tmp_path: Path, files: Dict[str, object], tid: str,
                                                      state: str, text: str) -> None:
    """hosttune.tune.rules, the rules doctor uses too: swappiness needs swap, memlock an RDMA device; `never` is
    fine under a profile asking for `madvise`; a /dev/shm at least the profile's size is right in a tree too."""
    root = host_tree(tmp_path / "host")
    for rel, text_ in files.items():
        if text_ is None:
            shutil.rmtree(root / rel.rsplit("/", 1)[0])
        else:
            (root / rel).write_text(str(text_))
    st = {s.id: s for s in tune.verify(root)}[tid]
    assert st.state == state and text in f"{st.reason} {st.actual}", st


def test_governor_on_a_kernel_without_policy_directories(tmp_path: Path) -> None:
    """Before kernel 4.3 each CPU has its own cpufreq directory and no policyN: tune sets, verifies and reverts the
    governor there, as doctor (the detector reads cpuN/cpufreq) sees it; before, tune skipped it as "no cpufreq
    driver" while doctor warned."""
    cpus = "sys/devices/system/cpu"
    root = build_tree(tmp_path / "host", {
        **{f"{cpus}/cpu{i}/cpufreq/scaling_governor": "ondemand\n" for i in range(2)},
        **{f"{cpus}/cpu{i}/cpufreq/scaling_available_governors": "ondemand performance\n" for i in range(2)},
    })
    before = snapshot(root)
    st = {s.id: s for s in tune.verify(root)}["governor"]
    assert (st.state, st.actual, st.expected) == ("drift", "ondemand", "performance")
    tune.apply(root, only=["governor"])
    assert all((root / f"{cpus}/cpu{i}/cpufreq/scaling_governor").read_text().strip() == "performance"
               for i in range(2))
    assert states(root)["governor"] == "ok"
    tune.revert(root)
    assert snapshot(root) == before


def test_each_tunable_satisfies_a_doctor_check_whose_fix_points_at_it() -> None:
    import inspect

    from hosttune.doctor.catalogue import BY_ID as CHECKS
    from hosttune.tune.tunables import TUNABLES

    for t in TUNABLES:
        assert t.check in CHECKS, t.id
        if t.id in ("thp_defrag", "epp"):  # set together with thp / governor; no check of their own
            continue
        # tune_fix("id", ...) or, for the limits that a container's runtime sets instead, _tune_fix(ctx, "id", ...)
        assert re.search(rf'tune_fix\((ctx, )?"{t.id}"', inspect.getsource(CHECKS[t.check].run)), t.id


def test_doctor_fix_runs_tune_first_and_keeps_the_shell_command() -> None:
    from hosttune.doctor.fixes import tune_fix

    fix = tune_fix("swappiness", "sysctl -w vm.swappiness=10")
    assert fix.splitlines()[0].startswith("hosttune tune apply --only swappiness")
    assert fix.splitlines()[1] == "sysctl -w vm.swappiness=10"


def test_with_tuned_running_apply_hands_it_a_profile_and_revert_switches_back(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    build_tree(root, {"run/tuned/tuned.pid": "4242\n", "proc/4242/comm": "tuned\n",
                      "etc/tuned/active_profile": "throughput-performance\n", "etc/tuned/profile_mode": "manual\n"})
    before = snapshot(root)
    tune.apply(root)
    assert (root / "etc/tuned/active_profile").read_text().split() == ["hosttune"]
    conf = next(root.glob("etc/tuned/**/hosttune/tuned.conf"), None) or root / "etc/tuned/hosttune/tuned.conf"
    text = conf.read_text()
    assert "include=throughput-performance" in text and "madvise" in text
    assert "drift" not in states(root).values()
    tune.revert(root)
    assert (root / "etc/tuned/active_profile").read_text().split() == ["throughput-performance"]
    assert snapshot(root) == before


def test_tune_never_runs_a_systemctl_or_mount_another_user_planted_on_path(other_user: OtherUser,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """As root, PATH kept by `sudo -E` may start with a user's directory: tune's programs come from trusted ones."""
    from hosttune.tune import programs

    marker = other_user.home / "ran-as-root"
    for name in ("systemctl", "mount"):
        other_user.write(f"bin/{name}", f"#!/bin/sh\ntouch {marker}\n", mode=0o755)
    monkeypatch.setenv("PATH", f"{other_user.home / 'bin'}:{os.environ.get('PATH', os.defpath)}")
    for call in (lambda: programs.systemctl(["is-active", "hosttune-none.service"], check=False),
                 lambda: programs.tool("mount", ["--version"], 30)):
        try:
            call()
        except OSError:
            pass  # the real program may be missing on this machine; the planted one must not run either way
    assert not marker.exists()
