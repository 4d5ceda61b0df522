"""`hosttune exec` keeps a job record (hosttune/jobrecord.py) for exactly the life of its job: a real exec of a real
job, whose record is there while the job runs and gone after it ends, whichever way it ends (exit 0, an error
status, SIGTERM), for an exec'd plain job (the watcher removes it), a supervised one (hosttune removes it), exec's
cached fast path, and exec's own failure."""

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from _jobrecordhelp import PY, WAIT_S, records, start_job, wait_for, wait_started
from conftest import checkout_env

from hosttune import jobrecord
from hosttune.policy import dirs


def one_record(proc: "subprocess.Popen[str]", tmp_path: Path) -> Dict[str, Any]:
    wait_started(proc, tmp_path)
    found = records()
    assert len(found) == 1, found
    data = json.loads(found[0].read_text())
    st = found[0].stat()
    assert st.st_uid == os.geteuid() and st.st_mode & 0o777 == 0o644
    assert jobrecord.parse_name(found[0].name) == [data["pid"], data["start"]]
    return data


@pytest.mark.parametrize("supervised", [False, True], ids=["exec'd", "supervised"])
@pytest.mark.parametrize("end", ["exit 0", "exit 3", "SIGTERM"])
def test_the_record_lives_exactly_as_long_as_the_job(tmp_path: Path, supervised: bool, end: str) -> None:
    opts = ("--hang-timeout", "1h") if supervised else ()  # a hang watch supervises a plain job
    proc = start_job(tmp_path, 3 if end == "exit 3" else 0, *opts, SLURM_JOB_ID="4711", CUDA_VISIBLE_DEVICES="1",
                     CUDA_DEVICE_ORDER="PCI_BUS_ID")
    try:
        data = one_record(proc, tmp_path)
        job_pid = int((tmp_path / "ready").read_text())
        # the process it names: the job's own (exec keeps the pid) or hosttune's, which supervises the job
        assert data["pid"] == proc.pid
        assert (job_pid == proc.pid) is not supervised
        assert data["start"] == jobrecord.start_time(proc.pid)
        assert (data["slurm_job"], data["cuda_visible_devices"], data["device_order"]) == ("4711", "1", "PCI_BUS_ID")
        if end == "SIGTERM":
            os.kill(proc.pid, signal.SIGTERM)
        else:
            (tmp_path / "go").touch()
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    want = {"exit 0": 0, "exit 3": 3, "SIGTERM": 128 + signal.SIGTERM if supervised else -signal.SIGTERM}[end]
    assert proc.returncode == want, err
    wait_for(lambda: not records(), "the record to go")


def test_execs_own_failure_leaves_no_record(tmp_path: Path) -> None:
    script = tmp_path / "no-format"  # executable, but no ELF and no #!: execve(2) fails with ENOEXEC, after the record
    script.write_bytes(b"\x00\x01\x02 not a program\n")
    script.chmod(0o755)
    res = subprocess.run([PY, "-m", "hosttune", "exec", "--", str(script)], env=checkout_env(), cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=WAIT_S)
    assert res.returncode == 2 and "Exec format error" in res.stderr, res.stderr
    assert os.path.isdir(jobrecord.records_dir(dirs.runtime_dir()))  # it had one while it tried
    assert records() == []  # removed before exec exited, not later by the watcher


def test_execs_cached_fast_path_keeps_a_record_too(tmp_path: Path) -> None:
    """A repeated plain job is replayed from exec's start-up cache (execcache/replay.py), which bypasses the full
    path: it writes its record all the same; and the full path's record (a write and a fork, per run) does not keep
    the cache from recording it (warm() asserts the last run was replayed)."""
    from test_exec_speed import _env, replayed, warm

    code = ("import os, sys; from hosttune import jobrecord; from hosttune.policy import dirs\n"
            "d = jobrecord.records_dir(dirs.runtime_dir())\n"
            "print(sum(1 for n in os.listdir(d) if (jobrecord.parse_name(n) or [0])[0] == os.getpid()))\n")
    work = tmp_path / "work"
    work.mkdir()
    runs = warm("--", PY, "-c", code, env=_env(), cwd=work)
    assert replayed(runs[-1])
    assert [r.stdout.strip() for r in runs] == ["1"] * len(runs)  # each job saw its own record while it ran
    wait_for(lambda: not records(), "the records to go")


def test_a_record_left_by_a_killed_exec_is_swept_by_the_next(tmp_path: Path) -> None:
    """SIGKILL leaves the watcher nothing to watch for a supervised job (hosttune itself dies): its record names a
    process that is gone, and the same user's next exec removes it."""
    proc = start_job(tmp_path, 0, "--hang-timeout", "1h")
    stale: Optional[Path] = None
    try:
        one_record(proc, tmp_path)
        stale = records()[0]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=WAIT_S)
    finally:
        (tmp_path / "go").touch()  # the job itself, now hosttune's orphan, ends
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert stale.exists()
    res = subprocess.run([PY, "-m", "hosttune", "exec", "--", "true"], env=checkout_env(), cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=WAIT_S)
    assert res.returncode == 0, res.stderr
    assert not stale.exists()
