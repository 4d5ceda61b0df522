"""monitor.yaml (hosttune/monitor/config.py, issue 11 items 8-9): a hostile file is one short line and exit 2,
never a traceback, a hang or a 1.4 GB message."""

import os
from pathlib import Path

import pytest
from _monitorhelp import _monitor, _one_error_line

from hosttune.errors import UserError
from hosttune.monitor import config as mconfig


# ---- item 8: billion laughs ------------------------------------------------------------------------------------------
def _laughs(levels: int) -> str:
    doc = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for i in range(1, levels):
        doc += f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n"
    return doc + f"interval: *l{levels - 1}\n"


def test_billion_laughs_under_interval_is_refused_in_one_short_line(tmp_path: Path) -> None:
    # Six levels (9**6 leaves) keep the old failure cheap to see: its message printed the expanded value, megabytes
    # long (nine levels cost 30 s and 1.4 GB).
    f = tmp_path / "monitor.yaml"
    f.write_text(_laughs(6))
    assert len(f.read_bytes()) < 700
    with pytest.raises(UserError) as exc:
        mconfig.load(str(f))
    msg = str(exc.value)
    assert msg.startswith(f"{f}:") and "alias" in msg and "\n" not in msg and len(msg) < 400, msg[:400]


def test_a_huge_value_is_quoted_briefly_in_the_message(tmp_path: Path) -> None:
    f = tmp_path / "monitor.yaml"
    f.write_text("interval: " + "x" * 500_000 + "\n")
    with pytest.raises(UserError) as exc:
        mconfig.load(str(f))
    msg = str(exc.value)
    assert "interval: expected a number" in msg and len(msg) < 400, msg[:400]


# ---- item 9: one line, not a traceback -------------------------------------------------------------------------------
@pytest.mark.parametrize("content,needle", [
    (b"interval: 5\nlog_dir: /var/log/\xff\xfehosttune\n", "not UTF-8"),
    (b"interval: " + b"[" * 900 + b"]" * 900 + b"\n", "nested deeper than"),
    (b'log_dir: "/var/log/host\\0tune"\n', "log_dir: "),
    (b'textfile_dir: "/run/host\\0tune"\n', "textfile_dir: "),
    (b'disks: ["/", "/da\\0ta"]\n', "disks: "),
], ids=["non-utf8", "900-deep", "nul-log-dir", "nul-textfile-dir", "nul-disk"])
def test_bad_monitor_yaml_is_one_line_and_exit_2(tmp_path: Path, content: bytes, needle: str) -> None:
    f = tmp_path / "monitor.yaml"
    f.write_bytes(content)
    line = _one_error_line(_monitor("--config", str(f)))
    assert str(f) in line and needle in line, line


def test_monitor_yaml_that_is_a_fifo_is_one_line_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "monitor.yaml"
    os.mkfifo(fifo)
    line = _one_error_line(_monitor("--config", str(fifo), timeout=20))
    assert "not a regular file" in line, line
