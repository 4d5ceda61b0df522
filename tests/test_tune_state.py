"""tune's state file: where it lives (the tree's var/lib/hosttune under --root, `policy.dirs.state_dir()` on the live
host), what shape it must have (one line and exit 2 otherwise, never a traceback), and that revert writes only the
paths each tunable owns, whatever the file says. Also: a skipped tunable is reported as skipped, not as right.

No test here reads or writes the host's /etc, /var/lib/hosttune or /etc/tuned: the live host's state directory is
pointed at the test's own with $HOSTTUNE_STATE_DIR, and nothing is applied to the live host."""

import json
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import OtherUser, build_tree, run_cli
from test_tune import CPUFREQ, host_tree, snapshot

import hosttune.tune as tune
from hosttune.errors import UserError
from hosttune.tune import state as tstate
from hosttune.tune.model import STATE_FILE, STATE_SCHEMA, state_file, state_rel
from hosttune.tune.rootfs import Tree


def write_state(root: Path, data: Any) -> Path:
    path = root / STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def one_error_line(res: Any) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    return lines[0]  # type: ignore[no-any-return]


GOOD: Dict[str, Any] = {"schema": STATE_SCHEMA, "before": {"swappiness": {"proc/sys/vm/swappiness": "60"}},
                        "applied": {"swappiness": "10"}, "made_dirs": ["var/lib/hosttune"], "tuned": None}

WRONG_SHAPES = {
    "before-a-list": {**GOOD, "before": []},
    "before-entry-a-string": {**GOOD, "before": {"swappiness": "60"}},
    "before-unknown-tunable": {**GOOD, "before": {"nproc": {"proc/sys/vm/swappiness": "60"}}},
    "before-value-a-number": {**GOOD, "before": {"swappiness": {"proc/sys/vm/swappiness": 60}}},
    "before-value-two-lines": {**GOOD, "before": {"swappiness": {"proc/sys/vm/swappiness": "60\n1"}}},
    "applied-a-list": {**GOOD, "applied": ["swappiness"]},
    "applied-value-a-mapping": {**GOOD, "applied": {"thp": {"x": 1}}},
    "made-dirs-a-string": {**GOOD, "made_dirs": "var/lib/hosttune"},
    "made-dirs-foreign": {**GOOD, "made_dirs": ["home/someone"]},
    "tuned-a-list": {**GOOD, "tuned": ["balanced"]},
    "tuned-previous-not-a-name": {**GOOD, "tuned": {"previous": "../../etc"}},
    "tuned-files-other-path": {**GOOD, "tuned": {"previous": "balanced", "files": {"etc/passwd": None}}},
    "tuned-file-bad-mode": {**GOOD, "tuned": {"previous": "balanced",
                                              "files": {"etc/tuned/profile_mode": {"text": "auto\n", "mode": "x"}}}},
    "unit-enabled-a-string": {**GOOD, "unit_enabled": "yes"},
    "unknown-key": {**GOOD, "exec": "rm -rf /"},
    "a-list": [STATE_SCHEMA],
    "no-schema": {"before": {}},
}


@pytest.mark.parametrize("data", list(WRONG_SHAPES.values()), ids=list(WRONG_SHAPES))
@pytest.mark.parametrize("verb", [["verify"], ["revert"], ["apply"], ["apply", "--boot"]])
def test_a_state_file_of_the_wrong_shape_is_one_line_and_exit_2(tmp_path: Path, data: Any, verb: Any) -> None:
    root = host_tree(tmp_path / "host")
    write_state(root, data)
    before = snapshot(root)
    line = one_error_line(run_cli(["tune", *verb, "--root", str(root)]))
    assert str(root / STATE_FILE) in line and "not hosttune's tune state" in line, line
    assert snapshot(root) == before


@pytest.mark.parametrize("tid,rel", [
    ("swappiness", "etc/shadow"),  # a file of the host, nothing to do with swappiness
    ("swappiness", "proc/sys/kernel/core_pattern"),  # another kernel attribute
    ("thp", "sys/kernel/mm/transparent_hugepage/../../../../etc/shadow"),
    ("governor", "sys/devices/system/cpu/cpufreq/policy0/../../../../../etc/shadow"),
    ("governor", "sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq"),
    ("shm", "etc/fstab"),
])
def test_revert_writes_only_the_paths_each_tunable_owns(tmp_path: Path, tid: str, rel: str) -> None:
    root = host_tree(tmp_path / "host")
    build_tree(root, {"etc/shadow": "root:*:1::::::\n", "proc/sys/kernel/core_pattern": "core\n",
                      "etc/fstab": "# fstab\n", f"{CPUFREQ}/policy0/scaling_max_freq": "3000000\n"})
    tune.apply(root, only=["swappiness"])
    state = json.loads((root / STATE_FILE).read_text())
    state["before"][tid] = {rel: "|/tmp/payload"}
    write_state(root, state)
    before = snapshot(root)
    line = one_error_line(run_cli(["tune", "revert", "--root", str(root)]))
    assert f"is not one of {tid}'s own paths" in line, line
    assert snapshot(root) == before


def test_a_state_that_apply_wrote_passes_its_own_check(tmp_path: Path) -> None:
    root = build_tree(host_tree(tmp_path / "host"), {"run/tuned/tuned.pid": "4242\n", "proc/4242/comm": "tuned\n",
                                                     "etc/tuned/active_profile": "balanced\n"})
    tune.apply(root)
    data = json.loads((root / STATE_FILE).read_text())
    assert tstate.check_state(data, Tree(root)) is data
    assert data["tuned"]["files"] == {"etc/tuned/active_profile": {"text": "balanced\n", "mode": 0o644},
                                      "etc/tuned/profile_mode": None}
    assert set(data["made_dirs"]) <= set(tstate.own_dirs(Tree(root)))


def test_a_saved_value_that_would_break_a_file_is_refused_at_boot(tmp_path: Path) -> None:
    """applied.shm is what `--boot` remounts with: a second option (exec, suid) never gets there."""
    root = host_tree(tmp_path / "host")
    tune.apply(root, only=["thp"])
    state = json.loads((root / STATE_FILE).read_text())
    state["applied"]["shm"] = "size=50%,exec,suid"
    write_state(root, state)
    before = snapshot(root)
    line = one_error_line(run_cli(["tune", "apply", "--boot", "--root", str(root)]))
    assert "tune.shm_size" in line, line
    assert snapshot(root) == before


# ---- where the state file lives ---------------------------------------------------------------------------------


def test_under_root_the_state_file_is_the_trees_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTTUNE_STATE_DIR", str(tmp_path / "elsewhere"))
    root = host_tree(tmp_path / "host")
    assert state_rel(root) == STATE_FILE == "var/lib/hosttune/tune-state.json"
    tune.apply(root, only=["thp"])
    assert (root / STATE_FILE).is_file() and not (tmp_path / "elsewhere").exists()


def test_on_the_live_host_the_state_file_is_in_the_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state_dir = tmp_path / "state"
    monkeypatch.setenv("HOSTTUNE_STATE_DIR", str(state_dir))
    assert state_file(Path("/")) == str(state_dir / "tune-state.json")
    assert state_rel(Path("/")) == str(state_dir / "tune-state.json").lstrip("/")
    # the live host's verify and revert read it from there (never /var/lib/hosttune): a wrong shape says so
    state_dir.mkdir(mode=0o700)
    (state_dir / "tune-state.json").write_text(json.dumps({"schema": STATE_SCHEMA, "before": []}))
    for call in (lambda: tune.verify(Path("/")), lambda: tune.revert(Path("/"))):
        with pytest.raises(UserError, match=f"^{state_dir / 'tune-state.json'}: not hosttune's tune state"):
            call()
    monkeypatch.delenv("HOSTTUNE_STATE_DIR")
    assert state_file(Path("/")) == "/var/lib/hosttune/tune-state.json"  # the packaged units' path


def test_as_root_a_state_dir_another_user_can_write_is_refused(tmp_path: Path, other_user: OtherUser,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """$HOSTTUNE_STATE_DIR survives `sudo -E`: a state file another user wrote would make revert write their values."""
    planted = other_user.write("state/tune-state.json", json.dumps(
        {"schema": STATE_SCHEMA, "before": {"swappiness": {"proc/sys/vm/swappiness": "100"}}, "applied": {}}))
    monkeypatch.setenv("HOSTTUNE_STATE_DIR", str(planted.parent))
    for call in (lambda: tune.revert(Path("/")), lambda: tune.apply(Path("/"), dry_run=True)):
        with pytest.raises(UserError, match="refusing tune state file .* owned by"):
            call()
    # before the first apply: the directory it would be made in is checked
    monkeypatch.setenv("HOSTTUNE_STATE_DIR", str(other_user.home / "fresh" / "state"))
    with pytest.raises(UserError, match="refusing tune state directory"):
        tstate.trust_state(Tree(Path("/")), state_rel(Path("/")))


# ---- skipped is not "already right" -----------------------------------------------------------------------------


def profile_env(tmp_path: Path, text: str) -> Dict[str, str]:
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    return {"HOSTTUNE_PROFILE": str(path)}


def test_a_skipped_tunable_is_reported_as_skipped_with_its_reason(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    env = profile_env(tmp_path, "tune:\n  governor: schedutil\n")
    res = run_cli(["tune", "apply", "--only", "governor", "--root", str(root)], env=env)
    assert res.returncode == 0, res.stderr
    assert "already right" not in res.stdout, res.stdout
    assert "skipped governor: the cpufreq driver offers no 'schedutil' governor (policy0 offers performance " \
           "powersave)" in res.stdout, res.stdout
    res = run_cli(["tune", "apply", "--only", "governor", "--root", str(root), "--json"], env=env)
    out = json.loads(res.stdout)
    assert out["changes"] == [] and [s["id"] for s in out["skipped"]] == ["governor"]
    # with something to do beside it, both are said
    res = run_cli(["tune", "apply", "--only", "governor", "--only", "thp", "--root", str(root)], env=env)
    assert "skipped governor: " in res.stdout and "changed thp: always -> madvise" in res.stdout, res.stdout
    res = run_cli(["tune", "apply", "--only", "governor", "--only", "thp", "--root", str(root)], env=env)
    assert "skipped governor: " in res.stdout and "nothing to change: thp is already right" in res.stdout


def test_governor_and_epp_must_be_offered_by_every_policy(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    (root / CPUFREQ / "policy2/scaling_available_governors").write_text("powersave schedutil\n")
    (root / CPUFREQ / "policy2/energy_performance_available_preferences").write_text("default power\n")
    st = {s.id: s for s in tune.verify(root)}
    assert st["governor"].state == "skip" and "policy2 offers powersave schedutil" in st["governor"].reason
    assert st["epp"].state == "skip" and "policy2 offers default power" in st["epp"].reason
    assert {c.id for c in tune.apply(root)} & {"governor", "epp"} == set()
    assert (root / CPUFREQ / "policy0/scaling_governor").read_text() == "powersave\n"


def test_nothing_skipped_nothing_to_do_says_every_tunable(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    tune.apply(root)
    res = run_cli(["tune", "apply", "--only", "thp", "--root", str(root)])
    assert res.returncode == 0 and res.stdout == "nothing to change: thp is already right\n", res.stdout
    res = run_cli(["tune", "apply", "--root", str(root)])
    assert "skipped persistence: " in res.stdout and "nothing to change: every other tunable is already right" \
        in res.stdout, res.stdout
