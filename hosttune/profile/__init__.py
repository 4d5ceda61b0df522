"""Environment profiles (the public API): settings table, locating, loading with trust, generating, writing.

A profile is policy, not host numbers: which allocator, how many threads per rank ("auto" = the physical cores of
the rank's binding), how ranks are bound, the memory policy, DataLoader defaults, deterministic/debug switches and
literal env. `hosttune.plan` turns a Profile plus Facts into each rank's environment.

- `settings`: the one table of settings (validation, YAML, `profile show`), `Profile`, `DataLoader`.
- `locate`: the search path, `Locator(dirs)`, `locate_active()` (which profile is in use, and why).
- `load`: one file read and validated with trust, `base:` chains merged, `active()`.
- `generate`: `generate(facts)`, `to_yaml`, `write`, `fingerprint_note`.
"""

from pathlib import Path
from typing import List, Tuple

from hosttune.profile.generate import fingerprint_note, generate, to_yaml, write
from hosttune.profile.load import MAX_PROFILE_BYTES, active, load, load_text, parse_text, read_file
from hosttune.profile.locate import (
    Active,
    Locator,
    default_generate_path,
    generated_paths,
    locate_active,
    locator,
    search_path,
)
from hosttune.profile.settings import (
    _DL_KEYS,
    _TOP_KEYS,
    ALLOCATORS,
    BINDINGS,
    DEVICES,
    GENERATED,
    MEMORY_POLICIES,
    OPENMP,
    SETTINGS,
    THROUGHPUT_MALLOC_CONF,
    DataLoader,
    Profile,
    Setting,
)

__all__ = [
    "ALLOCATORS", "BINDINGS", "DEVICES", "GENERATED", "MAX_PROFILE_BYTES", "MEMORY_POLICIES", "OPENMP", "SETTINGS",
    "THROUGHPUT_MALLOC_CONF", "_DL_KEYS", "_TOP_KEYS", "Active", "DataLoader", "Locator", "Profile", "Setting",
    "active", "available", "default_generate_path", "fingerprint_note", "generate", "generated_paths", "load",
    "load_text", "locate_active", "parse_text", "read_file", "search_path", "to_yaml", "write",
]


def available() -> List[Tuple[str, Path, List[Path]]]:
    """(name, winning file, overridden files) for every profile on the search path."""
    return locator().available()
