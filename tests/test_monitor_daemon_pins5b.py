"""Pin for mutation round 5's survivor in hosttune/monitor/daemon.py (issue 21): a drift re-apply that cannot be
requested (systemd's RuntimeDirectory is gone, removed under the running monitor) is an error, not a notice: under
systemd the line carries the journal's <3> priority, so `journalctl -p err -u hosttune-monitor` shows it, and the
plain stream says "error:". The request file is written for real; the failure is the filesystem's own."""

import os
from pathlib import Path
from typing import Dict, List

from hosttune.monitor.config import MonitorConfig
from hosttune.monitor.daemon import REAPPLY_NAME, Monitor


def monitor_lines(tmp_path: Path, journal: bool) -> List[str]:
    gone = tmp_path / "run" / "hosttune-monitor"  # never made: as after a clean-up under the running monitor
    err_path = tmp_path / "stderr"
    with open(err_path, "w") as err, open(os.devnull, "w") as out:
        env: Dict[str, str] = {"RUNTIME_DIRECTORY": str(gone)}
        if journal:
            st = os.fstat(err.fileno())
            env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
        m = Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="", reapply=True), out=out, err=err,
                    environ=env, root=tmp_path)
        assert m.reapply_path == os.path.join(str(gone), REAPPLY_NAME)
        m.request_reapply(["thp", "swappiness"])
    return err_path.read_text().splitlines()


def test_a_failed_reapply_request_is_logged_at_error_level(tmp_path: Path) -> None:
    (line,) = monitor_lines(tmp_path, journal=False)
    assert line.startswith(f"hosttune monitor: error: cannot request a re-apply through {tmp_path}/run/"
                           f"hosttune-monitor/{REAPPLY_NAME}: No such file or directory"), line


def test_under_systemd_a_failed_reapply_request_has_the_journals_error_priority(tmp_path: Path) -> None:
    (line,) = monitor_lines(tmp_path, journal=True)
    assert line.startswith("<3>cannot request a re-apply through "), line  # syslog LOG_ERR
