"""hosttune.detect.hostio pins (issue 21, practice round HDET8): what exists / isdir / isfile say of each kind of
entry - a FIFO or a device is neither a folder nor a file - in a foreign root and on the live host."""

import os
from pathlib import Path

from hosttune.detect.hostio import HostIO


def test_kinds_of_entries_in_a_foreign_root(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x\n")
    os.mkfifo(tmp_path / "p")
    (tmp_path / "ld").symlink_to("d")
    (tmp_path / "lf").symlink_to("/f")  # absolute: inside the root
    (tmp_path / "dangling").symlink_to("nowhere")
    io = HostIO(tmp_path)
    got = {n: (io.exists(n), io.isdir(n), io.isfile(n)) for n in ("d", "f", "p", "ld", "lf", "dangling", "none")}
    assert got == {"d": (True, True, False), "f": (True, False, True), "p": (True, False, False),
                   "ld": (True, True, False), "lf": (True, False, True), "dangling": (True, False, False),
                   "none": (False, False, False)}


def test_a_device_on_the_live_host_is_neither_folder_nor_file() -> None:
    io = HostIO(Path("/"))
    assert (io.exists("/dev/null"), io.isdir("/dev/null"), io.isfile("/dev/null")) == (True, False, False)
    assert (io.isdir("/proc/self"), io.isfile("/proc/self")) == (True, False)
