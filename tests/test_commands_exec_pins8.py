"""Pins for hosttune/commands/exec.py (issue 21, practice round HTOP8): --override reaches the plan, the hang
timeout's reader and its messages, word for word. In-process: a dry run plans and prints, it starts nothing."""

import json
from typing import Any, Dict

import pytest
from conftest import run_cli

from hosttune.commands import exec as exec_cmd
from hosttune.errors import UserError
from hosttune.profile import Profile


def _rank0(*extra: str) -> Dict[str, Any]:
    done = run_cli(["exec", "--dry-run", "--json", *extra, "--", "python3", "train.py"], env={"OMP_NUM_THREADS": "3"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["ranks"][0]  # type: ignore[no-any-return]


def test_override_replaces_the_callers_value_and_without_it_the_callers_value_is_kept() -> None:
    kept = _rank0()
    assert kept["env"]["OMP_NUM_THREADS"] == "3"
    assert kept["overridden"] == []
    assert [k["name"] for k in kept["kept"]] == ["OMP_NUM_THREADS"]
    over = _rank0("--override")
    threads = str(over["threads"])
    assert over["env"]["OMP_NUM_THREADS"] == threads
    assert over["kept"] == []
    assert over["overridden"] == [{"name": "OMP_NUM_THREADS", "yours": "3", "value": threads}]
    assert f"OMP_NUM_THREADS={threads} replaces yours (3): --override" in over["reasons"]


@pytest.mark.parametrize("option,hang,want", [
    (None, "off", None),
    (None, "10m", 600.0),
    (None, 90, 90.0),
    ("90s", "10m", 90.0),
    ("off", "10m", None),
    ("OFF", "10m", None),
    (" Off ", "10m", None),
    (None, "Off", None),
    (None, False, None),
    ("1h", "off", 3600.0),
])
def test_hang_seconds_option_over_the_profile(option: Any, hang: Any, want: Any) -> None:
    assert exec_cmd._hang_seconds(option, Profile(name="p", summary="", source="test", hang_timeout=hang)) == want


def test_the_profiles_default_hang_timeout_is_off() -> None:
    assert exec_cmd._hang_seconds(None, Profile(name="p", summary="", source="test")) is None
    assert exec_cmd._hang_seconds(None, None) is None


def test_hang_seconds_names_where_a_bad_value_came_from() -> None:
    with pytest.raises(UserError) as info:
        exec_cmd._hang_seconds("soon", None)
    assert str(info.value) == "--hang-timeout 'soon': a duration such as 600, 90s, 10m or 1h (or off)"
    with pytest.raises(UserError) as info:
        exec_cmd._hang_seconds(None, Profile(name="p", summary="", source="test", hang_timeout="x" * 60))
    assert str(info.value) == ("the profile's hang_timeout '" + "x" * 40 + "': a duration such as 600, 90s, 10m or 1h "
                               "(or off)")


@pytest.mark.parametrize("args,command", [
    (["-"], ["-"]),
    (["-", "--bogus"], ["-", "--bogus"]),
    (["--dry-run", "-", "x"], ["-", "x"]),
    (["--profile", "a", "-"], ["-"]),
])
def test_a_lone_dash_starts_the_command(args: Any, command: Any) -> None:
    ctx = exec_cmd.cmd.make_context("exec", list(args))
    assert list(ctx.params["command"]) == command
