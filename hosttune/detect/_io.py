"""The only place the detector opens files under a root or runs a subprocess.

`HostIO(root)` reads a live host (`root == /`) or a captured one (`--root DIR`: a tree holding proc/, sys/, etc/).
With a foreign root nothing outside the tree is consulted: `run` answers None, symbolic links are resolved inside
the tree (an absolute link target means root/target, as it did on the captured machine), and `live` is False so
probes skip os.sched_getaffinity, getrlimit and statvfs. What could not be read is recorded in `missing` as
"what: why"; a probe never raises for an absent or unreadable file.
"""

import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from hosttune.cpulist import format_cpulist, parse_cpulist

# sysfs files sometimes end in "\n\0" (hwloc fixture README caveat 7; seen on real kernels' node/has_cpu).
_TRAILING = "\n\0\r \t"


class HostIO:
    def __init__(self, root: Path = Path("/")) -> None:
        self.root = Path(root)
        self._base = str(self.root).rstrip("/")
        self.live = os.path.realpath(str(self.root)) == "/"
        self.missing: List[str] = []
        self._cache: Dict[str, Optional[str]] = {}
        self._dirs: Dict[str, List[str]] = {}
        self.last_error: Optional[str] = None
        # False on the launcher's fast path: no subprocess at all (collect(probe_torch=False)).
        self.allow_run = True

    # ---- paths ----------------------------------------------------------------------------------------------
    def path(self, rel: str) -> Path:
        """The real path of `rel` (a host path like "/proc/cpuinfo" or "proc/cpuinfo") under the root."""
        return Path(self._base + "/" + rel.lstrip("/"))

    def note(self, what: str, why: str) -> None:
        entry = f"{what}: {why}"
        if entry not in self.missing:
            self.missing.append(entry)

    # ---- reads ----------------------------------------------------------------------------------------------
    def read(self, rel: str, what: Optional[str] = None) -> Optional[str]:
        """The text of a file (trailing newline/NUL garbage stripped), or None. `what` names it in `missing`."""
        if rel in self._cache:
            text = self._cache[rel]
        else:
            try:
                with open(self._base + "/" + rel.lstrip("/"), "rb") as fh:
                    text = fh.read().decode("utf-8", errors="replace").rstrip(_TRAILING)
            except OSError as exc:
                text = None
                if what:
                    self.note(what, f"{rel} {_why(exc)}")
            self._cache[rel] = text
            return text
        if text is None and what:
            self.note(what, f"{rel} not readable")
        return text

    def read_int(self, rel: str, what: Optional[str] = None) -> Optional[int]:
        text = self.read(rel, what)
        if text is None:
            return None
        try:
            return int(text.split()[0]) if text.split() else None
        except ValueError:
            if what:
                self.note(what, f"{rel} is not a number: {text[:40]!r}")
            return None

    def exists(self, rel: str) -> bool:
        return os.path.lexists(self.path(rel))

    def isdir(self, rel: str) -> bool:
        return os.path.isdir(self.path(rel))

    def listdir(self, rel: str) -> List[str]:
        """Sorted names in a folder ([] when absent); cached, since library dirs are listed by several probes."""
        if rel not in self._dirs:
            try:
                self._dirs[rel] = sorted(os.listdir(self.path(rel)))
            except OSError:
                self._dirs[rel] = []
        return self._dirs[rel]

    def realpath(self, rel: str) -> Optional[str]:
        """Resolve symbolic links inside the root; the host path ("/sys/devices/...") or None when it dangles."""
        if self.live:
            real = os.path.realpath(rel)
            return real if os.path.lexists(real) else None
        parts = [p for p in rel.split("/") if p]
        done: List[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            candidate = self.root.joinpath(*done, part)
            if os.path.islink(candidate):
                hops += 1
                if hops > 40:
                    return None
                target = os.readlink(candidate)
                if target.startswith("/"):
                    done = []
                parts = [p for p in target.split("/") if p] + parts
                continue
            done.append(part)
        result = "/" + "/".join(done)
        return result if self.exists(result) else None

    # ---- processes ------------------------------------------------------------------------------------------
    def run(self, argv: Sequence[str], timeout: float = 10.0, env: Optional[Dict[str, str]] = None,
            note: bool = True) -> Optional["subprocess.CompletedProcess[str]"]:
        """Run a command on the live host; None with a foreign root, or when it cannot start or times out (the
        reason is in `last_error`, and in `missing` when `note`)."""
        self.last_error = None
        if not self.live or not self.allow_run:
            self.last_error = "no subprocess with a foreign root" if not self.live else "skipped on the fast path"
            return None
        try:
            return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=env, check=False)
        except subprocess.TimeoutExpired:
            self.last_error = f"timed out after {timeout:g} s"
        except OSError as exc:
            self.last_error = f"cannot run {argv[0]}: {_why(exc)}"
        if note:
            self.note(os.path.basename(argv[0]), self.last_error)
        return None

    def which(self, name: str, extra_dirs: Sequence[str] = ()) -> Optional[str]:
        """A program's path: PATH on the live host, the usual bin dirs inside a foreign root (host path)."""
        if self.live:
            found = shutil.which(name)
            if found:
                return found
        dirs = list(extra_dirs) + ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        for d in dirs:
            rel = f"{d.rstrip('/')}/{name}"
            if os.path.isfile(self.path(rel)):
                return rel
        return None


def _why(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "not found"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return exc.strerror or type(exc).__name__


def parse_cpumask(text: Optional[str]) -> List[int]:
    """A sysfs hex mask ("00000000,0000ffff") -> CPU numbers."""
    if not text:
        return []
    digits = text.strip(_TRAILING).replace(",", "").strip()
    if not digits:
        return []
    try:
        value = int(digits, 16)
    except ValueError:
        return []
    out = []
    bit = 0
    while value:
        if value & 1:
            out.append(bit)
        value >>= 1
        bit += 1
    return out


__all__ = ["HostIO", "format_cpulist", "parse_cpulist", "parse_cpumask"]
