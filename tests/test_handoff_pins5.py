"""Pins of hosttune/launch/handoff.py (issue 21, mutation round 5), in-process on real files under tmp_path: where
`write` puts the handoff (a fresh 0700 directory named by the launcher's pid and start time, a 0600 file), what
`remove` removes and what it leaves, which stale directories `_sweep_stale` takes (only this euid's private ones
whose launcher is gone), every refusal of `check` and `read` with its message, and `write_shared`'s reuse (the
marker and the moment's snapshot left out of the name, a file of the wrong size rewritten)."""

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune import trust
from hosttune.launch import handoff
from hosttune.launch.procfs import start_time


@pytest.fixture
def xdg(tmp_path: Path) -> Dict[str, str]:
    d = tmp_path / "xdg"
    d.mkdir(mode=0o700)
    d.chmod(0o700)
    return {"XDG_RUNTIME_DIR": str(d), "HOME": str(tmp_path / "home")}


def _content(**over: Any) -> Dict[str, Any]:
    c: Dict[str, Any] = {"version": handoff.VERSION, "kind": "plain", "marker": "m1", "plans": {"1": [{"cpus": [0]}]},
                         "facts": {"memory": {"total_mb": 10, "available_mb": 3}, "storage": [{"mount": "/x"}],
                                   "gpus": [{"index": 0, "temperature_c": 40, "clock_event_reasons": 1,
                                             "ecc_uncorrected_volatile": 0, "name": "A100"}]}}
    c.update(over)
    return c


# --- write and read -------------------------------------------------------------------------------------------------

def test_write_makes_a_private_directory_named_by_the_launcher_and_a_0600_file(xdg: Dict[str, str]) -> None:
    path = handoff.write(_content(), xdg)
    d = os.path.dirname(path)
    assert os.path.basename(path) == "handoff.json"
    assert os.path.dirname(d) == xdg["XDG_RUNTIME_DIR"]
    assert os.path.basename(d).startswith(f"hosttune-launch-{os.getpid()}.{start_time(os.getpid())}-")
    assert stat.S_IMODE(os.lstat(d).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert json.loads(Path(path).read_text()) == _content()
    assert handoff.read({handoff.ENV: path}) == _content()
    second = handoff.write(_content(), xdg)
    assert os.path.dirname(second) != d  # every supervised job gets a directory of its own


def test_write_with_no_usable_base_is_an_oserror_naming_where_it_looked(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handoff, "_bases", lambda env, shared=True: iter(()))
    with pytest.raises(OSError, match=r"no private directory for the launcher's handoff could be made \(tried "
                                      r"\$XDG_RUNTIME_DIR, the runtime directory as root, the temp directory\)"):
        handoff.write(_content(), {})


def test_read_without_the_variable_is_none_and_a_wrong_version_or_shape_is_refused(xdg: Dict[str, str]) -> None:
    assert handoff.read({}) is None
    assert handoff.read({handoff.ENV: ""}) is None
    for bad in (_content(version=2), ["a", "list"], {"no": "version"}):
        path = handoff.write(bad, xdg)  # type: ignore[arg-type]
        with pytest.raises(trust.Untrusted, match=r": not a hosttune handoff file of version 1$"):
            handoff.read({handoff.ENV: path})
    path = handoff.write(_content(), xdg)
    Path(path).write_text("{not json")
    with pytest.raises(trust.Untrusted, match=r"^cannot read the launcher's handoff "):
        handoff.read({handoff.ENV: path})


# --- check ----------------------------------------------------------------------------------------------------------

def test_check_refuses_a_path_that_is_not_a_handoff_path(xdg: Dict[str, str]) -> None:
    path = handoff.write(_content(), xdg)
    rel = os.path.relpath(path)
    for bad in (rel, os.path.join(os.path.dirname(path), "other.json")):
        with pytest.raises(trust.Untrusted, match="not a hosttune handoff path"):
            handoff.check(bad)
    handoff.check(path)  # its own passes


def test_check_refuses_a_directory_others_can_enter_or_write(xdg: Dict[str, str]) -> None:
    path = handoff.write(_content(), xdg)
    os.chmod(os.path.dirname(path), 0o755)
    with pytest.raises(trust.Untrusted, match=r"^the launcher's handoff "):
        handoff.check(path)


def test_check_refuses_a_missing_file_a_link_and_a_file_others_can_write(xdg: Dict[str, str], tmp_path: Path) -> None:
    path = handoff.write(_content(), xdg)
    os.chmod(path, 0o620)
    with pytest.raises(trust.Untrusted, match=rf"owned by uid {os.geteuid()} with mode 620; expected uid "
                                              rf"{os.geteuid()}, not group/other-writable"):
        handoff.check(path)
    os.chmod(path, 0o602)
    with pytest.raises(trust.Untrusted, match="with mode 602"):
        handoff.check(path)
    os.chmod(path, 0o644)
    handoff.check(path)  # readable by others is fine: only writing is refused
    os.unlink(path)
    with pytest.raises(trust.Untrusted, match=r"No such file or directory"):
        handoff.check(path)
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps(_content()))
    target.chmod(0o600)
    os.symlink(target, path)
    with pytest.raises(trust.Untrusted, match=r"not a regular file \(a link\?\)"):
        handoff.check(path)


# --- remove and the stale sweep ---------------------------------------------------------------------------------------

def test_remove_takes_the_file_the_spawn_notes_and_the_directory(xdg: Dict[str, str]) -> None:
    path = handoff.write(_content(), xdg)
    d = os.path.dirname(path)
    Path(d, handoff.SPAWN_NOTE + "abc").write_text("")
    handoff.remove(path)
    assert not os.path.lexists(d)


def test_remove_leaves_anything_else_and_never_a_directory_it_did_not_make(tmp_path: Path, xdg: Dict[str, str]) -> None:
    path = handoff.write(_content(), xdg)
    d = os.path.dirname(path)
    Path(d, "user-file").write_text("keep")
    handoff.remove(path)
    assert not os.path.lexists(path) and Path(d, "user-file").read_text() == "keep"
    other = tmp_path / "mine"
    other.mkdir()
    (other / handoff.NAME).write_text("{}")
    handoff.remove(str(other / handoff.NAME))
    assert other.is_dir() and not (other / handoff.NAME).exists()  # the file goes, the directory is not ours
    handoff.remove(str(tmp_path / "nowhere" / handoff.NAME))  # nothing there: quiet


def _stale_dir(base: Path, tag: str, mode: int = 0o700) -> Path:
    d = base / f"{handoff.PREFIX}{tag}-abcd"
    d.mkdir()
    (d / handoff.NAME).write_text("{}")
    d.chmod(mode)
    return d


def test_sweep_stale_removes_only_private_directories_of_launchers_that_are_gone(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone_start = start_time(gone.pid)
    gone.wait()
    mine = f"{os.getpid()}.{start_time(os.getpid())}"
    dead = _stale_dir(base, f"{gone.pid}.{gone_start}")
    reused = _stale_dir(base, f"{os.getpid()}.{(start_time(os.getpid()) or 0) + 1}")  # our pid, another start
    running = _stale_dir(base, mine)
    old = _stale_dir(base, "oldstyle")
    shared = _stale_dir(base, f"{gone.pid}.{gone_start}x", mode=0o755)
    opened = base / f"{handoff.PREFIX}{gone.pid}.{gone_start}-open"
    opened.mkdir()
    opened.chmod(0o750)
    not_ours = base / f"other-{gone.pid}.{gone_start}-x"
    not_ours.mkdir(mode=0o700)
    handoff._sweep_stale(str(base))
    assert not dead.exists() and not reused.exists()
    assert running.exists() and old.exists() and opened.exists() and not_ours.exists()
    assert shared.exists()  # a tag that is not pid.start (trailing junk) is left to its own launcher
    handoff._sweep_stale(str(tmp_path / "no-such-base"))  # quiet


def test_sweep_stale_leaves_a_directory_others_could_enter(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    tag = f"{gone.pid}.{start_time(gone.pid)}"
    gone.wait()
    d = _stale_dir(base, tag, mode=0o755)
    handoff._sweep_stale(str(base))
    assert (d / handoff.NAME).exists()
    d.chmod(0o700)
    handoff._sweep_stale(str(base))
    assert not d.exists()


def test_write_sweeps_stale_directories_of_its_base(xdg: Dict[str, str]) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    tag = f"{gone.pid}.{start_time(gone.pid)}"
    gone.wait()
    d = _stale_dir(Path(xdg["XDG_RUNTIME_DIR"]), tag)
    handoff.write(_content(), xdg)
    assert not d.exists()


# --- write_shared -----------------------------------------------------------------------------------------------------

def test_without_snapshots_blanks_only_the_moments_fields() -> None:
    facts = _content()["facts"]
    assert handoff._without_snapshots(facts) == {
        "memory": {"total_mb": 10, "available_mb": None}, "storage": [],
        "gpus": [{"index": 0, "temperature_c": None, "clock_event_reasons": None, "ecc_uncorrected_volatile": None,
                  "name": "A100"}]}
    assert facts["memory"]["available_mb"] == 3 and facts["gpus"][0]["temperature_c"] == 40  # not changed in place
    assert handoff._without_snapshots(None) is None
    assert handoff._without_snapshots({"memory": 5, "gpus": "x"}) == {"memory": 5, "gpus": "x", "storage": []}


def test_write_shared_names_the_file_by_its_content_without_the_marker_or_the_snapshot(xdg: Dict[str, str]) -> None:
    a = handoff.write_shared(_content(), xdg)
    d = os.path.basename(os.path.dirname(a))
    assert d.startswith(f"hosttune-plans-{os.geteuid()}-") and len(d.rsplit("-", 1)[1]) == 24
    assert os.path.dirname(os.path.dirname(a)) == xdg["XDG_RUNTIME_DIR"]
    assert stat.S_IMODE(os.lstat(os.path.dirname(a)).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(a).st_mode) == 0o600
    stored = json.loads(Path(a).read_text())
    assert "marker" not in stored and stored["facts"]["memory"]["available_mb"] is None
    facts = _content()["facts"]
    facts["gpus"][0]["temperature_c"] = 77
    assert handoff.write_shared(_content(marker="m2", facts=facts), xdg) == a
    assert handoff.write_shared(_content(plans={"1": [{"cpus": [1]}]}), xdg) != a


def test_write_shared_rewrites_a_file_of_the_wrong_size_and_reuses_a_good_one(xdg: Dict[str, str]) -> None:
    a = handoff.write_shared(_content(), xdg)
    good = Path(a).read_bytes()
    ino = os.lstat(a).st_ino
    assert handoff.write_shared(_content(), xdg) == a and os.lstat(a).st_ino == ino  # reused, not rewritten
    Path(a).write_bytes(good[:-1])
    assert handoff.write_shared(_content(), xdg) == a
    assert Path(a).read_bytes() == good


def test_write_shared_never_uses_a_shared_temp_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(sticky))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads $TMPDIR again: the sticky one
    assert tempfile.gettempdir() == str(sticky)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path / "home"),
           "HOSTTUNE_RUNTIME_DIR": str(sticky / "run")}
    path = handoff.write_shared(_content(), env)
    assert not path.startswith(str(sticky))
    assert os.listdir(sticky) == []
