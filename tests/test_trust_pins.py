"""Pins for hosttune/trust.py from issue 21's mutation run, played as root (the rule only applies there): group
write counts as much as other write, an unknown LD_ variable is code, a path in an unknown variable's value is
refused, PATH entries must be absolute and non-empty, a preload must be an ELF file and not reached through another
user's link, and what the interpreter would load from an untrusted value is dropped."""

import os
import shutil
from pathlib import Path

import pytest

from hosttune import trust

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the root trust rule applies to root only")
NOBODY = 65534


def test_a_group_writable_file_is_not_trusted(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    os.chmod(f, 0o620)
    assert trust.problem(f)[1] == f"{f} is writable by its group"
    assert not trust.written_by_me_alone(os.stat(f))
    os.chmod(f, 0o644)
    assert trust.problem(f)[1] is None and trust.written_by_me_alone(os.stat(f))


def test_an_unknown_ld_variable_is_code() -> None:
    assert trust.is_code_env("LD_SOMETHING_NEW") and not trust.is_code_env("LD_LIBRARY_PATH")
    with pytest.raises(trust.Untrusted):
        trust.check_env_value("LD_SOMETHING_NEW", "1", "profile")


def test_a_path_in_an_unknown_variables_value_is_refused() -> None:
    with pytest.raises(trust.Untrusted, match="names a path"):
        trust.check_env_value("MY_TOOL_DIR", "/tmp/tool", "profile")
    assert trust.check_env_value("MY_TOOL_LEVEL", "4", "profile") == "4"


@pytest.mark.parametrize("value, why", [("/usr/bin::/bin", "empty entry"), ("/usr/bin:", "empty entry"),
                                        ("bin:/usr/bin", "not an absolute path")])
def test_path_entries_must_be_absolute_and_not_empty(value: str, why: str) -> None:
    with pytest.raises(trust.Untrusted, match=why):
        trust.check_env_value("PATH", value, "profile")
    assert trust.check_env_value("PATH", "/usr/bin", "profile") == "/usr/bin"


def test_a_preload_must_be_an_elf_file(tmp_path: Path) -> None:
    fake = tmp_path / "libfake.so"
    fake.write_text("#!/bin/sh\n")
    assert not trust.is_elf(fake)
    with pytest.raises(trust.Untrusted):
        trust.check_library(str(fake))
    true = shutil.which("true")
    assert true and trust.is_elf(true)


def test_a_preload_reached_through_another_users_link_is_refused(tmp_path: Path) -> None:
    true = os.path.realpath(shutil.which("true") or "/bin/true")
    link = tmp_path / "libvia.so"
    link.symlink_to(true)
    assert trust.check_library(str(link)) == true  # root's own link: fine
    os.lchown(link, NOBODY, NOBODY)
    with pytest.raises(trust.Untrusted, match="through the link"):
        trust.check_library(str(link))


def test_the_interpreter_never_gets_an_untrusted_start_variable() -> None:
    env, dropped = trust.interpreter_env({"PYTHONPATH": "relative/dir", "PYTHONSTARTUP": "/tmp/x.py", "HOME": "/"})
    assert "PYTHONPATH" not in env and "PYTHONSTARTUP" not in env and env["HOME"] == "/"
    assert set(dropped) == {"PYTHONPATH", "PYTHONSTARTUP"}
