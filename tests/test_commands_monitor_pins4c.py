"""Pins for hosttune/commands/monitor.py (issue 21, mutation round 4's r4b-monitor-log-dir-option): the group's own
--log-dir and --config reach its subcommands (`hosttune monitor --log-dir DIR report` reads DIR), and the
subcommand's own option wins over the group's."""

import json
import os
from pathlib import Path

from conftest import cli_runner
from test_monitor import _synthetic_log

from hosttune.cli import cli


def test_the_groups_log_dir_is_the_reports_and_the_reports_own_wins(tmp_path: Path) -> None:
    ours, other = tmp_path / "ours", tmp_path / "other"
    _synthetic_log(ours, [70, 86, 70, 60])
    _synthetic_log(other, [50, 55])
    runner = cli_runner()
    res = runner.invoke(cli, ["monitor", "--log-dir", str(ours), "--config", os.devnull, "report", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["log_dir"] == str(ours) and data["samples"] == 4
    res = runner.invoke(cli, ["monitor", "--log-dir", str(ours), "--config", os.devnull, "report", "--log-dir",
                              str(other), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["log_dir"] == str(other) and json.loads(res.output)["samples"] == 2


def test_the_groups_config_names_the_log_dir_when_no_option_does(tmp_path: Path) -> None:
    log = tmp_path / "fromconfig"
    _synthetic_log(log, [61, 62, 63])
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(f"log_dir: {log}\n")
    res = cli_runner().invoke(cli, ["monitor", "--config", str(cfg), "report", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["log_dir"] == str(log) and json.loads(res.output)["samples"] == 3
