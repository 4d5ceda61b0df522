"""The README's countable claims hold against the CLI itself: the number of doctor checks, the commands in its table
(every top-level command of `hosttune --help` is there, and nothing that is not one), and the first screen's two
set-up commands."""
import re
from pathlib import Path

from click.testing import CliRunner

from hosttune.cli import cli
from hosttune.doctor.catalogue import CHECKS

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_number_of_checks_is_the_catalogues() -> None:
    said = {int(n) for n in re.findall(r"\b(\d+) checks\b", README)}
    assert said == {len(CHECKS)}, (said, len(CHECKS))


def test_the_command_table_names_every_command() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    listed = re.search(r"Commands:\n(.*)", out, re.S)
    assert listed, out
    commands = set(re.findall(r"^  (\w[\w-]*)  ", listed.group(1), re.M))  # continuation lines are indented deeper
    table = README.split("## Commands", 1)[1].split("\n#", 1)[0]
    in_table = set(re.findall(r"^\| `hosttune (\w[\w-]*)", table, re.M))
    assert commands == in_table, (sorted(commands - in_table), sorted(in_table - commands))


def test_the_first_screen_has_the_two_setup_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("```", 2)[1]
    lines = [line.split("#")[0].strip() for line in quick.splitlines() if line.strip() and not line.startswith("sh")]
    assert lines == ["make demo", "make test"], lines
