"""hosttune.detect.hostio on a captured tree, pinned (issue 21): links resolved inside the root (absolute targets,
"..", the 40-link limit), what a read refuses and how it is noted, the cache, the int and cpulist readers, and the
directory, realpath, ELF, which and run answers under a foreign root."""

import os
import threading
from pathlib import Path
from typing import List

import pytest

from hosttune.detect import hostio
from hosttune.detect.hostio import READ_LIMIT, HostIO, small_int

ELF = b"\x7fELF\x02\x01\x01" + b"\0" * 57


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/hostname").write_text("captured\n\0")
    (root / "sys/devices/x").mkdir(parents=True)
    (root / "sys/devices/x/value").write_text("  42 trailing\n")
    (root / "sys/class").mkdir(parents=True)
    (root / "sys/class/link").symlink_to("../devices/x")  # relative, inside
    (root / "abs").symlink_to("/etc/hostname")  # absolute: root/etc/hostname, not the host's
    (root / "up").symlink_to("../../../../../../etc/hostname")  # ".." stops at the root
    (root / "dangling").symlink_to("/nowhere")
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/prog").write_bytes(ELF)
    (root / "usr/bin/script").write_text("#!/bin/sh\n")
    (root / "usr/bin/elflink").symlink_to("prog")
    return root


def test_links_resolve_inside_the_root(tmp_path: Path) -> None:
    io = HostIO(tree(tmp_path))
    assert io.live is False
    assert io.read("/abs") == "captured"  # "\n\0" stripped
    assert io.read("up") == "captured"
    assert io.read("/sys/class/link/value") == "  42 trailing"  # only the end is stripped
    assert io.read_int("/sys/class/link/value") == 42
    assert io.realpath("/sys/class/link") == "/sys/devices/x"
    assert io.realpath("/abs") == "/etc/hostname"
    assert io.realpath("/dangling") is None
    assert io.missing == []


def test_a_chain_of_40_links_is_followed_and_41_is_a_loop(tmp_path: Path) -> None:
    root = tree(tmp_path)
    (root / "l0").symlink_to("etc/hostname")
    for i in range(1, 41):
        (root / f"l{i}").symlink_to(f"l{i - 1}")
    io = HostIO(root)
    assert io.read("/l39") == "captured"  # 40 links
    assert io.read("/l40") is None  # 41 links
    assert io.missing == ["read: /l40 has too many levels of symbolic links"]
    (root / "loop").symlink_to("loop")
    assert io.read("/loop", "thing") is None
    assert io.missing[-1] == "thing: /loop has too many levels of symbolic links"


def test_a_missing_file_is_noted_only_when_named(tmp_path: Path) -> None:
    io = HostIO(tree(tmp_path))
    assert io.read("/etc/none") is None and io.missing == []
    assert io.read("/etc/none2", "cpu.x") is None
    assert io.missing == ["cpu.x: /etc/none2 not found"]
    assert io.read("/etc/none2", "cpu.x") is None  # cached: "not readable" from now on
    assert io.read("/etc/none", "other") is None  # the cached None, named now
    assert io.missing == ["cpu.x: /etc/none2 not found", "cpu.x: /etc/none2 not readable",
                          "other: /etc/none not readable"]
    assert io.read("/etc/hostname/sub") is None  # through a file: not a directory


def test_reads_are_cached(tmp_path: Path) -> None:
    root = tree(tmp_path)
    io = HostIO(root)
    assert io.read("/etc/hostname") == "captured"
    (root / "etc/hostname").write_text("changed\n")
    assert io.read("/etc/hostname") == "captured"
    assert HostIO(root).read("/etc/hostname") == "changed"


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    root = tree(tmp_path)
    os.mkfifo(root / "etc/fifo")
    got: List[object] = []
    t = threading.Thread(target=lambda: got.append(HostIO(root).read("/etc/fifo", "f")), daemon=True)
    t.start()
    t.join(60)  # a blocking open would hang here for good; a refused one returns at once
    assert got == [None]
    io = HostIO(root)
    io.read("/etc/fifo")
    assert io.missing == ["read: /etc/fifo is not a regular file"]  # noted even when optional
    assert io.is_elf("/etc/fifo") is False and io.isfile("/etc/fifo") is False and io.exists("/etc/fifo")


def test_the_read_limit_is_exact(tmp_path: Path) -> None:
    root = tree(tmp_path)
    with open(root / "etc/big", "wb") as f:
        f.truncate(READ_LIMIT + 1)
    with open(root / "etc/limit", "wb") as f:
        f.truncate(READ_LIMIT)
    io = HostIO(root)
    assert io.read("/etc/big") is None
    assert io.missing == ["read: /etc/big is larger than 16 MiB"]
    assert io.read("/etc/limit") == ""  # exactly the limit: read (NULs stripped)


@pytest.mark.parametrize("text,value", [("7", 7), ("-1\n", -1), ("+3", 3), ("0x10", None), ("", None),
                                        ("9" * 20, int("9" * 20)), ("9" * 21, None), ("\u0663", None)])
def test_read_int_and_small_int(tmp_path: Path, text: str, value: object) -> None:
    root = tree(tmp_path)
    (root / "etc/n").write_text(text)
    io = HostIO(root)
    assert io.read_int("/etc/n") == value
    assert io.missing == []
    if value is None and text.strip():
        io2 = HostIO(root)
        assert io2.read_int("/etc/n", "k") is None
        assert io2.missing == [f"k: /etc/n is not a number: {text.strip()[:40]!r}"]


def test_small_int_digits_and_signs() -> None:
    assert small_int("12345", digits=5) == 12345 and small_int("123456", digits=5) is None
    assert small_int("-") is None and small_int("+") is None and small_int("--1") is None
    assert small_int("-0") == 0


def test_cpulist_notes_say_entry_or_entries(tmp_path: Path) -> None:
    root = tree(tmp_path)
    (root / "etc/one").write_text("0-1,x\n")
    (root / "etc/two").write_text("0,x,y\n")
    (root / "etc/mask").write_text("1" + "0" * 4096 + "\n")
    (root / "etc/mask2").write_text("3\n")
    io = HostIO(root)
    assert io.cpus("/etc/one", "w") == [0, 1]
    assert io.cpus("/etc/two", "w") == [0]
    assert io.cpus("/etc/none", "w", "/etc/mask") == []
    assert io.cpus("/etc/none", "w", "/etc/mask2") == [0, 1]
    assert io.cpus("/etc/none", "w", "/etc/none3") is None
    assert io.cpus("/etc/none", "w") is None
    assert io.missing == ["w: /etc/one: 1 entry ignored (corrupt, or CPU ids >= 16384)",
                          "w: /etc/two: 2 entries ignored (corrupt, or CPU ids >= 16384)",
                          "w: /etc/mask: bits for CPU ids >= 16384 ignored"]


def test_exists_isdir_isfile_listdir(tmp_path: Path) -> None:
    root = tree(tmp_path)
    io = HostIO(root)
    assert io.exists("/dangling") and not io.isfile("/dangling") and not io.isdir("/dangling")
    assert not io.exists("/etc/none")
    assert io.isdir("/sys/class/link") and not io.isfile("/sys/class/link")
    assert io.isfile("/abs") and not io.isdir("/abs")
    assert io.listdir("/usr/bin") == ["elflink", "prog", "script"]
    assert io.listdir("/sys/class/link") == ["value"]
    assert io.listdir("/etc/none") == [] and io.listdir("/abs") == []
    (root / "usr/bin/new").write_text("")
    assert io.listdir("/usr/bin") == ["elflink", "prog", "script"]  # cached
    assert io.listdir("/") == ["abs", "dangling", "etc", "sys", "up", "usr"]


def test_is_elf_and_which_inside_the_root(tmp_path: Path) -> None:
    root = tree(tmp_path)
    (root / "opt/tools").mkdir(parents=True)
    (root / "opt/tools/prog").write_text("")
    io = HostIO(root)
    assert io.is_elf("/usr/bin/prog") and io.is_elf("/usr/bin/elflink")
    assert not io.is_elf("/usr/bin/script") and not io.is_elf("/usr/bin/none") and not io.is_elf("/usr/bin")
    assert io.which("prog") == "/usr/bin/prog"
    assert io.which("prog", ["/opt/tools/"]) == "/opt/tools/prog"  # extra dirs first
    assert io.which("none") is None
    assert io.which("bin") is None  # a directory is not a program


def test_no_subprocess_under_a_foreign_root_or_on_the_fast_path(tmp_path: Path) -> None:
    io = HostIO(tree(tmp_path))
    assert io.run(["true"]) is None and io.last_error == "no subprocess with a foreign root"
    live = HostIO(Path("/"))
    assert live.live
    live.allow_run = False
    assert live.run(["true"]) is None and live.last_error == "skipped on the fast path"
    assert live.missing == []
    live.allow_run = True
    env = {"PATH": os.environ["PATH"]}  # nothing a root run would drop (and note)
    done = live.run(["true"], env=env, timeout=600)  # a hang guard, not a speed bound (run's default is 10 s)
    assert done is not None and done.returncode == 0 and live.last_error is None
    assert live.run(["hosttune-no-such-program"], env=env) is None
    assert live.last_error == "cannot run hosttune-no-such-program: not found"
    assert live.missing == ["hosttune-no-such-program: cannot run hosttune-no-such-program: not found"]
    assert live.run(["hosttune-no-such-program-2"], env=env, note=False) is None and len(live.missing) == 1


def test_live_run_starts_in_root_with_the_given_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    live = HostIO(Path("/"))
    done = live.run(["sh", "-c", "pwd; echo $HT_PIN"], env={"PATH": os.environ["PATH"], "HT_PIN": "x1"}, timeout=600)
    assert done is not None and done.stdout == "/\nx1\n"
    slow = live.run(["sleep", "30"], timeout=0.2)
    assert slow is None and live.last_error == "timed out after 0.2 s"


def test_why_texts() -> None:
    assert hostio._why(FileNotFoundError(2, "x")) == "not found"
    assert hostio._why(PermissionError(13, "x")) == "permission denied"
    assert hostio._why(OSError(5, "Input/output error")) == "Input/output error"
