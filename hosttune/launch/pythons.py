"""Which interpreters are Python: how torchrun's launcher, another launcher's program and the shim's parent are
recognised, and the interpreter a torchrun rank's `{torchrun-python}` placeholder stands for.

Used by both sides (torchrun.py and launchers/ on the launcher side, shim.py on the rank side), so it imports only
the program gateway (lazily), trust and the OS.
"""

import os
from typing import Optional

from hosttune import trust


def is_python(path: str) -> bool:
    """A Python interpreter by its name (python3, python3.11, pypy3)."""
    name = os.path.basename(path)
    return name.startswith("python") or name.startswith("pypy")


def parent_python() -> Optional[str]:
    """The interpreter torchrun runs on: $PYTHON_EXEC (torchrun's own override), else argv[0] of our parent (the
    kernel puts the `#!` interpreter there), else its executable. None when the parent is not a Python at all (a
    shell ran the shim): the rank command must never be handed to bash or sh.

    Through the program gateway (hosttune/programs.py): as root $PYTHON_EXEC, which `su`/`sudo -E` keep, must be
    root's alone (`programs.resolve`, Untrusted otherwise) and a bare argv[0] is looked up on PATH's trusted
    directories only (`programs.trusted_which`). As an ordinary user both are what they were (PATH as is)."""
    from hosttune import programs

    if os.environ.get("PYTHON_EXEC"):
        if trust.is_root():
            return programs.resolve(os.environ["PYTHON_EXEC"], "$PYTHON_EXEC")
        return os.environ["PYTHON_EXEC"]
    ppid = os.getppid()
    try:
        with open(f"/proc/{ppid}/cmdline", "rb") as fh:
            argv0 = fh.read().split(b"\0")[0].decode("utf-8", "surrogateescape")
    except OSError:
        argv0 = ""
    if argv0 and is_python(argv0):
        if os.path.isabs(argv0) and os.access(argv0, os.X_OK):
            return argv0
        found = programs.trusted_which(argv0)[0]
        if found:
            return found
    try:
        exe = os.readlink(f"/proc/{ppid}/exe")
    except OSError:
        return None
    return exe if is_python(exe) else None


__all__ = ["is_python", "parent_python"]
