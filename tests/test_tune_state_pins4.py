"""Pins of mutation round 4 (issue 21) on hosttune/tune/state.py: the block parser, the directories apply may make,
and every rule of `check_state` at its edge with its exact message (called directly: no CLI per case)."""

import copy
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune.errors import UserError
from hosttune.tune import state
from hosttune.tune.model import STATE_SCHEMA
from hosttune.tune.rootfs import Tree

MODE = "etc/tuned/profile_mode"
GOOD: Dict[str, Any] = {"schema": STATE_SCHEMA, "before": {"swappiness": {"proc/sys/vm/swappiness": "60"}},
                        "applied": {"swappiness": "10"}, "made_dirs": ["var/lib/hosttune"], "tuned": None}


def test_parse_blocks() -> None:
    reasons: Dict[str, str] = {"thp": "kept"}
    text = "MARKER\n# swappiness: why\nvm.swappiness = 10\n\n# comment\n# nope: x\nextra\n# thp: new\n  a  \n"
    assert state.parse_blocks(text, reasons) == {"swappiness": ["vm.swappiness = 10", "extra"], "thp": ["a"]}
    assert reasons == {"thp": "kept", "swappiness": "why"}  # a reason already known is kept
    assert state.parse_blocks("# swappiness: first line is the marker, never a block\nx\n") == {}
    assert state.parse_blocks("M\nloose = 1\n# swappiness:\n") == {"swappiness": []}
    assert state.parse_blocks(None) == {} and state.parse_blocks("") == {}


def test_own_dirs(tmp_path: Path) -> None:
    assert state.own_dirs(Tree(tmp_path)) == [
        "var", "var/lib", "var/lib/hosttune", "etc", "etc/tuned", "etc/sysctl.d", "etc/security",
        "etc/security/limits.d", "etc/systemd", "etc/systemd/system", "etc/systemd/system/dev-shm.mount.d",
        "etc/tuned/hosttune", "etc/tuned/profiles", "etc/tuned/profiles/hosttune"]


def _check(tmp_path: Path, **changes: Any) -> Dict[str, Any]:
    data = copy.deepcopy(GOOD)
    data.update(changes)
    return state.check_state(data, Tree(tmp_path))


@pytest.mark.parametrize("changes", [
    {}, {"before": {"swappiness": {"proc/sys/vm/swappiness": "x" * 256}}},
    {"before": {"swappiness": {"proc/sys/vm/swappiness": None}}}, {"before": {}, "applied": {}},
    {"made_dirs": []}, {"unit_enabled": True}, {"unit_enabled": False},
    {"tuned": {"previous": None}}, {"tuned": {"previous": "balanced", "files": None}},
    {"tuned": {"previous": "a b", "files": {"etc/tuned/active_profile": None,
                                           "etc/tuned/profile_mode": {"text": "a\tb\n" + "c" * 4091, "mode": 0o777}}}},
    {"tuned": {"files": {"etc/tuned/profile_mode": {"text": "", "mode": 0}}}},
    {"before": {"governor": {"sys/devices/system/cpu/cpufreq/policy12/scaling_governor": "powersave"}}},
])
def test_states_that_pass(tmp_path: Path, changes: Dict[str, Any]) -> None:
    assert _check(tmp_path, **changes)["schema"] == STATE_SCHEMA


@pytest.mark.parametrize("changes, what", [
    ({"schema": "hosttune.tune-state/2"}, "schema hosttune.tune-state/1 expected"),
    ({"exec": "x"}, "unknown key 'exec'"),
    ({"before": []}, "before and applied must be mappings"),
    ({"applied": []}, "before and applied must be mappings"),
    ({"before": {"nproc": {}}}, "before: 'nproc' is not a tunable with saved values"),
    ({"before": {"swappiness": "60"}}, "before: 'swappiness' is not a tunable with saved values"),
    ({"before": {"swappiness": {"proc/sys/vm/dirty_ratio": "1"}}},
     "before.swappiness: 'proc/sys/vm/dirty_ratio' is not one of swappiness's own paths"),
    ({"before": {"swappiness": {"proc/sys/vm/swappinessX": "1"}}},
     "before.swappiness: 'proc/sys/vm/swappinessX' is not one of swappiness's own paths"),
    ({"before": {"nofile": {"etc/security/limits.conf": "1"}}},
     "before.nofile: 'etc/security/limits.conf' is not one of nofile's own paths"),
    ({"before": {"swappiness": {"proc/sys/vm/swappiness": "x" * 257}}}, "before.swappiness is not a one-line value"),
    ({"before": {"swappiness": {"proc/sys/vm/swappiness": "a\tb"}}}, "before.swappiness is not a one-line value"),
    ({"before": {"swappiness": {"proc/sys/vm/swappiness": "\x7f"}}}, "before.swappiness is not a one-line value"),
    ({"before": {"swappiness": {"proc/sys/vm/swappiness": 60}}}, "before.swappiness is not a one-line value"),
    ({"applied": {"nproc": "1"}}, "applied: 'nproc' is not a tunable"),
    ({"applied": {"swappiness": None}}, "applied.swappiness is empty"),
    ({"applied": {"swappiness": "1\n2"}}, "applied.swappiness is not a one-line value"),
    ({"made_dirs": "var"}, "made_dirs names a directory hosttune does not make"),
    ({"made_dirs": ["var", "tmp"]}, "made_dirs names a directory hosttune does not make"),
    ({"made_dirs": [1]}, "made_dirs names a directory hosttune does not make"),
    ({"unit_enabled": 1}, "unit_enabled must be true or false"),
    ({"tuned": []}, "tuned must be a mapping of previous and files"),
    ({"tuned": {"previous": "a", "other": 1}}, "tuned must be a mapping of previous and files"),
    ({"tuned": {"previous": ""}}, "tuned.previous is not a tuned profile name"),
    ({"tuned": {"previous": 5}}, "tuned.previous is not a tuned profile name"),
    ({"tuned": {"previous": "../x"}}, "tuned.previous is not a tuned profile name"),
    ({"tuned": {"files": []}}, "tuned.files may name only etc/tuned/active_profile and etc/tuned/profile_mode"),
    ({"tuned": {"files": {"etc/passwd": None}}}, "tuned.files may name only"),
    ({"tuned": {"files": {MODE: {"text": "a"}}}}, "tuned.files: each saved file is {text, mode}"),
    ({"tuned": {"files": {MODE: {"text": "a", "mode": 1, "x": 1}}}}, "tuned.files: each saved file is"),
    ({"tuned": {"files": {MODE: {"text": 1, "mode": 1}}}}, "tuned.files: each saved file is"),
    ({"tuned": {"files": {MODE: {"text": "c" * 4097, "mode": 1}}}}, "tuned.files: each saved file is"),
    ({"tuned": {"files": {MODE: {"text": "a\x0bb", "mode": 1}}}}, "tuned.files: each saved file is"),
    ({"tuned": {"files": {MODE: {"text": "a", "mode": 0o1000}}}}, "tuned.files: each saved file is"),
    ({"tuned": {"files": {MODE: {"text": "a", "mode": -1}}}}, "tuned.files: each saved file is"),
    ({"tuned": {"files": {MODE: {"text": "a", "mode": True}}}}, "tuned.files: each saved file is"),
    ({"tuned": {"files": {MODE: {"text": "a", "mode": "644"}}}}, "tuned.files: each saved file is"),
    ({"tuned": {"files": {"etc/tuned/profile_mode": "auto"}}}, "tuned.files: each saved file is"),
])
def test_states_that_fail_with_their_reason(tmp_path: Path, changes: Dict[str, Any], what: str) -> None:
    with pytest.raises(UserError) as exc:
        _check(tmp_path, **changes)
    where = f"{tmp_path}/var/lib/hosttune/tune-state.json"
    assert str(exc.value).startswith(f"{where}: not hosttune's tune state ({what}")
    assert str(exc.value).endswith("); `hosttune tune apply` wrote none like it")


def test_not_a_mapping(tmp_path: Path) -> None:
    for data in ([STATE_SCHEMA], None, {"before": {}}):
        with pytest.raises(UserError, match=r"\(schema hosttune\.tune-state/1 expected\)"):
            state.check_state(data, Tree(tmp_path))


def test_load_state(tmp_path: Path) -> None:
    tree = Tree(tmp_path)
    assert state.load_state(tree) is None
    p = tmp_path / "var/lib/hosttune/tune-state.json"
    p.parent.mkdir(parents=True)
    p.write_text("{")
    with pytest.raises(UserError, match=r"^.*/tune-state\.json: not hosttune's tune state \(bad JSON\)$"):
        state.load_state(tree)
    p.write_text('{"schema": "hosttune.tune-state/1"}')
    assert state.load_state(tree) == {"schema": STATE_SCHEMA}
    assert state.new_state() == {"schema": STATE_SCHEMA, "before": {}, "applied": {}, "made_dirs": [], "tuned": None}
