"""Pins (issue 21, round 8 practice) for hosttune/monitor/config.py load(): a command-line override that is empty
is still an override (`--textfile-dir ''` turns the textfile off whatever monitor.yaml says); only an unset flag
(None) leaves the file's value. The whole config compared."""

from dataclasses import replace
from pathlib import Path

from hosttune.monitor import config
from hosttune.monitor.config import MonitorConfig


def test_an_empty_override_wins_over_the_file(tmp_path: Path) -> None:
    f = tmp_path / "monitor.yaml"
    f.write_text("interval: 2\ntextfile_dir: /srv/prom\nlog_dir: /srv/log\n")
    base = replace(MonitorConfig(), interval=2.0, textfile_dir="/srv/prom", log_dir="/srv/log")
    assert config.load(str(f)) == base
    assert config.load(str(f), {"interval": None, "log_dir": None, "textfile_dir": None}) == base
    assert config.load(str(f), {"interval": None, "log_dir": None, "textfile_dir": ""}) == replace(base,
                                                                                                 textfile_dir="")
    assert config.load(str(f), {"interval": 0.5, "log_dir": "/l", "textfile_dir": "auto"}) == replace(
        base, interval=0.5, log_dir="/l", textfile_dir="auto")
