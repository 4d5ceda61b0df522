"""What the detector's root-safety tests share (tests/test_detect_hostio.py, test_detect_torchenv.py,
test_cpulist.py, test_detect_allocators.py, test_programs.py): hosttune run as root in a subprocess, started
the way the installed entry point starts (its own sys.path holds its package, not the caller's directory; -E: the
environment we give is for the detector, not for hosttune's own interpreter), planted code and a hostile tree."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

from conftest import REPO

ENTRY = f"import sys; sys.path[0] = {str(REPO)!r}; from hosttune.cli import main; main(sys.argv[1:])"

ELF = b"\x7fELF\x02\x01\x01" + b"\0" * 57

SECRET = "TOP-SECRET-0123456789-abcdefghijklmnopqrstuvwxyz"


def hosttune(*args: str, cwd: Optional[Path] = None, env: Optional[Dict[str, str]] = None,
             timeout: float = 120) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-E", "-c", ENTRY, *args], cwd=str(cwd) if cwd else None, env=env,
                          capture_output=True, text=True, timeout=timeout)


def facts_json(done: "subprocess.CompletedProcess[str]") -> Dict[str, Any]:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    data: Dict[str, Any] = json.loads(done.stdout)
    return data


def planted(marker: Path, name: str) -> str:
    """Python that, if it ever runs, appends `name` to `marker` (a root-only file: only root could write it)."""
    return f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n"


def fake_torch_site(site: Path, version: str) -> Path:
    (site / "torch").mkdir(parents=True)
    (site / "torch/__init__.py").write_text("raise RuntimeError('the probe imported torch')\n")
    (site / "torch/version.py").write_text(f"__version__ = '{version}'\ncuda = None\n")
    return site


def hostile_tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for d in ("proc", "etc", "dev", "usr/lib", "sys/devices/system/cpu/cpu0", "sys/devices/system/node/node0",
              "sys/bus/pci", "usr/lib/x86_64-linux-gnu"):
        (root / d).mkdir(parents=True, exist_ok=True)
    secret = tmp_path / "secret"
    secret.write_text(f'NAME="{SECRET}"\nID={SECRET}\nMemTotal: 1 kB\n{SECRET}\n')
    secret.chmod(0o600)
    os.mkfifo(root / "proc/cpuinfo")  # a read would block forever
    with open(root / "sys/devices/system/cpu/online", "wb") as fh:  # 3 GiB, sparse
        fh.truncate(3 << 30)
    try:
        os.mknod(root / "dev/zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    except OSError:
        pass  # not root: the absolute link below then simply dangles inside the tree
    (root / "etc/os-release").symlink_to("/dev/zero")  # root/dev/zero, a device: refused
    (root / "proc/meminfo").symlink_to(secret)  # absolute: means root/<secret path>, which is not there
    (root / "etc/hostname").symlink_to(secret)
    (root / "usr/lib/os-release").symlink_to("../../" * 12 + str(secret).lstrip("/"))  # ".." stops at the root
    (root / "etc/redhat-release").symlink_to("../../../../../../../../" + str(secret).lstrip("/"))
    (root / "sys/bus/pci/devices").symlink_to("/sys/bus/pci/devices")  # listing the host's PCI devices
    (root / "usr/lib/x86_64-linux-gnu/libjemalloc.so.2").symlink_to("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
    (root / "sys/devices/system/node/node0/cpulist").symlink_to("../../../../../../../" + str(secret).lstrip("/"))
    return root
