"""Pins for hosttune/commands/monitor.py (issue 21, practice round HTOP8): `monitor setup-textfile` refuses a user
who is not root in one line that names how the unit runs it."""

import os

import pytest

import hosttune.commands.monitor  # noqa: F401  (the module these pins are for; run through the CLI below)


@pytest.mark.integration
def test_setup_textfile_as_another_user_is_one_line_exit_2(other_user) -> None:  # type: ignore[no-untyped-def]
    cfg = other_user.home / "monitor.yaml"
    cfg.write_text(f"textfile_dir: {other_user.home / 'textfile'}\n")
    os.chmod(cfg, 0o644)
    done = other_user.hosttune("monitor", "setup-textfile", "--config", str(cfg))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("hosttune: error: monitor setup-textfile must run as root (the unit runs it with "
                           "ExecStartPre=+)\n")
    assert not (other_user.home / "textfile").exists()
