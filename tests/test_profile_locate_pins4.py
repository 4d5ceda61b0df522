"""Pins of mutation round 4 (issue 21) on hosttune/profile/locate.py: the search path's order (later wins), which
file a name resolves to (.yaml before .yml in one directory, the last directory over the first), what
`available()` lists, and the order `locate_active` asks: --profile, $HOSTTUNE_PROFILE, the user's file, the
system's, the built-in default. Directories under tmp_path only."""

from pathlib import Path

from hosttune.profile import locate
from hosttune.profile.locate import Active, Locator


def _env(tmp_path: Path, **extra: str) -> dict:
    return {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOSTTUNE_ETC_DIR": str(tmp_path / "etc"), **extra}


def test_search_path_order(tmp_path: Path) -> None:
    env = _env(tmp_path, HOSTTUNE_PROFILE_PATH=f"{tmp_path}/a::{tmp_path}/b")
    path = locate.search_path(env)
    assert path[-5:] == [Path("/usr/share/hosttune/profiles"), tmp_path / "etc/profiles",
                         tmp_path / "cfg/hosttune/profiles", tmp_path / "a", tmp_path / "b"]
    packaged = path[:-5]
    assert len(packaged) == 1 and (packaged[0] / "throughput.yaml").is_file()
    assert locate.locator(env).dirs == path
    assert locate.search_path({"HOME": "/nonexistent"})[-2] == Path("/etc/hosttune/profiles")


def test_config_home_without_xdg_is_home_dot_config(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert locate.generated_paths({"HOSTTUNE_ETC_DIR": str(tmp_path / "etc")}) == [
        tmp_path / "home/.config/hosttune/profile.yaml", tmp_path / "etc/profile.yaml"]
    assert locate.generated_paths({"XDG_CONFIG_HOME": "", "HOSTTUNE_ETC_DIR": "/x"})[0] == \
        tmp_path / "home/.config/hosttune/profile.yaml"


def test_a_name_resolves_to_the_last_directorys_file_and_yaml_before_yml(tmp_path: Path) -> None:
    lo, hi = tmp_path / "lo", tmp_path / "hi"
    lo.mkdir()
    hi.mkdir()
    (lo / "p.yaml").write_text("a: 1\n")
    (lo / "p.yml").write_text("a: 2\n")
    (hi / "p.yml").write_text("a: 3\n")
    (hi / "q.yaml").mkdir()  # a directory is not a profile
    (hi / "notes.txt").write_text("x\n")
    loc = Locator([lo, hi, tmp_path / "missing"])
    assert loc.candidates("p") == [lo / "p.yaml", hi / "p.yml"]
    assert loc.locate("p") == hi / "p.yml"
    assert loc.locate("q") is None and loc.candidates("q") == []
    assert loc.locate("x" * 300) is None  # a name too long for the file system: not found, no crash
    (lo / "r.yaml").write_text("a: 4\n")
    assert loc.available() == [("p", hi / "p.yml", [lo / "p.yaml", lo / "p.yml"]), ("r", lo / "r.yaml", [])]
    assert Locator([tmp_path / "missing", lo / "p.yaml"]).available() == []


def test_locate_active_order(tmp_path: Path) -> None:
    env = _env(tmp_path)
    user = tmp_path / "cfg/hosttune/profile.yaml"
    system = tmp_path / "etc/profile.yaml"
    assert locate.locate_active(None, env) == Active(None, "built-in default")
    system.parent.mkdir(parents=True)
    system.write_text("x: 1\n")
    assert locate.locate_active(None, env) == Active(str(system), "system profile")
    user.parent.mkdir(parents=True)
    user.mkdir()  # a directory where the user's file goes is not a profile
    assert locate.locate_active(None, env) == Active(str(system), "system profile")
    user.rmdir()
    user.write_text("x: 2\n")
    assert locate.locate_active(None, env) == Active(str(user), "user profile")
    env["HOSTTUNE_PROFILE"] = "latency"
    assert locate.locate_active(None, env) == Active("latency", "$HOSTTUNE_PROFILE")
    assert locate.locate_active("mine", env) == Active("mine", "--profile")
    env["HOSTTUNE_PROFILE"] = ""
    assert locate.locate_active("", env) == Active(str(user), "user profile")


def test_active_describes_itself() -> None:
    built_in = Active(None, "built-in default")
    assert built_in.generated and not built_in.host_file and built_in.base == "throughput"
    assert built_in.describe() == "throughput generated for the host (built-in default)"
    user = Active("/h/.config/hosttune/profile.yaml", "user profile")
    assert not user.generated and user.host_file
    assert user.describe() == "/h/.config/hosttune/profile.yaml (user profile)"
    assert Active("/etc/hosttune/profile.yaml", "system profile").host_file
    assert not Active("x", "--profile").host_file and not Active("x", "$HOSTTUNE_PROFILE").host_file


def test_default_generate_path_follows_the_user(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("HOSTTUNE_ETC_DIR", str(tmp_path / "etc"))
    monkeypatch.setattr(locate.os, "geteuid", lambda: 0)
    assert locate.default_generate_path() == tmp_path / "etc/profile.yaml"
    monkeypatch.setattr(locate.os, "geteuid", lambda: 1000)
    assert locate.default_generate_path() == tmp_path / "cfg/hosttune/profile.yaml"
