"""The live-host branches that ask a program (issue 21): tuned's state from `systemctl is-active` and an allocator
found only through `ldconfig -p`, with the program's answer given by a HostIO whose program gateway is replaced (no
systemd or ldconfig cache is assumed on the test machine); and `doctor --npd`'s exit status when a check crashes
(hosttune.detect.tuned, hosttune.detect.allocators, hosttune.commands.doctor)."""

import subprocess
from pathlib import Path
from typing import Any, List, Optional, Sequence

import pytest
from conftest import run_cli

from hosttune.detect import allocators, tuned
from hosttune.detect.hostio import HostIO
from hosttune.doctor.checks import os as os_checks


class Answering(HostIO):
    """The live host, except that programs answer `stdout` (None: the program could not run) and the paths in
    `absent` do not exist."""

    def __init__(self, stdout: Optional[str], absent: Sequence[str] = (), rc: int = 0) -> None:
        super().__init__(Path("/"))
        self.stdout, self.absent, self.rc = stdout, set(absent), rc
        self.asked: List[List[str]] = []

    def exists(self, rel: str) -> bool:
        return False if rel in self.absent else super().exists(rel)

    def which(self, name: str, extra_dirs: Sequence[str] = ()) -> Optional[str]:
        return f"/usr/bin/{name}"

    def run(self, argv: Sequence[str], timeout: float = 10.0, env: Any = None,
            note: bool = True) -> Optional["subprocess.CompletedProcess[str]"]:
        self.asked.append(list(argv))
        if self.stdout is None:
            self.last_error = "cannot run it"
            return None
        return subprocess.CompletedProcess(list(argv), self.rc, self.stdout, "")


@pytest.mark.parametrize("stdout,state", [
    ("active\n", True), ("activating\n", True), ("reloading\n", True), ("inactive\n", False), ("failed\n", False),
    ("deactivating\n", False), ("unknown\n", False), ("maintenance\n", None), ("", None), (None, None),
])
def test_tuned_running_from_systemctl(stdout: Optional[str], state: Optional[bool]) -> None:
    io = Answering(stdout, absent=[tuned.PID_FILE])
    assert tuned.running(io) is state
    assert io.asked == [["/usr/bin/systemctl", "is-active", "tuned"]]


def test_ldconfig_answers_when_no_folder_has_the_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elf = tmp_path / "libjemalloc.so.2"
    elf.write_bytes(b"\x7fELF\x02\x01\x01\x00")
    script = tmp_path / "libtcmalloc.so.4"
    script.write_text("INPUT(x)\n")
    cache = (f"\tlibjemalloc.so.2 (libc6,x86-64) => {elf}\n\tlibjemalloc.so (libc6,x86-64) => /nonexistent/x.so\n"
             f"\tlibtcmalloc.so.4 (libc6,x86-64) => {script}\n")
    io = Answering(cache)
    monkeypatch.setattr(allocators, "SYSTEM_LIB_DIRS", ())  # nothing in the usual folders: only the cache answers
    libs = allocators.find_libraries(io)
    assert libs["jemalloc"] == str(elf)
    assert libs["tcmalloc"] is None  # named by the cache, but not an ELF library
    assert libs["gomp"] is None and libs["iomp5"] is None
    assert f"allocators: {script} is not an ELF shared library; ignored" in io.missing
    assert io.asked == [["ldconfig", "-p"]]  # asked once for every library
    none = Answering(None)
    assert allocators.find_libraries(none)["jemalloc"] is None
    assert none.asked == [["ldconfig", "-p"], ["/sbin/ldconfig", "-p"]]


def test_npd_exit_is_2_when_a_check_crashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "host"
    (root / "etc").mkdir(parents=True)
    (root / "etc/os-release").write_text('ID=debian\nVERSION_ID="12"\n')
    ok = run_cli(["doctor", "--npd", "--root", str(root), "--only", "os"])
    assert ok.returncode == 0 and len(ok.stdout.splitlines()) == 1

    def boom(**kw: Any) -> Any:
        raise RuntimeError("planted")

    monkeypatch.setattr(os_checks, "Finding", boom)
    crashed = run_cli(["doctor", "--npd", "--root", str(root), "--only", "os"])
    assert crashed.returncode == 2, crashed.stdout
    assert "check crashed: RuntimeError: planted" in crashed.stdout
