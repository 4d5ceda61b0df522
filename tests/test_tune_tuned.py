"""tuned coexistence: the hosttune tuned profile read back by tuned's own loader and plugins, the tuned fact on
--root trees, doctor's os.tuned check, and a real tuned daemon (Debian's package) switched in a booted nspawn."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import boot_in_nspawn, build_tree, run_cli

from hosttune.detect import tuned as detect_tuned
from hosttune.detect.hostio import HostIO
from hosttune.tune import tuned

REPO = Path(__file__).resolve().parents[1]
SYSTEM_TUNED = Path("/usr/lib/tuned")  # Debian's tuned package (apt-get install tuned)
TUNED_PY = "/usr/bin/python3"  # tuned's modules live in the distro python's dist-packages
SETTINGS = {"thp": "madvise", "thp_defrag": "madvise", "swappiness": "10", "numa_balancing": "0",
            "governor": "performance", "epp": "performance"}

# Load a profile with tuned's own Locator/Loader/Merger, and list the options each of its plugins accepts.
LOADER = r"""
import json, sys
import tuned.profiles as p
from tuned.plugins import plugin_cpu, plugin_sysctl, plugin_vm
from tuned.utils.global_config import GlobalConfig
loader = p.Loader(p.Locator(sys.argv[1].split(":")), p.Factory(), p.Merger(), GlobalConfig(), p.variables.Variables())
prof = loader.load([sys.argv[2]])
known = {"vm": plugin_vm.VMPlugin, "cpu": plugin_cpu.CPULatencyPlugin}
print(json.dumps({"name": prof.name, "options": {k: sorted(c._get_config_options()) for k, c in known.items()},
                  "units": {n: {"type": u.type, "options": dict(u.options)} for n, u in prof.units.items()}}))
"""


def have_tuned() -> bool:
    if not (SYSTEM_TUNED / "throughput-performance" / "tuned.conf").is_file() or not os.path.exists(TUNED_PY):
        return False
    return subprocess.run([TUNED_PY, "-c", "import tuned.profiles"], capture_output=True).returncode == 0


needs_tuned = pytest.mark.skipif(not have_tuned(), reason="Debian's tuned package is not installed "
                                 "(apt-get install tuned: /usr/lib/tuned and its python modules)")


def tuned_load(dirs: str, name: str) -> Dict[str, Any]:
    done = subprocess.run([TUNED_PY, "-c", LOADER, dirs, name], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def tuned_tree(tmp_path: Path, active: str = "hpc-compute", mode: str = "manual", pid: bool = False) -> Path:
    files = {"etc/tuned/active_profile": f"{active}\n", "etc/tuned/profile_mode": f"{mode}\n"}
    if pid:
        files["run/tuned/tuned.pid"] = "4242\n"
    root = build_tree(tmp_path / "host", files)
    for name in ("hpc-compute", "latency-performance", "throughput-performance", "balanced", "powersave"):
        src = SYSTEM_TUNED / name / "tuned.conf"
        if src.is_file():
            (root / "usr/lib/tuned" / name).mkdir(parents=True)
            shutil.copy2(str(src), str(root / "usr/lib/tuned" / name / "tuned.conf"))
    return root


# ---- the profile, pure and on disk -------------------------------------------------------------------------


def test_render_profile_includes_the_previous_profile_and_only_what_training_needs() -> None:
    text = tuned.render_profile("throughput-performance intel-sst", {"thp": "madvise", "swappiness": "10",
                                                                       "nofile": "1048576"})
    assert text.startswith(tuned.MARKER + "\n")
    conf = detect_tuned.parse_conf(text)
    assert conf["main"]["include"] == "throughput-performance,intel-sst"
    assert conf["vm"] == {"transparent_hugepages": "madvise"} and conf["sysctl"] == {"vm.swappiness": "10"}
    assert "cpu" not in conf and "1048576" not in text  # limits are not tuned's: hosttune persists them itself
    assert "include=" not in tuned.render_profile(None, {"thp": "never"})


@pytest.mark.parametrize("include,settings", [("hosttune", {}), ("balanced", {"thp": "never\n[cpu]"}),
                                              ("balanced", {"governor": "performance # x"})])
def test_render_profile_refuses_self_include_and_values_that_break_the_file(include: str,
                                                                             settings: Dict[str, str]) -> None:
    with pytest.raises(ValueError):
        tuned.render_profile(include, settings)


def test_switch_and_state_on_a_root_tree(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "t", {"etc/tuned/active_profile": "balanced\n", "etc/tuned/profile_mode": "auto\n"})
    assert tuned.active_profile(root) == "balanced" and tuned.profile_mode(root) == "auto"
    assert tuned.is_running(root) is False
    (root / "run/tuned").mkdir(parents=True)
    (root / "run/tuned/tuned.pid").write_text("4242\n")
    assert tuned.is_running(root) is True  # the tree's own state; nothing of this host is asked
    path = tuned.write_profile(root, "balanced", SETTINGS)
    assert path == str(root / "etc/tuned/hosttune/tuned.conf")
    tuned.switch(root, "hosttune")
    assert (root / "etc/tuned/active_profile").read_text() == "hosttune\n"
    assert (root / "etc/tuned/profile_mode").read_text() == "manual\n"
    tuned.switch(root, "balanced")
    assert tuned.remove_profile(root) and not (root / "etc/tuned/hosttune").exists()
    assert tuned.active_profile(root) == "balanced"
    with pytest.raises(ValueError):
        tuned.switch(root, "../etc")


def test_remove_profile_leaves_an_admins_own_hosttune_profile(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "t", {"etc/tuned/hosttune/tuned.conf": "[main]\ninclude=balanced\n"})
    assert tuned.remove_profile(root) is False
    assert (root / "etc/tuned/hosttune/tuned.conf").exists()


def test_tuned_2_24_layout_gets_the_profile_under_etc_tuned_profiles(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "t", {"usr/lib/tuned/profiles/balanced/tuned.conf": "[main]\n"})
    path = tuned.write_profile(root, "balanced", {"thp": "madvise"})
    assert path == str(root / "etc/tuned/profiles/hosttune/tuned.conf")
    tuned.switch(root, "hosttune")
    io = HostIO(root)
    assert detect_tuned.profile_path(io, "hosttune") == "/etc/tuned/profiles/hosttune/tuned.conf"
    assert tuned.remove_profile(root) and not Path(path).exists()


@needs_tuned
def test_profile_read_back_by_tuneds_own_loader_matches_the_settings(tmp_path: Path) -> None:
    root = tuned_tree(tmp_path, active="hpc-compute")
    previous = tuned.active_profile(root)
    assert previous == "hpc-compute"
    tuned.write_profile(root, previous, SETTINGS)
    got = tuned_load(f"{root}/usr/lib/tuned:{root}/etc/tuned", "hosttune")
    units = got["units"]
    assert got["name"] == "hosttune"
    # every option we write is one tuned's plugin declares (a misspelt one would be ignored by tuned)
    for tid, (plugin, option) in tuned.OPTIONS.items():
        if plugin in got["options"]:
            assert option in got["options"][plugin], (tid, option)
        assert units[plugin]["options"][option] == SETTINGS[tid], (tid, units[plugin])
    # the include was merged under ours: hpc-compute's own (and latency-performance's) settings are still there
    assert units["sysctl"]["options"]["vm.zone_reclaim_mode"] == "1"
    assert units["cpu"]["options"]["force_latency"]
    # and our reading of the merge agrees with tuned's for the tunables
    mine = {s.id: s.value for s in detect_tuned.probe(HostIO(root)).settings}
    assert mine["thp"] == "always"  # still hpc-compute active: switch() has not run
    tuned.switch(root, "hosttune")
    mine = {s.id: s.value for s in detect_tuned.probe(HostIO(root)).settings}
    assert mine == SETTINGS


@needs_tuned
def test_our_merge_of_shipped_profiles_agrees_with_tuneds(tmp_path: Path) -> None:
    root = tuned_tree(tmp_path)
    for name in ("hpc-compute", "throughput-performance", "balanced", "powersave"):
        if not (root / "usr/lib/tuned" / name).exists():
            continue
        got = tuned_load(f"{root}/usr/lib/tuned", name)["units"]
        units, problems = detect_tuned.merged(HostIO(root), [name])
        assert not problems
        for s in detect_tuned.effective(units):
            plugin, option = tuned.OPTIONS[s.id]
            assert got[plugin]["options"].get(option) == s.value, (name, s)


# ---- facts and doctor on --root trees -----------------------------------------------------------------------


@needs_tuned
def test_facts_shows_the_tuned_profile(tmp_path: Path) -> None:
    root = tuned_tree(tmp_path, active="hpc-compute", pid=True)
    done = run_cli(["facts", "--root", str(root), "--json"])
    assert done.returncode == 0, done.stderr
    t = json.loads(done.stdout)["tuned"]
    assert t["installed"] and t["running"] and t["profile"] == "hpc-compute" and t["mode"] == "manual"
    assert {"id": "thp", "option": "vm.transparent_hugepages", "value": "always", "profile": "hpc-compute"} \
        in t["settings"]
    text = run_cli(["facts", "--root", str(root)])
    assert "tuned" in text.stdout and "running  profile=hpc-compute  mode=manual" in text.stdout


def test_facts_without_tuned(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "t", {"etc/hostname": "x\n"})
    done = run_cli(["facts", "--root", str(root), "--json"])
    assert json.loads(done.stdout)["tuned"] == {"installed": False, "running": None, "profile": None, "mode": None,
                                                "settings": []}
    assert "not installed" in run_cli(["facts", "--root", str(root)]).stdout


def doctor_tuned(root: Path) -> Dict[str, Any]:
    done = run_cli(["doctor", "--root", str(root), "--json"])
    assert done.returncode in (0, 1), done.stderr
    return next(f for f in json.loads(done.stdout)["findings"] if f["id"] == "os.tuned")  # type: ignore[no-any-return]


@needs_tuned
def test_doctor_warns_when_the_active_tuned_profile_sets_thp_always(tmp_path: Path) -> None:
    root = tuned_tree(tmp_path, active="hpc-compute", pid=True)
    f = doctor_tuned(root)
    assert f["status"] == "warn", f
    assert "vm.transparent_hugepages=always (hpc-compute)" in f["actual"] and "hosttune tune apply" in f["fix"]
    tuned.write_profile(root, "hpc-compute", SETTINGS)
    tuned.switch(root, "hosttune")
    f = doctor_tuned(root)
    assert f["status"] == "pass" and "profile hosttune" in f["actual"], f


@needs_tuned
def test_doctor_passes_throughput_performance(tmp_path: Path) -> None:
    f = doctor_tuned(tuned_tree(tmp_path, active="throughput-performance"))
    assert f["status"] == "pass", f  # swappiness 10, governor performance; the ThunderX unit is aarch64-only


# ---- a real tuned in a booted container ---------------------------------------------------------------------

NSPAWN_TEST = r"""set -x
r=/mnt/out/result
thp=/sys/kernel/mm/transparent_hugepage
export PYTHONPATH=/opt/src LD_LIBRARY_PATH=/opt/py/lib
HT="/opt/py/PY -m hosttune"
mount --bind /mnt/out/thp/enabled $thp/enabled && mount --bind /mnt/out/thp/defrag $thp/defrag; echo "bind_rc=$?" >> $r
systemctl start tuned.service; echo "start_rc=$?" >> $r
tuned-adm profile throughput-performance; echo "tp_rc=$?" >> $r
echo "before=$(cat /etc/tuned/active_profile)" >> $r
HOSTTUNE_PROFILE=/mnt/out/profile.yaml $HT tune apply --only thp --only thp_defrag > /mnt/out/apply.out 2>&1
echo "apply_rc=$?" >> $r
echo "after=$(cat /etc/tuned/active_profile)" >> $r
echo "adm_active=$(tuned-adm active | tr '\n' ' ')" >> $r
echo "thp_applied=$(head -n1 $thp/enabled) $(head -n1 $thp/defrag)" >> $r
echo "path=$(ls /etc/tuned/hosttune/tuned.conf /etc/tuned/profiles/hosttune/tuned.conf 2>/dev/null)" >> $r
cp /etc/tuned/hosttune/tuned.conf /mnt/out/hosttune-tuned.conf; cp /var/lib/hosttune/tune-state.json /mnt/out/
echo "enabled=$(systemctl is-enabled hosttune-tune.service)" >> $r
: > /var/log/tuned/tuned.log
tuned-adm verify; echo "verify_rc=$?" >> $r
cp /var/log/tuned/tuned.log /mnt/out/verify.log
systemd-analyze verify --man=no /etc/systemd/system/hosttune-tune.service > /mnt/out/analyze.out 2>&1
echo "analyze_rc=$?" >> $r
printf 'always\n' > $thp/enabled; printf 'always\n' > $thp/defrag
systemctl start hosttune-tune.service; echo "unit_rc=$?" >> $r
echo "unit_$(systemctl show -p Result hosttune-tune.service)" >> $r
echo "unit_$(systemctl show -p ExecMainStatus hosttune-tune.service)" >> $r
echo "unit_$(systemctl show -p ActiveState hosttune-tune.service)" >> $r
echo "thp_boot=$(head -n1 $thp/enabled) $(head -n1 $thp/defrag)" >> $r
journalctl -u hosttune-tune.service --no-pager -o cat > /mnt/out/unit.log 2>&1
$HT tune revert > /mnt/out/revert.out 2>&1; echo "revert_rc=$?" >> $r
echo "back=$(cat /etc/tuned/active_profile)" >> $r
echo "adm_back=$(tuned-adm active | tr '\n' ' ')" >> $r
echo "profile_left=$(ls -d /etc/tuned/hosttune /etc/tuned/profiles/hosttune 2>/dev/null | tr '\n' ' ')" >> $r
echo "enabled_after=$(systemctl is-enabled hosttune-tune.service)" >> $r
echo "state_left=$(ls /var/lib/hosttune/tune-state.json 2>/dev/null)" >> $r
echo "thp_back=$(head -n1 $thp/enabled) $(head -n1 $thp/defrag)" >> $r
echo done=1 >> $r
systemctl poweroff --no-block
"""
TUNE_UNIT = REPO / "systemd" / "hosttune-tune.service"


@pytest.mark.integration
@needs_tuned
def test_real_tuned_switches_to_the_hosttune_profile_in_nspawn(tmp_path: Path) -> None:
    """Boot systemd in a container (this host's /usr, where Debian's tuned is installed; a tmpfs root; a writable
    copy of /etc/tuned; this interpreter's prefix at /opt/py and the source at /opt/src), start tuned.service,
    select throughput-performance, then run the real `hosttune tune apply --only thp --only thp_defrag` with a
    profile's `tune:` section: it switches tuned to the hosttune profile, tuned verifies our options, the packaged
    hosttune-tune.service (ExecStart pointed at /opt/py) passes `systemd-analyze verify` in there and, started,
    re-applies the saved values with `tune apply --boot`; `hosttune tune revert` switches tuned back.

    nspawn mounts /sys and /proc/sys read-only, so no kernel knob can change in there: the two transparent_hugepage
    files are regular files bound over the sysfs paths inside the container (`mount --bind` in there: nspawn mounts
    /sys over its own --bind targets), each holding `always`; hosttune, tuned and the unit all read and write them
    through the real paths. `tuned-adm verify` as a whole still fails in there when an included
    throughput-performance setting (vm.dirty_ratio, sysctls, readahead) differs from the host's and cannot be
    written: that is reported, not asserted.
    differs from the host's and cannot be written: that is reported, not asserted."""
    nspawn = shutil.which("systemd-nspawn")
    if nspawn is None or os.geteuid() != 0:
        pytest.skip("needs systemd-nspawn and root")
    if not os.path.islink("/bin") or not os.path.exists("/usr/lib/systemd/systemd") \
            or not os.path.exists("/usr/sbin/tuned") or not os.path.exists("/usr/bin/dbus-daemon"):
        pytest.skip("needs a merged-/usr host with systemd, dbus and tuned installed to lend the container")
    if sys.prefix != sys.base_prefix:
        pytest.skip("needs a non-venv interpreter to lend the container")
    want = {"thp": "never", "thp_defrag": "madvise"}
    out, etc_tuned, units = tmp_path / "out", tmp_path / "etc-tuned", tmp_path / "units"
    fake = out / "thp"
    for d in (out, fake, units):
        d.mkdir()
    shutil.copytree("/etc/tuned", str(etc_tuned))
    for name in ("enabled", "defrag"):
        (fake / name).write_text("always\n")
    (out / "profile.yaml").write_text("tune:\n" + "".join(f"  {k}: {v}\n" for k, v in want.items()))
    py, prefix = Path(sys.executable).resolve(), Path(sys.base_prefix).resolve()
    (out / "test.sh").write_text(NSPAWN_TEST.replace("/opt/py/PY", f"/opt/py/{py.relative_to(prefix)}"))
    unit = re.sub(r"^ExecStart=/usr/bin/hosttune tune apply --boot$",
                  f"ExecStart=/opt/py/{py.relative_to(prefix)} -m hosttune tune apply --boot\n"
                  "Environment=PYTHONPATH=/opt/src LD_LIBRARY_PATH=/opt/py/lib", TUNE_UNIT.read_text(),
                  flags=re.MULTILINE)
    assert "/opt/py/" in unit
    (units / TUNE_UNIT.name).write_text(unit)
    result, log = boot_in_nspawn(
        tmp_path, out, units,
        [f"--bind={etc_tuned}:/etc/tuned", f"--bind-ro={REPO}:/opt/src", f"--bind-ro={prefix}:/opt/py"],
        after="basic.target dbus.service", timeout=100, units_writable=True)

    def text(name: str) -> str:
        return (out / name).read_text() if (out / name).exists() else ""

    verify = text("verify.log")
    ctx = (f"{result}\napply: {text('apply.out')}\nrevert: {text('revert.out')}\nunit: {text('unit.log')}\n"
           f"analyze: {text('analyze.out')}\n{log[-3000:]}\n{verify[-3000:]}")
    assert result.get("done") == "1" and result["start_rc"] == "0" and result["tp_rc"] == "0", ctx
    assert result["bind_rc"] == "0", ctx
    assert result["before"] == "throughput-performance", ctx
    # the real CLI: both changed from the files' `always`, tuned switched to our profile, the unit enabled
    assert result["apply_rc"] == "0", ctx
    assert "changed thp: always -> never" in text("apply.out"), ctx
    assert "changed thp_defrag: always -> madvise" in text("apply.out"), ctx
    assert result["path"] == "/etc/tuned/hosttune/tuned.conf" and result["after"] == "hosttune", ctx
    assert "hosttune" in result["adm_active"] and result["thp_applied"] == "never madvise", ctx
    conf = detect_tuned.parse_conf(text("hosttune-tuned.conf"))
    assert conf["main"]["include"] == "throughput-performance", ctx
    assert conf["vm"] == {"transparent_hugepages": "never", "transparent_hugepage.defrag": "madvise"}, ctx
    state = json.loads(text("tune-state.json"))
    assert state["tuned"]["previous"] == "throughput-performance" and state["applied"] == want, state
    # tuned's own files as they were before apply, restored exactly by revert
    assert state["tuned"]["files"]["etc/tuned/active_profile"]["text"].split() == ["throughput-performance"], state
    assert result["enabled"] == "enabled" and state.get("unit_enabled") is True, ctx
    # tuned itself verified our two options against the files
    for tid, value in want.items():
        option = tuned.OPTIONS[tid][1]
        assert f"verify: passed: '{option}' = '{value}'" in verify, (option, ctx)
    assert "failed: 'transparent" not in verify, ctx
    # the packaged unit: clean systemd-analyze verify, and started it re-applies the saved values
    assert result["analyze_rc"] == "0" and text("analyze.out") == "", ctx
    assert result["unit_rc"] == "0" and result["unit_Result"] == "success", ctx
    assert result["unit_ExecMainStatus"] == "0" and result["unit_ActiveState"] == "active", ctx
    assert result["thp_boot"] == "never madvise", ctx
    # revert: tuned back on throughput-performance, our profile and state gone, the unit disabled, values restored
    assert result["revert_rc"] == "0", ctx
    assert result["back"] == "throughput-performance" and "throughput-performance" in result["adm_back"], ctx
    assert result["profile_left"] == "" and result["state_left"] == "", ctx
    assert result["enabled_after"] == "disabled", ctx
    assert not (units / "multi-user.target.wants" / TUNE_UNIT.name).exists(), ctx
    assert result["thp_back"] == "always always", ctx
    failed = sorted({ln.split("verify: failed: ")[1].split(" = ")[0].split(": ")[-1]
                     for ln in verify.splitlines() if "verify: failed: " in ln})
    print(f"\ntuned-adm verify in nspawn: rc {result['verify_rc']}; options failed (read-only /sys, /proc/sys): "
          f"{failed}")


def test_tuned_probe_never_runs_a_program_under_a_foreign_root(tmp_path: Path, monkeypatch: Any) -> None:
    root = build_tree(tmp_path / "t", {"etc/tuned/active_profile": "balanced\n"})

    def boom(*a: Any, **kw: Any) -> Any:
        raise AssertionError("subprocess under --root")

    monkeypatch.setattr(subprocess, "run", boom)
    assert detect_tuned.running(HostIO(root)) is False
    assert detect_tuned.probe(HostIO(root)).profile == "balanced"
    assert sys.modules["hosttune.tune.tuned"].is_running(root) is False
