"""Pins of mutation round 4 (issue 21) on hosttune/monitor/config.py: every limit at its edge (N passes, the next
value fails), sizes, each key's type rule and message, and the order defaults < file < command line."""

from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune.errors import UserError
from hosttune.monitor import config as C
from hosttune.monitor.config import MonitorConfig, Thresholds


@pytest.mark.parametrize("kw", [
    {"interval": 0.05}, {"interval": 86400}, {"tune_check_interval": 0}, {"tune_check_interval": 1},
    {"tune_check_interval": 86400}, {"max_bytes": 4096}, {"backups": 0}, {"backups": 1000},
    {"reapply": True, "tune_check_interval": 1}, {"disks": []}, {"disks": ["/", "/data x"]}, {"textfile_dir": ""},
])
def test_limits_that_pass(kw: Dict[str, Any]) -> None:
    MonitorConfig(log_dir="/l", **kw)


@pytest.mark.parametrize("kw, message", [
    ({"interval": 0.049}, "interval must be between 0.05 and 86400 seconds"),
    ({"interval": 86400.5}, "interval must be between"),
    ({"tune_check_interval": 0.5}, "tune_check_interval must be 0 (off) or between 1 and 86400 seconds"),
    ({"tune_check_interval": 86401}, "tune_check_interval must be 0"),
    ({"reapply": True, "tune_check_interval": 0}, "reapply: true needs tune checks"),
    ({"max_bytes": 4095}, "max_bytes must be at least 4096"),
    ({"backups": -1}, "backups must be between 0 and 1000"),
    ({"backups": 1001}, "backups must be between 0 and 1000"),
    ({"log_dir": ""}, "log_dir must not be empty"),
    ({"log_dir": "/l\x00x"}, "log_dir: '/l\\x00x' holds a control character"),
    ({"textfile_dir": "/t\nx"}, "textfile_dir: '/t\\nx' holds a control character"),
    ({"textfile_dir": "/t\x7f"}, "textfile_dir: '/t\\x7f' holds a control character"),
    ({"disks": ["data"]}, "disks: 'data' is not an absolute path"),
    ({"disks": [7]}, "disks: 7 is not an absolute path"),
    ({"disks": ["/d\x1f"]}, "disks: '/d\\x1f' holds a control character"),
])
def test_limits_that_fail(kw: Dict[str, Any], message: str) -> None:
    kw.setdefault("log_dir", "/l")
    with pytest.raises(ValueError) as exc:
        MonitorConfig(**kw)
    assert str(exc.value).startswith(message)


def test_threshold_limits() -> None:
    Thresholds(memory_pct=100.0)
    Thresholds(gpu_temp_hysteresis_c=0.0, memory_hysteresis_pct=0.0)
    Thresholds(gpu_temp_warn_c=79.9, gpu_temp_crit_c=80.0)
    for kw, msg in (({"memory_pct": 0.0}, "memory_pct must be in (0, 100]"),
                    ({"memory_pct": 100.1}, "memory_pct must be in (0, 100]"),
                    ({"gpu_temp_hysteresis_c": -0.1}, "hysteresis must be >= 0"),
                    ({"memory_hysteresis_pct": -0.1}, "hysteresis must be >= 0"),
                    ({"gpu_temp_warn_c": 80.0, "gpu_temp_crit_c": 80.0}, "gpu_temp_warn_c must be below")):
        with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)").replace("]", r"\]")):
            Thresholds(**kw)  # type: ignore[arg-type]
    t = Thresholds()
    assert (t.gpu_temp_warn_c, t.gpu_temp_crit_c, t.gpu_temp_hysteresis_c, t.memory_pct, t.memory_hysteresis_pct) \
        == (None, None, 5.0, 90.0, 5.0)
    lim = Thresholds(gpu_temp_crit_c=70.0).gpu_temp_limits(90.0)
    assert (lim.warn_c, lim.crit_c, lim.source) == (60.0, 70.0, "config")
    lim = Thresholds().gpu_temp_limits(90.0)
    assert (lim.warn_c, lim.crit_c, lim.source) == (80.0, 90.0, "nvml")


def test_defaults() -> None:
    c = MonitorConfig(log_dir="/l")
    assert (c.interval, c.textfile_dir, c.max_bytes, c.backups, c.disks, c.tune_check_interval, c.reapply) == \
        (5.0, "auto", 64 * 1024 * 1024, 8, ["/"], 300.0, False)


def test_parse_size() -> None:
    assert C.parse_size(4096) == 4096
    assert [C.parse_size(s) for s in ("10", "10B", "2K", "2k", "2KiB", "2KB", " 3 M ", "3MiB", "1G", "1gib")] == [
        10, 10, 2048, 2048, 2048, 2048, 3 * 1024 ** 2, 3 * 1024 ** 2, 1024 ** 3, 1024 ** 3]
    for bad in ("1T", "-1", "1.5M", "M", "", "1 MB x"):
        with pytest.raises(ValueError, match="not a size: .* \\(use bytes or 64M, 1G\\)"):
            C.parse_size(bad)
    with pytest.raises(ValueError, match="^not a size: True$"):
        C.parse_size(True)


@pytest.mark.parametrize("data, message", [
    ({"intervall": 5}, "unknown key 'intervall' (known: backups, disks, interval, log_dir, max_bytes, reapply, "
                       "textfile_dir, thresholds, tune_check_interval)"),
    ({"thresholds": [1]}, "thresholds: expected a mapping"),
    ({"thresholds": {"memory": 1}}, "unknown key thresholds.memory (known: gpu_temp_crit_c, gpu_temp_hysteresis_c, "
                                    "gpu_temp_warn_c, memory_hysteresis_pct, memory_pct)"),
    ({"thresholds": {1: 1}}, "unknown key thresholds.1 (known:"),
    ({"thresholds": {"memory_pct": "90"}}, "thresholds.memory_pct: expected a number, got '90'"),
    ({"thresholds": {"memory_pct": None}}, "thresholds.memory_pct: expected a number, got None"),
    ({"thresholds": {"memory_pct": True}}, "thresholds.memory_pct: expected a number, got True"),
    ({"interval": "5"}, "interval: expected a number, got '5'"),
    ({"tune_check_interval": False}, "tune_check_interval: expected a number, got False"),
    ({"reapply": "yes"}, "reapply: expected true or false, got 'yes'"),
    ({"backups": 2.0}, "backups: expected an integer, got 2.0"),
    ({"backups": True}, "backups: expected an integer, got True"),
    ({"log_dir": 5}, "log_dir: expected a path, got 5"),
    ({"textfile_dir": ["/x"]}, "textfile_dir: expected a path, got <list of 1 item(s)>"),
    ({"disks": "/"}, "disks: expected a list of paths"),
    ({"max_bytes": "lots"}, "not a size: 'lots'"),
])
def test_from_mapping_refusals(data: Dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as exc:
        C.from_mapping(data)
    assert str(exc.value).startswith(message)


def test_from_mapping_values() -> None:
    c = C.from_mapping({"interval": 2, "tune_check_interval": 0, "reapply": False, "max_bytes": "8K",
                        "backups": 3, "log_dir": "/l", "textfile_dir": None, "disks": ["/", "/d"],
                        "thresholds": {"gpu_temp_warn_c": None, "gpu_temp_crit_c": 88, "memory_pct": 80}})
    assert c == MonitorConfig(interval=2.0, tune_check_interval=0.0, reapply=False, max_bytes=8192, backups=3,
                              log_dir="/l", textfile_dir="", disks=["/", "/d"],
                              thresholds=Thresholds(gpu_temp_crit_c=88.0, memory_pct=80.0))
    assert isinstance(c.interval, float)


def test_load_order_file_then_command_line(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HOSTTUNE_ETC_DIR", str(tmp_path / "etc"))
    monkeypatch.setenv("HOSTTUNE_LOG_DIR", str(tmp_path / "log"))
    assert C.default_config() == str(tmp_path / "etc/monitor.yaml")
    assert C.load(None) == MonitorConfig()  # no file: the defaults
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/monitor.yaml").write_text("interval: 7\nbackups: 2\n")
    c = C.load(None, {"interval": 3.0, "backups": None})
    assert (c.interval, c.backups) == (3.0, 2)  # a flag wins; an unset flag (None) leaves the file's value
    other = tmp_path / "other.yaml"
    other.write_text("interval: 9\n")
    assert C.load(str(other)).interval == 9.0 and C.load(str(other)).backups == 8
    assert C.load("/dev/null") == MonitorConfig()
    other.write_text("interval: 0\n")
    with pytest.raises(UserError, match=f"^{other}: interval must be between"):
        C.load(str(other))
    with pytest.raises(UserError, match="^command line: max_bytes must be at least 4096$"):
        C.load(None, {"max_bytes": 1})


def test_a_config_file_of_at_most_one_mib(tmp_path: Path) -> None:
    p = tmp_path / "m.yaml"
    head = "interval: 7\n"
    p.write_text(head + "#" * (C.MAX_CONFIG_BYTES - len(head) - 1) + "\n")
    assert p.stat().st_size == 1 << 20 and C.load(str(p)).interval == 7.0
    p.write_text(head + "#" * (C.MAX_CONFIG_BYTES - len(head)) + "\n")
    with pytest.raises(UserError):
        C.load(str(p))
