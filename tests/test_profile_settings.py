"""The settings table validates every `tune:` value of a profile with a strict pattern: what reaches limits.d, the
/dev/shm mount drop-in, tuned.conf and kernel attributes as root is one well-formed value, never a second line or a
second mount option. A bad value is one line naming the key, exit 2; the writers refuse a newline even if one got
past (tests/test_tune_rootfs.py)."""

from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import run_cli
from test_tune import host_tree, snapshot

import hosttune.tune as tune
from hosttune.errors import UserError
from hosttune.profile import load_text
from hosttune.profile.settings import BY_NAME, SECTIONS, Tune

BAD: Dict[str, Any] = {
    "memlock": ["unlimited\n* hard nproc 0", "64 # x", "-1", "1k", "unlimited ", ""],
    "shm_size": ["50%,exec,suid", "16G,mode=0777", "101%", "0", "16 G", "size=16G", "50%\n", ""],
    "governor": ["performance\nx", "perf ormance", "Performance", "../../x", "performance_governor_x", ""],
    "epp": ["performance\n[cpu]", "balance-performance", "128", "power save", ""],
}
GOOD: Dict[str, Any] = {
    "memlock": ["unlimited", "0", "65536"],
    "shm_size": ["50%", "100%", "1%", "16G", "16g", "1048576", "512m", "1t"],
    "governor": ["performance", "powersave", "schedutil", "ondemand", "conservative", "userspace"],
    "epp": ["performance", "balance_performance", "balance_power", "power", "default"],
}


def yaml_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@pytest.mark.parametrize("key,value", [(k, v) for k, vs in BAD.items() for v in vs])
def test_a_bad_tune_value_is_one_line_naming_the_key(tmp_path: Path, key: str, value: str) -> None:
    text = f"tune:\n  {key}: {yaml_quote(value)}\n"
    with pytest.raises(UserError, match=rf"^<string>:2: tune\.{key}: must be "):
        load_text(text)
    with pytest.raises(UserError, match=rf"^tune\.{key}: must be "):
        Tune(**{key: value})  # type: ignore[arg-type]  # however a Tune is made (the API, the boot re-apply's saved values, a handoff)
    # the CLI: one line, exit 2, nothing changed
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    profile = tmp_path / "p.yaml"
    profile.write_text(text)
    res = run_cli(["tune", "apply", "--root", str(root)], env={"HOSTTUNE_PROFILE": str(profile)})
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and f"tune.{key}: must be" in lines[0], res.stderr
    assert snapshot(root) == before


@pytest.mark.parametrize("key,value", [(k, v) for k, vs in GOOD.items() for v in vs])
def test_good_tune_values_pass(key: str, value: str) -> None:
    assert getattr(load_text(f"tune:\n  {key}: {yaml_quote(value)}\n").tune, key) == value


def test_every_tune_text_setting_has_a_pattern() -> None:
    for key in SECTIONS["tune"]:
        s = BY_NAME[f"tune.{key}"]
        assert s.kind in ("choice", "count", "bool") or (s.kind == "text" and s.pattern and s.hint), s.name


def test_the_memlock_newline_never_reaches_limits_d(tmp_path: Path) -> None:
    """The reported attack end to end: the profile is refused, and a Tune forced past the table is refused by the
    writer (the last line of defence), the run undone."""
    root = host_tree(tmp_path / "host")
    before = snapshot(root)
    forced = Tune()
    object.__setattr__(forced, "memlock", "unlimited\n* hard nproc 0")
    with pytest.raises(UserError, match="memlock: .*newline or control character"):
        tune.apply(root, profile=forced)
    assert snapshot(root) == before
    forced = Tune()
    object.__setattr__(forced, "shm_size", "50%\nOptions=exec")
    with pytest.raises(UserError, match="shm: .*newline or control character"):
        tune.apply(root, profile=forced)
    assert snapshot(root) == before


def test_a_valid_profile_reaches_the_files_unchanged(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    profile = load_text('tune:\n  memlock: "1048576"\n  shm_size: 16G\n  governor: performance\n')
    tune.apply(root, profile=profile)
    limits = (root / "etc/security/limits.d/90-hosttune.conf").read_text()
    assert "* soft memlock 1048576\n* hard memlock 1048576\n" in limits
    dropin = (root / "etc/systemd/system/dev-shm.mount.d/hosttune.conf").read_text()
    assert dropin.splitlines()[-1] == "Options=mode=1777,strict,nosuid,nodev,size=16G"
