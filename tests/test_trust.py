"""hosttune/trust.py: what its refusals say (the kind of path expected, a fix that fits), and the env: rule's
pieces (which values name a path; an ordinary user's values unchanged). The attacks that play the other user
against a profile's env: are in tests/test_profile_load.py."""

import os
import re
from pathlib import Path

import pytest
from conftest import OtherUser

from hosttune import trust

IS_ROOT = os.geteuid() == 0


@pytest.mark.parametrize("value,named", [
    ("4", False), ("INFO", False), (":4096:8", False), ("a/b", False), ("1/2", False), ("8.0 9.0+PTX", False),
    ("https://hf.example/models", False), ("/x", True), ("x=/y", True), ("a:/b", True), ("a,/b", True),
    ("--require /x", True), ('"/x"', True), ("~/x", True), ("./x", True), ("../x", True), ("file:///etc/x", True),
])
def test_names_a_path(value: str, named: bool) -> None:
    assert trust.names_a_path(value) is named


@pytest.mark.parametrize("name", ["CUDA_INJECTION64_PATH", "OMP_TOOL_LIBRARIES", "KMP_TOOL_LIBRARIES",
                                  "NCCL_NET_PLUGIN", "GIT_SSH_COMMAND", "TMPDIR", "SOME_TOOL_CONF"])
def test_an_ordinary_users_env_values_are_unchanged(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """They can only hurt themselves: the allow-list applies as root alone."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert trust.check_env_value(name, "/home/u/lib/x.so", "p.yaml:3") == "/home/u/lib/x.so"


def test_every_library_variable_is_also_a_path_variable() -> None:
    """Code that asks "is this a path variable?" (detect.hostio.child_env, the shim) covers the library ones too."""
    assert trust.LIBRARY_ENV <= trust.PATH_LIST_ENV
    assert not (trust.CODE_ENV & trust.PATH_LIST_ENV)


@pytest.mark.skipif(not IS_ROOT, reason="the root trust rule applies when running as root")
def test_a_file_where_a_directory_is_needed_is_named_as_such(tmp_path: Path) -> None:
    """Was: "...is not a directory; fix: use a root-owned file instead of X" for a regular file at a directory's
    place (the monitor's textfile directory): the fix must say a directory is needed."""
    f = tmp_path / "textfile"
    f.write_text("")
    real, why = trust.problem(f, kind="dir")
    assert why == "is not a directory (it is a regular file)"
    fix = trust.fix_for(why, real)
    assert "root-owned file" not in fix and f"a directory is needed at {real}, not a regular file" in fix, fix
    msg = str(pytest.raises(trust.Untrusted, trust.check_path, f, "textfile dir", kind="dir").value)
    assert "is not a directory (it is a regular file); fix: a directory is needed" in msg, msg


@pytest.mark.skipif(not IS_ROOT, reason="the root trust rule applies when running as root")
def test_a_directory_where_a_file_is_needed_is_named_as_such(tmp_path: Path) -> None:
    d = tmp_path / "profile.yaml"
    d.mkdir()
    msg = str(pytest.raises(trust.Untrusted, trust.check_path, d, "profile").value)
    assert "is not a regular file (it is a directory); fix: a regular file is needed" in msg, msg


@pytest.mark.skipif(not IS_ROOT, reason="the root trust rule applies when running as root")
def test_a_shared_tmp_directory_itself_is_never_fixed_with_chmod(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    msg = str(pytest.raises(trust.Untrusted, trust.check_path, shared, "textfile dir", kind="dir").value)
    assert "chmod" not in msg and "use a directory only root can write" in msg, msg


def test_a_root_owned_file_of_the_other_users_directory_still_says_move(other_user: OtherUser) -> None:
    planted = other_user.write("p.yaml", "x: 1\n")
    with pytest.raises(trust.Untrusted, match=r"owned by nobody.*fix: move it"):
        trust.check_path(planted, "profile")


@pytest.mark.skipif(not IS_ROOT, reason="the root trust rule applies when running as root")
@pytest.mark.parametrize("name", ["GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "BASH_FUNC_ls%%", "GIT_SSH_COMMAND",
                                  "LD_BIND_NOT"])
def test_code_valued_names_are_refused_whatever_the_value(name: str) -> None:
    """A plan's env (the shim's checked_env) is not validated by the profile table: names there are checked too."""
    with pytest.raises(trust.Untrusted, match=f"refusing env {re.escape(name)} while running as root"):
        trust.check_env_value(name, "4", "the launcher's plan")


def test_a_directory_below_another_users_directory_is_never_fixed_with_chown(other_user: OtherUser) -> None:
    """Was: "fix: chown root: /home/them/tmp && chmod go-w ..." for a TMPDIR in their directory: they own the
    directory above it and can swap it again, so the only fix is another directory."""
    d = other_user.home / "tmp"
    assert other_user.run(["mkdir", "-m", "755", str(d)]).returncode == 0
    msg = str(pytest.raises(trust.Untrusted, trust.check_path, d, "env TMPDIR entry", kind="dir").value)
    assert "owned by nobody" in msg and "chown" not in msg and "chmod" not in msg, msg
    assert "fix: use a directory only root can write instead of" in msg, msg
