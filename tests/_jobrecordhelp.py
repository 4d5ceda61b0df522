"""What the job record tests (tests/test_exec_jobrecord.py, test_monitor_jobrecords.py) share: a real `hosttune
exec` of a job that says when it started and ends when the test lets it (or on a signal), the records in this
test's records directory, and waiting for a condition (never for a time)."""

import subprocess
import sys
import time
from pathlib import Path
from typing import Any, List

from conftest import checkout_env

from hosttune import jobrecord
from hosttune.policy import dirs

PY = sys.executable
# The job: says it started (its pid), then waits until the test lets it go, and exits with the status it was given.
JOB = ("import os, sys, time\n"
       "ready, go, code = sys.argv[1:4]\n"
       "open(ready + '.tmp', 'w').write(str(os.getpid())); os.rename(ready + '.tmp', ready)\n"
       "while not os.path.exists(go):\n"
       "    time.sleep(0.02)\n"
       "sys.exit(int(code))\n")
WAIT_S = 60.0  # generous: a loaded machine, never a window the test depends on


def records() -> List[Path]:
    """The record files in this test's records directory (beside its $HOSTTUNE_RUNTIME_DIR)."""
    d = Path(jobrecord.records_dir(dirs.runtime_dir()))
    return sorted(p for p in d.iterdir() if jobrecord.parse_name(p.name)) if d.is_dir() else []


def wait_for(predicate: Any, what: str) -> None:
    end = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.02)


def start_job(tmp_path: Path, code: int, *opts: str, **env: str) -> "subprocess.Popen[str]":
    """`hosttune exec [OPTS] -- python -c JOB` in the background; tmp_path/ready appears once the job runs, and
    touching tmp_path/go ends it with `code`."""
    argv = [PY, "-m", "hosttune", "exec", *opts, "--", PY, "-c", JOB, str(tmp_path / "ready"), str(tmp_path / "go"),
            str(code)]
    return subprocess.Popen(argv, env=checkout_env(**env), cwd=str(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_started(proc: "subprocess.Popen[str]", tmp_path: Path) -> int:
    """The job's pid, once it runs."""
    wait_for(lambda: (tmp_path / "ready").exists() or proc.poll() is not None, "the job to start")
    assert proc.poll() is None, proc.communicate()
    return int((tmp_path / "ready").read_text())


def stop(proc: "subprocess.Popen[str]", tmp_path: Path) -> None:
    (tmp_path / "go").touch()
    try:
        proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
