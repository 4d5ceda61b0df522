"""A signal that arrives while hosttune is about to exec the job is acted on, never lost in the exec."""

import signal
import subprocess
import sys

import pytest

SCRIPT = r'''
import os, signal, sys
from hosttune.sigexec import default_handlers_for_exec
mode = sys.argv[1]
if mode == "ignored":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
else:
    signal.signal(signal.SIGINT, lambda s, f: os._exit(130))
# A Ctrl-C that has reached the process but not yet its Python handler: pending, then the exec path runs.
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
os.kill(os.getpid(), signal.SIGINT)
if mode != "no-fix":
    default_handlers_for_exec()
os.execv("/bin/sh", ["sh", "-c", "exit 0"])
'''


@pytest.mark.parametrize("mode, expected", [("handled", (130, -signal.SIGINT)), ("ignored", (0,)), ("no-fix", (0,))])
def test_a_signal_caught_before_exec_is_acted_on(mode: str, expected: tuple) -> None:
    """With the helper the pending Ctrl-C ends the process (its handler, or the default action) instead of the
    exec'd program running to completion; an ignored SIGINT (nohup) stays ignored. "no-fix" shows what the
    helper prevents: the signal is carried, blocked, into a program that never sees it (exit 0)."""
    r = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=30)
    assert r.returncode in expected, (mode, r.returncode, r.stderr)
