"""hosttune.capture pins (issue 21, practice round HDET8): a directory a probe only looks at is recreated as an
empty directory, and what could not be copied is recorded with the system's reason. In-process, on host paths every
Linux has (/proc/sys/vm, /proc/self) and on tmp_path."""

import os
import stat
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from hosttune import capture
from hosttune.capture import Capture


def _tree(root: Path) -> dict:
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = Path(d) / n
            out[str(p.relative_to(root))] = "link" if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return out


def test_a_directory_only_looked_at_is_an_empty_directory(tmp_path: Path) -> None:
    dest = tmp_path / "cap"
    dest.mkdir()
    cap = Capture(dest)
    cap.add("stat", "/proc/sys/vm")
    assert _tree(dest) == {"proc": "dir", "proc/sys": "dir", "proc/sys/vm": "dir"}
    assert (cap.placeholders, cap.bytes, cap.filled, cap.failed, cap.refused, cap.full) == (0, 0, set(), {}, {},
                                                                                            False)


def test_a_path_that_cannot_be_made_is_failed_with_the_systems_reason(tmp_path: Path) -> None:
    cap = Capture(tmp_path / "gone")  # the destination vanished: every mkdir fails with ENOENT
    cap.add("read", "/proc/self/status", b"Name:\tx\n")
    cap.add("stat", "/proc/sys/vm")
    assert cap.failed == {"/proc/self/status": "No such file or directory", "/proc/sys/vm": "No such file or directory"}
    assert (cap.placeholders, cap.bytes, cap.filled) == (0, 0, set())


def test_a_listed_directory_holds_each_entry_as_on_the_host(tmp_path: Path) -> None:
    """Outside /proc and /etc a listing recreates every entry: links as the same link, folders as folders, files as
    empty placeholders (counted), nothing read."""
    host = "/sys/devices/system/cpu"
    dest = tmp_path / "cap"
    dest.mkdir()
    cap = Capture(dest)
    cap.add("list", host)
    want: Dict[str, Any] = {}
    files = 0
    for name in sorted(os.listdir(host))[:capture.MAX_LIST]:
        st = os.lstat(f"{host}/{name}")
        if stat.S_ISLNK(st.st_mode):
            want[name] = ("link", os.readlink(f"{host}/{name}"))
        elif stat.S_ISDIR(st.st_mode):
            want[name] = "dir"
        elif stat.S_ISREG(st.st_mode):
            want[name] = b""
            files += 1
    here = dest / host.lstrip("/")
    got = {n: ("link", os.readlink(here / n)) if (here / n).is_symlink() else "dir" if (here / n).is_dir()
           else (here / n).read_bytes() for n in os.listdir(here)}
    assert got == want and files > 0  # every Linux has cpu/online, cpu/possible ...
    assert (cap.placeholders, cap.bytes, cap.filled, cap.failed) == (files, 0, set(), {})


def test_an_archive_is_gzip_compressed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def small_tree(dest: Path, python: Optional[str] = None) -> Dict[str, Any]:
        dest.mkdir(mode=0o700)
        (dest / "capture.json").write_text("{}\n" * 64)
        return {"files": 1}

    monkeypatch.setattr(capture, "capture_tree", small_tree)
    d = tmp_path / "d"
    d.mkdir()
    out = d / "node3.tar.gz"
    manifest = capture.capture(str(out))
    assert manifest == {"files": 1, "read_with": "tar xzf node3.tar.gz && hosttune facts --root node3"}
    assert out.read_bytes()[:2] == b"\x1f\x8b"  # gzip's magic
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and sorted(p.name for p in d.iterdir()) == ["node3.tar.gz"]


def test_capture_tree_manifest_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """capture_tree with the detector replaced by one that asks three fixed questions: the live run gets the
    interpreter asked for, the replay reads the capture (and adds nothing new, so two rounds), and the manifest and
    facts.json say exactly what was kept, refused and left out."""
    import json

    import hosttune.detect
    from hosttune import __version__
    from hosttune.facts import Facts

    calls = []

    def collect(root: Path = Path("/"), python: Optional[str] = None, **kw: Any) -> Facts:
        calls.append((root, python))
        kw["trace"]("read", "/proc/self/stat", b"12 (x)\n")
        kw["trace"]("stat", "/proc/sys/vm", None)
        kw["trace"]("read", "/root/.bashrc", None)
        return Facts(hostname="node7")

    monkeypatch.setattr(hosttune.detect, "collect", collect)
    dest = tmp_path / "cap"
    manifest = capture.capture_tree(dest, "/opt/py/bin/python3")
    assert calls == [(Path("/"), "/opt/py/bin/python3"), (dest, None)]
    created = manifest.pop("created")
    assert manifest == {
        "schema": "hosttune.capture/1", "hosttune": __version__, "hostname": "node7", "files": 1, "bytes": 7,
        "placeholders": 0, "replay_rounds": 2, "truncated": False,
        "refused": {"/root": "outside /proc, /sys, /etc, /usr, /lib, /lib32, /lib64, /libx32, /bin, /sbin, /opt, /run"},
        "failed": {}, "live_only": capture.LIVE_ONLY, "read_with": f"hosttune facts --root {dest}"}
    assert json.loads((dest / "capture.json").read_text()) == dict(manifest, created=created)
    assert json.loads((dest / "facts.json").read_text()) == Facts(hostname="node7").to_dict()
    assert (dest / "proc" / os.readlink("/proc/self") / "stat").read_bytes() == b"12 (x)\n"
    # both readable by whoever the bundle is sent to (the tree's folder itself is private: 0700)
    modes = [stat.S_IMODE(os.stat(p).st_mode) for p in (dest, dest / "capture.json", dest / "facts.json")]
    assert modes == [0o700, 0o644, 0o644]


_OUTSIDE = "outside /proc, /sys, /etc, /usr, /lib, /lib32, /lib64, /libx32, /bin, /sbin, /opt, /run"


@pytest.mark.parametrize("host,why", [
    ("/run/nvidia-persistenced/socket", None), ("/opt/cuda/version.json", None), ("/lib64/libc.so.6", None),
    ("/var/log/syslog", _OUTSIDE), ("/home/alice/x", _OUTSIDE), ("/root", _OUTSIDE), ("/", None),
    ("/etc/ssh/sshd_config", "may hold a secret"), ("/run/munge/munge.socket.2", "may hold a secret"),
    ("/proc/1/environ", "per-process file the detector does not parse"), ("/proc/self/status", None),
    ("/proc/thread-self/cmdline", "per-process file the detector does not parse"), ("/proc/1", None),
])
def test_refused_table(host: str, why: Optional[str]) -> None:
    assert capture.refused(host) == why
