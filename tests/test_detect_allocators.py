"""The allocator libraries the detector reports (hosttune/detect/allocators.py): only ELF shared libraries."""

from pathlib import Path
from typing import Optional

from _detecthelp import ELF

from hosttune.detect import collect


def _lib_tree(root: Path, content: Optional[bytes]) -> Path:
    libdir = root / "usr/lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    if content is not None:
        (libdir / "libjemalloc.so.2.0.0").write_bytes(content)
        (libdir / "libjemalloc.so.2").symlink_to("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2.0.0")
    return root


def test_non_elf_allocator_library_is_not_reported(tmp_path: Path) -> None:
    bad = collect(_lib_tree(tmp_path / "bad", b"#!/bin/sh\necho not a library\n"), probe_torch=False,
                  use_nvml=False)
    assert bad.allocators.jemalloc is None
    assert any("libjemalloc.so.2 is not an ELF shared library" in m for m in bad.missing)
    good = collect(_lib_tree(tmp_path / "good", ELF), probe_torch=False, use_nvml=False)
    assert good.allocators.jemalloc == "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
