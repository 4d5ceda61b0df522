"""Allocators, OpenMP runtimes and tools a profile can use: jemalloc, tcmalloc, libiomp5, libgomp, numactl ..."""

import re
from typing import Dict, List, Optional, Sequence, Tuple

from hosttune.detect.hostio import HostIO
from hosttune.facts import Allocators, Tools

MULTIARCH = ("x86_64-linux-gnu", "aarch64-linux-gnu", "powerpc64le-linux-gnu", "s390x-linux-gnu")
SYSTEM_LIB_DIRS = tuple(f"/usr/lib/{a}" for a in MULTIARCH) + tuple(f"/lib/{a}" for a in MULTIARCH) + (
    "/usr/lib64", "/lib64", "/usr/lib", "/usr/local/lib", "/usr/local/lib64")

# field -> library stem. A versioned soname (libjemalloc.so.2) counts: distros ship only that without -dev.
STEMS = {
    "jemalloc": "libjemalloc",
    "tcmalloc": "libtcmalloc",
    "tcmalloc_minimal": "libtcmalloc_minimal",
    "iomp5": "libiomp5",
    "gomp": "libgomp",
    "libnuma": "libnuma",
}


def pick(names: Sequence[str], stem: str) -> Optional[str]:
    """The best file name for a library stem: the plain soname with the highest major ("libjemalloc.so.2"), else
    "libX.so", else the longest versioned name."""
    pat = re.compile(rf"{re.escape(stem)}\.so(\.\d+)*$")
    found = [n for n in names if n.startswith(stem) and pat.match(n)]
    if not found:
        return None

    def rank(name: str) -> tuple:
        version = name[len(stem) + 4:].lstrip(".")
        parts = [int(p) for p in version.split(".") if p]
        # Prefer the runtime soname (one version number), then more specific ones, then the bare .so link.
        return (len(parts) == 1, len(parts) > 0, parts)

    return sorted(found, key=rank)[-1]


def parse_ldconfig(text: Optional[str]) -> Dict[str, str]:
    """`ldconfig -p`: "\tlibjemalloc.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libjemalloc.so.2" -> name: path."""
    out: Dict[str, str] = {}
    for line in (text or "").splitlines():
        m = re.match(r"\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)", line)
        if m and m.group(1) not in out:
            out[m.group(1)] = m.group(3)
    return out


def _first_elf(io: HostIO, d: str, names: Sequence[str], stem: str) -> Optional[str]:
    """The best `stem` library in folder `d` that is an ELF file (a text file or a linker script named like a
    library would be preloaded into every rank and fail, or worse); others are noted in `missing`."""
    left = list(names)
    while True:
        name = pick(left, stem)
        if name is None:
            return None
        path = f"{d.rstrip('/')}/{name}"
        if io.is_elf(path):
            return path
        io.note("allocators", f"{path} is not an ELF shared library; ignored")
        left.remove(name)


def find_libraries(io: HostIO, extra_dirs: Sequence[str] = ()) -> Dict[str, Optional[str]]:
    """field -> host path of the library. Extra dirs (the target python's env lib dir) are searched first."""
    dirs: List[str] = list(extra_dirs) + list(SYSTEM_LIB_DIRS)
    listing = {d: io.listdir(d) for d in dirs}
    out: Dict[str, Optional[str]] = {}
    ld: Optional[Dict[str, str]] = None
    for field, stem in STEMS.items():
        path = None
        for d in dirs:
            path = _first_elf(io, d, listing[d], stem)
            if path:
                break
        if path is None and io.live:
            if ld is None:
                done = io.run(["ldconfig", "-p"], timeout=5) or io.run(["/sbin/ldconfig", "-p"], timeout=5)
                ld = parse_ldconfig(done.stdout if done is not None else None)
            name = pick(list(ld), stem)
            path = ld.get(name) if name else None
            if path and not io.is_elf(path):
                io.note("allocators", f"{path} is not an ELF shared library; ignored")
                path = None
        out[field] = path
    return out


def probe(io: HostIO, extra_lib_dirs: Sequence[str] = ()) -> Tuple[Allocators, Tools]:
    libs = find_libraries(io, extra_lib_dirs)
    allocators = Allocators(jemalloc=libs["jemalloc"], tcmalloc=libs["tcmalloc"],
                            tcmalloc_minimal=libs["tcmalloc_minimal"], iomp5=libs["iomp5"], gomp=libs["gomp"])
    tools = Tools(numactl=io.which("numactl"), nvidia_smi=io.which("nvidia-smi"),
                  torchrun=io.which("torchrun", extra_dirs=[d.rsplit("/lib", 1)[0] + "/bin" for d in extra_lib_dirs]),
                  libnuma=libs["libnuma"])
    return allocators, tools
