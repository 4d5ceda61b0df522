"""What the monitor's root-safety tests share (tests/test_monitor_config.py, test_monitor_sinks.py,
test_monitor_textfile.py, test_monitor_report.py): `hosttune monitor` in a child with the fake pynvml and no GPU,
its one error line, a good log line, and root-owned files in a root-only directory for planted links to aim at."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

from conftest import FAKES, REPO


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    for key in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM"):
        env.pop(key, None)
    env["PYTHONPATH"] = os.pathsep.join([str(FAKES), str(REPO)])  # the fake pynvml with no scenario: no GPU
    return env


def _monitor(*args: str, timeout: float = 30) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "hosttune", "monitor", *args], env=_env(), capture_output=True,
                          text=True, timeout=timeout, cwd="/")


def _one_error_line(res: "subprocess.CompletedProcess[str]") -> str:
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hosttune: error: "), res.stderr[-2000:]
    return lines[0]


def _good(ts: float, temp: float = 60.0) -> str:
    return json.dumps({"ts": ts, "host": {"mem_used_pct": 40.0},
                       "gpus": [{"index": 0, "temperature_c": temp, "memory_used_pct": 10.0}]}) + "\n"


def _targets(tmp_path: Path, names: List[str]) -> Dict[str, Path]:
    """Root-owned files in a root-only directory, one per planted link: what the other user aims at."""
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700, exist_ok=True)
    out = {}
    for name in names:
        p = vault / name.strip(".").replace(".", "-")
        p.write_text(f"root's {name}: must not change\n")
        os.chmod(p, 0o600)
        out[name] = p
    return out


def _snapshot(paths: Dict[str, Path]) -> Dict[str, Tuple[bytes, int, int]]:
    return {n: (p.read_bytes(), p.stat().st_mode, p.stat().st_mtime_ns) for n, p in paths.items()}
