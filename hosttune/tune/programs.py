"""The system programs tune runs (systemctl, mount), started the way the detector starts one (`HostIO.which`/`run`):
as root found only in directories root alone can write, started in "/" with the caller's code-loading variables
dropped (a PATH kept by `sudo -E` must not name a user's `systemctl` or `mount`)."""

import errno
import re
import subprocess
from pathlib import Path
from typing import List

from hosttune.detect.hostio import HostIO


def tool(name: str, args: List[str], timeout: float) -> "subprocess.CompletedProcess[str]":
    """Run the system program `name` (see the module's docstring); OSError when it is not found or does not run."""
    io = HostIO(Path("/"))
    exe = io.which(name)
    if exe is None:
        raise OSError(errno.ENOENT, f"{name}: not found in a PATH directory only root can write")
    done = io.run([exe, *args], timeout=timeout, note=False)
    if done is None:
        raise OSError(f"{name}: {io.last_error}")
    return done


def systemctl(args: List[str], check: bool = True) -> "subprocess.CompletedProcess[str]":
    done = tool("systemctl", args, 120)
    if check and done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[-1]
        raise OSError(f"systemctl {' '.join(args)}: {why}")
    return done


def systemctl_do(*args: str) -> None:
    systemctl(list(args))


_SIZE_OPT = re.compile(r"size=[0-9]{1,20}[kKmMgGtT%]?")


def remount_shm(size_opt: str) -> None:
    if not _SIZE_OPT.fullmatch(size_opt):  # one option, never a list of them (`size=50%,exec,suid`)
        raise OSError(errno.EINVAL, f"refusing /dev/shm mount options {size_opt[:60]!r}: one size= option expected")
    done = tool("mount", ["-o", f"remount,{size_opt}", "/dev/shm"], 60)
    if done.returncode != 0:
        raise OSError(f"mount -o remount,{size_opt} /dev/shm: {done.stderr.strip() or done.returncode}")
