"""Pins for hosttune.launch.supervise's small rules, as whole tables (issue 21, round-8 practice, HLAU8): the stop
grace from $HOSTTUNE_STOP_GRACE (default 40 s; 0 .. a day; anything else one exact error), the job's exit status the
shell's way (128+N for a signal it died of, or one forwarded to it before it failed), and which command fails up
front (a path that does not exist)."""

from pathlib import Path
from typing import List, Optional, Union

import pytest

from hosttune.errors import UserError
from hosttune.launch import supervise

BAD = "HOSTTUNE_STOP_GRACE={} is not a number of seconds from 0 to 86400"


@pytest.mark.parametrize("raw, want", [
    (None, 40.0), ("", 40.0), ("0", 0.0), ("2.5", 2.5), ("86400", 86400.0), (" 7 ", 7.0),
    ("86400.5", BAD.format("86400.5")), ("-1", BAD.format("-1")), ("nan", BAD.format("nan")),
    ("inf", BAD.format("inf")), ("soon", BAD.format("soon")), ("9" * 50, BAD.format("9" * 40)),
])
def test_grace_table(raw: Optional[str], want: Union[float, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTTUNE_STOP_GRACE", "")
    if raw is None:
        monkeypatch.delenv("HOSTTUNE_STOP_GRACE")
    else:
        monkeypatch.setenv("HOSTTUNE_STOP_GRACE", raw)
    if isinstance(want, str):
        with pytest.raises(UserError) as exc:
            supervise._grace()
        assert str(exc.value) == want
    else:
        assert supervise._grace() == want


@pytest.mark.parametrize("rc, received, want", [
    (0, [], 0), (3, [], 3), (0, [15], 0), (1, [15], 143), (1, [2, 15], 130), (-9, [], 137), (-15, [2], 143),
    (255, [1], 129),
])
def test_status_table(rc: int, received: List[int], want: int) -> None:
    assert supervise._status(rc, received) == want


def test_a_command_path_that_does_not_exist_fails_up_front(tmp_path: Path) -> None:
    missing = str(tmp_path / "bin" / "train")
    with pytest.raises(UserError) as exc:
        supervise._which_or_fail(missing, {"PATH": "/usr/bin:/bin"})
    assert str(exc.value) == f"exec: {missing}: no such file"


def test_a_plain_jobs_hook_handoff_sets_pythonpath_and_the_handoff_only(tmp_path: Path) -> None:
    import os

    from hosttune.facts import Cpu, Facts
    from hosttune.launch import handoff, job
    from hosttune.launch.hook import HOOK_DIR

    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    environ = {"PATH": "/usr/bin:/bin", "PYTHONPATH": "/opt/lib", "XDG_RUNTIME_DIR": str(xdg)}
    facts = Facts(cpu=Cpu(logical=2, physical=2, online=(0, 1), allowed_cpus=(0, 1), cores=((0,), (1,))))
    launch = job.prepare(["python3", "t.py"], facts=facts, environ=environ, measured=False)
    env = {"KEEP": "1"}
    path = supervise._hook_handoff(launch, "1-abcd", environ, env)
    try:
        assert path is not None and path.startswith(str(xdg) + os.sep) and os.path.isfile(path)
        assert env == {"KEEP": "1", "PYTHONPATH": os.pathsep.join([HOOK_DIR, "/opt/lib"]), "HOSTTUNE_HANDOFF": path}
    finally:
        handoff.remove(path)


HANGS = "import threading\nprint('started', flush=True)\nthreading.Event().wait()\n"


@pytest.mark.integration
def test_supervision_hands_the_hang_watch_on_a_plain_job_that_stops_is_stopped_with_124(tmp_path: Path) -> None:
    import subprocess
    import sys

    from conftest import job_processes, torchrun_env

    from hosttune.launch import hang

    (tmp_path / "job.py").write_text(HANGS)
    env = torchrun_env(HANG_TEST_PINS8=str(tmp_path))
    res = subprocess.run([sys.executable, "-m", "hosttune", "exec", "--hang-timeout", "2", "--", sys.executable,
                          str(tmp_path / "job.py")], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == hang.EXIT_HUNG == 124, res.stderr[-3000:]
    assert res.stdout == "started\n"
    assert "hosttune: hang: rank 0 is in <module> (job.py:3)" in res.stderr, res.stderr[-3000:]
    assert not job_processes(f"HANG_TEST_PINS8={tmp_path}")
