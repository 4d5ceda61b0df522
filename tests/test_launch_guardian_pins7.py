"""Pins for hosttune.launch.guardian.pdeathsig_preexec (issue 21, session 9 practice rounds): the job's top process
starts in a process group of its own and with the signal the kernel sends it when its launcher dies (its parent-death
signal). The job reads both itself (PR_GET_PDEATHSIG answers only for the calling process) and prints them."""

import json
import signal
import subprocess
import sys

from hosttune.launch.guardian import pdeathsig_preexec

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
