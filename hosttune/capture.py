"""`hosttune facts --capture DEST`: this host's proc/sys/etc files that `--root` reads, as a tree (or a .tar.gz) a
user can send to support.

What goes in is what the detector asks for, nothing chosen by hand: `collect(trace=...)` reports every path a probe
reads, lists or looks at (HostIO.trace). A live run and a `--root` replay do not read quite the same files (live,
python-distro reads /etc itself and the CPU affinity comes from sched_getaffinity; a replay reads etc/*-release and
/proc/self/status), so after the live run the capture is replayed with a trace too, and what the replay asked for
and the live host has is added, until a replay asks for nothing new. Each path is recreated as it is on the host:
every symbolic link on the way as the same link (HostIO resolves them inside the root), directories as
directories, files read with their bytes (bounded: fsio.read_bounded with HostIO's limit), files only looked at
or listed as empty placeholders, libraries only checked for their ELF magic as that magic alone.

Never captured, whatever a probe asked: anything outside /proc, /sys, /etc, /usr, /lib*, /bin, /sbin, /opt and
/run (home directories, /root, /tmp, /var); secrets by name (shadow, sudoers, ssh, private keys, keytabs,
credentials, munge); per-process files other than the few the detector parses (never environ or cmdline).
Refusals are listed in capture.json. Device nodes, FIFOs and sockets are skipped (HostIO refuses them anyway).
NVML answers, the torch probe and other program output are not replayed by `--root`: facts.json holds the live
Facts, whole, for a human to read.
"""

import datetime
import os
import re
import shutil
import stat
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Set, Tuple

from hosttune import __version__, fsio, trust
from hosttune.detect.hostio import READ_LIMIT
from hosttune.errors import UserError

SCHEMA = "hosttune.capture/1"
ALLOWED_TOP = ("proc", "sys", "etc", "usr", "lib", "lib32", "lib64", "libx32", "bin", "sbin", "opt", "run")
# A path component that names a secret: refused even where a probe asked for it.
SECRET = re.compile(r"shadow|sudoers|^ssh|private|secret|token|passw|keytab|credential|wireguard|munge|"
                    r"\.(key|pem|p12|pfx|jks)$|^id_(rsa|dsa|ecdsa|ed25519)", re.IGNORECASE)
# Per-process files the detector parses; any other file under /proc/<pid>/ (environ, cmdline, mem, ...) is refused.
PROC_PID_FILES = {"cgroup", "cpuset", "mountinfo", "status", "limits", "comm", "stat"}
_PID = re.compile(r"^(\d+|self|thread-self)$")
# Where a listing's entries are all recreated as placeholders, except these trees (only what a probe touched, plus
# python-distro's release files in /etc: it reads them itself on a live host, outside HostIO).
_TOUCHED_ONLY = ("/proc", "/etc")
_DISTRO_FILES = re.compile(r"^(os-release|debian_version|(\w+)[-_](release|version))$")
MAX_LIST = 4096  # entries recreated per listed directory
MAX_FILES = 50_000
MAX_BYTES = 256 << 20
MAX_ROUNDS = 4
MAX_LINKS = 40
ELF_STUB = b"\x7fELF"
# Facts fields a --root replay cannot reproduce, and why: they come from a program, a system call or NVML on the live
# host, or change by the second. capture.json lists them; the round-trip test compares everything else.
LIVE_ONLY: Dict[str, str] = {
    "root": "the tree read",
    "missing": "gaps differ by source (a replay has no subprocess, NVML or statvfs)",
    "torch": "the torch probe runs the interpreter (facts.json has it)",
    "gpus": "NVML's answers (temperatures, clocks, ECC, PCIe link, modes); a replay sees the PCI tree",
    "nvidia.driver": "NVML", "nvidia.cuda_driver": "NVML", "nvidia.nvml": "NVML", "nvidia.nvml_error": "NVML",
    "nvidia.cuda_toolkit": "nvcc --version where the toolkit has no version.json",
    "nvidia.cuda_toolkit_path": "found with nvcc",
    "nvidia.fabric_manager_running": "systemctl",
    "tuned.running": "systemctl",
    "memory.available_mb": "changes by the second",
    "storage[].size_mb": "statvfs", "storage[].free_mb": "statvfs",
    "limits": "getrlimit",
    "container": "/.dockerenv and /dev/nvidia* lie outside what a capture holds; /proc/1/environ is never captured",
    "tools.torchrun": "found on PATH (a venv); a replay looks in /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
                      "/sbin:/bin only",
}


def refused(host: str) -> Optional[str]:
    """Why host path `host` ("/etc/shadow") must not be captured, or None."""
    parts = [p for p in host.split("/") if p]
    if not parts:
        return None
    if parts[0] not in ALLOWED_TOP:
        return f"outside {', '.join('/' + t for t in ALLOWED_TOP)}"
    for part in parts:
        if SECRET.search(part):
            return "may hold a secret"
    if parts[0] == "proc" and len(parts) >= 3 and _PID.match(parts[1]) and parts[2] not in PROC_PID_FILES:
        return "per-process file the detector does not parse"
    return None


class Capture:
    """Recreates host paths under `dest` (a new directory only this process writes to)."""

    def __init__(self, dest: Path) -> None:
        self.dest = str(dest)
        self.filled: Set[str] = set()  # host paths holding their real bytes (or the ELF stub)
        self.seen: Set[Tuple[str, str]] = set()
        self.refused: Dict[str, str] = {}
        self.failed: Dict[str, str] = {}
        self.placeholders = 0
        self.bytes = 0
        self.full = False

    def _at(self, host: str) -> str:
        return self.dest + host

    def _dir(self, host: str) -> None:
        cur = ""
        for part in [p for p in host.split("/") if p]:
            cur += "/" + part
            try:
                st = os.lstat(self._at(cur))
            except FileNotFoundError:
                os.mkdir(self._at(cur), 0o755)
                continue
            if not stat.S_ISDIR(st.st_mode):  # a link or file made for an earlier path: never write through it
                raise OSError(f"{cur}: not a directory in the capture")

    def _link(self, host: str, target: str) -> None:
        self._dir(os.path.dirname(host))
        if not os.path.lexists(self._at(host)):
            os.symlink(target, self._at(host))

    def _file(self, host: str, data: Optional[bytes]) -> None:
        """Write `data` (None: an empty placeholder, kept if the file exists) at host path `host`."""
        self._dir(os.path.dirname(host))
        path = self._at(host)
        placeholder = data is None
        if data is None:
            if os.path.lexists(path):
                return
            data = b""
        elif host in self.filled:
            return
        elif self.bytes + len(data) > MAX_BYTES or len(self.filled) >= MAX_FILES:
            self.full = True
            return
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        # counted once written: a file that could not be written is in `failed` (add), not in the manifest's counts,
        # and a later read of the same path tries again
        if placeholder:
            self.placeholders += 1
        else:
            self.filled.add(host)
            self.bytes += len(data)

    def add(self, kind: str, rel: str, data: Optional[bytes] = None) -> None:
        """Recreate host path `rel` for a probe's `kind` of access (read/list/stat/elf/which): each link on the way
        as the same link, then what the path is. A path absent on the host is left absent. Never raises: it runs
        inside the detector's reads (HostIO.trace), so what cannot be copied is recorded in `failed`."""
        if (kind, rel) in self.seen and kind != "read":
            return
        self.seen.add((kind, rel))
        try:
            self._add(kind, rel, data)
        except OSError as exc:  # the host changed under us (a file where a directory was), a full disk
            self.failed[rel] = exc.strerror or str(exc)

    def _add(self, kind: str, rel: str, data: Optional[bytes]) -> None:
        parts = [p for p in rel.split("/") if p]
        cur = ""
        hops = 0
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                cur = cur.rsplit("/", 1)[0]
                continue
            host = f"{cur}/{part}"
            why = refused(host)
            if why:
                self.refused[host] = why
                return
            try:
                st = os.lstat(host)
            except OSError:
                return
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > MAX_LINKS:
                    return
                target = os.readlink(host)
                self._link(host, target)
                if target.startswith("/"):
                    cur = ""
                parts = [p for p in target.split("/") if p] + parts
                continue
            if parts:
                if not stat.S_ISDIR(st.st_mode):
                    return
                self._dir(host)
                cur = host
                continue
            self._last(host, st, kind, data)

    def _last(self, host: str, st: os.stat_result, kind: str, data: Optional[bytes]) -> None:
        if stat.S_ISDIR(st.st_mode):
            self._dir(host)
            if kind == "list":
                self._entries(host)
        elif stat.S_ISREG(st.st_mode):
            if kind == "read":
                if data is None and host not in self.filled:
                    try:
                        data = fsio.read_bounded(host, READ_LIMIT)
                    except OSError:
                        data = None
                self._file(host, data)
            elif kind == "elf":
                self._file(host, ELF_STUB)
            else:
                self._file(host, None)

    def _entries(self, host: str) -> None:
        """Placeholders for a listed directory's entries (names matter to probes that count or match them)."""
        try:
            names = sorted(os.listdir(host))[:MAX_LIST]
        except OSError:
            return
        touched_only = host.startswith(_TOUCHED_ONLY)
        for name in names:
            child = f"{host.rstrip('/')}/{name}"
            if refused(child):
                continue
            if touched_only and not (host == "/etc" and _DISTRO_FILES.match(name)):
                continue
            if host == "/etc":
                self.add("read", child)  # python-distro's own reads on the live host
                continue
            try:
                st = os.lstat(child)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                self._link(child, os.readlink(child))
            elif stat.S_ISDIR(st.st_mode):
                self._dir(child)
            elif stat.S_ISREG(st.st_mode):
                self._file(child, None)

    def trace(self, kind: str, rel: str, data: Optional[bytes]) -> None:
        """HostIO.trace for the live run (host paths)."""
        self.add(kind, rel, data)


def _new_dir(dest: Path) -> None:
    """`dest` as a new private directory (or an empty one of ours): nobody else can plant links in it."""
    try:
        os.mkdir(dest, 0o700)
        return
    except FileExistsError:
        pass
    except OSError as exc:
        raise UserError(f"--capture {dest}: cannot create: {exc.strerror or exc}") from None
    try:
        st = os.lstat(dest)
        full = not stat.S_ISDIR(st.st_mode) or bool(os.listdir(dest))
    except OSError as exc:  # unreadable, or gone since: one line, not a traceback
        raise UserError(f"--capture {dest}: cannot read: {exc.strerror or exc}") from None
    if full:
        raise UserError(f"--capture {dest}: exists and is not an empty directory")
    if not trust.written_by_me_alone(st):  # then made private: nobody else can plant links in it
        raise UserError(f"--capture {dest}: not a directory of yours that only you can write")
    os.chmod(dest, 0o700)


def capture_tree(dest: Path, python: Optional[str] = None) -> Dict[str, Any]:
    """Capture this host into the new directory `dest`; returns the manifest (also written as capture.json)."""
    from hosttune.detect import collect

    _new_dir(dest)
    cap = Capture(dest)
    facts = collect(Path("/"), python, trace=cap.trace)
    rounds = 1
    while rounds < MAX_ROUNDS and not cap.full:
        before = (len(cap.seen), len(cap.filled), cap.placeholders)
        collect(dest, trace=lambda kind, rel, data: cap.add(kind, rel))  # what a replay asks for, from the host
        rounds += 1
        if (len(cap.seen), len(cap.filled), cap.placeholders) == before:
            break
    manifest = {
        "schema": SCHEMA,
        "hosttune": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hostname": facts.hostname,
        "files": len(cap.filled),
        "bytes": cap.bytes,
        "placeholders": cap.placeholders,
        "replay_rounds": rounds,
        "truncated": cap.full,
        "refused": dict(sorted(cap.refused.items())),
        "failed": dict(sorted(cap.failed.items())),
        "live_only": LIVE_ONLY,
        "read_with": f"hosttune facts --root {dest}",
    }
    import json

    fsio.atomic_write(dest / "capture.json", json.dumps(manifest, indent=2) + "\n", 0o644)
    fsio.atomic_write(dest / "facts.json", facts.to_json() + "\n", 0o644)
    return manifest


def is_archive(dest: str) -> bool:
    return dest.endswith((".tar.gz", ".tgz"))


def capture(dest: str, python: Optional[str] = None, force: bool = False) -> Dict[str, Any]:
    """`facts --capture DEST`: a directory, or with DEST ending in .tar.gz/.tgz that directory packed (written
    atomically, never half-written). An existing archive is refused unless `force` (then replaced atomically): a
    support bundle sent earlier, or any file of the same name, is not silently lost."""
    if not is_archive(dest):
        try:
            return capture_tree(Path(dest), python)
        except OSError as exc:
            raise UserError(f"--capture {dest}: cannot write: {exc.strerror or exc}") from None
    out = Path(dest)
    if out.is_dir():
        raise UserError(f"--capture {dest}: is a directory")
    if os.path.lexists(out) and not force:
        raise UserError(f"--capture {dest}: exists; name a new file, or add --force to replace it")
    if not out.parent.is_dir():
        raise UserError(f"--capture {dest}: {out.parent} is not a directory")
    name = re.sub(r"\.(tar\.gz|tgz)$", "", out.name) or "capture"
    work = Path(tempfile.mkdtemp(prefix=".hosttune-capture-", dir=out.parent))
    try:
        manifest = capture_tree(work / name, python)
        with fsio.atomic_writer(out, 0o600, exclusive=not force) as fh:  # exclusive: link(2) never replaces
            with tarfile.open(fileobj=fh, mode="w:gz") as tar:
                tar.add(str(work / name), arcname=name)  # links stay links (dereference=False)
    except OSError as exc:
        if isinstance(exc, FileExistsError) and str(out) in (exc.filename, exc.filename2):  # made while we ran
            raise UserError(f"--capture {dest}: exists; name a new file, or add --force to replace it") from None
        raise UserError(f"--capture {dest}: cannot write: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    manifest["read_with"] = f"tar xzf {out.name} && hosttune facts --root {name}"
    return manifest


__all__ = ["LIVE_ONLY", "SCHEMA", "Capture", "capture", "capture_tree", "is_archive", "refused"]
