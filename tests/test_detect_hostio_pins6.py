"""What HostIO tells `facts --capture`'s trace, and its live-host answers (issue 21): every read (with its bytes, or
None when absent), listing, stat, ELF check and `which` lookup is traced in order, so a capture holds exactly what
--root reads; on the live host links, listings and ELF checks answer for the real files (hosttune.detect.hostio)."""

import os
from pathlib import Path
from typing import List, Optional, Tuple

from hosttune.detect import hostio
from hosttune.detect.hostio import HostIO

ELF = b"\x7fELF\x02\x01\x01\x00"


def _tree(root: Path) -> Path:
    (root / "etc").mkdir(parents=True)
    (root / "etc/hostname").write_bytes(b"cap\n\0")
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/numactl").write_bytes(ELF)
    (root / "sys/devices/x").mkdir(parents=True)
    (root / "sys/class").mkdir(parents=True)
    (root / "sys/class/link").symlink_to("../devices/x")
    (root / "etc/abs").symlink_to("/etc/hostname")
    return root


def test_the_trace_sees_every_question_in_order(tmp_path: Path) -> None:
    io = HostIO(_tree(tmp_path / "r"))
    seen: List[Tuple[str, str, Optional[bytes]]] = []
    io.trace = lambda kind, rel, data: seen.append((kind, rel, data))
    assert io.read("/etc/hostname") == "cap"
    assert io.read("/etc/hostname") == "cap"  # cached: asked once
    assert io.read("/etc/none") is None
    assert io.listdir("/usr/bin") == ["numactl"]
    assert io.exists("/etc/none") is False
    assert io.isdir("/sys/class/link") is True
    assert io.realpath("/sys/class/link") == "/sys/devices/x"
    assert io.is_elf("/usr/bin/numactl") is True
    assert io.which("numactl") == "/usr/bin/numactl"
    assert seen == [
        ("read", "/etc/hostname", b"cap\n\0"),
        ("read", "/etc/none", None),
        ("list", "/usr/bin", None),
        ("stat", "/etc/none", None),
        ("stat", "/sys/class/link", None),
        ("stat", "/sys/class/link", None),
        ("elf", "/usr/bin/numactl", None),
        ("stat", "/usr/local/sbin/numactl", None),
        ("stat", "/usr/local/bin/numactl", None),
        ("stat", "/usr/sbin/numactl", None),
        ("stat", "/usr/bin/numactl", None),
    ]


def test_absolute_links_resolve_inside_the_root_and_dot_dot_stops_there(tmp_path: Path) -> None:
    root = _tree(tmp_path / "r")
    (root / "etc/up").symlink_to("../../../../etc/hostname")
    (root / "etc/dots").symlink_to("./././hostname")
    io = HostIO(root)
    assert io.read("/etc/abs") == "cap" and io.realpath("/etc/abs") == "/etc/hostname"
    assert io.read("/etc/up") == "cap" and io.realpath("/etc/up") == "/etc/hostname"
    assert io.read("/etc/dots") == "cap" and io.realpath("/etc/dots") == "/etc/hostname"
    assert io.realpath("/") == "/" and io.realpath("/sys/class/link/") == "/sys/devices/x"
    assert io.read("sys/../etc/./hostname") == "cap"
    assert io.listdir("/") == ["etc", "sys", "usr"]
    assert io.exists("/etc/abs") and not io.exists("/etc/hostname/x")
    assert io.path("etc/hostname") == Path(str(root) + "/etc/hostname") == io.path("/etc/hostname")
    assert HostIO(Path(str(root) + "/")).path("/x") == Path(str(root) + "/x")
    assert io.missing == []


def test_the_live_host_answers_for_real_files(tmp_path: Path) -> None:
    tmp_path = tmp_path / "live"
    tmp_path.mkdir()
    (tmp_path / "lib.so").write_bytes(ELF)
    (tmp_path / "text.so").write_text("INPUT(x)")
    (tmp_path / "link.so").symlink_to(tmp_path / "lib.so")
    (tmp_path / "gone").symlink_to(tmp_path / "nothing")
    (tmp_path / "d").mkdir()
    io = HostIO(Path("/"))
    assert io.live is True and HostIO(tmp_path).live is False
    assert io.is_elf(str(tmp_path / "link.so")) and not io.is_elf(str(tmp_path / "text.so"))
    assert not io.is_elf(str(tmp_path / "d")) and not io.is_elf(str(tmp_path / "nothing"))
    assert io.realpath(str(tmp_path / "link.so")) == os.path.realpath(tmp_path / "lib.so")
    assert io.realpath(str(tmp_path / "gone")) is None
    assert io.exists(str(tmp_path / "gone")) and not io.exists(str(tmp_path / "nothing"))
    assert io.listdir(str(tmp_path)) == ["d", "gone", "lib.so", "link.so", "text.so"]
    assert io.isdir(str(tmp_path / "d")) and not io.isfile(str(tmp_path / "d"))
    assert io.isfile(str(tmp_path / "link.so")) and not io.isfile(str(tmp_path / "gone"))
    assert io.read(str(tmp_path / "text.so")) == "INPUT(x)"
    assert io.read_int(str(tmp_path / "text.so")) is None and io.missing == []


def test_a_read_error_is_named_by_its_kind() -> None:
    assert hostio._hostile(hostio.TooLarge(27, "big")) and hostio._hostile(OSError(40, "loop"))
    assert hostio._hostile(OSError(22, "not a regular file")) and not hostio._hostile(FileNotFoundError(2, "x"))
    assert hostio._why(OSError(22, "not a regular file")) == "is not a regular file"
    assert hostio._why(OSError(22, "Invalid argument")) == "Invalid argument"
    assert hostio._why(OSError(40, "x")) == "has too many levels of symbolic links"
    assert hostio._why(hostio.TooLarge(27, "big")) == "is larger than 16 MiB"
    assert hostio._why(OSError(5, "")) == "OSError"
