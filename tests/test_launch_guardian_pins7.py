"""Pins for hosttune.launch.guardian.pdeathsig_preexec (issue 21, session 9 practice rounds): the job's top process
starts in a process group of its own and with the signal the kernel sends it when its launcher dies (its parent-death
signal). The job reads both itself (PR_GET_PDEATHSIG answers only for the calling process) and prints them.
And the guardian (Guardian.start, _guard) of a launcher that dies without saying "done" says so in one line when it
was told of a job, even one already gone (nothing left to stop, but the launcher did not end its job itself)."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import hosttune
from hosttune.launch.guardian import pdeathsig_preexec

REPO = str(Path(hosttune.__file__).resolve().parent.parent)

JOB = """\
import ctypes, json, os
sig = ctypes.c_int(-1)
ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
print(json.dumps({"pdeathsig": sig.value, "own_group": os.getpgrp() == os.getpid()}))
"""


def test_the_job_gets_its_own_group_and_the_launchers_death_signal() -> None:
    for sig in (signal.SIGTERM, signal.SIGUSR1):
        done = subprocess.run([sys.executable, "-c", JOB], preexec_fn=pdeathsig_preexec(sig), capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"pdeathsig": int(sig), "own_group": True}


def test_without_it_a_child_has_neither() -> None:
    done = subprocess.run([sys.executable, "-c", JOB], capture_output=True, text=True, timeout=600)
    assert json.loads(done.stdout) == {"pdeathsig": 0, "own_group": False}


# The launcher: starts its guardian, tells it of a job that has ended already (reaped: no process left to find), and
# dies without "done". The guardian inherits its stderr; the test reads it to EOF, which comes when the guardian ends.
LAUNCHER = """\
import os, subprocess
from hosttune.launch.guardian import Guardian
gone = subprocess.Popen(["true"])
gone.wait()  # before the guardian exists: it never sees this process alive
guard = Guardian.start("PIN_GUARDIAN_MARKER=" + str(os.getpid()), 5.0)
guard.watch(gone.pid)
print(os.getpid(), flush=True)
os._exit(0)
"""


def test_a_launcher_that_dies_after_starting_a_job_is_said_by_its_guardian() -> None:
    done = subprocess.run([sys.executable, "-c", LAUNCHER], env=dict(os.environ, PYTHONPATH=REPO),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    launcher = int(done.stdout)
    assert done.stderr == (f"hosttune: the launcher (pid {launcher}) ended without stopping its job; stopping it "
                           f"(SIGTERM, then SIGKILL after 5 s)\n")
