"""Pins of mutation round 4 (issue 21) on hosttune/cli.py and errors.py: the lazy command table (help without
importing the commands, sorted, unknown names refused), a UserError as one escaped line with exit 2, Ctrl-C as 130,
and the SIGINT handler the commands get. In-process (click's runner); this module doubles as a command module."""

import signal
import sys
from typing import Any

import click
import pytest
from conftest import cli_runner

from hosttune import __version__, cli
from hosttune.errors import UserError

seen_handler: list = []


@click.command("boom")
@click.argument("what")
def cmd(what: str) -> None:
    seen_handler.append(signal.getsignal(signal.SIGINT))
    if what == "user":
        raise UserError("bad \x1b[31mthing\nhere")
    if what == "ctrl-c":
        raise KeyboardInterrupt
    if what == "custom":
        err = UserError("custom")
        err.exit_code = 3
        raise err
    click.echo("fine")


def _run(*args: str) -> Any:
    return cli_runner().invoke(cli.cli, list(args), catch_exceptions=False)


@pytest.fixture()
def boom(monkeypatch: Any) -> None:
    monkeypatch.setitem(cli.COMMANDS, "boom", (__name__, "A test command."))


def test_user_error_is_one_escaped_line_and_exit_2(boom: None) -> None:
    r = _run("boom", "user")
    assert r.exit_code == 2 and UserError.exit_code == 2
    assert r.stderr == "hosttune: error: bad \\x1b[31mthing\\nhere\n" and r.stdout == ""


def test_exit_code_comes_from_the_error(boom: None) -> None:
    assert _run("boom", "custom").exit_code == 3


def test_ctrl_c_is_130_without_a_traceback(boom: None) -> None:
    r = _run("boom", "ctrl-c")
    assert r.exit_code == 130 and "Traceback" not in r.output and "Aborted" not in r.output


def test_a_command_gets_pythons_sigint_handler_back(boom: None, monkeypatch: Any) -> None:
    old = signal.signal(signal.SIGINT, cli._interrupted_early)
    try:
        seen_handler.clear()
        assert _run("boom", "ok").stdout == "fine\n"
        assert seen_handler == [signal.default_int_handler]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a choice made before (nohup) stays
        seen_handler.clear()
        _run("boom", "ok")
        assert seen_handler == [signal.SIG_IGN]
    finally:
        signal.signal(signal.SIGINT, old)


def test_help_lists_every_command_sorted_without_importing_them(monkeypatch: Any) -> None:
    for name in [m for m in sys.modules if m.startswith("hosttune.commands.autotune")]:
        monkeypatch.delitem(sys.modules, name)
    r = _run("--help")
    assert r.exit_code == 0
    rows = r.stdout.split("Commands:")[1].splitlines()
    listed = [ln.split()[0] for ln in rows if ln.startswith("  ") and not ln.startswith("   ")]  # not wrapped help
    assert listed == sorted(cli.COMMANDS) == ["autotune", "doctor", "env", "exec", "facts", "monitor", "profile",
                                              "train", "tune"]
    assert "Measure your job under candidate plans; keep only a proven winner." in r.stdout
    assert "hosttune.commands.autotune" not in sys.modules
    assert _run("-h").stdout == r.stdout


def test_unknown_command_and_version() -> None:
    r = cli_runner().invoke(cli.cli, ["nope"])
    assert r.exit_code == 2 and "No such command 'nope'" in r.stderr
    assert _run("--version").stdout == f"hosttune {__version__}\n"
    assert cli.cli.get_command(click.Context(cli.cli), "nope") is None
    assert cli.cli.get_command(click.Context(cli.cli), "tune").name == "tune"


def test_a_test_run_is_not_the_program() -> None:
    assert cli._is_the_program() is False


def test_main_passes_argv(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out == f"hosttune {__version__}\n"
